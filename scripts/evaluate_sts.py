"""Rule evaluate_sts: every (layer, dim) cell of one variant on every evaluation set.

input:  embeddings  encode_texts' folder
        data        each evaluation dataset's STS table (parquet: sentence1, sentence2, score)
output: scores  a tidy score table (parquet: trimbench.scores.COLUMNS, one row per cell, metric and split)
params: datasets, layers, dims, metrics, average_name, meta
"""


from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench import scores as score_table
    from trimbench.dense.sts import evaluate_variant

    p = job.params
    frame = evaluate_variant(Path(job.input.embeddings), dict(zip(p.datasets, job.input.data, strict=True)), p.meta,
                             p.layers, p.dims, p.metrics, p.average_name)
    with atomic_path(job.output.scores) as tmp:
        score_table.write(frame, tmp)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
