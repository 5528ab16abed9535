"""Hard-negative mining: BM25 (pyserini's Lucene index) or a dense model (faiss), then an
optional cross-encoder false-negative filter; or the training dataset's own negatives.

Output, one JSON line per training query::

    {"query_id": ..., "positives": [doc ids], "negatives": [{"doc_id": ..., "score": ...}, ...]}

Mined ``negatives`` are the top ``depth`` hits that are not judged positive, best first, at most
``keep`` of them. Queries are searched in blocks and written as they come, so memory stays flat
in the number of queries; the BM25 index lives on disk (rule bm25_index's). A dataset's own negatives (Tevatron's
``negative_passages``) are written in its order, with no score, its positives in its order too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from trimbench.bm25 import Searcher
from trimbench.data.io import RetrievalSplit, doc_texts
from trimbench.search import search

log = logging.getLogger(__name__)


def negatives_from_hits(hits: list[tuple[str, float]], positives: set[str], keep: int) -> list[dict]:
    """The first ``keep`` hits that are not positives, in hit order."""
    out = []
    for doc_id, score in hits:
        if doc_id in positives:
            continue
        out.append({"doc_id": doc_id, "score": float(score)})
        if len(out) == keep:
            break
    return out


def _rows(split: RetrievalSplit, hits_per_block, keep: int, block: int) -> Iterator[dict]:
    relevant = split.relevant()
    query_ids, texts = list(split.queries["query_id"]), list(split.queries["text"])
    for start in range(0, len(query_ids), block):
        ids, batch = query_ids[start:start + block], texts[start:start + block]
        for query_id, hits in zip(ids, hits_per_block(ids, batch), strict=True):
            positives = relevant.get(query_id, set())
            yield {"query_id": query_id, "positives": sorted(positives),
                   "negatives": negatives_from_hits(hits, positives, keep)}
        log.info("mined %d / %d queries", min(start + block, len(query_ids)), len(query_ids))


def dataset_negatives(split: RetrievalSplit) -> Iterator[dict]:
    """The rows of a split that carries its own negatives per query (``split.negatives``)."""
    if split.negatives is None:
        raise ValueError("the training split has no negatives of its own (only format tevatron carries them): "
                         "mine them (retrieval.negatives.miner bm25 or dense)")
    positives = split.qrels[split.qrels["relevance"] > 0].groupby("query_id", sort=False)["doc_id"].agg(list)
    negatives = split.negatives.groupby("query_id", sort=False)["doc_id"].agg(list)
    for query_id in split.queries["query_id"]:
        yield {"query_id": query_id, "positives": positives.get(query_id, []),
               "negatives": [{"doc_id": doc_id, "score": None} for doc_id in negatives.get(query_id, [])]}


def bm25_mine(split: RetrievalSplit, index_dir: Path, depth: int, keep: int, k1: float, b: float, threads: int = 1,
              block: int = 10_000) -> Iterator[dict]:
    """Mine with BM25 at ``k1``, ``b`` (the experiment's ``bm25`` section, as its baseline) over the
    split's corpus: its flat index (rule bm25_index, shared with the BM25 baseline; :mod:`trimbench.bm25`)."""
    with Searcher(index_dir, "flat", k1, b, threads) as searcher:  # closed however the caller stops
        yield from _rows(split, lambda ids, texts: searcher.hits(ids, texts, depth), keep, block)


def dense_mine(split: RetrievalSplit, model, depth: int, keep: int, similarity: str = "dot",
               batch_size: int = 64, block: int = 10_000) -> Iterator[dict]:
    """Mine with a dense model's last layer over the split's own corpus (faiss, exact)."""
    docs = model.encode(doc_texts(split.corpus), batch_size=batch_size, convert_to_numpy=True)
    doc_ids = np.asarray(split.corpus["doc_id"], dtype=object)

    def hits(ids, texts):
        queries = model.encode(texts, batch_size=batch_size, convert_to_numpy=True)
        scores, found = search(docs, queries, depth, similarity)
        return [[(doc_ids[j], s) for j, s in zip(row_ids, row_scores, strict=True) if j >= 0]
                for row_ids, row_scores in zip(found, scores, strict=True)]

    yield from _rows(split, hits, keep, block)


def filter_false_negatives(negatives: list[dict], positive_scores: list[float], negative_scores: list[float],
                           margin: float) -> list[dict]:
    """Drop a negative whose cross-encoder score exceeds ``min(positive scores) - margin``: it is
    probably an unjudged positive. The kept negatives carry their CE score as ``ce_score``."""
    if not positive_scores:
        return [dict(n, ce_score=float(s)) for n, s in zip(negatives, negative_scores, strict=True)]
    threshold = min(positive_scores) - margin
    return [dict(n, ce_score=float(s)) for n, s in zip(negatives, negative_scores, strict=True) if s <= threshold]


def cross_encoder_filter(rows: Iterator[dict], split: RetrievalSplit, cross_encoder_path: str, margin: float,
                         batch_size: int = 64) -> Iterator[dict]:
    """:func:`filter_false_negatives` with scores from a sentence-transformers CrossEncoder."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(cross_encoder_path, local_files_only=True)
    text = dict(zip(split.corpus["doc_id"], doc_texts(split.corpus), strict=True))
    query_text = dict(zip(split.queries["query_id"], split.queries["text"], strict=True))
    for row in rows:
        query = query_text[row["query_id"]]
        docs = row["positives"] + [n["doc_id"] for n in row["negatives"]]
        scores = model.predict([(query, text[d]) for d in docs], batch_size=batch_size).tolist()
        n_pos = len(row["positives"])
        yield {**row, "negatives": filter_false_negatives(row["negatives"], scores[:n_pos], scores[n_pos:], margin)}


def write_rows(rows: Iterator[dict], path: Path) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True) + "\n")
            count += 1
    return count


def iter_rows(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def read_rows(path: Path) -> list[dict]:
    return list(iter_rows(path))
