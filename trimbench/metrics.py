"""STS metrics over a whole (layer, dim) grid at once.

Cosine similarity of every prefix length comes from cumulative sums over the embedding axis, so a
layer's whole row of dims costs one pass over its embeddings instead of one per cell. Spearman is
the Pearson correlation of average ranks (``scipy.stats.spearmanr``'s definition), and both are
computed column-wise for all dims together. This is what sentence-transformers'
``EmbeddingSimilarityEvaluator`` reports as ``pearson_cosine`` / ``spearman_cosine``.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata


def prefix_cosines(left: np.ndarray, right: np.ndarray, dims: list[int]) -> np.ndarray:
    """``[n_pairs, len(dims)]`` cosine of ``left[:, :d]`` and ``right[:, :d]`` for each d."""
    left = left.astype(np.float64, copy=False)
    right = right.astype(np.float64, copy=False)
    columns = np.asarray(dims) - 1
    dot = np.cumsum(left * right, axis=1)[:, columns]
    norm_left = np.cumsum(left * left, axis=1)[:, columns]
    norm_right = np.cumsum(right * right, axis=1)[:, columns]
    denominator = np.sqrt(norm_left * norm_right)
    return np.divide(dot, denominator, out=np.zeros_like(dot), where=denominator > 0)


def _columnwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each column of ``x`` with the vector ``y``."""
    x = x - x.mean(axis=0)
    y = y - y.mean()
    denominator = np.sqrt((x * x).sum(axis=0) * (y * y).sum())
    return np.divide(x.T @ y, denominator, out=np.full(x.shape[1], np.nan), where=denominator > 0)


def correlations(scores: np.ndarray, gold: np.ndarray) -> dict[str, np.ndarray]:
    """Pearson and Spearman of each column of ``scores`` [n, k] against ``gold`` [n]."""
    gold = np.asarray(gold, dtype=np.float64)
    return {
        "pearson_cosine": _columnwise_pearson(scores, gold),
        "spearman_cosine": _columnwise_pearson(rankdata(scores, axis=0), rankdata(gold)),
    }


def sts_grid(embeddings: np.ndarray, layers: list[int], first: np.ndarray, second: np.ndarray,
             gold: np.ndarray, dims: list[int], metrics: list[str]) -> list[dict]:
    """Rows (layer, dim, metric, value) for every cell of the grid.

    ``embeddings`` is ``[len(layers), n_texts, >= max(dims)]``; ``first``/``second`` index the two
    texts of each pair.
    """
    rows = []
    for slot, layer in enumerate(layers):
        cosines = prefix_cosines(embeddings[slot, first], embeddings[slot, second], dims)
        values = correlations(cosines, gold)
        for metric in metrics:
            for dim, value in zip(dims, values[metric], strict=True):
                rows.append({"layer": int(layer), "dim": int(dim), "metric": metric, "value": float(value)})
    return rows
