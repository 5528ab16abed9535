"""Rule evaluate_sts: a thin call into trimbench (see trimbench/steps.py). Runnable alone: --help."""

from trimbench import rules, steps

rules.run(steps.evaluate_sts, globals().get("snakemake"))
