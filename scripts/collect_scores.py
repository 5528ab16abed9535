"""Rule collect_scores: a thin call into trimbench (see trimbench/steps.py). Runnable alone: --help."""

from trimbench import rules, steps

rules.run(steps.collect_scores, globals().get("snakemake"))
