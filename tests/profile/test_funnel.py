"""The Matryoshka funnel against brute force: a shortlist of every document is the exact search; a
short, coarse shortlist can only re-rank what it holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trimbench.profile.funnel import funnel_rows, funnel_search


def _unit(rows):
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_shortlist_of_every_document_is_the_exact_full_dim_search():
    rng = np.random.default_rng(0)
    docs, queries = rng.normal(size=(40, 16)), rng.normal(size=(3, 16))
    scores, ids = funnel_search(docs, queries, 4, 40, 5)
    brute = _unit(queries) @ _unit(docs).T
    assert (ids == np.argsort(-brute, axis=1)[:, :5]).all()


def test_the_rerank_sees_only_the_shortlist_of_the_small_dim():
    rng = np.random.default_rng(1)
    docs, queries = rng.normal(size=(40, 16)), rng.normal(size=(3, 16))
    _, ids = funnel_search(docs, queries, 2, 6, 3)
    coarse = _unit(queries[:, :2]) @ _unit(docs[:, :2]).T
    full = _unit(queries) @ _unit(docs).T
    for q in range(3):
        shortlist = np.argsort(-coarse[q])[:6]
        assert list(ids[q]) == list(shortlist[np.argsort(-full[q, shortlist])][:3])


def test_funnel_rows_put_the_exact_search_first_and_time_every_repeat():
    docs = np.eye(12, dtype=np.float32)[:, :12] + 0.01
    queries = docs[:2].copy()
    qrels = pd.DataFrame({"query_id": ["d0", "d1"], "doc_id": ["d0", "d1"], "relevance": 1})
    rows = funnel_rows(docs, queries, [f"d{i}" for i in range(12)], ["d0", "d1"], qrels, [(4, 10)], False,
                       repeats=2)
    assert len(rows) == 2 * 2 and rows["exact"].tolist() == [True, True, False, False]
    assert rows.loc[rows["exact"], "value"].tolist() == pytest.approx([1.0, 1.0])
    assert (rows["ms_per_query"] > 0).all()


def test_a_shortlist_smaller_than_the_metrics_depth_is_refused():
    docs, queries = np.eye(12, dtype=np.float32), np.eye(12, dtype=np.float32)[:1]
    qrels = pd.DataFrame({"query_id": ["d0"], "doc_id": ["d0"], "relevance": 1})
    with pytest.raises(ValueError, match="shortlist size 5 is below the 10 hits"):
        funnel_rows(docs, queries, [f"d{i}" for i in range(12)], ["d0"], qrels, [(4, 5)], False, repeats=1)
    with pytest.raises(ValueError, match="shortlist dim 64 is outside this 12-dim model"):
        funnel_rows(docs, queries, [f"d{i}" for i in range(12)], ["d0"], qrels, [(64, 10)], False, repeats=1)
