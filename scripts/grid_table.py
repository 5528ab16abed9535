"""Rule grid_table: the seed's table layout (layer x method by dim) of one dataset (the view), ours beside the
published numbers (2dmse-sts and 2dmse-retrieval experiments).

input:  scores     the experiment's score table (parquet, tidy)
        reference  the published numbers (CSV)
        baseline   BM25's score table (parquet, tidy), when bm25 is on
output: markdown, csv, html          rows layer x method, columns dim: ours (published beside)
        comparison, comparison_html  every cell both have: ours, published, delta (CSV, HTML page)
params: reference_variant, dataset, metric
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.dense.grid import sts_grid_tables

    p = job.params
    published = pd.read_csv(job.input.reference)
    outputs = sts_grid_tables(score_table.read(job.input.scores), published, p.reference_variant,
                              p.dataset, p.metric, baseline=score_table.baseline_of(job.input))
    job.write_texts(outputs)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
