"""Datasets: the embedded Lee data, local folders with column maps (hub stand-ins: test_contracts.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from trimbench.data import DataError, lee_ict, lee_similarity, lee_similarity_split, load_split, sts_texts


def test_lee_ict_is_deterministic_and_keeps_heldout_apart():
    train = lee_ict("train", 0.2, 1, 42)
    heldout = lee_ict("heldout", 0.2, 1, 42)
    pd.testing.assert_frame_equal(train, lee_ict("train", 0.2, 1, 42))
    assert not set(train.article_id) & set(heldout.article_id)
    assert 40 <= heldout.article_id.nunique() <= 60 and train.article_id.nunique() >= 200
    for row in train.head(20).itertuples():
        assert row.anchor not in row.positive and len(row.positive) > len(row.anchor)


def test_lee_ict_triplets_take_negatives_from_other_articles():
    entry = {"source": "gensim", "builder": "lee_ict", "kind": "triplets", "heldout_fraction": 0.2,
             "pairs_per_article": 1, "seed": 42, "splits": {}, "columns": {}}
    triplets = load_split("lee-ict-triplets", entry, "train")
    assert list(triplets.columns) == ["anchor", "positive", "negative", "article_id"]
    positives = dict(zip(triplets.positive, triplets.article_id, strict=False))
    assert all(positives[n] != a for n, a in zip(triplets.negative, triplets.article_id, strict=True))
    pd.testing.assert_frame_equal(triplets, load_split("lee-ict-triplets", entry, "train"))


def test_lee_similarity_has_all_pairs():
    pairs = lee_similarity()
    assert len(pairs) == 1225
    assert pairs.score.between(0, 1).all()


def test_local_folder_with_column_map_and_score_scale(tmp_path):
    rows = [{"s1": "a cat", "s2": "a kitten", "gold": 5.0}, {"s1": "a car", "s2": "the sea", "gold": 0.0}]
    (tmp_path / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    entry = {"source": "local", "path": str(tmp_path), "kind": "sts", "splits": {},
             "columns": {"sentence1": "s1", "sentence2": "s2", "score": "gold"}, "score_range": [0, 5]}
    frame = load_split("mine", entry, "test")
    assert list(frame.columns) == ["sentence1", "sentence2", "score"]
    assert frame.score.tolist() == [1.0, 0.0]


def test_local_missing_split_and_column_name_the_culprit(tmp_path):
    (tmp_path / "train.jsonl").write_text(json.dumps({"sentence1": "a", "sentence2": "b"}))
    entry = {"source": "local", "path": str(tmp_path), "kind": "sts", "splits": {}, "columns": {},
             "score_range": [0, 1]}
    with pytest.raises(DataError, match="no file for split 'test'.*found: train.jsonl"):
        load_split("mine", entry, "test")
    with pytest.raises(DataError, match=r"dataset 'mine': columns score \(for score\) not found"):
        load_split("mine", entry, "train")


def test_sts_texts_indexes_unique_texts():
    frame = pd.DataFrame({"sentence1": ["a", "b", "a"], "sentence2": ["b", "c", "c"], "score": [1, 2, 3]})
    texts, first, second = sts_texts(frame)
    assert texts == ["a", "b", "c"]
    assert [texts[i] for i in first] == ["a", "b", "a"] and [texts[i] for i in second] == ["b", "c", "c"]


# --- the truncated-encoder track's data: Lee similarity splits, word pairs, holdout, labels -------


def test_lee_similarity_split_keeps_documents_apart():
    splits = {s: lee_similarity_split(s, 42) for s in ("train", "validation", "test")}
    documents = {s: set(f["sentence1"]) | set(f["sentence2"]) for s, f in splits.items()}
    assert [len(documents[s]) for s in splits] == [30, 10, 10]
    assert [len(f) for f in splits.values()] == [435, 45, 45]
    assert not documents["train"] & documents["test"] and not documents["validation"] & documents["test"]
    assert lee_similarity_split("test", 7)["sentence1"].tolist() != splits["test"]["sentence1"].tolist()


def test_holdout_carves_a_split_by_seed():
    entry = {"source": "gensim", "builder": "simlex999", "kind": "sts", "splits": {}, "columns": {},
             "score_range": [0, 1], "holdout": {"split": "validation", "from": "train", "size": 0.15, "seed": 3}}
    train, dev = load_split("simlex", entry, "train"), load_split("simlex", entry, "validation")
    assert len(dev) == 150 and len(train) == 849
    pairs = [set(zip(f["sentence1"], f["sentence2"], strict=True)) for f in (train, dev)]
    assert not pairs[0] & pairs[1]
    assert train["score"].between(0, 1).all()
    entry["holdout"]["size"] = 999
    with pytest.raises(DataError, match=r"holdout of 999 leaves no rows.*datasets\.simlex\.holdout\.size"):
        load_split("simlex", entry, "validation")


def test_pair_class_labels_outside_the_declared_range_are_named(tmp_path):
    (tmp_path / "test.jsonl").write_text('{"sentence1": "a", "sentence2": "b", "label": -1}\n')
    entry = {"source": "local", "path": str(tmp_path), "kind": "pair-class", "num_labels": 2, "splits": {},
             "columns": {}, "score_range": [0, 1]}
    with pytest.raises(DataError, match=r"labels \[-1\] are outside 0\.\.1.*unlabelled"):
        load_split("mrpc", entry, "test")
