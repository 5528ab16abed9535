"""Rule retrieval_scores: every (layer, dim) cell of one variant searched and scored on every evaluation set.

input:  embeddings  encode_corpus' folder (docs.npy / queries.npy per dataset, manifest.json)
        data        each evaluation dataset's BEIR-style folder (qrels for the metrics)
output: scores  a tidy score table (parquet: trimbench.scores.COLUMNS, one row per cell, metric and split)
        runs    a folder of TREC run files, <dataset>.L<layer>.d<dim>.trec
params: datasets, layers, dims, metrics, relevance_level, ignore_identical_ids, top_k, similarity, passage_layer,
        average_over, average_name, meta
"""


from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.data.io import RetrievalSplit
    from trimbench.dense.search import grid_scores
    from trimbench.runs import with_average

    p = job.params
    rows = []
    with atomic_path(job.output.runs) as runs:
        for dataset, folder in zip(p.datasets, job.input.data, strict=True):
            # doc ids only: MS MARCO's 8.8M passages need not be read to score its runs
            split = RetrievalSplit(RetrievalSplit.read(folder, "corpus", ["doc_id"]),
                                   RetrievalSplit.read(folder, "queries"), RetrievalSplit.read(folder, "qrels"))
            rows += grid_scores(Path(job.input.embeddings), dataset, split, p.layers, p.dims,
                                p.metrics, p.top_k, p.similarity, Path(runs), p.meta, p.passage_layer,
                                p.relevance_level[dataset], p.ignore_identical_ids[dataset])
    table = with_average(pd.DataFrame(rows), p.average_over, p.average_name, p.meta)
    with atomic_path(job.output.scores) as tmp:
        score_table.write(score_table.frame(table.to_dict("records")), tmp)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
