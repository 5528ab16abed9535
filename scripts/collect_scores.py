"""Rule collect_scores: an experiment's score tables, concatenated into one tidy table.

input:  scores  the experiment's per-variant (or per-job) score tables (parquet, tidy)
output: scores  their rows in one tidy score table (parquet: trimbench.scores.COLUMNS), in one canonical
                order
params: -
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench import scores as score_table
    frame = score_table.concat([score_table.read(path) for path in job.input.scores])
    with atomic_path(job.output.scores) as tmp:
        score_table.write(frame, tmp)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
