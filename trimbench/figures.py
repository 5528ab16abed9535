"""Figures as views of the tidy score table, written byte-reproducibly."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from trimbench.tables import METHOD_ORDER, ours_vs_published  # noqa: E402

# Fixed metadata and SVG ids: a figure rebuilt from the same scores is the same bytes.
_SAVE_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
plt.rcParams["svg.hashsalt"] = "trimbench"


def save(figure, paths: dict[str, str]) -> None:
    for fmt, path in paths.items():
        figure.savefig(path, format=fmt, dpi=110, metadata=_SAVE_METADATA[fmt], bbox_inches="tight")
    plt.close(figure)


def sts_layer_figure(scores: pd.DataFrame, published: pd.DataFrame, reference_variant: str, dataset: str,
                     metric: str, title: str, paths: dict[str, str]) -> None:
    """One panel per layer, x = dim (log2), y = score, one line per method; published dashed."""
    long = ours_vs_published(scores, published, reference_variant, dataset, metric)
    layers = sorted(long.dropna(subset=["ours"])["layer"].unique())
    data = pd.concat([
        long.dropna(subset=["ours"]).assign(source="ours", score=lambda f: f["ours"]),
        long.dropna(subset=["published"]).assign(source=f"published {reference_variant}",
                                                 score=lambda f: f["published"]),
    ])
    data = data[data["layer"].isin(layers)]
    methods = [m for m in METHOD_ORDER if m in set(data["method"])]
    methods += sorted(set(data["method"]) - set(methods))
    columns = min(len(layers), 4)
    grid = sns.relplot(data=data, x="dim", y="score", hue="method", hue_order=methods, style="source",
                       col="layer", col_wrap=columns if len(layers) > 1 else None, kind="line", marker="o",
                       markersize=4, height=2.6, aspect=1.1, facet_kws={"sharey": True})
    dims = sorted(data["dim"].unique())
    for ax in grid.axes.flat:
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [str(d) for d in dims], fontsize=7)
        ax.minorticks_off()
        ax.grid(alpha=0.3)
    grid.set_titles("layer {col_name}")
    grid.set_axis_labels("dim", metric)
    grid.figure.suptitle(title, y=1.02)
    save(grid.figure, paths)
