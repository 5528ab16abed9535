"""Rule mine_negatives: hard negatives for a retrieval training split (the dataset's own, BM25 or a
dense model; a cross-encoder filter).

input:  data           the training split's BEIR-style folder (corpus, queries, qrels parquet)
        index          bm25: the corpus's flat Lucene index (bm25_index's)
        miner          dense: the registry model's folder that encodes queries and passages
        cross_encoder  the registry cross-encoder's folder that filters false negatives
output: negatives  JSON lines, one per training query: query_id, positives (doc ids), negatives (doc_id, score)
params: negatives, bm25 (k1, b of a BM25 miner: the experiment's bm25 section), pooling, similarity
"""

import logging

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    from trimbench.data.io import RetrievalSplit
    from trimbench.negatives import bm25_mine, cross_encoder_filter, dataset_negatives, dense_mine, write_rows

    p = job.params
    settings = p.negatives
    split = RetrievalSplit.load(job.input.data)
    if settings["miner"] == "dataset":
        rows = dataset_negatives(split)
    elif settings["miner"] == "bm25":
        rows = bm25_mine(split, job.input.index, settings["depth"], settings["keep"], **p.bm25,
                         threads=int(job.threads))
    else:
        from trimbench.models import load_sentence_model

        with reading(job.input.miner):
            model = load_sentence_model(job.input.miner, pooling=p.pooling)
        rows = dense_mine(split, model, settings["depth"], settings["keep"], p.similarity)
    if settings["cross_encoder"]:
        rows = cross_encoder_filter(rows, split, job.input.cross_encoder, settings["margin"])
    with atomic_path(job.output.negatives) as tmp:
        count = write_rows(rows, tmp)
    log.info("%s negatives for %d queries written", settings["miner"], count)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
