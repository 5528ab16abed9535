"""The (layer, dim) grid search (trimbench/dense/search.py) against a brute-force numpy ranking, on
embeddings written by hand in the layout encode_corpus leaves (docs.npy / queries.npy, fp16)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trimbench.data.io import RetrievalSplit
from trimbench.dense.search import grid_scores, write_manifest
from trimbench.runs import read_trec_run, trec_eval_order


def _embeddings(folder: Path, layers: list[int], docs: np.ndarray, queries: np.ndarray) -> Path:
    """``docs`` [layers, docs, dim], ``queries`` [layers, queries, dim] as the encoder writes them."""
    (folder / "toy").mkdir(parents=True)
    np.save(folder / "toy" / "docs.npy", docs.astype(np.float16))
    np.save(folder / "toy" / "queries.npy", queries.astype(np.float16))
    write_manifest(folder, layers, docs.shape[2], {"toy": {}})
    return folder


def _split(n_docs: int, n_queries: int, qrels: list[tuple[str, str, int]]) -> RetrievalSplit:
    return RetrievalSplit(pd.DataFrame({"doc_id": [f"d{i:02d}" for i in range(n_docs)], "title": "", "text": "t"}),
                          pd.DataFrame({"query_id": [f"q{i}" for i in range(n_queries)], "text": "t"}),
                          pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]))


def _text_vectors(texts: list[str], layers: list[int], width: int = 8) -> np.ndarray:
    """A stand-in encoder's output: text "x<i>" at layer l is l * 100 + i + [0, 0.1, ...]."""
    return np.array([[[layer * 100 + int(text[1:]) + d / 10 for d in range(width)] for text in texts]
                     for layer in layers], dtype=np.float32)


def test_encoding_writes_each_texts_layers_cut_to_max_dim_in_its_row(tmp_path, monkeypatch):
    """Seven documents in chunks of 3 (3, 3, 1) at 2 per batch, layers [3, 1] cut to 5 of 8 dims: row i
    of every layer is text i's; documents at p_max tokens, queries at q_max, and the model has its own
    length again afterwards (the model's own for a length not given); every pass at the precision asked
    (evaluation.precision)."""
    from types import SimpleNamespace

    from trimbench.dense import search

    calls, precisions = [], []

    def encode_layers(model, texts, layers, batch_size, max_dim=None, precision="fp32"):
        calls.append((model.max_seq_length, list(texts)))
        precisions.append(precision)
        return _text_vectors(texts, layers)[:, :, :max_dim or 8]

    monkeypatch.setattr(search, "encode_layers", encode_layers)
    model = SimpleNamespace(max_seq_length=128)
    split = _split(7, 2, [])
    split.corpus["text"] = [f"d{i}" for i in range(7)]
    split.queries["text"] = ["q0", "q1"]
    counts = search.encode_retrieval_set(model, split, [3, 1], 5, tmp_path, q_max=16, p_max=32, batch_size=2,
                                         chunk_size=3, precision="bf16")
    assert counts == {"docs": 7, "queries": 2} and model.max_seq_length == 128
    assert precisions == ["bf16"] * 4
    docs, queries = np.load(tmp_path / "docs.npy"), np.load(tmp_path / "queries.npy")
    assert docs.dtype == np.float16
    assert np.array_equal(docs, _text_vectors([f"d{i}" for i in range(7)], [3, 1])[:, :, :5].astype(np.float16))
    assert np.array_equal(queries, _text_vectors(["q0", "q1"], [3, 1])[:, :, :5].astype(np.float16))
    assert [length for length, _ in calls] == [32, 32, 32, 16]
    assert sorted(text for _, texts in calls[:3] for text in texts) == [f"d{i}" for i in range(7)]
    # another dataset's queries over that corpus: into a folder of their own, at q_max tokens
    assert search.encode_queries(model, split.queries, [1], 5, tmp_path / "other" / "dl", None, 2,
                                 "fp16") == {"queries": 2}
    assert calls[-1] == (128, ["q0", "q1"]) and model.max_seq_length == 128 and precisions[-1] == "fp16"
    assert np.load(tmp_path / "other" / "dl" / "queries.npy").shape == (1, 2, 5)


def test_each_cell_searches_its_slice_and_cosine_normalises_the_slice(tmp_path):
    """d00 = [1, 0, 0], d01 = [1, 1, 9], query [1, 1, 0], d00 relevant. Cut to 2 dims d01 is the
    query's direction (cosine 1 against 0.71): MRR 0.5. At 3 dims d01 points away (0.16): MRR 1. A
    search one dim too wide, or normalised at full width before the cut, gives 1 at 2 dims."""
    emb = _embeddings(tmp_path / "emb", [1], np.array([[[1, 0, 0], [1, 1, 9]]]), np.array([[[1, 1, 0]]]))
    split = _split(2, 1, [("q0", "d00", 1)])
    rows = grid_scores(emb, "toy", split, [1], [2, 3], ["mrr@10"], 10, "cosine", None, {})
    assert {r["dim"]: r["value"] for r in rows} == {2: 0.5, 3: 1.0}


def test_a_stale_encoding_is_one_error_naming_its_folder(tmp_path):
    """An encoding made for other data (documents or queries added since) or without a layer the grid
    (or the fixed-doc model's passage layer) asks for: delete it and re-run, not a silent search."""
    emb = _embeddings(tmp_path / "emb", [1], np.array([[[2, 0], [1, 0]]]), np.array([[[1, 0]]]))
    split = _split(2, 1, [("q0", "d00", 1)])
    stale = rf"'{emb / 'toy'}' \(made by rule encode_corpus\) does not match the data or lacks layers"
    cases = [(split, [1, 2], None, r"\[2\]"), (split, [1], 3, r"\[3\]"), (_split(3, 1, []), [1], None, r"\[\]"),
             (_split(2, 2, []), [1], None, r"\[\]")]
    for data, layers, passage_layer, missing in cases:
        with pytest.raises(RuntimeError, match=f"{stale} {missing}: delete it and re-run"):
            grid_scores(emb, "toy", data, layers, [2], ["mrr@10"], 10, "dot", None, {}, passage_layer=passage_layer)


def test_grid_scores_pass_the_datasets_relevance_level(tmp_path):
    """d00 (grade 1) above d01 (grade 2): MRR 1 at level 1, 0.5 at TREC DL's level 2."""
    emb = _embeddings(tmp_path / "emb", [1], np.array([[[2, 0], [1, 0]]]), np.array([[[1, 0]]]))
    split = _split(2, 1, [("q0", "d00", 1), ("q0", "d01", 2)])
    level = {lv: grid_scores(emb, "toy", split, [1], [2], ["mrr@10"], 10, "dot", None, {}, relevance_level=lv)
             for lv in (1, 2)}
    assert [level[1][0]["value"], level[2][0]["value"]] == [1.0, 0.5]


def _brute_force(docs: np.ndarray, queries: np.ndarray, doc_ids: list[str], query_ids: list[str],
                 similarity: str, k: int) -> pd.DataFrame:
    """Every query's top k by a plain matrix product in float64 (cosine: rows normalised after the
    cut), in trec_eval's order: score descending, ties by document id descending."""
    docs, queries = docs.astype(np.float64), queries.astype(np.float64)
    if similarity == "cosine":
        docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    rows = []
    # rounded: scores equal in exact arithmetic (an orthogonal pair's 0 and -1e-17) tie
    for query_id, scores in zip(query_ids, np.round(queries @ docs.T, 9), strict=True):
        ranked = sorted(zip(scores, doc_ids, strict=True), key=lambda hit: hit[1], reverse=True)
        ranked.sort(key=lambda hit: -hit[0])  # stable: ties keep the id order
        rows += [(query_id, doc_id, score) for score, doc_id in ranked[:k]]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


#: held layers, their grid: every (layer, dim) cell of a 2-layer, 6-wide toy model
LAYERS, DIMS = [1, 3], [6, 4, 1]


@pytest.fixture(scope="module")
def random_grid(tmp_path_factory) -> tuple[Path, RetrievalSplit, np.ndarray, np.ndarray]:
    """30 documents with small integer coordinates (exact in fp16 and in float32 sums), of which
    d05, d17 and d29 are copies of d11 (ties whatever the cut); 8 queries (fewer than faiss'
    BLAS threshold, 20: its per-pair inner products score equal vectors equally)."""
    rng = np.random.default_rng(3)
    docs = rng.integers(-4, 5, size=(len(LAYERS), 30, max(DIMS))).astype(float)
    docs[:, [5, 17, 29]] = docs[:, [11]]
    docs[docs == 0] = 1  # no zero vector at any cut: cosine is defined everywhere
    queries = rng.integers(-4, 5, size=(len(LAYERS), 8, max(DIMS))).astype(float)
    queries[queries == 0] = 1
    emb = _embeddings(tmp_path_factory.mktemp("grid") / "emb", LAYERS, docs, queries)
    qrels = [(f"q{q}", f"d{d:02d}", 1 + (q + d) % 2) for q in range(8) for d in rng.choice(30, 3, replace=False)]
    return emb, _split(30, 8, qrels), docs, queries


@pytest.mark.parametrize("similarity", ["dot", "cosine"])
@pytest.mark.parametrize("k", [30, 7])
def test_every_cells_run_is_the_brute_force_ranking(random_grid, tmp_path, similarity, k):
    """The run of every (layer, dim) cell, read in trec_eval's order (what every metric reads), is the
    numpy ranking of the cell's slice, its scores equal. k = 30 ranks every document, ties included;
    at k = 7 faiss picks among documents tied at the cut, so there the run holds the brute force's
    7 scores and every document scoring above the 7th."""
    from trimbench.runs import evaluate_run

    emb, split, docs, queries = random_grid
    doc_ids, query_ids = list(split.corpus["doc_id"]), list(split.queries["query_id"])
    runs = tmp_path / "runs" / "toy"  # made as needed
    rows = grid_scores(emb, "toy", split, LAYERS, DIMS, ["ndcg@10"], k, similarity, runs, {"variant": "v"})
    assert len(rows) == len(LAYERS) * len(DIMS)
    assert {(r["variant"], r["dataset"], r["metric"]) for r in rows} == {("v", "toy", "ndcg@10")}
    for slot, layer in enumerate(LAYERS):
        for dim in DIMS:
            want = _brute_force(docs[slot, :, :dim], queries[slot, :, :dim], doc_ids, query_ids, similarity, k)
            path = runs / f"toy.L{layer}.d{dim}.trec"
            assert {line.split()[-1] for line in path.read_text().splitlines()} == {f"L{layer}-d{dim}"}
            run = read_trec_run(path)
            for query_id, hits in trec_eval_order(run).groupby("query_id"):
                expected = want[want["query_id"] == query_id]
                assert hits["score"].to_numpy() == pytest.approx(expected["score"].to_numpy(), abs=1e-5)
                if k == len(doc_ids):
                    assert hits["doc_id"].tolist() == expected["doc_id"].tolist(), (layer, dim, query_id)
                else:
                    above = expected["score"] > expected["score"].iloc[-1] + 1e-5
                    assert set(expected["doc_id"][above]) <= set(hits["doc_id"]), (layer, dim, query_id)
            # the score rows are the metrics of that ranking
            cell = {r["metric"]: r["value"] for r in rows if (r["layer"], r["dim"]) == (layer, dim)}
            if k == len(doc_ids):
                assert cell == pytest.approx(evaluate_run(want, split.qrels, ["ndcg@10"]), abs=1e-9)
    if k == len(doc_ids):  # the premise of the ties: d11's copies tie, so the largest id ranks first
        run = trec_eval_order(read_trec_run(runs / "toy.L1.d6.trec"))
        order = run.loc[run["query_id"] == "q0", "doc_id"]
        assert order[order.isin(["d05", "d11", "d17", "d29"])].tolist() == ["d29", "d17", "d11", "d05"]


def test_a_splits_queries_are_batched_in_one_length_order_however_many(tmp_path, monkeypatch):
    """A split's queries go to the encoder in one call, at the batch size given: one length order over
    all of them, SentenceTransformer.encode's batches, even past the corpus' chunk of 50,000 texts."""
    from types import SimpleNamespace

    from trimbench.dense import search

    calls = []

    def encode_layers(model, texts, layers, batch_size, max_dim=None, precision="fp32"):
        calls.append((len(texts), batch_size))
        return np.ones((len(layers), len(texts), max_dim), dtype=np.float32)

    monkeypatch.setattr(search, "encode_layers", encode_layers)
    queries = pd.DataFrame({"query_id": [f"q{i}" for i in range(50_001)], "text": [f"q{i}" for i in range(50_001)]})
    counts = search.encode_queries(SimpleNamespace(max_seq_length=128), queries, [1], 2, tmp_path, None, 7)
    assert counts == {"queries": 50_001} and calls == [(50_001, 7)]
    assert np.load(tmp_path / "queries.npy", mmap_mode="r").shape == (1, 50_001, 2)


def test_a_dataset_over_another_ones_corpus_searches_that_corpus(tmp_path):
    """DL19's queries over MS MARCO dev's encoded corpus (the manifest's ``docs_of``); a dataset the
    manifest has no entry for reads its own folder. dev: d00 = [1, 0] above d01 = [0, 1] for q0 = [1, 0];
    dl19's q0 = [0, 1] ranks d01 first: MRR 1 for d01 judged relevant under both."""
    emb = tmp_path / "emb"
    for name, queries in (("dev", [[[1, 0]]]), ("dl19", [[[0, 1]]])):
        (emb / name).mkdir(parents=True)
        np.save(emb / name / "queries.npy", np.array(queries, dtype=np.float16))
    np.save(emb / "dev" / "docs.npy", np.array([[[1, 0], [0, 1]]], dtype=np.float16))
    write_manifest(emb, [1], 2, {"dl19": {"docs_of": "dev"}})
    split = _split(2, 1, [("q0", "d01", 1)])
    scores = {name: grid_scores(emb, name, split, [1], [2], ["mrr@10"], 10, "dot", None, {})[0]["value"]
              for name in ("dev", "dl19")}
    assert scores == {"dev": 0.5, "dl19": 1.0}


def test_manifest_is_sorted_json_one_key_a_line(tmp_path):
    """The same encoding writes the same manifest whatever order its datasets were encoded in."""
    write_manifest(tmp_path, [3, 1], 5, {"b": {"queries": 2}, "a": {"docs": 7}})
    text = (tmp_path / "manifest.json").read_text()
    assert text == ('{\n "datasets": {\n  "a": {\n   "docs": 7\n  },\n  "b": {\n   "queries": 2\n  }\n },\n'
                    ' "layers": [\n  3,\n  1\n ],\n "max_dim": 5\n}')
    write_manifest(tmp_path, [3, 1], 5, {"a": {"docs": 7}, "b": {"queries": 2}})
    assert (tmp_path / "manifest.json").read_text() == text
