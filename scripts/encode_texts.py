"""Rule encode_texts: a thin call into trimbench (see trimbench/steps.py). Runnable alone: --help."""

from trimbench import rules, steps

rules.run(steps.encode_texts, globals().get("snakemake"))
