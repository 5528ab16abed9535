"""The profile's part of the report: one Pareto figure per task family and cost (every model's cells side
by side, each model's front, its full model starred), and one page of tables (the recommended cuts, the
full model's quality, the measured encode speed and search latency with their spread, the funnel).
"""

from __future__ import annotations

import html

import pandas as pd

from trimbench.plots.figures import plt, save
from trimbench.plots.pareto import plot_front
from trimbench.profile import cost
from trimbench.profile.recommend import family_front, full_cell

#: the profile's cost axes: the column of the cells and its label
COSTS = {"encode": ("encode_seconds", "encode time per text (s, median)"), "bytes": ("bytes", "bytes per embedding")}
MARKERS = {"float32": "o", "int8": "s", "binary": "^", "int8+rescore": "D", "binary+rescore": "v"}


def pareto_figure(cells: pd.DataFrame, family: str, cost_name: str, paths: dict[str, str]) -> None:
    """Mean quality over the family's datasets against one cost, every model's cells side by side."""
    column, label = COSTS[cost_name]
    own = cells[cells["family"] == family]
    figure, ax = plt.subplots(figsize=(7, 4.5))
    if own.empty:
        ax.text(0.5, 0.5, f"no {family} dataset profiled", ha="center", va="center", transform=ax.transAxes)
    else:
        metric = own["metric"].iloc[0]
        points = family_front(own, column)
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for index, (model, part) in enumerate(points.groupby("model", sort=False)):
            colour = colours[index % len(colours)]
            for precision, group in part.groupby("precision", sort=False):
                ax.scatter(group[column], group["value"], s=18, marker=MARKERS.get(precision, "o"), color=colour,
                           alpha=0.55, label=f"{model} {precision}")
            plot_front(ax, part, column, "value", label=f"{model} Pareto front", color=colour)
            layer, dim, _ = full_cell(part)
            full = part[(part["layer"] == layer) & (part["dim"] == dim) & (part["precision"] == "float32")]
            ax.scatter(full[column], full["value"], s=160, marker="*", color=colour, edgecolor="black", zorder=3,
                       label=f"{model} full model (L{layer}, d{dim})")
        ax.set_ylabel(f"mean {metric} over {own['dataset'].nunique()} {family} dataset(s)")
        if cost_name == "bytes":
            ax.set_xscale("log", base=2)
        ax.legend(fontsize=6, ncol=2, loc="lower right")
    ax.set_xlabel(label)
    ax.set_title(f"{family}: quality against {label}")
    save(figure, paths)


def _table(frame: pd.DataFrame, digits: int = 4) -> str:
    return frame.to_html(index=False, float_format=lambda v: f"{v:.{digits}g}", border=0, escape=True)


def profile_page(experiment: str, cells: pd.DataFrame, recommended: pd.DataFrame, encode: pd.DataFrame,
                 search: pd.DataFrame, funnel: pd.DataFrame) -> str:
    """The profile's tables as one standalone HTML page."""
    parts = [f"<h1>Trim profile: {html.escape(experiment)}</h1>"]
    picks = recommended.assign(
        cut=lambda f: [f"L{r.layer} d{r.dim} {r.precision}" for r in f.itertuples()],
        speedup=lambda f: f["speedup"].map(lambda v: f"{v:.2f}×"),
        size_ratio=lambda f: f["size_ratio"].map(lambda v: f"{v:.1f}×"),
        worst_relative=lambda f: f["worst_relative"].map(lambda v: f"{v:.1%}"))
    parts += ["<h2>The cut to deploy</h2>",
              "<p>The cheapest cell (encode time, then bytes) within each tolerance of the full model's quality "
              "on every dataset; speed-up and size against the full model, measured here.</p>",
              _table(picks[["model", "tolerance", "cut", "worst_relative", "speedup", "size_ratio"]])]
    full = []
    for _model, own in cells.groupby("model", sort=False):
        layer, dim, _ = full_cell(own)
        full.append(own[(own["layer"] == layer) & (own["dim"] == dim) & (own["precision"] == "float32")])
    parts += ["<h2>The full models</h2>",
              _table(pd.concat(full)[["model", "dataset", "metric", "layer", "dim", "value"]])]
    wide = cells.pivot_table(index=["model", "dataset", "precision", "layer"], columns="dim", values="value")
    wide = wide[sorted(wide.columns, reverse=True)].reset_index()
    parts += ["<h2>Every cell</h2>", "<p>Rows: model, dataset, precision, layer; columns: dims.</p>", _table(wide)]
    speed = cost.summarise(encode, "texts_per_second", ["model", "dataset", "layer", "batch_size", "device"])
    parts += ["<h2>Encode throughput (texts/s)</h2>",
              "<p>The model cut at each layer, on texts spread over each dataset (its real lengths); median, "
              "min, max and interquartile range over the repeats. The machine may be shared.</p>", _table(speed)]
    if not search.empty:
        latency = cost.summarise(search, "ms_per_query", ["model", "dataset", "dim", "precision", "n_docs"])
        sizes = search.groupby(["model", "dataset", "dim", "precision"], as_index=False)["index_bytes"].first()
        parts += ["<h2>Exact search latency (ms per query) and index size</h2>",
                  _table(latency.merge(sizes, on=["model", "dataset", "dim", "precision"]))]
    if not funnel.empty:
        rows = funnel.groupby(["model", "dataset", "shortlist_dim", "shortlist_size", "exact"], as_index=False).agg(
            value=("value", "first"), ms_per_query_median=("ms_per_query", "median"))
        parts += ["<h2>Adaptive retrieval (Kusupati et al. 2022)</h2>",
                  "<p>Shortlist by the first dims, re-rank at full dim; the exact full-dim search first.</p>",
                  _table(rows)]
    return "<html><head><meta charset='utf-8'></head><body>" + "\n".join(parts) + "</body></html>"


def joined_tables(paths) -> pd.DataFrame:
    """The models' CSV tables of one kind in one frame (a model's empty table, e.g. no funnel, left out)."""
    frames = [frame for frame in (pd.read_csv(path) for path in paths) if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def profile_cells(quality: pd.DataFrame, encode: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Every model's cells with their costs (:func:`trimbench.profile.run.cells_with_costs`)."""
    from trimbench.profile.run import cells_with_costs

    return pd.concat([cells_with_costs(quality[quality["model"] == model], encode[encode["model"] == model])
                      for model in models], ignore_index=True)
