"""The Home Depot study's data recipe on a stand-in built from the hub table's contract."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import fake_hub

from trimbench.config.schema import validate_schema
from trimbench.data import homedepot as homedepot_data
from trimbench.dense import homedepot
from trimbench.errors import DataError

ENTRY = {"source": "hub", "id": "bstds/home_depot", "revision": "e4c0747eef9da8eb14de6036a1396f3e8c9634cf",
         "standin": True, "kind": "pairs", "builder": "homedepot", "standin_rows": 400, "seed": 42,
         "homedepot": {"rows": 300}}


@pytest.fixture(scope="module")
def entry():
    """The entry with the schema's defaults filled, as the workflow sees it."""
    experiment = {"track": "homedepot", "model": "m", "grid": {"layers": [1], "dims": [4]},
                  "evaluation": {"datasets": ["hd"]}}
    config = validate_schema({"datasets": {"hd": ENTRY}, "models": {"m": {"source": "tiny", "layers": 1, "dim": 4}},
                              "experiments": {"x": experiment}})
    return config["datasets"]["hd"]


def test_reads_the_columns_the_seed_reads(entry):
    table = homedepot_data.raw_table(entry)  # the contract's stand-in, through the hub loader
    assert {"query", "description", "entity_id", "id", "relevance"} <= set(table.columns)
    assert table["relevance"].between(1, 3).all() and table["id"].is_unique
    assert not table["entity_id"].is_unique  # several rows search for the same product


#: 12 rows: products A..G are entity ids 11..17; B's description changed between rows
HAND_TABLE = pd.DataFrame([
    (100, 12, "b drill", "B v1", 3.0), (101, 13, "c saw", "C", 2.67), (102, 11, "a hammer", "A", 3.0),
    (103, 11, "hammer", "A", 2.67), (104, 12, "b drill", "B v2", 2.0), (105, 13, "c saw", "C", 2.67),
    (106, 14, "d nails", "D", 1.33), (107, 14, "nails", "D", 2.5), (108, 12, "drill", "B v1", 3.0),
    (109, 15, "e glue", "E", 3.0), (110, 16, "f tape", "F", 1.0), (111, 17, "g rope", "G", 2.33),
], columns=["id", "entity_id", "query", "description", "relevance"])


def _hand_entry(tmp_path, table=HAND_TABLE, **settings):
    table.to_parquet(tmp_path / "train.parquet")
    experiment = {"track": "homedepot", "model": "m", "grid": {"layers": [1], "dims": [4]},
                  "evaluation": {"datasets": ["hd"]}}
    entry = {"source": "local", "path": str(tmp_path), "kind": "retrieval", "builder": "homedepot", "seed": 7,
             "homedepot": {"rows": 10, "test_fraction": 0.2, **settings}}
    return validate_schema({"datasets": {"hd": entry}, "models": {"m": {"source": "tiny", "layers": 1, "dim": 4}},
                            "experiments": {"x": experiment}})["datasets"]["hd"]


def test_split_pairs_and_corpus_of_a_hand_made_table(tmp_path):
    # default_rng(7).permutation(12) = [4, 6, 10, 0, 1, 3, 8, 7, 2, 5, 9, 11]: the shuffled rows; the
    # first 10 are kept. default_rng(7).permutation(10) = [8, 0, 7, 1, 3, 6, 2, 4, 5, 9]; ceil(0.2 * 10)
    # = 2 test rows: kept positions 8, 0 = rows 2, 4; train = positions 7, 1, 3, 6, 2, 4, 5, 9.
    entry = _hand_entry(tmp_path, distractors=1)
    train, test, full = homedepot_data.cut_and_split(entry)
    assert full["query_id"].tolist() == [104, 106, 110, 100, 101, 103, 108, 107, 102, 105, 109, 111]
    assert test["query_id"].tolist() == [102, 104]
    assert train["query_id"].tolist() == [107, 106, 100, 108, 110, 101, 103, 105]
    # every train row with relevance > 2.5, in train order: a test product (A) and a repeated pair kept
    pairs = homedepot_data.pairs_table(entry, "train")
    assert list(zip(pairs["anchor"], pairs["positive"], strict=True)) == [
        ("b drill", "B v1"), ("drill", "B v1"), ("c saw", "C"), ("hammer", "A"), ("c saw", "C")]
    # unseen_only: no query or product of the test part (B, A), no repeated pair
    unseen = homedepot_data.pairs_table(_hand_entry(tmp_path, unseen_only=True), "train")
    assert list(zip(unseen["anchor"], unseen["positive"], strict=True)) == [("c saw", "C")]
    split = homedepot_data.retrieval_split(entry, "test")
    # one judged test row (104 has relevance 2.0), keyed by its row id, its product by entity id
    assert split.queries.to_dict("records") == [{"query_id": "102", "text": "a hammer"}]
    assert split.qrels[["query_id", "doc_id"]].values.tolist() == [["102", "11"]]
    # corpus: test products B, A and one distractor of neither part (E = 15 or G = 17; F is a train
    # product); the seed's list(set)[:1] gives 17 (CPython: slot 17 % 8 = 1 before 15 % 8 = 7), in
    # order of first appearance in the shuffled table, each with its last description there
    assert split.corpus[["doc_id", "text"]].values.tolist() == [["12", "B v1"], ["11", "A"], ["17", "G"]]
    both = homedepot_data.retrieval_split(_hand_entry(tmp_path, distractors=2), "test")
    assert both.corpus["doc_id"].tolist() == ["12", "11", "15", "17"]


def test_the_registry_loads_the_builders_pairs_in_the_pairs_columns(tmp_path):
    """load_split hands a ``builder: homedepot`` entry to the builder, not to its local folder's file,
    and normalises the pairs under the dataset's own name."""
    from trimbench.data.tables import load_split

    entry = {**_hand_entry(tmp_path), "kind": "pairs"}
    pairs = load_split("hd", entry, "train")
    assert list(pairs.columns) == ["anchor", "positive"]
    assert list(zip(pairs["anchor"], pairs["positive"], strict=True)) == [
        ("b drill", "B v1"), ("drill", "B v1"), ("c saw", "C"), ("hammer", "A"), ("c saw", "C")]
    with pytest.raises(DataError, match=r"^dataset 'hd': no rows$"):  # no train row above relevance 3
        load_split("hd", {**entry, "homedepot": {**entry["homedepot"], "train_min_relevance": 3.0}}, "train")


def test_a_test_row_at_exactly_the_threshold_is_a_query(tmp_path):
    """src/data.py keeps test rows with relevance >= 2.5: row 104 (a test row) judged exactly 2.5 is a
    query beside 102; the train pairs (relevance > 2.5) still leave out 107, a train row at 2.5."""
    table = HAND_TABLE.assign(relevance=HAND_TABLE["relevance"].where(HAND_TABLE["id"] != 104, 2.5))
    entry = _hand_entry(tmp_path, table, distractors=1)
    split = homedepot_data.retrieval_split(entry, "test")
    assert split.queries.to_dict("records") == [{"query_id": "102", "text": "a hammer"},
                                                {"query_id": "104", "text": "b drill"}]
    assert split.qrels[["query_id", "doc_id"]].values.tolist() == [["102", "11"], ["104", "12"]]
    assert "nails" not in homedepot_data.pairs_table(entry, "train")["anchor"].tolist()


def test_shuffle_cut_and_split_equal_the_datasets_library(entry):
    """The seed's own calls (src/data.py:115-120) on the stand-in give the same parts in the same order."""
    import datasets

    table = homedepot_data.raw_table(entry)
    ds = datasets.Dataset.from_pandas(table).shuffle(seed=42).select(range(300))
    ds = ds.train_test_split(test_size=0.2, seed=42)
    train, test, full = homedepot_data.cut_and_split(entry)
    assert test["query_id"].tolist() == ds["test"]["id"] and train["query_id"].tolist() == ds["train"]["id"]
    assert len(full) == 400
    pairs = homedepot_data.pairs_table(entry, "train")
    assert pairs["positive"].tolist() == [r["description"] for r in ds["train"] if r["relevance"] > 2.5]


def test_missing_hub_column_is_named(tmp_path):
    entry = _hand_entry(tmp_path, HAND_TABLE.drop(columns=["entity_id"]))
    with pytest.raises(DataError, match=r"lacks columns \['entity_id'\]"):
        homedepot_data.cut_and_split(entry)


def test_comparison_joins_the_write_up():
    published = pd.read_csv(Path(__file__).resolve().parents[2] / "reference" / "homedepot.csv")
    scores = pd.DataFrame({"variant": ["pretrained", "matryoshka"], "layer": [6, 6], "dim": [384, 48],
                           "metric": ["recall@10", "recall@10"], "value": [0.58, 0.6]})
    config = {"model": "minilm", "methods": ["pretrained", "matryoshka"], "reference": {"model": "all-MiniLM-L6-v2"}}
    long = homedepot.comparison(scores, published, config)
    cell = long[(long["method"] == "fine-tuned-matryoshka") & (long["dim"] == 48) & (long["metric"] == "recall@10")]
    cell = cell.iloc[0]
    # evals/all-MiniLM-L6-v2_finetuned_matryoshka_metrics.csv, recall@10 at 48
    assert cell["published"] == pytest.approx(0.6317146540610228)
    assert cell["delta"] == pytest.approx(0.6 - 0.6317146540610228)
    assert homedepot.headline(scores, published, config)["published"] == pytest.approx(0.6596476149548776)
    # every dim of the three evals/*.csv: recall@10, MRR@10 and nDCG@10 of each method
    minilm = published[published["model"] == "all-MiniLM-L6-v2"]
    assert len(minilm) == 36 and set(minilm["metric"]) == {"recall@10", "mrr@10", "ndcg@10"}
    assert set(minilm["dim"]) == {384, 192, 96, 48} and set(minilm["method"]) == set(homedepot.METHOD_LABELS.values())


def test_the_bm25_baseline_is_a_row_per_metric_and_a_line_on_the_recall_figure(monkeypatch):
    from trimbench import scores as score_table

    published = pd.read_csv(Path(__file__).resolve().parents[2] / "reference" / "homedepot.csv")
    scores = pd.DataFrame({"variant": ["pretrained", "pretrained"], "layer": [6, 6], "dim": [384, 48],
                           "metric": ["recall@10", "recall@10"], "value": [0.58, 0.5]})
    config = {"model": "minilm", "methods": ["pretrained"], "reference": {"model": "all-MiniLM-L6-v2"},
              "evaluation": {"datasets": ["home-depot"]}}
    bm25 = score_table.frame([{"variant": "bm25", "dataset": "home-depot", "metric": "recall@10", "value": 0.44}])
    out = homedepot.tables(scores, published, config, bm25)
    row = next(line for line in out["markdown"].splitlines() if "BM25" in line)
    assert "recall@10" in row and row.count("0.4400") == 4  # its one value under each of the 4 dims
    assert "BM25" not in homedepot.tables(scores, published, config)["markdown"]
    kept = {}
    monkeypatch.setattr(homedepot, "save", lambda figure, paths: kept.setdefault("figure", figure))
    homedepot.recall_figure(scores, published, config, "t", {}, bm25)
    ax = kept["figure"].axes[0]
    assert any(len(set(line.get_ydata())) == 1 and line.get_ydata()[0] == 0.44 for line in ax.get_lines())


def test_headline_is_the_last_methods_recall_at_its_widest_dim_on_each_side():
    """Ours at our widest dim of the last method (a method the write-up does not label keeps its
    name); the published side empty when the write-up has no such method."""
    published = pd.read_csv(Path(__file__).resolve().parents[2] / "reference" / "homedepot.csv")
    scores = pd.DataFrame({"variant": ["matryoshka", "2dmse", "2dmse", "2dmse"], "layer": [6, 6, 6, 6],
                           "dim": [384, 48, 192, 96], "metric": ["recall@10", "recall@10", "recall@10", "mrr@10"],
                           "value": [0.7, 0.5, 0.6, 0.9]})
    config = {"model": "minilm", "methods": ["pretrained", "matryoshka", "2dmse"],
              "reference": {"model": "all-MiniLM-L6-v2"}}
    assert homedepot.headline(scores, published, config) == {
        "ours": 0.6, "ours_cell": "all-MiniLM-L6-v2 2dmse d192 recall@10", "published": None, "published_cell": ""}
    config["methods"] = ["2dmse", "matryoshka"]
    assert homedepot.headline(scores, published, config) == {
        "ours": 0.7, "ours_cell": "all-MiniLM-L6-v2 fine-tuned-matryoshka d384 recall@10",
        "published": pytest.approx(0.6596476149548776),
        "published_cell": "all-MiniLM-L6-v2 fine-tuned-matryoshka d384 recall@10"}
    config["methods"] = ["separate"]  # neither side has it
    assert homedepot.headline(scores, published, config) == {
        "ours": None, "ours_cell": "", "published": None, "published_cell": ""}


# --- the views on a hand-made table: every cell, row and line checked ------------------------------

#: ours: the deepest layer (6) only; the matryoshka method under the write-up's label; a layer-3 cell
#: that must not show
HAND_SCORES = pd.DataFrame([
    ("pretrained", 6, 384, "recall@10", 0.5), ("pretrained", 6, 48, "recall@10", 0.3),
    ("pretrained", 3, 384, "recall@10", 0.99), ("matryoshka", 6, 384, "recall@10", 0.7),
    ("matryoshka", 6, 48, "mrr@10", 0.4),
], columns=["variant", "layer", "dim", "metric", "value"])
#: the write-up: model M's cells (one only it has, at d96) and another model's, which must not show
HAND_PUBLISHED = pd.DataFrame([
    ("s", "M", "pretrained", 384, "recall@10", 0.55), ("s", "M", "fine-tuned-matryoshka", 384, "recall@10", 0.6),
    ("s", "M", "fine-tuned-matryoshka", 96, "recall@10", 0.58), ("s", "Other", "pretrained", 384, "recall@10", 0.11),
], columns=["source", "model", "method", "dim", "metric", "value"])
HAND_CONFIG = {"model": "minilm", "methods": ["pretrained", "matryoshka"], "reference": {"model": "M"},
               "evaluation": {"datasets": ["hd"]}}


def test_comparison_is_every_cell_of_either_side_at_the_deepest_layer_sorted_by_metric_method_widest_dim():
    long = homedepot.comparison(HAND_SCORES, HAND_PUBLISHED, HAND_CONFIG)
    assert list(long.columns) == ["model", "method", "dim", "metric", "ours", "published", "delta"]
    nan = float("nan")
    expected = pd.DataFrame([
        ("M", "fine-tuned-matryoshka", 48, "mrr@10", 0.4, nan, nan),
        ("M", "fine-tuned-matryoshka", 384, "recall@10", 0.7, 0.6, 0.7 - 0.6),
        ("M", "fine-tuned-matryoshka", 96, "recall@10", nan, 0.58, nan),
        ("M", "pretrained", 384, "recall@10", 0.5, 0.55, 0.5 - 0.55),
        ("M", "pretrained", 48, "recall@10", 0.3, nan, nan),
    ], columns=long.columns)
    pd.testing.assert_frame_equal(long, expected, check_dtype=False)
    assert long["dim"].dtype.kind == "i"
    # no reference model: ours are named by the experiment's model, and match none of the write-up's
    published = pd.concat([HAND_PUBLISHED, HAND_PUBLISHED.iloc[:1].assign(model="minilm", value=0.25)])
    own = homedepot.comparison(HAND_SCORES, published, {**HAND_CONFIG, "reference": {}})
    assert set(own["model"]) == {"minilm"} and len(own) == 4
    assert own["published"].fillna(-1).tolist() == [-1, -1, 0.25, -1]  # the write-up's cell of that model
    # one cell of ours
    one = homedepot.comparison(HAND_SCORES.iloc[:1], HAND_PUBLISHED, HAND_CONFIG)
    assert one[["method", "dim", "ours", "published"]].fillna(-1).values.tolist() == [
        ["fine-tuned-matryoshka", 384, -1, 0.6], ["fine-tuned-matryoshka", 96, -1, 0.58],
        ["pretrained", 384, 0.5, 0.55]]
    # none of ours (yet): the write-up's cells of the reference model alone
    none = homedepot.comparison(HAND_SCORES.iloc[:0], HAND_PUBLISHED, HAND_CONFIG)
    assert none[["method", "dim", "published"]].values.tolist() == [
        ["fine-tuned-matryoshka", 384, 0.6], ["fine-tuned-matryoshka", 96, 0.58], ["pretrained", 384, 0.55]]
    assert none["ours"].isna().all()


def test_tables_cells_are_ours_and_published_per_dim_with_bm25_under_every_dim_and_the_largest_gap():
    import re

    bm25 = pd.DataFrame({"variant": "bm25", "dataset": "hd", "metric": ["recall@10", "ndcg@10", "mrr@10"],
                         "value": [0.44, 0.9, 0.2]})
    out = homedepot.tables(HAND_SCORES, HAND_PUBLISHED, HAND_CONFIG, bm25)
    summary = ("Home Depot test, cosine; ours (published in parentheses). 2 cells in common, largest |Δ| 0.1000 "
               "at fine-tuned-matryoshka d384 recall@10.")
    assert out["markdown"].startswith(summary + "\n\n| model")
    # columns the widest dim first; BM25's one value under every dim, after its metric's rows; no
    # ndcg@10 row (ours have none)
    assert re.findall(r"<th>(.*?)</th>", out["html"]) == ["model", "metric", "method", "384", "96", "48"]
    assert out["html"].startswith("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body><p>")
    assert f"<p>{summary}</p><table class=\"dataframe\">" in out["html"] and out["html"].endswith("</body></html>\n")
    cells = re.findall(r"<td>(.*?)</td>", out["html"])
    assert [cells[i:i + 6] for i in range(0, len(cells), 6)] == [
        ["M", "mrr@10", "fine-tuned-matryoshka", "", "", "0.4000"],
        ["M", "mrr@10", "BM25", "0.2000", "0.2000", "0.2000"],
        ["M", "recall@10", "fine-tuned-matryoshka", "0.7000 (0.6000)", "(0.5800)", ""],
        ["M", "recall@10", "pretrained", "0.5000 (0.5500)", "", "0.3000"],
        ["M", "recall@10", "BM25", "0.4400", "0.4400", "0.4400"]]
    # the markdown holds the same rows
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out["markdown"].splitlines()[4:]]
    assert [r[2] for r in rows] == ["fine-tuned-matryoshka", "BM25", "fine-tuned-matryoshka", "pretrained", "BM25"]
    assert rows[2][3:5] == ["0.7000 (0.6000)", "(0.5800)"]
    # the CSV: ours only (no published-only dim 96), as numbers
    assert out["csv"].splitlines() == [
        "model,metric,method,384,48",
        "M,mrr@10,fine-tuned-matryoshka,,0.400000",
        "M,mrr@10,BM25,0.200000,0.200000",
        "M,recall@10,fine-tuned-matryoshka,0.700000,",
        "M,recall@10,pretrained,0.500000,0.300000",
        "M,recall@10,BM25,0.440000,0.440000"]
    # a cell of ours without a value, and none published there: a dash
    missing = homedepot.tables(HAND_SCORES.assign(value=HAND_SCORES["value"].where(HAND_SCORES["dim"] != 48)),
                               HAND_PUBLISHED, HAND_CONFIG)
    assert "<td>pretrained</td>\n      <td>0.5000 (0.5500)</td>\n      <td></td>\n      <td>–</td>" in missing["html"]
    # without BM25, without a cell in common
    plain = homedepot.tables(HAND_SCORES, HAND_PUBLISHED.iloc[:0], HAND_CONFIG)
    assert "BM25" not in plain["csv"] + plain["html"] and "(" not in plain["csv"]
    assert plain["markdown"].startswith("Home Depot test, cosine; ours (published in parentheses). No cell in common "
                                        "with the write-up.\n\n|") and "0.3000" in plain["html"]


def test_summary_names_the_cell_of_the_largest_absolute_gap():
    long = pd.DataFrame({"model": "M", "method": ["a", "b", "c"], "dim": [8, 16, 32], "metric": "recall@10",
                         "ours": [0.5, 0.2, 0.9], "published": [0.45, 0.5, float("nan")]})
    long["delta"] = long["ours"] - long["published"]
    assert homedepot._summary(long) == "2 cells in common, largest |Δ| 0.3000 at b d16 recall@10."


def test_recall_figure_draws_ours_as_a_line_per_method_the_write_ups_as_crosses_and_bm25(monkeypatch):
    kept = {}
    monkeypatch.setattr(homedepot, "save", lambda figure, paths: kept.update(figure=figure, paths=paths))
    bm25 = pd.DataFrame({"variant": "bm25", "dataset": ["other", "hd", "hd"], "metric": ["recall@10", "recall@10",
                                                                                         "mrr@10"],
                         "value": [0.1, 0.44, 0.2]})
    homedepot.recall_figure(HAND_SCORES, HAND_PUBLISHED, HAND_CONFIG, "the title", {"svg": "x.svg"}, bm25)
    assert kept["paths"] == {"svg": "x.svg"}
    ax = kept["figure"].axes[0]
    # recall@10 only (no mrr@10 point at 0.4): a line per method, the methods in name order
    drawn = [(list(map(float, line.get_xdata())), list(map(float, line.get_ydata())), line.get_color())
             for line in ax.get_lines() if len(line.get_xdata())]
    matryoshka, pretrained, bm25_line = drawn
    assert matryoshka[:2] == ([384.0], [0.7]) and pretrained[:2] == ([48.0, 384.0], [0.3, 0.5])
    assert bm25_line[1] == [0.44, 0.44]  # the evaluation dataset's recall@10, not another dataset's
    # the crosses: each published cell in its method's colour
    crosses = ax.collections[-1]
    colour = {tuple(c[:3]) for c in crosses.get_facecolors()[:2]}
    assert crosses.get_offsets().tolist() == [[384.0, 0.6], [96.0, 0.58], [384.0, 0.55]]
    assert colour == {tuple(matryoshka[2])} and tuple(crosses.get_facecolors()[2][:3]) == tuple(pretrained[2])
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert ax.get_xticks().tolist() == [48, 96, 384] and [t.get_text() for t in ax.get_xticklabels()] == [
        "48", "96", "384"]
    assert ax.get_title() == "the title" and [t.get_text() for t in ax.texts] == ["BM25"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["fine-tuned-matryoshka", "pretrained"]
    # a method only the write-up has keeps its colour: ours (pretrained) in the colour of its crosses
    homedepot.recall_figure(HAND_SCORES.iloc[:3], HAND_PUBLISHED, HAND_CONFIG, "t", {})
    ax = kept["figure"].axes[0]
    (line,) = [line for line in ax.get_lines() if len(line.get_xdata())]
    crosses = ax.collections[-1].get_facecolors()
    assert tuple(crosses[2][:3]) == tuple(line.get_color()[:3]) != tuple(crosses[0][:3])
    # without BM25 or the write-up's cells: no line across, no crosses
    homedepot.recall_figure(HAND_SCORES, HAND_PUBLISHED.iloc[:0], HAND_CONFIG, "t", {})
    ax = kept["figure"].axes[0]
    assert not ax.texts and not any(type(c).__name__ == "PathCollection" for c in ax.collections)
    assert ax.get_xticks().tolist() == [48, 384]


def test_distractors_of_string_product_ids_come_in_the_shuffled_tables_order(tmp_path):
    """Products keyed by strings (salted hashes: no stable set order): the distractors are the
    products of neither part in their order in the shuffled table (E = p15 at row 109, then G = p17);
    the int ids' pick (list(set)[:1] = 17) would differ."""
    table = HAND_TABLE.assign(entity_id="p" + HAND_TABLE["entity_id"].astype(str))
    entry = _hand_entry(tmp_path, table, distractors=1)
    train, test, full = homedepot_data.cut_and_split(entry)
    assert homedepot_data.distractor_products(train, test, full, 1) == ["p15"]
    assert homedepot_data.distractor_products(train, test, full, 5) == ["p15", "p17"]
    assert homedepot_data.distractor_products(train, test, full, 0) == []
    split = homedepot_data.retrieval_split(entry, "test")
    assert split.corpus.to_dict("records") == [{"doc_id": "p12", "title": "", "text": "B v1"},
                                               {"doc_id": "p11", "title": "", "text": "A"},
                                               {"doc_id": "p15", "title": "", "text": "E"}]
    assert split.qrels.to_dict("records") == [{"query_id": "102", "doc_id": "p11", "relevance": 1}]


def test_a_query_id_twice_in_the_test_part_is_one_query_its_last_row(tmp_path):
    """Two judged test rows under one id (row 104 relabelled 102 and judged 3): one query, the last
    row's text and product (src/data.py builds a dict keyed by id: the last row wins)."""
    table = HAND_TABLE.assign(relevance=HAND_TABLE["relevance"].where(HAND_TABLE["id"] != 104, 3.0),
                              id=HAND_TABLE["id"].replace(104, 102))
    split = homedepot_data.retrieval_split(_hand_entry(tmp_path, table, distractors=0), "test")
    assert split.queries.to_dict("records") == [{"query_id": "102", "text": "b drill"}]
    assert split.qrels.to_dict("records") == [{"query_id": "102", "doc_id": "12", "relevance": 1}]
    assert split.corpus["doc_id"].tolist() == ["12", "11"]
    with pytest.raises(ValueError, match="retrieval split 'test', not 'train'"):
        homedepot_data.retrieval_split(_hand_entry(tmp_path), "train")
    with pytest.raises(ValueError, match="training pairs for split 'train', not 'test'"):
        homedepot_data.pairs_table(_hand_entry(tmp_path), "test")


def test_the_hub_table_is_read_at_the_entrys_config_and_revision_and_a_given_table_is_used_as_is(tmp_path,
                                                                                                monkeypatch):
    """raw_table asks the hub for the entry's dataset, config, the train split and the pinned
    revision; cut_and_split works on a table it is given without reading the source; its parts keep
    our five columns only, in our order."""
    asked = fake_hub(monkeypatch, lambda *args: HAND_TABLE.assign(query="hub " + HAND_TABLE["query"]))
    entry = {"source": "hub", "id": "owner/hd", "config": "cfg", "revision": "abc123"}
    table = homedepot_data.raw_table(entry)
    assert asked == ["owner/hd", ("owner/hd", "cfg", "train", "abc123")]
    assert table["query"].iloc[0] == "hub b drill"
    given = HAND_TABLE.assign(query="given " + HAND_TABLE["query"])
    train, test, full = homedepot_data.cut_and_split(_hand_entry(tmp_path), given)
    assert test["query"].tolist() == ["given a hammer", "given b drill"] and len(asked) == 2
    ours = ["query", "document", "product", "query_id", "relevance"]
    assert list(train.columns) == list(test.columns) == list(full.columns) == ours
    assert list(train.index) == list(range(8)) and list(test.index) == [0, 1] and list(full.index) == list(range(12))
    with pytest.raises(DataError, match=r"map ours \(query, document, product, query_id, relevance\) to its names"):
        homedepot_data.cut_and_split(_hand_entry(tmp_path, HAND_TABLE.drop(columns=["id"])))
