"""Figures as views of the tidy score table, written byte-reproducibly."""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from trimbench.jobs.atomic import atomic_path  # noqa: E402
from trimbench.plots.pareto import plot_front

# Fixed metadata and SVG ids: a figure rebuilt from the same scores is the same bytes.
_SAVE_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
plt.rcParams["svg.hashsalt"] = "trimbench"


#: characters of a title per inch of figure width (matplotlib's default title size), and the most
#: lines a title paragraph keeps: a description is free text, and one of 20,000 characters on one
#: line made a 206,087-pixel-wide figure (wrapped whole, a 300-line-tall one)
TITLE_CHARACTERS_PER_INCH = 9
TITLE_LINES = 3


def fitted_title(title: str, width_inches: float) -> str:
    """``title`` wrapped to a figure ``width_inches`` wide, each paragraph cut to
    :data:`TITLE_LINES` lines ending in an ellipsis."""
    width = max(20, int(width_inches * TITLE_CHARACTERS_PER_INCH))
    paragraphs = []
    for paragraph in title.split("\n"):
        lines = textwrap.wrap(paragraph, width) or [""]
        if len(lines) > TITLE_LINES:
            rest = " ".join(lines[TITLE_LINES - 1:])
            lines = [*lines[:TITLE_LINES - 1], textwrap.shorten(rest, width, placeholder=" …")]
        paragraphs.append("\n".join(lines))
    return "\n".join(paragraphs)


def save(figure, paths: dict[str, str]) -> None:
    for fmt, path in paths.items():
        with atomic_path(path) as tmp:
            figure.savefig(tmp, format=fmt, dpi=110, metadata=_SAVE_METADATA[fmt], bbox_inches="tight")
    plt.close(figure)


def reference_line(ax, value: float, label: str) -> None:
    """A baseline with no layer or dim (BM25) across a panel whose x axis is layers or dims, named
    at its right end."""
    ax.axhline(value, color="0.35", linestyle=":", linewidth=1.2)
    ax.annotate(label, (1, value), xycoords=("axes fraction", "data"), xytext=(-2, 2), textcoords="offset points",
                ha="right", va="bottom", fontsize=7, color="0.35")


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
    figure, ax = plt.subplots(figsize=(7.5, 4.2))
    # A cut at k = 0 keeps no transformer layer: cost 0, which a log axis has no place for (the probe:
    # a symlog axis drew it at a "0" among powers of 2). Left out and counted; the CSV keeps it.
    free = points[points["cost"] <= 0]
    points = points[points["cost"] > 0]
    if points.empty:
        ax.text(0.5, 0.5, "no scores on this dataset", ha="center", va="center", transform=ax.transAxes)
    else:
        sns.scatterplot(data=points, x="cost", y="score", hue="experiment", style="variant", s=28, alpha=0.85, ax=ax,
                        hue_order=sorted(points["experiment"].unique()),
                        style_order=sorted(points["variant"].unique()))
        plot_front(ax, points, "cost", "score")
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left", borderaxespad=0)
    cells = f"{len(free)} cell{'s' * (len(free) != 1)}"
    left_out = f"\nnot shown: {cells} of cost 0 (no layer kept; in the CSV)" if len(free) else ""
    ax.set_xlabel(f"{cost_label} (log2){left_out}")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    save(figure, paths)
