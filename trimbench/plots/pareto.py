"""Pareto fronts of cost against quality (parameters, FLOPS, latency vs a score), for any track.

A point is on the front when no other point is at most as costly and at least as good with one
of the two strictly better. Points equal in both are all on the front (none dominates another).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def pareto_mask(cost, quality) -> np.ndarray:
    """Boolean mask of the non-dominated points for lower ``cost`` and higher ``quality``.

    Sorted by cost (ties: best quality first), a point is on the front when its quality beats
    every cheaper point's, or equals the best so far at the same cost as that best point.
    NaN points are never on the front.
    """
    cost = np.asarray(cost, dtype=float)
    quality = np.asarray(quality, dtype=float)
    mask = np.zeros(len(cost), dtype=bool)
    valid = np.flatnonzero(~(np.isnan(cost) | np.isnan(quality)))
    order = valid[np.lexsort((-quality[valid], cost[valid]))]
    best_quality, best_cost = -np.inf, None
    for index in order:
        if quality[index] > best_quality:
            mask[index] = True
            best_quality, best_cost = quality[index], cost[index]
        elif quality[index] == best_quality and cost[index] == best_cost:
            mask[index] = True  # the same point twice: neither dominates the other
    return mask


def pareto_front(frame: pd.DataFrame, cost: str, quality: str) -> pd.DataFrame:
    """The rows of ``frame`` on the front, cheapest first."""
    front = frame[pareto_mask(frame[cost], frame[quality])]
    return front.sort_values([cost, quality], ascending=[True, False])


def plot_front(ax, frame: pd.DataFrame, cost: str, quality: str, label: str = "Pareto front", **style) -> None:
    """Draw the front of ``frame`` on ``ax`` as a staircase: quality holds until a costlier point
    improves it."""
    front = pareto_front(frame, cost, quality)
    if front.empty:
        return
    style = {"color": "black", "linewidth": 1.2, "zorder": 1, **style}
    ax.step(front[cost], front[quality], where="post", label=label, **style)
