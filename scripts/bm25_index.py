"""Rule bm25_index: pyserini's Lucene index of one corpus (flat or multifield), searched by the BM25
baseline (bm25_scores) and the BM25 negative miner (mine_negatives) alike.

input:  data   the split's BEIR-style folder (corpus, queries, qrels parquet tables)
output: index  a Lucene index folder of the corpus (flat: title and text in one field; multifield: two)
params: name, fields
"""

from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.bm25 import build_index
    from trimbench.data.io import RetrievalSplit

    p = job.params
    corpus = RetrievalSplit.read(job.input.data, "corpus")
    with atomic_path(job.output.index) as tmp:
        build_index(corpus, Path(tmp), p.fields, int(job.threads), p.name)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
