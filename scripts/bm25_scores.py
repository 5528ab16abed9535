"""Rule bm25_scores: the BM25 baseline of a retrieval experiment: each evaluation set searched in its
corpus' index, scored as the experiment's other methods; TREC runs and scores.

input:  index  each evaluation dataset's Lucene index folder (bm25_index's)
        data   each evaluation dataset's BEIR-style folder (corpus, queries, qrels parquet)
output: scores a tidy score table (parquet: trimbench.scores.COLUMNS, one row per cell, metric and split), variant bm25
        runs   a folder of TREC run files, <dataset>.trec (query Q0 doc rank score tag)
params: datasets, bm25, metrics, relevance_level, ignore_identical_ids, top_k, average_over, average_name, meta
"""

from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.bm25 import Searcher
    from trimbench.data.io import RetrievalSplit
    from trimbench.runs import top_k_run, write_runs_and_scores

    p, bm25 = job.params, job.params.bm25
    runs = {}
    for dataset, index, folder in zip(p.datasets, job.input.index, job.input.data, strict=True):
        queries = RetrievalSplit.read(folder, "queries")
        ids, texts = list(queries["query_id"]), list(queries["text"])
        with reading(index), Searcher(Path(index), bm25["fields"], bm25["k1"], bm25["b"],
                                      threads=int(job.threads)) as searcher:
            runs[dataset] = top_k_run(lambda depth: searcher.run(ids, texts, depth), p.top_k,  # noqa: B023
                                      p.ignore_identical_ids[dataset])
    write_runs_and_scores(runs, [], "bm25", dict(zip(p.datasets, job.input.data, strict=True)), p.metrics,
                          p.relevance_level, p.meta, p.average_over, p.average_name, job.output.runs,
                          job.output.scores)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
