"""BM25 over a retrieval split's corpus with pyserini, as pyserini's BEIR two-click reproductions
index and search it: the baseline row of the retrieval experiments and the BM25 negative miner's
index (one index per corpus, rule bm25_index, read by both).

``flat``: one field, ``contents`` = title and text (Anserini's ``BeirFlatCollection``);
``multifield``: ``contents`` = the text and a ``title`` field, searched with both weighted 1.0
(``BeirMultifieldCollection`` indexed with ``-fields title``, searched with
``--fields contents=1.0 title=1.0``: castorini/pyserini ``pyserini/2cr/beir.yaml`` conditions
bm25-flat and bm25-multifield, and the index commands in
``pyserini/resources/index-metadata/lucene-inverted.beir-v1.0.0-{flat,multifield}.20221116.505594.README.md``).
BM25's k1 0.9, b 0.4: pyserini's ``--bm25`` defaults, which those conditions use.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from trimbench.data.io import doc_texts
from trimbench.errors import DataError
from trimbench.java import setup_java

FIELDS = ("flat", "multifield")
#: pyserini 2cr bm25-multifield's ``--fields contents=1.0 title=1.0``
MULTIFIELD_WEIGHTS = {"contents": 1.0, "title": 1.0}

log = logging.getLogger("trimbench")


def documents(corpus: pd.DataFrame, fields: str) -> Iterator[dict]:
    """Each document as pyserini's JSON collection reads it, laid out as ``fields`` says."""
    if fields == "multifield":
        for doc_id, title, text in zip(corpus["doc_id"], corpus["title"], corpus["text"], strict=True):
            yield {"id": doc_id, "contents": text, "title": title}
    else:  # the text a dense model reads (BEIR's title + text), so both methods see one document
        for doc_id, contents in zip(corpus["doc_id"], doc_texts(corpus), strict=True):
            yield {"id": doc_id, "contents": contents}


def check_titles(corpus: pd.DataFrame, dataset: str) -> None:
    """A multifield index of a corpus without titles is a flat one with an empty field: refused."""
    if not corpus["title"].astype(str).str.strip().any():
        raise DataError(f"dataset '{dataset}': bm25.fields multifield needs document titles and its corpus "
                        "has none: set bm25.fields to flat")


def build_index(corpus: pd.DataFrame, index_dir: Path, fields: str, threads: int, dataset: str,
                log_every: int = 1_000_000) -> None:
    """A Lucene index of ``corpus`` in ``index_dir``: pyserini's indexer in this process, with
    IndexCollection's arguments (``-fields title`` for multifield; positions, document vectors and
    raw documents stored, as pyserini's BEIR indexes)."""
    if fields == "multifield":
        check_titles(corpus, dataset)
    setup_java()
    from pyserini.index.lucene import LuceneIndexer

    args = ["-index", str(index_dir), "-storePositions", "-storeDocvectors", "-storeRaw"]
    indexer = LuceneIndexer(args=args + (["-fields", "title"] if fields == "multifield" else []), threads=threads)
    for count, doc in enumerate(documents(corpus, fields), 1):
        indexer.add_doc_raw(json.dumps(doc))
        if count % log_every == 0:
            log.info("indexed %d / %d documents of %s", count, len(corpus), dataset)
    indexer.close()
    log.info("%s: %d documents indexed (%s)", dataset, len(corpus), fields)


class Searcher:
    """pyserini's LuceneSearcher over an index built by :func:`build_index`, BM25 (k1, b)."""

    def __init__(self, index_dir: Path, fields: str = "flat", k1: float = 0.9, b: float = 0.4, threads: int = 1):
        setup_java()
        from pyserini.search.lucene import LuceneSearcher

        self.searcher = LuceneSearcher(str(index_dir))
        self.searcher.set_bm25(k1, b)
        self.weights = MULTIFIELD_WEIGHTS if fields == "multifield" else None
        self.threads = threads

    def hits(self, query_ids: list[str], texts: list[str], k: int) -> list[list[tuple[str, float]]]:
        """Each query's top ``k`` (doc id, score), best first."""
        extra = {"fields": self.weights} if self.weights else {}
        found = self.searcher.batch_search(texts, query_ids, k=k, threads=self.threads, **extra)
        return [[(hit.docid, hit.score) for hit in found[qid]] for qid in query_ids]

    def run(self, query_ids: list[str], texts: list[str], k: int, block: int = 10_000) -> pd.DataFrame:
        """The top ``k`` of every query as a run table (query_id, doc_id, score, rank)."""
        rows = []
        for start in range(0, len(query_ids), block):
            ids = query_ids[start:start + block]
            for query_id, hits in zip(ids, self.hits(ids, texts[start:start + block], k), strict=True):
                rows += [(query_id, doc_id, float(score), rank) for rank, (doc_id, score) in enumerate(hits, 1)]
        return pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.searcher.close()
