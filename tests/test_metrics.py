"""Grid metrics against direct re-computation with scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from trimbench.metrics import correlations, prefix_cosines, sts_grid


def test_prefix_cosines_equal_direct_cosines():
    rng = np.random.default_rng(0)
    left, right = rng.normal(size=(20, 16)), rng.normal(size=(20, 16))
    dims = [16, 8, 3]
    got = prefix_cosines(left, right, dims)
    for column, d in enumerate(dims):
        a, b = left[:, :d], right[:, :d]
        expected = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        np.testing.assert_allclose(got[:, column], expected, atol=1e-12)


def test_correlations_equal_scipy_with_ties():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(50, 3))
    scores[:5, 0] = 0.5  # ties
    gold = rng.integers(0, 5, size=50).astype(float)  # many ties, as STS gold scores have
    got = correlations(scores, gold)
    for column in range(3):
        assert np.isclose(got["spearman_cosine"][column], spearmanr(gold, scores[:, column]).statistic)
        assert np.isclose(got["pearson_cosine"][column], pearsonr(gold, scores[:, column]).statistic)


def test_sts_grid_rows():
    rng = np.random.default_rng(2)
    embeddings = rng.normal(size=(2, 10, 8)).astype(np.float32)
    first, second = np.arange(0, 5), np.arange(5, 10)
    gold = rng.uniform(size=5)
    rows = sts_grid(embeddings, [3, 6], first, second, gold, [8, 4], ["spearman_cosine"])
    assert [(r["layer"], r["dim"]) for r in rows] == [(3, 8), (3, 4), (6, 8), (6, 4)]
    a, b = embeddings[1, first, :4], embeddings[1, second, :4]
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert np.isclose(rows[3]["value"], spearmanr(gold, cos).statistic)


def test_a_cell_without_variance_has_no_correlation_and_a_zero_prefix_cosine_zero():
    """A constant column (every pair the same cosine: a collapsed cell) has no Pearson or Spearman
    (NaN, as scipy says), not whatever the output buffer held; a prefix that is all zeros in one text
    has cosine 0."""
    rng = np.random.default_rng(3)
    scores = np.column_stack([np.full(12, 0.5), rng.normal(size=12)])
    gold = rng.normal(size=12)
    got = correlations(scores, gold)
    for name in ("pearson_cosine", "spearman_cosine"):
        assert np.isnan(got[name][0]) and np.isfinite(got[name][1]), (name, got[name])
    left, right = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    left[1, :3] = 0.0
    cosines = prefix_cosines(left, right, [3, 6])
    assert cosines[1, 0] == 0.0 and np.all(np.isfinite(cosines))


def test_sts_grid_rows_name_their_metric():
    rng = np.random.default_rng(4)
    embeddings = rng.normal(size=(1, 8, 4))
    rows = sts_grid(embeddings, [2], np.arange(4), np.arange(4, 8), rng.uniform(size=4), [4],
                    ["spearman_cosine", "pearson_cosine"])
    assert [sorted(row) for row in rows] == [["dim", "layer", "metric", "value"]] * 2
    assert [row["metric"] for row in rows] == ["spearman_cosine", "pearson_cosine"]


def test_correlations_of_close_cosines_and_float32_gold_equal_scipy_in_double_precision():
    """STS cosines of a trimmed cell often differ by hundredths (a product of sums of squares far below 1
    must still be a correlation), and a gold column read as float32 is still correlated in float64:
    equal to scipy's to 1e-12."""
    rng = np.random.default_rng(5)
    scores = 0.5 + rng.uniform(0, 0.01, size=(8, 2))
    gold = rng.uniform(0, 1, size=8).astype(np.float32)
    got = correlations(scores, gold)
    exact = gold.astype(np.float64)
    for column in range(2):
        assert got["pearson_cosine"][column] == pytest.approx(pearsonr(exact, scores[:, column]).statistic, abs=1e-12)
        assert got["spearman_cosine"][column] == pytest.approx(spearmanr(exact, scores[:, column]).statistic,
                                                               abs=1e-12)


def test_a_collapsed_cell_is_nan_without_numpys_divide_warning():
    """0 / 0 is never computed (a smoke run's tiny random models collapse cells: the job log would fill
    with numpy's 'invalid value encountered in divide')."""
    import warnings

    scores = np.column_stack([np.full(6, 0.25), np.arange(6.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = correlations(scores, np.array([0.0, 1, 0, 1, 2, 3]))
    assert np.isnan(got["pearson_cosine"][0]) and np.isnan(got["spearman_cosine"][0])
    assert np.isfinite(got["pearson_cosine"][1])


def test_a_dead_prefix_over_many_pairs_has_cosine_exactly_zero():
    """Every pair's first 4 dims zero (a model whose leading dims died), over a few hundred pairs: each
    cosine at dim 4 is exactly 0 (never what numpy's output buffer held) and no warning is raised; the
    full width is the plain cosine."""
    import warnings

    rng = np.random.default_rng(6)
    left, right = rng.normal(size=(300, 8)), rng.normal(size=(300, 8))
    left[:, :4] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cosines = prefix_cosines(left, right, [4, 8, 2])
    assert np.array_equal(cosines[:, [0, 2]], np.zeros((300, 2)))
    full = (left * right).sum(1) / np.linalg.norm(left, axis=1) / np.linalg.norm(right, axis=1)
    np.testing.assert_allclose(cosines[:, 1], full, atol=1e-12)
