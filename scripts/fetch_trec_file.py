"""Rule fetch_trec_file: a thin call into trimbench (see trimbench/steps.py). Runnable alone: --help."""

import _repo  # noqa: F401  (before trimbench)

from trimbench import rules

rules.run("fetch_trec_file", globals().get("snakemake"))
