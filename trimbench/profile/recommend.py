"""The answer of a profile: the Pareto front of quality against cost, and the cut to deploy.

A *cell* is one (layer, dim, precision) of one model; its quality on a dataset is the profile's
metric there (:mod:`trimbench.profile.quality`), its costs the encode time per text of the model cut
at that layer (measured, :mod:`trimbench.profile.cost`) and the bytes of one embedding. The full model
is the cell (every layer, the whole width, float32).

The recommended cut at tolerance τ is the cheapest cell whose quality is at least (1 − τ) times the
full model's on *every* dataset profiled: cheapest by encode time first (what a cut layer buys), then
bytes, then the better worst-case quality. The full model always qualifies, so there is always an answer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trimbench.errors import ConfigError
from trimbench.plots.pareto import pareto_mask

CELL = ["layer", "dim", "precision"]


def check_tolerances(tolerances: list, key: str) -> None:
    """Each tolerance a fraction strictly between 0 and 1, else one error naming ``key``."""
    if not tolerances:
        raise ConfigError(f"{key}: give at least one tolerance (a fraction of the full model's quality, e.g. 0.01)")
    for tolerance in tolerances:
        if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not 0 < tolerance < 1:
            raise ConfigError(f"{key}: tolerance {tolerance!r} is outside (0, 1): it is the fraction of the full "
                              "model's quality a cut may lose (0.01 = 1 %)")


def full_cell(cells: pd.DataFrame) -> tuple[int, int, str]:
    """The full model's cell: the deepest layer, the whole width, float32."""
    return int(cells["layer"].max()), int(cells["dim"].max()), "float32"


def relative_quality(cells: pd.DataFrame) -> pd.DataFrame:
    """``cells`` of one model with ``relative``: each value over the full model's on its dataset."""
    layer, dim, precision = full_cell(cells)
    full = cells[(cells["layer"] == layer) & (cells["dim"] == dim) & (cells["precision"] == precision)]
    if full.empty:
        raise ValueError(f"the profile lacks the full model's cell (layer {layer}, dim {dim}, float32)")
    reference = cells["dataset"].map(full.set_index("dataset")["value"]).to_numpy(dtype=float)
    value = cells["value"].to_numpy(dtype=float)
    # A full model scoring 0 or less (a random stand-in) gives no ratio: a cell as good keeps "all" of it.
    kept = np.divide(value, reference, out=(value >= reference).astype(float), where=reference > 0)
    return cells.assign(relative=kept)


def summarised_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per cell of one model over every dataset it was profiled on: the worst and the mean
    relative quality, the mean encode seconds per text, the bytes of an embedding; cells missing on a
    dataset are dropped (a cut must be judged on every task)."""
    cells = relative_quality(cells)
    datasets = cells["dataset"].nunique()
    grouped = cells.groupby(CELL, as_index=False).agg(
        worst=("relative", "min"), mean_relative=("relative", "mean"), datasets=("dataset", "nunique"),
        encode_seconds=("encode_seconds", "mean"), bytes=("bytes", "first"))
    return grouped[grouped["datasets"] == datasets].drop(columns="datasets").reset_index(drop=True)


def recommend(cells: pd.DataFrame, tolerances: list[float]) -> pd.DataFrame:
    """For each model and tolerance, the cheapest cell within it (module docstring), with its
    speed-up (full encode time / its encode time) and size ratio (full bytes / its bytes).

    ``cells``: one row per (model, dataset, layer, dim, precision) with ``value``, ``encode_seconds``
    (per text, at that layer on that dataset) and ``bytes`` (of one embedding)."""
    out = []
    for model, own in cells.groupby("model", sort=False):
        summary = summarised_cells(own)
        layer, dim, precision = full_cell(own)
        full = summary[(summary["layer"] == layer) & (summary["dim"] == dim)
                       & (summary["precision"] == precision)].iloc[0]
        for tolerance in tolerances:
            within = summary[summary["worst"] >= 1 - tolerance - 1e-12]
            best = within.sort_values(["encode_seconds", "bytes", "worst"], ascending=[True, True, False],
                                      kind="stable").iloc[0]
            out.append({"model": model, "tolerance": tolerance, "layer": int(best["layer"]), "dim": int(best["dim"]),
                        "precision": best["precision"], "worst_relative": float(best["worst"]),
                        "mean_relative": float(best["mean_relative"]),
                        "speedup": float(full["encode_seconds"] / best["encode_seconds"]),
                        "size_ratio": float(full["bytes"] / best["bytes"]),
                        "encode_seconds": float(best["encode_seconds"]), "bytes": int(best["bytes"]),
                        "full_encode_seconds": float(full["encode_seconds"]), "full_bytes": int(full["bytes"])})
    return pd.DataFrame(out)


def family_front(cells: pd.DataFrame, cost: str) -> pd.DataFrame:
    """The cells of one task family (every model), each averaged over the family's datasets (mean
    value), with ``on_front``: on its model's Pareto front of that mean against ``cost``
    (``encode_seconds`` or ``bytes``), lower cost and higher quality better."""
    averaged = cells.groupby(["model", *CELL], as_index=False).agg(
        value=("value", "mean"), encode_seconds=("encode_seconds", "mean"), bytes=("bytes", "first"))
    fronts = [part.assign(on_front=pareto_mask(part[cost], part["value"]))
              for _, part in averaged.groupby("model", sort=False)]
    return pd.concat(fronts, ignore_index=True)


def model_card(name: str, source: str, pick: pd.Series, per_dataset: pd.DataFrame) -> str:
    """The README.md of an exported cut: what it is, and its measured quality, speed and size beside
    the full model's. ``pick`` is a row of :func:`recommend`; ``per_dataset`` the cut's and the full
    model's values (columns dataset, metric, cut, full)."""
    lines = [
        f"# {name}: {source} cut to {pick['layer']} layers, {pick['dim']} dims, {pick['precision']}",
        "",
        f"Exported by trimbench's trim profile as the cheapest cut within {pick['tolerance']:.0%} of the full "
        "model's quality on every profiled dataset. Load it with `SentenceTransformer(path)`; it keeps "
        f"`truncate_dim={pick['dim']}`"
        + (f" and should be encoded with `precision=\"{_encode_precision(pick['precision'])}\"`"
           if pick["precision"] != "float32" else "") + ".",
        "",
        "| dataset | metric | this cut | full model | kept |",
        "|---|---|---|---|---|",
    ]
    for row in per_dataset.itertuples(index=False):
        kept = f"{row.cut / row.full:.1%}" if row.full > 0 else "–"
        lines.append(f"| {row.dataset} | {row.metric} | {row.cut:.4f} | {row.full:.4f} | {kept} |")
    lines += [
        "",
        "| measured on the profiling machine | this cut | full model | ratio |",
        "|---|---|---|---|",
        f"| encode time per text (s) | {pick['encode_seconds']:.3g} | {pick['full_encode_seconds']:.3g} | "
        f"{pick['speedup']:.2f}× faster |",
        f"| bytes per embedding | {pick['bytes']} | {pick['full_bytes']} | {pick['size_ratio']:.1f}× smaller |",
        "",
    ]
    return "\n".join(lines)


def _encode_precision(label: str) -> str:
    """The ``encode(precision=...)`` of a profile's precision label (a rescored one stores the same codes)."""
    base = label.split("+")[0]
    return "ubinary" if base == "binary" else base
