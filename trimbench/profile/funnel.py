"""Adaptive retrieval (Kusupati et al. 2022, "Matryoshka Representation Learning", section 5.3): a
funnel that shortlists ``K`` documents by the first ``d_s`` dims of the embedding, then re-ranks the
shortlist by the full embedding. Each (d_s, K) is a row of the retrieval profile: its nDCG@10 beside the
exact full-dim search, and its search latency per query (shortlist + re-rank), measured here.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from trimbench.runs import evaluate_run, run_frame, top_k_run


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def funnel_search(docs: np.ndarray, queries: np.ndarray, shortlist_dim: int, shortlist_size: int, k: int):
    """Top-``k`` (scores, ids) by full-dim cosine among each query's ``shortlist_size`` best documents
    by the cosine of the first ``shortlist_dim`` dims (exact faiss search). ``docs`` / ``queries`` are
    the full-width embeddings of one layer."""
    from trimbench.search import search

    size = min(shortlist_size, len(docs))
    _, shortlist = search(_unit(docs[:, :shortlist_dim]), _unit(queries[:, :shortlist_dim]), size, "dot")
    full_docs, full_queries = _unit(docs), _unit(queries)
    candidates = np.where(shortlist >= 0, shortlist, 0)
    scores = np.einsum("qd,qkd->qk", full_queries, full_docs[candidates])
    scores[shortlist < 0] = -np.inf
    order = np.argsort(-scores, axis=1, kind="stable")[:, :min(k, size)]
    rows = np.arange(len(queries))[:, None]
    return scores[rows, order], np.where(np.isfinite(scores[rows, order]), shortlist[rows, order], -1)


def funnel_rows(docs: np.ndarray, queries: np.ndarray, doc_ids: list[str], query_ids: list[str],
                qrels: pd.DataFrame, pairs: list[tuple[int, int]], ignore_identical_ids: bool, repeats: int = 3,
                metric: str = "ndcg@10", depth: int = 10) -> pd.DataFrame:
    """One row per (shortlist dim, shortlist size) and repeat: the funnel's ``metric`` and its search
    time per query; a row of shortlist dim = full width and size = all documents is the exact search
    the funnel approximates (``exact``), timed the same way."""
    width = docs.shape[1]
    rows = []
    for shortlist_dim, shortlist_size in [(width, len(docs)), *pairs]:
        if not 1 <= shortlist_dim <= width:
            raise ValueError(f"funnel shortlist dim {shortlist_dim} is outside this {width}-dim model (1..{width})")
        if shortlist_size < depth:
            raise ValueError(f"funnel shortlist size {shortlist_size} is below the {depth} hits the metric reads")

        def searched(k, shortlist_dim=shortlist_dim, shortlist_size=shortlist_size):
            return run_frame(query_ids, doc_ids, *funnel_search(docs, queries, shortlist_dim, shortlist_size, k))

        value = evaluate_run(top_k_run(searched, depth, ignore_identical_ids), qrels, [metric])[metric]
        for repeat in range(repeats):
            start = time.perf_counter()
            funnel_search(docs, queries, shortlist_dim, shortlist_size, depth + int(ignore_identical_ids))
            seconds = time.perf_counter() - start
            rows.append({"shortlist_dim": shortlist_dim, "shortlist_size": min(shortlist_size, len(docs)),
                         "exact": (shortlist_dim, shortlist_size) == (width, len(docs)), "metric": metric,
                         "value": value, "repeat": repeat, "seconds": seconds,
                         "ms_per_query": 1000 * seconds / max(1, len(queries))})
    return pd.DataFrame(rows)
