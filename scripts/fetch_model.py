"""Rule fetch_model: a thin call into trimbench (see trimbench/steps.py). Runnable alone: --help."""

from trimbench import rules, steps

rules.run(steps.fetch_model, globals().get("snakemake"))
