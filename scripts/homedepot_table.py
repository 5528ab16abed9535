"""Rule homedepot_table: the Home Depot study's tables, ours beside the published numbers.

input:  scores     the experiment's score table (parquet, tidy)
        reference  the published Home Depot numbers (CSV)
        baseline   BM25's score table (parquet, tidy), when bm25 is on
output: markdown, csv, html  each method and dim: ours beside the published numbers
params: config
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.dense.homedepot import tables

    outputs = tables(score_table.read(job.input.scores), pd.read_csv(job.input.reference), job.params.config,
                     score_table.baseline_of(job.input))
    job.write_texts(outputs)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
