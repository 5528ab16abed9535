"""The Home Depot study's data recipe on a stand-in built from the hub table's contract."""

from __future__ import annotations

import pandas as pd
import pytest

from trimbench import homedepot
from trimbench.config import validate_schema

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
    table = homedepot.raw_table(entry)  # the contract's stand-in, through the hub loader
    assert {"query", "description", "entity_id", "id", "relevance"} <= set(table.columns)
    assert table["relevance"].between(1, 3).all()


def test_cut_split_and_thresholds(entry):
    train, test, rest = homedepot.cut_and_split(entry)
    assert len(train) + len(test) == 300 and len(test) == 60 and len(rest) == 100
    again = homedepot.cut_and_split(entry)
    pd.testing.assert_frame_equal(test, again[1])  # seeded
    pairs = homedepot.pairs_table(entry, "train")
    # only relevance > 2.5, and nothing of the test split (neither its queries nor its products)
    relevant = train[train["relevance"] > 2.5]
    assert set(pairs["anchor"]) <= set(relevant["query"])
    assert not set(pairs["anchor"]) & set(test["query"]) and not set(pairs["positive"]) & set(test["document"])
    split = homedepot.retrieval_split({**entry, "kind": "retrieval"}, "test")
    assert len(split.queries) == int((test["relevance"] >= 2.5).sum())
    assert set(split.corpus["text"]) == set(test["document"])  # no distractors configured
    assert split.qrels.groupby("query_id").size().eq(1).all()
    with_distractors = homedepot.retrieval_split({**entry, "homedepot": {**entry["homedepot"], "distractors": 7}},
                                                 "test")
    assert len(with_distractors.corpus) == len(split.corpus) + len(set(rest["document"].head(7))
                                                                  - set(test["document"]))


def test_comparison_joins_the_write_up():
    published = pd.read_csv(homedepot.Path(__file__).resolve().parent.parent / "reference" / "homedepot.csv")
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
