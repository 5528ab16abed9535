"""Rule splade_table: the SPLADE seed's table, ours beside the published numbers.

input:  scores     the experiment's score table (parquet, tidy)
        reference  the published SPLADE numbers (CSV)
        baseline   BM25's score table (parquet, tidy), when bm25 is on
output: markdown, csv, html  the seed's table: a row per variant and ensemble, ours beside published
params: config
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.splade.report import splade_tables

    outputs = splade_tables(score_table.read(job.input.scores), pd.read_csv(job.input.reference), job.params.config,
                            score_table.baseline_of(job.input))
    job.write_texts(outputs)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
