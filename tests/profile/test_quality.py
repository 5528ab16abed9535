"""The profile's quality cells against direct computations: Spearman of cosine by scipy, Hamming
distances by numpy, exact search by brute force, BEIR's self-hit removal."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from trimbench.profile.quality import retrieval_cells, search_cell, sts_cells


def _unit(rows):
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _cosine(a, b):
    """Row-wise cosine; 0 for a zero row (all bits 0), as sentence-transformers' pairwise_cos_sim gives."""
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.divide((a * b).sum(1), norms, out=np.zeros(len(a)), where=norms > 0)


@pytest.fixture
def sts_case():
    rng = np.random.default_rng(0)
    layers = [1, 2]
    embeddings = np.stack([_unit(rng.normal(size=(40, 24))) for _ in layers]).astype(np.float32)
    first, second = np.arange(0, 40, 2), np.arange(1, 40, 2)
    gold = rng.uniform(0, 5, size=20)
    return embeddings, layers, first, second, gold


def test_sts_float32_cell_is_spearman_of_cosine(sts_case):
    embeddings, layers, first, second, gold = sts_case
    table = sts_cells(embeddings, layers, first, second, gold, [24, 8], ["float32"])
    cell = embeddings[1, :, :8]
    expected = spearmanr(_cosine(cell[first], cell[second]), gold).statistic
    got = table.query("layer == 2 and dim == 8")["value"].item()
    assert got == pytest.approx(expected, abs=1e-12)
    assert len(table) == 2 * 2 and set(table["metric"]) == {"spearman_cosine"}


def test_sts_int8_cell_quantises_the_normalised_prefix_calibrated_on_the_sets_texts(sts_case):
    from sentence_transformers.util.quantization import quantize_embeddings

    embeddings, layers, first, second, gold = sts_case
    table = sts_cells(embeddings, layers, first, second, gold, [24, 8], ["int8"])
    prefix = _unit(embeddings[0, :, :8])
    codes = quantize_embeddings(prefix, "int8", calibration_embeddings=prefix).astype(float)
    expected = spearmanr(_cosine(codes[first], codes[second]), gold).statistic
    assert table.query("layer == 1 and dim == 8")["value"].item() == pytest.approx(expected, abs=1e-12)


def test_sts_binary_cell_is_the_cosine_of_the_bits(sts_case):
    embeddings, layers, first, second, gold = sts_case
    table = sts_cells(embeddings, layers, first, second, gold, [24, 8], ["binary"])
    bits = (embeddings[1, :, :8] > 0).astype(float)
    expected = spearmanr(_cosine(bits[first], bits[second]), gold).statistic
    assert table.query("layer == 2 and dim == 8")["value"].item() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_sts_cells_equal_sentence_transformers_own_evaluator_at_each_precision(tiny_bert_dir, precision):
    """EmbeddingSimilarityEvaluator(truncate_dim=d, precision=p) on the full model (a 3-layer random BERT):
    the same Spearman as the profile's cell (layer 3, d) from the one-pass grid. (Binary is checked by
    hand above: the evaluator's float32 cosine of 0/1 bits breaks the ties of pairs at equal Hamming
    distance by rounding, where ours keeps them tied, as Spearman's average ranks want.)"""
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from trimbench.encoding import encode_layers
    from trimbench.models import load_sentence_model

    model = load_sentence_model(tiny_bert_dir, device="cpu")
    left = [f"a short sentence about topic {i} and {i * 7 % 5}" for i in range(24)]
    right = [f"another text on topic {i % 6} with words {i * 3 % 4}" for i in range(24)]
    gold = [float((i * 13) % 7) for i in range(24)]
    texts = left + right
    first, second = np.arange(24), np.arange(24, 48)
    embeddings = encode_layers(model, texts, [3], batch_size=8, show_progress=False)
    table = sts_cells(embeddings, [3], first, second, np.asarray(gold), [32, 12], [precision])
    for dim in (32, 12):
        evaluator = EmbeddingSimilarityEvaluator(left, right, gold, batch_size=8, truncate_dim=dim,
                                                 precision=None if precision == "float32" else precision,
                                                 similarity_fn_names=["cosine"])
        theirs = evaluator.compute_metrices(model) if hasattr(evaluator, "compute_metrices") else evaluator(model)
        spearman = next(value for key, value in theirs.items() if key.endswith("spearman_cosine"))
        ours = table.query("dim == @dim")["value"].item()
        assert ours == pytest.approx(spearman, abs=1e-6), (precision, dim)


def test_an_unknown_precision_is_named(sts_case):
    embeddings, layers, first, second, gold = sts_case
    with pytest.raises(ValueError, match="unknown precision 'int4'"):
        sts_cells(embeddings, layers, first, second, gold, [8], ["float32", "int4"])


def test_float32_search_is_the_brute_force_cosine_top_k():
    rng = np.random.default_rng(1)
    docs, queries = rng.normal(size=(50, 16)), rng.normal(size=(5, 16))
    scores, ids = search_cell(docs, queries, "float32", 7)
    brute = _unit(queries) @ _unit(docs).T
    assert (ids == np.argsort(-brute, axis=1)[:, :7]).all()
    assert scores == pytest.approx(np.sort(brute, axis=1)[:, ::-1][:, :7], abs=1e-5)


def test_binary_search_ranks_by_hamming_distance_and_rescoring_by_float_query_times_bits():
    rng = np.random.default_rng(2)
    docs, queries = rng.normal(size=(60, 32)).astype(np.float32), rng.normal(size=(4, 32)).astype(np.float32)
    doc_bits, query_bits = docs > 0, queries > 0
    hamming = (query_bits[:, None, :] != doc_bits[None]).sum(-1)
    scores, ids = search_cell(docs, queries, "binary", 5)
    for q in range(4):
        assert list(-scores[q]) == sorted(hamming[q])[:5]  # the 5 smallest distances, nearest first
        assert (hamming[q, ids[q]] == -scores[q]).all()
    rescored, rescored_ids = search_cell(docs, queries, "binary", 5, rescore_multiplier=4)
    for q in range(4):  # sentence-transformers' rescore: the float query · the document's 0/1 bits
        unit_query = queries[q] / np.linalg.norm(queries[q])  # the normalised prefix is the float query
        assert rescored[q] == pytest.approx(doc_bits[rescored_ids[q]] @ unit_query, abs=1e-4)
        assert list(rescored[q]) == sorted(rescored[q], reverse=True)
        # the candidates are the 20 nearest by Hamming distance (ties at the boundary aside)
        assert hamming[q, rescored_ids[q]].max() <= sorted(hamming[q])[19]


def _self_hit_case():
    """Query "d0" is the document d0 itself; its judged relevant document is d1, second nearest."""
    docs = np.array([[1, 0, 0, 0], [0.9, 0.1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=np.float32)
    queries = docs[:1].copy()
    qrels = pd.DataFrame({"query_id": ["d0"], "doc_id": ["d1"], "relevance": [1]})
    return docs[None], queries[None], [f"d{i}" for i in range(5)], ["d0"], qrels


def test_retrieval_cells_drop_the_querys_own_id_when_asked():
    docs, queries, doc_ids, query_ids, qrels = _self_hit_case()
    kept = retrieval_cells(docs, queries, [3], doc_ids, query_ids, qrels, [4], ["float32"], False)
    dropped = retrieval_cells(docs, queries, [3], doc_ids, query_ids, qrels, [4], ["float32"], True)
    assert kept["value"].item() == pytest.approx(1 / np.log2(3))  # d1 at rank 2
    assert dropped["value"].item() == pytest.approx(1.0)


def test_retrieval_cells_cover_every_layer_dim_and_precision_with_rescored_rows():
    rng = np.random.default_rng(3)
    docs, queries = rng.normal(size=(2, 30, 16)), rng.normal(size=(2, 6, 16))
    qrels = pd.DataFrame({"query_id": [f"q{i}" for i in range(6)], "doc_id": [f"d{i}" for i in range(6)],
                          "relevance": 1})
    table = retrieval_cells(docs, queries, [1, 2], [f"d{i}" for i in range(30)], [f"q{i}" for i in range(6)],
                            qrels, [16, 8], ["float32", "int8", "binary"], False, rescore_multiplier=2)
    assert len(table) == 2 * 2 * 5
    assert set(table["precision"]) == {"float32", "int8", "binary", "int8+rescore", "binary+rescore"}
    assert table["value"].between(0, 1).all()
