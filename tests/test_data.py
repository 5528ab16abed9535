"""Datasets: the embedded Lee data, local folders with column maps, smoke stand-ins."""

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
    with pytest.raises(DataError, match="^dataset 'mine': no file for split 'test'.*found: train.jsonl"):
        load_split("mine", entry, "test")
    with pytest.raises(DataError, match=r"dataset 'mine' \(file '.*train.jsonl'\): columns score \(for score\) "
                                        r"not found"):
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
    with pytest.raises(DataError, match=r"dataset 'mrpc' \(file '.*test.jsonl'\): 1 of 1 rows have a missing, "
                                        r"non-numeric or out-of-range label \(each must be an integer in \[0, 1\]; "
                                        r"datasets.mrpc.num_labels is 2; unlabelled rows are often -1\); "
                                        r"the first is row 1: label -1"):
        load_split("mrpc", entry, "test")


# --- bad rows and unreadable files: one DataError naming the dataset, the file and the first bad row


STS_CSV = "sentence1,sentence2,score\n" + "".join(f"text {i},other {i},{i % 6}\n" for i in range(40))


def local_entry(folder, kind="sts", **extra):
    return {"source": "local", "path": str(folder), "kind": kind, "splits": {}, "columns": {},
            "score_range": [0, 5], "num_labels": 2, **extra}


def bad_row(csv: str, row: int, value: str) -> str:
    """``csv`` with the last field of data row ``row`` (counted from 1) replaced by ``value``."""
    lines = csv.splitlines()
    lines[row] = lines[row].rsplit(",", 1)[0] + "," + value
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("content", "message"), [
    # The probe's A17: three empty scores became an all-NaN score table taken as done.
    (bad_row(bad_row(bad_row(STS_CSV, 7, ""), 20, ""), 33, ""),
     r"3 of 40 rows have a missing, non-numeric or out-of-range score \(each must be a number in \[0, 5\]; "
     r"datasets.local-sts.score_range\); the first is row 7: score missing"),
    # A17b: a text score failed with "could not convert string to float: 'high'", naming nothing.
    (bad_row(STS_CSV, 12, "high"), r"1 of 40 rows .* score.*the first is row 12: score 'high'"),
    (bad_row(STS_CSV, 40, "5.5"), r"1 of 40 rows .* score.*the first is row 40: score 5.5"),
    (bad_row(STS_CSV, 1, "-1"), r"1 of 40 rows .*the first is row 1: score -1"),
])
def test_bad_scores_are_one_error_naming_dataset_file_and_row(tmp_path, content, message):
    (tmp_path / "test.csv").write_text(content)
    with pytest.raises(DataError, match=rf"^dataset 'local-sts' \(file '{tmp_path}/test.csv'\): {message}"):
        load_split("local-sts", local_entry(tmp_path), "test")


@pytest.mark.parametrize(("label", "shown"), [("", "missing"), ("yes", "'yes'"), ("0.5", "0.5"), ("2", "2")])
def test_bad_labels_are_named(tmp_path, label, shown):
    rows = "sentence1,sentence2,label\na,b,0\nc,d,1\n" + f"e,f,{label}\n"
    (tmp_path / "train.csv").write_text(rows)
    with pytest.raises(DataError, match=rf"dataset 'mrpc' \(file .*\): 1 of 3 rows .* label .*row 3: label {shown}$"):
        load_split("mrpc", local_entry(tmp_path, "pair-class"), "train")


@pytest.mark.parametrize("kind", ["pairs", "triplets", "sts", "pair-class"])
def test_rows_without_text_are_dropped_and_counted_in_the_log(tmp_path, kind, caplog):
    columns = {"pairs": "anchor,positive", "triplets": "anchor,positive,negative",
               "sts": "sentence1,sentence2,score", "pair-class": "sentence1,sentence2,label"}[kind]
    width = columns.count(",") + 1
    rows = [",".join(["x"] * (width - 1) + ["1"]), ",".join([""] + ["y"] * (width - 2) + ["1"]),
            ",".join(["z"] * (width - 1) + ["0"])]
    (tmp_path / "train.csv").write_text(columns + "\n" + "\n".join(rows) + "\n")
    with caplog.at_level("WARNING", logger="trimbench"):
        frame = load_split("mine", local_entry(tmp_path, kind), "train")
    assert len(frame) == 2
    assert "dataset 'mine' (file" in caplog.text and "1 of 3 rows without text" in caplog.text
    assert "(the first: row 2)" in caplog.text


@pytest.mark.parametrize(("name", "content", "message"), [
    # A15: pandas.errors.EmptyDataError: No columns to parse from file
    ("test.csv", b"", r"file '.*test.csv' is empty"),
    ("test.csv", b"sentence1,sentence2,score\n", r"\(file '.*test.csv'\): no rows"),
    # A16: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0
    ("test.csv", b"sentence1,sentence2,score\na,b,1\n\xff\xfe,c,2\n",
     r"file '.*test.csv' is not UTF-8 text \(byte 0xff on line 3\); save it as UTF-8"),
    ("test.jsonl", b'{"sentence1": "a", "sentence2": "b", "score": 1}\n{"sentence1": ',
     r"cannot read '.*test.jsonl' as a jsonl table"),
    ("test.parquet", b"PAR1 not really", r"cannot read '.*test.parquet' as a parquet table"),
])
def test_unreadable_files_name_dataset_and_file(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(DataError, match=rf"^dataset 'local-sts'.*{message}"):
        load_split("local-sts", local_entry(tmp_path), "test")


def test_hub_rows_name_the_hub_split(monkeypatch):
    from trimbench import data

    frame = pd.DataFrame({"sentence1": ["a", "b"], "sentence2": ["c", "d"], "score": [0.5, -1.0]})
    monkeypatch.setattr(data, "_hub", lambda entry, split: frame)
    entry = {"source": "hub", "id": "glue", "config": "stsb", "kind": "sts", "splits": {}, "columns": {},
             "score_range": [0, 5]}
    with pytest.raises(DataError, match=r"dataset 'stsb' \(hub dataset 'glue' split 'test'\): 1 of 2 rows .*"
                                        r"the first is row 2: score -1.0"):
        load_split("stsb", entry, "test")
