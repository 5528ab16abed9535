"""Tables and figures from the tidy score table, ours beside published."""

from __future__ import annotations

import dataclasses
import io

import pandas as pd

from trimbench import scores
from trimbench.dense.grid import (
    VersionBlock,
    ours_vs_published,
    sts_grid_tables,
    sts_layer_figure,
    sts_versions_figure,
    sts_versions_tables,
)


def score_rows():
    rows = []
    for method, base in (("full", 0.5), ("2dmse", 0.6), ("pretrained", 0.3)):
        for layer in (2, 4):
            for dim in (8, 16):
                rows.append({"experiment": "x", "track": "2dmse-sts", "variant": method, "model": "m",
                             "layer": layer, "dim": dim, "dataset": "sts-avg7", "split": "test",
                             "metric": "spearman_cosine", "value": base + layer / 100 + dim / 1000})
    return scores.frame(rows)


PUBLISHED = pd.DataFrame([
    {"source": "s", "track": "2dmse-sts", "variant": "v1", "method": "BERT", "layer": 2, "dim": 8,
     "dataset": "sts-avg7", "metric": "spearman_cosine", "value": 0.444},
    {"source": "s", "track": "2dmse-sts", "variant": "v1", "method": "BERT", "layer": 12, "dim": 768,
     "dataset": "sts-avg7", "metric": "spearman_cosine", "value": 0.8},
    {"source": "s", "track": "2dmse-sts", "variant": "v2", "method": "BERT", "layer": 2, "dim": 8,
     "dataset": "sts-avg7", "metric": "spearman_cosine", "value": 0.1},
])


def test_join_covers_both_sides_with_delta():
    long = ours_vs_published(score_rows(), PUBLISHED, "v1", "sts-avg7", "spearman_cosine")
    cell = long[(long.method == "BERT") & (long.layer == 2) & (long.dim == 8)].iloc[0]
    assert abs(cell.ours - 0.528) < 1e-9 and cell.published == 0.444 and abs(cell.delta - 0.084) < 1e-9
    assert long[(long.layer == 12)].ours.isna().all()  # published only
    assert set(long.method) == {"pretrained", "BERT", "2DMSE"}


def test_seed_layout_bolds_best_and_shows_published():
    out = sts_grid_tables(score_rows(), PUBLISHED, "v1", "sts-avg7", "spearman_cosine")
    lines = out["markdown"].splitlines()
    assert "Cells compared: 1" in lines[0] and "largest |Δ| 0.0840" in lines[0]
    bert = next(line for line in lines if "| BERT " in line and line.startswith("|       2"))
    assert "0.5280 (0.444)" in bert
    best = next(line for line in lines if "| 2DMSE" in line and line.startswith("|       2"))
    assert "**0.6280**" in best
    assert "<b>" in out["html"] and out["csv"].startswith("layer,method,16,8")


def test_figure_is_byte_reproducible(tmp_path):
    paths = [{"png": tmp_path / f"f{i}.png", "svg": tmp_path / f"f{i}.svg"} for i in range(2)]
    for p in paths:
        sts_layer_figure(score_rows(), PUBLISHED, "v1", "sts-avg7", "spearman_cosine", "t", p)
    assert paths[0]["png"].read_bytes() == paths[1]["png"].read_bytes()
    assert paths[0]["svg"].read_bytes() == paths[1]["svg"].read_bytes()


def version_blocks():
    v1 = score_rows()
    v2 = score_rows()
    v2 = v2[v2.variant != "pretrained"].assign(value=lambda f: f["value"] - 0.4)
    return [VersionBlock("v1-run", v1, PUBLISHED, "v1", "sts-avg7", "spearman_cosine"),
            VersionBlock("v2-run", v2, PUBLISHED, "v2", "sts-avg7", "spearman_cosine")]


def test_versions_side_by_side():
    out = sts_versions_tables(version_blocks())
    numbers = pd.read_csv(io.StringIO(out["csv"]))
    assert list(numbers.columns) == ["layer", "method", "v1-run 16", "v1-run 8", "v2-run 16", "v2-run 8"]
    bert = numbers[(numbers.layer == 2) & (numbers.method == "BERT")].iloc[0]
    assert abs(bert["v1-run 8"] - 0.528) < 1e-6 and abs(bert["v2-run 8"] - 0.128) < 1e-6
    assert numbers[numbers.method == "pretrained"]["v2-run 8"].isna().all()
    lines = out["markdown"].splitlines()
    assert lines[0].startswith("v1-run: ") and "Cells compared: 1" in lines[0]
    assert lines[2].startswith("v2-run: ") and "largest |Δ| 0.0280" in lines[2]
    row = next(line for line in lines if "| BERT " in line and line.startswith("|       2"))
    assert "0.5280 (0.444)" in row and "0.1280 (0.100)" in row
    # Best per block: v1's pretrained is worse than 2DMSE; v2's best is 2DMSE too, bold in each block.
    best = next(line for line in lines if "| 2DMSE" in line and line.startswith("|       2"))
    assert best.count("**") == 8


def test_versions_figure_is_byte_reproducible(tmp_path):
    paths = [{"png": tmp_path / f"v{i}.png", "svg": tmp_path / f"v{i}.svg"} for i in range(2)]
    for p in paths:
        sts_versions_figure(version_blocks(), "t", p)
    assert paths[0]["png"].read_bytes() == paths[1]["png"].read_bytes()
    assert paths[0]["svg"].read_bytes() == paths[1]["svg"].read_bytes()


def drawn(monkeypatch, *args, **kwargs):
    """The figure sts_layer_figure draws (kept from being saved and closed)."""
    from trimbench.dense import grid
    from trimbench.plots import layers

    kept = {}
    monkeypatch.setattr(layers, "save", lambda figure, paths: kept.setdefault("figure", figure))
    grid.sts_layer_figure(*args, **kwargs)
    return kept["figure"]


def paper_grid(layers=(6, 12), dims=(768, 512, 256, 8)):
    return pd.DataFrame([{"source": "s", "track": "2dmse-sts", "variant": "v1", "method": method, "layer": layer,
                          "dim": dim, "dataset": "sts-avg7", "metric": "spearman_cosine", "value": 0.5 + layer / 100}
                         for method in ("BERT", "2DMSE") for layer in layers for dim in dims])


def test_a_toy_figure_shows_the_published_curves_in_a_row_of_their_own(monkeypatch):
    """The probe: the toy demo showed no published line anywhere (no cell in common)."""
    toy = score_rows().assign(dataset="lee-sim")
    figure = drawn(monkeypatch, toy, paper_grid(), "v1", "lee-sim", "spearman_cosine", "t", {}, depth=4)
    titles = sorted(ax.get_title() for ax in figure.axes if ax.get_title())
    # Our layers 2 and 4 of 4 beside the paper's 6 and 12 of 12: the same fractions of the depth.
    assert titles == ["ours · layer 2 of 4", "ours · layer 4 of 4", "published · layer 12 of 12",
                      "published · layer 6 of 12"]
    assert "no cell in common with ours" in figure._suptitle.get_text()
    rows = {ax.get_ylabel().split("\n")[0] for ax in figure.axes if ax.get_ylabel()}
    assert rows == {"ours (lee-sim)", "published v1 (sts-avg7)"}
    # Each row its own y axis: the scales are not comparable.
    ours_axis, paper_axis = (next(ax for ax in figure.axes if ax.get_title().startswith(side))
                             for side in ("ours", "published"))
    assert ours_axis.get_ylim() != paper_axis.get_ylim()


def test_a_figure_sharing_cells_with_the_published_grid_keeps_one_row(monkeypatch):
    figure = drawn(monkeypatch, score_rows(), PUBLISHED, "v1", "sts-avg7", "spearman_cosine", "t", {}, depth=4)
    assert sorted(ax.get_title() for ax in figure.axes if ax.get_title()) == ["layer 2", "layer 4"]


def test_tick_labels_never_run_together(monkeypatch):
    """The probe: in the smoke figure the labels 512 and 768 ran together ("512768": 1 px apart)."""
    rows = [{**row, "layer": layer, "dim": dim} for row in score_rows().to_dict("records")
            for layer in (2, 4, 6, 8, 10, 12) for dim in (768, 512, 256, 128, 64, 32, 16, 8)]
    figure = drawn(monkeypatch, scores.frame(rows), paper_grid(), "v1", "sts-avg7", "spearman_cosine", "t", {})
    renderer = figure.canvas.get_renderer()
    labelled = 0
    for ax in figure.axes:
        shown = [label for label in ax.get_xticklabels() if label.get_visible() and label.get_text()]
        labelled += bool(shown)
        boxes = sorted((label.get_window_extent(renderer) for label in shown), key=lambda box: box.x0)
        # At least a quarter of the labels' font size (7 pt) between neighbours.
        assert all(right.x0 - left.x1 >= 7 * figure.dpi / 72 / 4 for left, right in zip(boxes, boxes[1:],
                                                                                       strict=False)), ax.get_title()
        assert not shown or "768" in [label.get_text() for label in shown]  # the full width keeps its label
    assert labelled >= 4


BM25 = scores.frame([{"experiment": "x", "track": "2dmse-retrieval", "variant": "bm25", "dataset": "sts-avg7",
                      "split": "test", "metric": "spearman_cosine", "value": 0.55}])


def test_the_bm25_baseline_is_a_row_of_the_grid_table():
    out = sts_grid_tables(score_rows(), PUBLISHED, "v1", "sts-avg7", "spearman_cosine", baseline=BM25)
    last = out["markdown"].strip().splitlines()[-1]
    assert "BM25" in last and last.count("0.5500") == 2  # no layer, no dim: its one value under each dim
    numbers = pd.read_csv(io.StringIO(out["csv"]))
    assert numbers.iloc[-1]["method"] == "BM25" and pd.isna(numbers.iloc[-1]["layer"])
    assert list(numbers.iloc[-1][["16", "8"]]) == [0.55, 0.55]
    assert "<td>BM25</td>" in out["html"]
    plain = sts_grid_tables(score_rows(), PUBLISHED, "v1", "sts-avg7", "spearman_cosine")
    assert "BM25" not in plain["markdown"]


def test_the_bm25_baseline_is_a_horizontal_line_on_each_layer_panel(monkeypatch):
    figure = drawn(monkeypatch, score_rows(), PUBLISHED, "v1", "sts-avg7", "spearman_cosine", "t", {},
                   baseline=BM25)
    panels = [ax for ax in figure.axes if ax.get_title()]
    assert len(panels) == 2
    for ax in panels:
        flat = [line for line in ax.get_lines() if len(set(line.get_ydata())) == 1 and line.get_ydata()[0] == 0.55]
        assert flat and any(text.get_text() == "BM25" for text in ax.texts)


def test_every_table_file_on_a_grid_worked_by_hand():
    """The five files of one grid, on two methods x two dims with one published cell and BM25:
    the CSVs to the character, the Markdown's cells, the HTML's cells and layout (no index column,
    no border, missing published numbers as –)."""
    import html as html_text

    rows = [{"experiment": "x", "track": "2dmse-sts", "variant": variant, "model": "m", "layer": 2, "dim": dim,
             "dataset": "sts", "split": "test", "metric": "spearman_cosine", "value": value}
            for variant, dim, value in (("full", 16, 0.52), ("full", 8, 0.5), ("2dmse", 16, 0.61), ("2dmse", 8, 0.6))]
    published = PUBLISHED.assign(dataset="sts")
    bm25 = BM25.assign(dataset="sts")
    out = sts_grid_tables(scores.frame(rows), published, "v1", "sts", "spearman_cosine", baseline=bm25)
    assert out["comparison"] == ("layer,method,dim,ours,published,delta\n"
                                 "2,BERT,16,0.520000,,\n2,BERT,8,0.500000,0.444000,0.056000\n"
                                 "2,2DMSE,16,0.610000,,\n2,2DMSE,8,0.600000,,\n12,BERT,768,,0.800000,\n")
    assert out["csv"] == ("layer,method,16,8\n2,2DMSE,0.610000,0.600000\n2,BERT,0.520000,0.500000\n"
                          ",BM25,0.550000,0.550000\n")
    summary = ("spearman_cosine on sts; ours, published (v1) in parentheses. Cells compared: 1, mean |Δ| 0.0560, "
               "largest |Δ| 0.0560 at layer 2, BERT, dim 8.")
    cells = pd.DataFrame([[2, "BERT", "0.5200", "0.5000 (0.444)"], [2, "2DMSE", "**0.6100**", "**0.6000**"],
                          ["", "BM25", "0.5500", "0.5500"]], columns=["layer", "method", "16", "8"])
    assert out["markdown"] == summary + "\n\n" + cells.to_markdown(index=False) + "\n"
    page_start = f"<p>{html_text.escape(summary)}</p><table class=\"dataframe\">"  # border 0: no border attribute
    for page in ("html", "comparison_html"):
        assert page_start in out[page] and out[page].endswith("</table></body></html>\n")
    assert "<b>0.6100</b>" in out["html"] and "<td>0.5000 (0.444)</td>" in out["html"] and "**" not in out["html"]
    bm25_row = "<tr>\n      <td></td>\n      <td>BM25</td>\n      <td>0.5500</td>\n      <td>0.5500</td>\n    </tr>"
    assert out["html"].count(bm25_row) == 1
    headers = [cell.split("<")[0] for cell in out["comparison_html"].split("<th>")[1:]]
    assert headers == ["layer", "method", "dim", "ours", "published", "delta"]  # no index column
    assert "<td>0.0560</td>" in out["comparison_html"] and "<td>–</td>" in out["comparison_html"]
    assert out["html"].split("<th>")[1].startswith("layer<")  # no index column


def panels_drawn(monkeypatch, draw, *args, **kwargs):
    """The arguments ``draw`` hands to layer_panels (which is not run): its data, metric, title, paths
    and keywords."""
    from trimbench.dense import grid

    calls = []
    monkeypatch.setattr(grid, "layer_panels", lambda *a, **k: calls.append((a, k)))
    draw(*args, **kwargs)
    assert len(calls) == 1
    return calls[0]


def drawn_ours(*prefix, methods=(("BERT", 0.5), ("2DMSE", 0.6), ("pretrained", 0.3)), shift=0.0):
    """score_rows()' cells (shifted by ``shift``) as a figure draws them: (*prefix, label, layer, dim, score)."""
    return [(*prefix, label, layer, dim, round(base + shift + layer / 100 + dim / 1000, 6))
            for label, base in methods for layer in (2, 4) for dim in (8, 16)]


def curves(data, columns=("source", "method", "layer", "dim")):
    """The drawn points as sorted tuples, the score rounded."""
    points = data[[*columns, "score"]].itertuples(index=False, name=None)
    return sorted((*point[:-1], round(point[-1], 6)) for point in points)


def test_the_layer_figure_draws_ours_and_the_published_cells_of_our_layers(monkeypatch):
    """Ours (every cell) and the published cells of our layers only (not layer 12, not v2's), each
    with its score; BM25's value of this dataset and metric as the baseline line."""
    from trimbench.dense.grid import METHOD_ORDER

    baseline = pd.concat([BM25, BM25.assign(dataset="other", value=0.9), BM25.assign(metric="pearson", value=0.8)])
    published = pd.concat([PUBLISHED, PUBLISHED.iloc[:1].assign(dim=32, value=0.7)])  # a dim we do not score
    (data, metric, title, paths), keywords = panels_drawn(
        monkeypatch, sts_layer_figure, score_rows(), published, "v1", "sts-avg7", "spearman_cosine", "t",
        {"png": "f.png"}, depth=4, baseline=baseline)
    assert (metric, title, paths) == ("spearman_cosine", "t", {"png": "f.png"})
    assert keywords == {"baseline": 0.55, "method_order": METHOD_ORDER}
    assert curves(data) == sorted([*drawn_ours("ours"), ("published v1", "BERT", 2, 8, 0.444),
                                   ("published v1", "BERT", 2, 32, 0.7)])
    # Without depth there is no second row either.
    (plain, *_), keywords = panels_drawn(monkeypatch, sts_layer_figure, score_rows(), published, "v1", "sts-avg7",
                                         "spearman_cosine", "t", {})
    assert curves(plain) == curves(data) and keywords == {"baseline": None, "method_order": METHOD_ORDER}


def test_a_toy_figure_hands_both_rows_at_the_same_fractions_of_the_depth(monkeypatch):
    """Our layers 2 and 4 of 4 beside the paper's 6 and 12 of 12 (layer 3's cells left out): a row
    per side, a column per fraction of the depth, a title per panel, each row its own y axis."""
    from trimbench.dense.grid import METHOD_ORDER

    toy = score_rows().assign(dataset="lee-sim")
    paper = paper_grid(layers=(3, 6, 12))
    (data, metric, title, paths), keywords = panels_drawn(
        monkeypatch, sts_layer_figure, toy, paper, "v1", "lee-sim", "spearman_cosine", "t", {"png": "f.png"},
        depth=4, baseline=BM25.assign(dataset="lee-sim"))
    assert (metric, paths) == ("spearman_cosine", {"png": "f.png"})
    assert title == ("t\nbelow: the published curves at the paper's scale (another model and data, no cell in "
                     "common with ours), at the same fractions of the depth")
    rows = ["ours (lee-sim)", "published v1 (sts-avg7)"]
    half, full = "1/2 of the depth", "full depth"
    assert keywords == {
        "row": "row", "row_order": rows, "col": "depth", "sharey": "row", "baseline": 0.55,
        "method_order": METHOD_ORDER,
        "titles": {(rows[0], half): "ours · layer 2 of 4", (rows[0], full): "ours · layer 4 of 4",
                   (rows[1], half): "published · layer 6 of 12", (rows[1], full): "published · layer 12 of 12"}}
    columns = ("row", "depth", "source", "method", "layer", "dim", "full_depth")
    ours = [(rows[0], half if layer == 2 else full, "ours", label, layer, dim, 4,
             round(base + layer / 100 + dim / 1000, 6))
            for label, base in (("BERT", 0.5), ("2DMSE", 0.6), ("pretrained", 0.3)) for layer in (2, 4)
            for dim in (8, 16)]
    theirs = [(rows[1], half if layer == 6 else full, "published v1 (paper scale)", method, layer, dim, 12,
               round(0.5 + layer / 100, 6))
              for method in ("BERT", "2DMSE") for layer in (6, 12) for dim in (768, 512, 256, 8)]
    assert curves(data, columns) == sorted(ours + theirs)
    # A single published cell at our fraction: one panel of theirs.
    one = paper[(paper["layer"] == 12) & (paper["method"] == "BERT") & (paper["dim"] == 8)]
    (data, *_), keywords = panels_drawn(monkeypatch, sts_layer_figure, toy, one, "v1", "lee-sim", "spearman_cosine",
                                        "t", {}, depth=4)
    assert keywords["row_order"] == rows and keywords["titles"][(rows[1], full)] == "published · layer 12 of 12"
    assert curves(data[data["source"] != "ours"]) == [("published v1 (paper scale)", "BERT", 12, 8, 0.62)]
    # Without the toy's depth: one row of ours alone (no published cell of our layers).
    (data, *_), keywords = panels_drawn(monkeypatch, sts_layer_figure, toy, paper, "v1", "lee-sim",
                                        "spearman_cosine", "t", {})
    assert keywords == {"baseline": None, "method_order": METHOD_ORDER} and set(data["source"]) == {"ours"}


def test_the_versions_figure_hands_one_row_per_experiment(monkeypatch):
    from trimbench.dense.grid import METHOD_ORDER

    (data, metric, title, paths), keywords = panels_drawn(monkeypatch, sts_versions_figure, version_blocks(), "t",
                                                          {"png": "f.png"})
    assert (metric, title, paths) == ("spearman_cosine", "t", {"png": "f.png"})
    assert keywords == {"row": "version", "row_order": ["v1-run", "v2-run"], "method_order": METHOD_ORDER}
    drawn = curves(data, ("version", "source", "method", "layer", "dim"))
    v1 = drawn_ours("v1-run", "ours")
    v2 = drawn_ours("v2-run", "ours", methods=(("BERT", 0.5), ("2DMSE", 0.6)), shift=-0.4)  # no pretrained
    assert drawn == sorted([*v1, *v2, ("v1-run", "published", "BERT", 2, 8, 0.444),
                            ("v2-run", "published", "BERT", 2, 8, 0.1)])


def test_the_versions_figure_names_each_experiments_metric_once_on_its_axis(monkeypatch):
    v1, v2 = version_blocks()
    v2 = dataclasses.replace(v2, scores=v2.scores.assign(metric="pearson_cosine"), metric="pearson_cosine",
                             published=v2.published.assign(metric="pearson_cosine"))
    (data, metric, *_), _ = panels_drawn(monkeypatch, sts_versions_figure, [v1, v2], "t", {"png": "f.png"})
    assert metric == "spearman_cosine | pearson_cosine"
    assert set(data["version"]) == {"v1-run", "v2-run"}


def test_the_long_table_orders_layers_the_papers_methods_then_others_by_name_and_dims_down():
    extra = pd.DataFrame([{**PUBLISHED.iloc[0].to_dict(), "method": method, "dim": dim}
                          for method in ("Zeta", "Alpha") for dim in (8, 16)])
    long = ours_vs_published(score_rows(), pd.concat([PUBLISHED, extra]), "v1", "sts-avg7", "spearman_cosine")
    assert list(zip(long["layer"], long["method"], long["dim"], strict=True)) == [
        (2, "pretrained", 16), (2, "pretrained", 8), (2, "BERT", 16), (2, "BERT", 8), (2, "2DMSE", 16),
        (2, "2DMSE", 8), (2, "Alpha", 16), (2, "Alpha", 8), (2, "Zeta", 16), (2, "Zeta", 8),
        (4, "pretrained", 16), (4, "pretrained", 8), (4, "BERT", 16), (4, "BERT", 8), (4, "2DMSE", 16),
        (4, "2DMSE", 8), (12, "BERT", 768)]


def test_an_html_page_is_a_styled_document_with_only_the_summaries_before_its_table():
    import re

    from trimbench.dense.grid import _page

    page = _page(["a < b"], "<table></table>")
    assert page.startswith("<!DOCTYPE html><html><head><meta charset='utf-8'><style>")
    style = page.split("<style>")[1].split("</style>")[0]
    assert re.findall(r"([^{}]+)\{", style) == ["body", "table", "td,th"]
    assert page.split("<body>")[1] == "<p>a &lt; b</p><table></table></body></html>\n"


def test_published_at_depth_picks_the_dataset_with_most_cells_and_the_same_fractions():
    from trimbench.dense.grid import published_at_depth

    def cell(dataset, layer, dim=8, variant="v1", metric="spearman_cosine", value=0.5):
        return {"source": "s", "track": "2dmse-sts", "variant": variant, "method": "BERT", "layer": layer,
                "dim": dim, "dataset": dataset, "metric": metric, "value": value}

    published = pd.DataFrame([
        # "b" and "a" tie at three cells (the first by name wins), "c" has one; another variant's and
        # another metric's cells of "z" count for nothing.
        cell("b", 4), cell("b", 8), cell("b", 12), cell("a", 3), cell("a", 9, value=0.7), cell("a", 9, dim=4),
        cell("c", 12), *[cell("z", 6, dim=d, variant="v2") for d in range(4)],
        *[cell("z", 6, dim=d, metric="pearson") for d in range(4)]])
    # a's deepest layer is 9: our layers 1 and 3 of 3 are its layers 3 and 9; layer 2 of 3 its 6 (none).
    out = published_at_depth(published, "v1", "spearman_cosine", [1, 2, 3], 3)
    assert list(out.columns) == ["method", "layer", "dim", "score", "dataset", "full_depth"]
    assert out.to_dict("records") == [
        {"method": "BERT", "layer": 3, "dim": 8, "score": 0.5, "dataset": "a", "full_depth": 9},
        {"method": "BERT", "layer": 9, "dim": 8, "score": 0.7, "dataset": "a", "full_depth": 9},
        {"method": "BERT", "layer": 9, "dim": 4, "score": 0.5, "dataset": "a", "full_depth": 9}]
    # Layer 1 of 2 is 4.5 of 9: rounded to 4, which "a" lacks.
    assert published_at_depth(published, "v1", "spearman_cosine", [1], 2) is None
    # Layer 1 of 3 of a 9-deep model rounds 3 exactly; 2 of 6 too; 5 of 6 is 7.5, rounded to 8: none.
    assert list(published_at_depth(published, "v1", "spearman_cosine", [2, 5], 6)["layer"]) == [3]
    assert published_at_depth(published, "v3", "spearman_cosine", [1], 3) is None


def test_every_versions_table_file_on_two_blocks_worked_by_hand():
    """The side-by-side files of two blocks (v2 has no pretrained row, and a method of no known rank,
    which sorts last): every cell of the numbers CSV, the Markdown and the HTML page."""
    import html as html_text

    v1, v2 = version_blocks()
    zeta = scores.frame([{**row, "variant": "zeta", "value": 0.05} for row in score_rows().to_dict("records")
                         if row["variant"] == "full" and row["layer"] == 2])
    v2 = dataclasses.replace(v2, scores=pd.concat([v2.scores, zeta]))
    out = sts_versions_tables([v1, v2])
    assert out["csv"] == (
        "layer,method,v1-run 16,v1-run 8,v2-run 16,v2-run 8\n"
        "2,pretrained,0.336000,0.328000,,\n2,BERT,0.536000,0.528000,0.136000,0.128000\n"
        "2,2DMSE,0.636000,0.628000,0.236000,0.228000\n2,zeta,,,0.050000,0.050000\n"
        "4,pretrained,0.356000,0.348000,,\n4,BERT,0.556000,0.548000,0.156000,0.148000\n"
        "4,2DMSE,0.656000,0.648000,0.256000,0.248000\n")
    summaries = [f"{label}: spearman_cosine on sts-avg7; ours, published ({variant}) in parentheses. "
                 f"Cells compared: 1, mean |Δ| {delta}, largest |Δ| {delta} at layer 2, BERT, dim 8."
                 for label, variant, delta in (("v1-run", "v1", "0.0840"), ("v2-run", "v2", "0.0280"))]
    cells = pd.DataFrame([
        [2, "pretrained", "0.3360", "0.3280", "", ""],
        [2, "BERT", "0.5360", "0.5280 (0.444)", "0.1360", "0.1280 (0.100)"],
        [2, "2DMSE", "**0.6360**", "**0.6280**", "**0.2360**", "**0.2280**"], [2, "zeta", "", "", "0.0500", "0.0500"],
        [4, "pretrained", "0.3560", "0.3480", "", ""], [4, "BERT", "0.5560", "0.5480", "0.1560", "0.1480"],
        [4, "2DMSE", "**0.6560**", "**0.6480**", "**0.2560**", "**0.2480**"]],
        columns=["layer", "method", "v1-run 16", "v1-run 8", "v2-run 16", "v2-run 8"])
    assert out["markdown"] == "\n\n".join(summaries) + "\n\n" + cells.to_markdown(index=False) + "\n"
    page = out["html"]
    assert "".join(f"<p>{html_text.escape(s)}</p>" for s in summaries) + "<table class=\"dataframe\">" in page
    assert page.endswith("</table></body></html>\n") and "**" not in page
    assert [cell.split("<")[0] for cell in page.split("<th>")[1:]] == list(cells.columns)  # no index column
    assert "<td><b>0.6360</b></td>" in page and "<td>0.5280 (0.444)</td>" in page
    assert "<td>2</td>\n      <td>zeta</td>\n      <td></td>\n      <td></td>\n      <td>0.0500</td>" in page


def test_a_cell_a_method_does_not_score_is_blank_in_every_table():
    """2DMSE scored at dim 16 only: its dim-8 cell is empty in the Markdown and the CSV, not "nan"."""
    rows = [{"experiment": "x", "track": "2dmse-sts", "variant": variant, "model": "m", "layer": 2, "dim": dim,
             "dataset": "sts", "split": "test", "metric": "spearman_cosine", "value": value}
            for variant, dim, value in (("full", 16, 0.52), ("full", 8, 0.5), ("2dmse", 16, 0.61))]
    out = sts_grid_tables(scores.frame(rows), PUBLISHED.iloc[:0], "v1", "sts", "spearman_cosine")
    cells = pd.DataFrame([[2, "BERT", "0.5200", "**0.5000**"], [2, "2DMSE", "**0.6100**", ""]],
                         columns=["layer", "method", "16", "8"])
    assert out["markdown"].split("\n\n", 1)[1] == cells.to_markdown(index=False) + "\n"
    assert out["csv"] == "layer,method,16,8\n2,2DMSE,0.610000,\n2,BERT,0.520000,0.500000\n"
    assert "nan" not in out["html"].lower()
