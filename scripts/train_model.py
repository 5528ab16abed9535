"""Rule train_model: a thin call into trimbench (see trimbench/steps.py). Runnable alone: --help."""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs import run as rules

rules.run("train_model", globals().get("snakemake"))
