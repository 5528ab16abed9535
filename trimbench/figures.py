"""Figures as views of the tidy score table, written byte-reproducibly."""

from __future__ import annotations

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
                     metric: str, title: str, paths: dict[str, str]) -> None:
    """One panel per layer, x = dim (log2), y = score, one line per method; published dashed."""
    long = ours_vs_published(scores, published, reference_variant, dataset, metric)
    _layer_panels(_ours_and_published(long, f"published {reference_variant}"), metric, title, paths)


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
                  row_order: list[str] | None = None) -> None:
    layers = sorted(data["layer"].unique())
    methods = [m for m in METHOD_ORDER if m in set(data["method"])]
    methods += sorted(set(data["method"]) - set(methods))
    # Without a row facet, wrap the layers four to a line; with one, a row per version.
    wrap = min(len(layers), 4) if row is None and len(layers) > 1 else None
    grid = sns.relplot(data=data, x="dim", y="score", hue="method", hue_order=methods, style="source",
                       col="layer", col_wrap=wrap, row=row, row_order=row_order, kind="line", marker="o",
                       markersize=4, height=2.6, aspect=1.1, facet_kws={"sharey": True})
    dims = sorted(data["dim"].unique())
    for ax in grid.axes.flat:
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [str(d) for d in dims], fontsize=7)
        ax.minorticks_off()
        ax.grid(alpha=0.3)
    grid.set_titles("layer {col_name}" if row is None else "{row_name} · layer {col_name}")
    grid.set_axis_labels("dim", metric)
    grid.figure.suptitle(title, y=1.02)
    save(grid.figure, paths)


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
