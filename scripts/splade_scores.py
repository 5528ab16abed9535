"""Rule splade_scores: a thin call into trimbench (see trimbench/steps.py). Runnable alone: --help."""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs import run as rules

rules.run("splade_scores", globals().get("snakemake"))
