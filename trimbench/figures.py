"""Figures as views of the tidy score table, written byte-reproducibly."""

from __future__ import annotations

from fractions import Fraction

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from trimbench.atomic import atomic_path  # noqa: E402
from trimbench.tables import METHOD_ORDER, VersionBlock, ours_vs_published  # noqa: E402

# Fixed metadata and SVG ids: a figure rebuilt from the same scores is the same bytes.
_SAVE_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
plt.rcParams["svg.hashsalt"] = "trimbench"


def save(figure, paths: dict[str, str]) -> None:
    for fmt, path in paths.items():
        with atomic_path(path) as tmp:
            figure.savefig(tmp, format=fmt, dpi=110, metadata=_SAVE_METADATA[fmt], bbox_inches="tight")
    plt.close(figure)


def sts_layer_figure(scores: pd.DataFrame, published: pd.DataFrame, reference_variant: str, dataset: str,
                     metric: str, title: str, paths: dict[str, str], depth: int | None = None) -> None:
    """One panel per layer, x = dim (log2), y = score, one line per method; published dashed.

    An experiment that shares no cell with the published grid (a toy: another model, depth and
    dataset; ``depth`` its model's layers) shows the published curves in a row of their own below
    ours, on their own y axis, at the same fractions of the depth (our layer k of L beside their
    layer k·L'/L of L'): what the comparison looks like, never a claim that the numbers match.
    """
    long = ours_vs_published(scores, published, reference_variant, dataset, metric)
    paper = None
    if depth and long.dropna(subset=["ours", "published"]).empty:
        paper = published_at_depth(published, reference_variant, metric, sorted(set(long.dropna(subset=["ours"])
                                                                                   ["layer"])), depth)
    if paper is None:
        _layer_panels(_ours_and_published(long, f"published {reference_variant}"), metric, title, paths)
        return
    rows = {"ours": f"ours ({dataset})", "published": f"published {reference_variant} ({paper['dataset'].iloc[0]})"}
    ours = long.dropna(subset=["ours"]).assign(source="ours", score=lambda f: f["ours"], row=rows["ours"],
                                               full_depth=depth)
    paper = paper.assign(source=f"published {reference_variant} (paper scale)", row=rows["published"])
    data = pd.concat([ours, paper], ignore_index=True)
    data["depth"] = [_fraction(layer, full) for layer, full in zip(data["layer"], data["full_depth"], strict=True)]
    titles = {(row, depth_label): f"{'ours' if source == 'ours' else 'published'} · layer {layer} of {full}"
              for row, depth_label, source, layer, full in
              data[["row", "depth", "source", "layer", "full_depth"]].drop_duplicates().itertuples(index=False)}
    _layer_panels(data, metric, f"{title}\nbelow: the published curves at the paper's scale (another model and "
                                "data, no cell in common with ours), at the same fractions of the depth", paths,
                  row="row", row_order=list(rows.values()), col="depth", titles=titles, sharey="row")


def published_at_depth(published: pd.DataFrame, reference_variant: str, metric: str, layers: list[int],
                       depth: int) -> pd.DataFrame | None:
    """The published cells (columns method, layer, dim, score, dataset, full_depth) at the same
    fractions of their model's depth as ``layers`` of ``depth``; None when there are none. Of
    several published datasets, the one with the most cells (the seed's average)."""
    rows = published[(published["variant"] == reference_variant) & (published["metric"] == metric)]
    if rows.empty:
        return None
    counts = rows["dataset"].value_counts()
    rows = rows[rows["dataset"] == min(counts[counts == counts.max()].index)]
    full = int(rows["layer"].max())
    wanted = {round(layer * full / depth) for layer in layers}
    rows = rows[rows["layer"].isin(wanted)]
    if rows.empty:
        return None
    return (rows[["method", "layer", "dim", "value", "dataset"]].rename(columns={"value": "score"})
            .astype({"layer": int, "dim": int}).assign(full_depth=full))


def _fraction(layer: int, depth: int) -> str:
    share = Fraction(int(layer), int(depth))
    return "full depth" if share == 1 else f"{share} of the depth"


def sts_versions_figure(blocks: list[VersionBlock], title: str, paths: dict[str, str]) -> None:
    """The layer panels with one row per experiment (e.g. v1 above v2), ours solid, published dashed."""
    data = pd.concat([_ours_and_published(b.long(), "published").assign(version=b.label) for b in blocks])
    _layer_panels(data, blocks[0].metric, title, paths, row="version",
                  row_order=[b.label for b in blocks])


def _ours_and_published(long: pd.DataFrame, published_label: str) -> pd.DataFrame:
    layers = set(long.dropna(subset=["ours"])["layer"])
    data = pd.concat([
        long.dropna(subset=["ours"]).assign(source="ours", score=lambda f: f["ours"]),
        long.dropna(subset=["published"]).assign(source=published_label, score=lambda f: f["published"]),
    ])
    return data[data["layer"].isin(layers)]


def _layer_panels(data: pd.DataFrame, metric: str, title: str, paths: dict[str, str], row: str | None = None,
                  row_order: list[str] | None = None, col: str = "layer", titles: dict | None = None,
                  sharey: bool | str = True) -> None:
    columns = sorted(data[col].unique(), key=_panel_order)
    methods = [m for m in METHOD_ORDER if m in set(data["method"])]
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
    grid.set_titles("layer {col_name}" if row is None else "{row_name} · layer {col_name}")
    for key, ax in (grid.axes_dict.items() if titles else ()):
        ax.set_title(titles.get(key, ""), fontsize=9)
        if key[1] == columns[0]:
            ax.set_ylabel(f"{key[0]}\n{metric}", fontsize=8)
    if not titles:
        grid.set_axis_labels("dim", metric)
    else:
        grid.set_xlabels("dim")
    grid.figure.suptitle(title, y=1.02 + 0.03 * title.count("\n"))
    thin_tick_labels(grid.figure)
    save(grid.figure, paths)


def _panel_order(value):
    """Layers by number; depth fractions ("1/3 of the depth", "full depth") by their value."""
    if isinstance(value, str):
        return Fraction(1) if value == "full depth" else Fraction(value.split()[0])
    return value


def thin_tick_labels(figure) -> None:
    """Hide x tick labels that would run into a neighbour's (dims 512 and 768 on a log2 axis read
    "512768"): each axis keeps the widest dim's label, then every label at least half its font
    size clear of the last one kept."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for ax in figure.axes:
        kept = None
        labels = [label for label in ax.get_xticklabels() if label.get_visible() and label.get_text()]
        for label in sorted(labels, key=lambda item: -item.get_position()[0]):
            box = label.get_window_extent(renderer)
            gap = label.get_fontsize() * figure.dpi / 72 / 2
            if kept is not None and box.x1 + gap > kept.x0:
                label.set_visible(False)
            else:
                kept = box


def cross_track_pareto_figure(points: pd.DataFrame, cost_label: str, metric: str, title: str,
                              paths: dict[str, str]) -> None:
    """Quality against cost for every variant cell of every experiment on one dataset; colour =
    experiment, marker = variant; the Pareto front (cheapest first) as a black staircase."""
    from trimbench.pareto import plot_front

    figure, ax = plt.subplots(figsize=(7.5, 4.2))
    if points.empty:
        ax.text(0.5, 0.5, "no scores on this dataset", ha="center", va="center", transform=ax.transAxes)
    else:
        sns.scatterplot(data=points, x="cost", y="score", hue="experiment", style="variant", s=28, alpha=0.85, ax=ax,
                        hue_order=sorted(points["experiment"].unique()),
                        style_order=sorted(points["variant"].unique()))
        plot_front(ax, points, "cost", "score")
        positive = points.loc[points["cost"] > 0, "cost"]
        if len(positive) < len(points) and len(positive):
            # Cuts at k = 0 keep no transformer layer (cost 0): linear up to the cheapest other cell.
            ax.set_xscale("symlog", base=2, linthresh=float(positive.min()))
        else:
            ax.set_xscale("log", base=2)
        ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left", borderaxespad=0)
    ax.set_xlabel(f"{cost_label} (log2)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    save(figure, paths)
