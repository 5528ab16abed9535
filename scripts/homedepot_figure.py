"""Rule homedepot_figure: the Home Depot study's recall figure.

input:  scores     the experiment's score table (parquet, tidy)
        reference  the published Home Depot numbers (CSV)
        baseline   BM25's score table (parquet, tidy), when bm25 is on
output: png, svg  recall@10 against dim, a line per method, published beside
params: config, title
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.dense.homedepot import recall_figure

    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        recall_figure(score_table.read(job.input.scores), pd.read_csv(job.input.reference), job.params.config,
                      job.params.title, {"png": png, "svg": svg}, score_table.baseline_of(job.input))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
