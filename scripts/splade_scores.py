"""Rule splade_scores: search every evaluation set with one trained variant's index; TREC runs and scores
(effectiveness, FLOPS).

input:  vectors  encode_sparse's folder (queries.npz CSR impacts, vocab.json per corpus)
        index    index_sparse's folder (a Lucene impact index per corpus)
        data     each evaluation dataset's BEIR-style folder (qrels for the metrics)
output: scores  a tidy score table (parquet: trimbench.scores.COLUMNS, one row per cell, metric and split):
                run metrics, FLOPS, active terms
        runs    a folder of TREC run files, <dataset>.trec
params: datasets, index_of, metrics, relevance_level, ignore_identical_ids, top_k, average_over, average_name, meta
"""


from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.data.io import RetrievalSplit
    from trimbench.runs import top_k_run, write_runs_and_scores
    from trimbench.splade import vectors as sparse

    p, vectors = job.params, Path(job.input.vectors)
    vocab = sparse.read_vocabulary(vectors)
    runs, rows, corpora = {}, [], {}
    for dataset, folder in zip(p.datasets, job.input.data, strict=True):
        index = p.index_of[dataset]
        with reading(vectors):
            if index not in corpora:  # evaluation sets over one corpus read its documents once
                corpora[index] = sparse.CorpusSparsity.of(sparse.load_docs(vectors / dataset))
            queries = sparse.load_queries(vectors / dataset)
        query_ids = list(RetrievalSplit.read(folder, "queries", columns=["query_id"])["query_id"])
        terms = sparse.term_maps(queries, vocab)
        with reading(index):
            runs[dataset] = top_k_run(lambda depth: sparse.impact_search(Path(index), query_ids, terms, depth,  # noqa: B023
                                                                         threads=int(job.threads)),
                                      p.top_k, p.ignore_identical_ids[dataset])
        rows += [{**p.meta, "dataset": dataset, "metric": metric, "value": value}
                 for metric, value in sparse.sparsity_scores(queries, corpora[index]).items()]
    write_runs_and_scores(runs, rows, job.wildcards.variant, dict(zip(p.datasets, job.input.data, strict=True)),
                          p.metrics, p.relevance_level, p.meta, p.average_over, p.average_name, job.output.runs,
                          job.output.scores)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
