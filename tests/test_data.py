"""Datasets: the embedded Lee data, local folders with column maps, smoke stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_standin_uses_source_columns_and_normalises_back():
    entry = {"source": "standin", "kind": "triplets", "splits": {}, "seed": 1, "standin_rows": 10,
             "columns": {"anchor": "sent0", "positive": "sent1", "negative": "hard_neg"}, "score_range": [0, 1]}
    frame = load_split("nli", entry, "train")
    assert list(frame.columns) == ["anchor", "positive", "negative"] and len(frame) == 10
    assert (frame.positive != frame.negative).all()
    sts = load_split("sts12", {**entry, "kind": "sts", "columns": {}, "score_range": [0, 5]}, "test")
    assert sts.score.between(0, 1).all()


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


def test_pair_class_standin_has_balanced_labels():
    entry = {"source": "standin", "kind": "pair-class", "num_labels": 3, "columns": {}, "standin_rows": 48,
             "seed": 1, "splits": {}, "score_range": [0, 1]}
    assert load_split("sick", entry, "train")["label"].value_counts().tolist() == [16, 16, 16]


def test_pair_class_labels_outside_the_declared_range_are_named(tmp_path):
    (tmp_path / "test.jsonl").write_text('{"sentence1": "a", "sentence2": "b", "label": -1}\n')
    entry = {"source": "local", "path": str(tmp_path), "kind": "pair-class", "num_labels": 2, "splits": {},
             "columns": {}, "score_range": [0, 1]}
    with pytest.raises(DataError, match=r"labels \[-1\] are outside 0\.\.1.*unlabelled"):
        load_split("mrpc", entry, "test")


def test_sick_labels_are_entailment_ab_as_the_paper_maps_them(tmp_path):
    """The preset's SICK entry reads `entailment_AB` (utils.py:79-106 since commit 3c71f78), not the
    symmetric `label`: on this hand-made table the two disagree on the second pair (as on 327 of
    SICK's 9,840), and an unknown value is named."""
    import yaml

    sick = yaml.safe_load((Path(__file__).parent.parent / "configs" / "electra.yaml").read_text())["datasets"]["sick"]
    rows = [("A man plays", "A man is playing", "ENTAILMENT", "A_entails_B", 0),
            ("A dog runs", "No dog runs", "NEUTRAL", "A_contradicts_B", 1),
            ("A cat sleeps", "A cat eats", "NEUTRAL", "A_neutral_B", 1)]
    frame = pd.DataFrame(rows, columns=["sentence_A", "sentence_B", "entailment_label", "entailment_AB", "label"])
    frame.to_json(tmp_path / "test.jsonl", orient="records", lines=True)
    entry = {**sick, "source": "local", "path": str(tmp_path), "splits": {}, "score_range": [0, 1]}
    loaded = load_split("sick", entry, "test")
    assert loaded["label"].tolist() == [0, 2, 1]
    assert loaded["sentence1"].tolist() == frame["sentence_A"].tolist()
    frame.assign(entailment_AB=["A_entails_B", "B_entails_A", "A_neutral_B"]).to_json(
        tmp_path / "test.jsonl", orient="records", lines=True)
    with pytest.raises(DataError, match=r"labels \['B_entails_A'\] are not in datasets\.sick\.label_values"):
        load_split("sick", entry, "test")
    standin = {**sick, "source": "standin", "splits": {}, "standin_rows": 48, "seed": 1, "score_range": [0, 1]}
    assert sorted(load_split("sick", standin, "train")["label"].value_counts().tolist()) == [16, 16, 16]
