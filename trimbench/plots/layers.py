"""Panels of a score over the (layer, dim) grid: one per layer, x = dim on a log2 axis, a line per
method; the figure the 2DMSE grid, its versions and its ablations draw."""

from __future__ import annotations

from fractions import Fraction

import pandas as pd

from trimbench.plots.figures import fitted_title, reference_line, save, sns, thin_tick_labels
from trimbench.scores import BASELINE_LABEL


def layer_panels(data: pd.DataFrame, metric: str, title: str, paths: dict[str, str], row: str | None = None,
                 row_order: list[str] | None = None, col: str = "layer", titles: dict | None = None,
                 sharey: bool | str = True, baseline: float | None = None, method_order: tuple = ()) -> None:
    """Score against dim (log2) in one panel per layer (``col``), a line per ``method`` (known ones in
    ``method_order`` first, the others sorted), a style per ``source`` (ours, published), a row per
    ``row`` where given. ``baseline``: a horizontal line (BM25's score) on each panel of the first row."""
    columns = sorted(data[col].unique(), key=_panel_order)
    methods = [m for m in method_order if m in set(data["method"])]
    methods += sorted(set(data["method"]) - set(methods))
    # Without a row facet, wrap the layers four to a line; with one, a row per version.
    wrap = min(len(columns), 4) if row is None and len(columns) > 1 else None
    grid = sns.relplot(data=data, x="dim", y="score", hue="method", hue_order=methods, style="source",
                       col=col, col_order=columns, col_wrap=wrap, row=row, row_order=row_order, kind="line",
                       marker="o", markersize=4, height=2.6, aspect=1.1, facet_kws={"sharey": sharey})
    dims = sorted(data["dim"].unique())
    for ax in grid.axes.flat:
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [str(d) for d in dims], fontsize=7)
        ax.minorticks_off()
        ax.grid(alpha=0.3)
    if baseline is not None:
        for key, ax in grid.axes_dict.items():
            if row is None or key[0] == row_order[0]:
                reference_line(ax, baseline, BASELINE_LABEL)
    grid.set_titles("layer {col_name}" if row is None else "{row_name} · layer {col_name}")
    for key, ax in (grid.axes_dict.items() if titles else ()):
        ax.set_title(titles.get(key, ""), fontsize=9)
        if key[1] == columns[0]:
            ax.set_ylabel(f"{key[0]}\n{metric}", fontsize=8)
    if not titles:
        grid.set_axis_labels("dim", metric)
    else:
        grid.set_xlabels("dim")
    title = fitted_title(title, grid.figure.get_figwidth())
    grid.figure.suptitle(title, y=1.02 + 0.03 * title.count("\n"))
    thin_tick_labels(grid.figure)
    save(grid.figure, paths)


def _panel_order(value):
    """Layers by number; depth fractions ("1/3 of the depth", "full depth") by their value."""
    if isinstance(value, str):
        return Fraction(1) if value == "full depth" else Fraction(value.split()[0])
    return value
