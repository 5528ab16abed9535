"""The Home Depot study's data recipe on a stand-in built from the hub table's contract."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

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
