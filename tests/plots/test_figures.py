"""Figures a person reads in the report: no point at 0 on a log axis, no legend over a data point
(measured on the drawn matplotlib artists)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from trimbench.dense import homedepot
from trimbench.plots import figures

REPO = Path(__file__).resolve().parents[2]


def drawn(monkeypatch, module, draw, *args):
    """The figure ``draw`` makes (kept from being saved and closed), drawn."""
    kept = {}
    monkeypatch.setattr(module, "save", lambda figure, paths: kept.setdefault("figure", figure))
    draw(*args, {})
    figure = kept["figure"]
    figure.canvas.draw()
    return figure


def data_points(ax) -> np.ndarray:
    """Every data point of ``ax`` (lines' vertices, scatter offsets) in display coordinates."""
    points = [line.get_transform().transform(line.get_xydata()) for line in ax.get_lines() if len(line.get_xydata())]
    points += [c.get_offset_transform().transform(c.get_offsets()) for c in ax.collections if len(c.get_offsets())]
    return np.concatenate(points)


def covered(figure, ax) -> list:
    """The data points of ``ax`` inside any legend of the figure or of an axes."""
    renderer = figure.canvas.get_renderer()
    legends = [*figure.legends, *(a.get_legend() for a in figure.axes if a.get_legend())]
    return [(x, y) for legend in legends for x, y in data_points(ax)
            if legend.get_window_extent(renderer).contains(x, y)]


def test_the_pareto_figure_puts_no_point_at_0_on_its_log_axis_and_says_what_it_leaves_out(monkeypatch):
    """The probe: a cut at k = 0 (cost 0) sat at a "0" tick of a symlog axis among powers of 2."""
    points = pd.DataFrame({"experiment": "e", "track": "electra", "variant": "m", "layer": [0, 1, 2, 3],
                           "dim": 64, "cost": [0.0, 64.0, 128.0, 192.0], "score": [0.3, 0.5, 0.6, 0.62]})
    figure = drawn(monkeypatch, figures, figures.cross_track_pareto_figure, points, "layers kept × dim",
                   "spearman", "t")
    (ax,) = figure.axes
    assert ax.get_xscale() == "log"
    shown = np.concatenate([c.get_offsets() for c in ax.collections])
    assert len(shown) == 3 and (shown[:, 0] > 0).all()
    assert "not shown: 1 cell of cost 0" in ax.get_xlabel()
    assert not covered(figure, ax)


def test_the_homedepot_figures_legend_covers_no_published_cross(monkeypatch):
    """The probe: the legend sat over a published cross of the smoke run's figure."""
    published = pd.read_csv(REPO / "reference" / "homedepot.csv")
    methods = ["pretrained", "full", "matryoshka"]
    # Ours well below the write-up's (a small model trained briefly): lines low, crosses high, the
    # axes filled from bottom to top (where matplotlib's "best" legend place covered a cross).
    mine = published[(published["model"] == "all-MiniLM-L6-v2") & (published["metric"] == "recall@10")]
    labels = {label: name for name, label in homedepot.METHOD_LABELS.items()}
    scores = pd.DataFrame({"variant": mine["method"].map(labels), "layer": 6, "dim": mine["dim"],
                           "metric": "recall@10", "value": mine["value"] - 0.3})
    config = {"model": "minilm", "methods": methods, "reference": {"model": "all-MiniLM-L6-v2"}}
    figure = drawn(monkeypatch, homedepot, homedepot.recall_figure, scores, published, config, "t")
    (ax,) = figure.axes
    assert len(data_points(ax)) >= 2 * len(mine)  # our lines and the crosses were drawn
    assert not covered(figure, ax)


def test_a_long_description_makes_a_title_of_three_lines_at_the_figures_width(tmp_path):
    """The probe's C25: a 20,000-character description put on one title line made the grid figure
    206,087 x 601 pixels (PIL refuses it as a decompression bomb)."""
    from PIL import Image

    from trimbench.plots.layers import layer_panels

    description = "emoji 😀 and words " * 1100
    data = pd.DataFrame({"layer": [1, 1, 2, 2], "dim": [8, 16, 8, 16], "score": [0.1, 0.2, 0.3, 0.4],
                         "method": "full", "source": "ours"})
    layer_panels(data, "spearman", f"sts-v1: {description}", {"png": str(tmp_path / "grid.png")})
    width, height = Image.open(tmp_path / "grid.png").size
    assert width < 1500 and height < 800, (width, height)
    title = figures.fitted_title(f"first line\n{description}", 5.0)
    lines = title.split("\n")
    assert lines[0] == "first line" and len(lines) == 1 + figures.TITLE_LINES and lines[-1].endswith(" …")
    assert all(len(line) <= 5 * figures.TITLE_CHARACTERS_PER_INCH for line in lines)
    assert figures.fitted_title("a short title", 5.0) == "a short title"
