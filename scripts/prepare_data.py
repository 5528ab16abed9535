"""Rule prepare_data: a thin call into trimbench (see trimbench/steps.py). Runnable alone: --help."""

from trimbench import rules, steps

rules.run(steps.prepare_data, globals().get("snakemake"))
