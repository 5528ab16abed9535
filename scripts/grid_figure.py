"""Rule grid_figure: the seed's layer figure of one dataset (the view), ours beside the published curves
(2dmse-sts and 2dmse-retrieval experiments).

input:  scores     the experiment's score table (parquet, tidy)
        reference  the published numbers (CSV)
        baseline   BM25's score table (parquet, tidy), when bm25 is on
output: png, svg  one subplot per layer: the metric against dim, a line per method, published dashed
params: reference_variant, dataset, metric, title, depth
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.dense.grid import sts_layer_figure

    p = job.params
    published = pd.read_csv(job.input.reference)
    sts_layer_figure(score_table.read(job.input.scores), published, p.reference_variant, p.dataset, p.metric,
                     p.title, {"png": job.output.png, "svg": job.output.svg}, depth=p.depth,
                     baseline=score_table.baseline_of(job.input))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
