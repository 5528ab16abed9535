"""Hub contracts (reference/hub) and contracts of files by URL (reference/files): every preset's hub
repositories and downloaded files have one and pin its revision, validation checks entries against
them, and smoke-mode stand-ins are built from them, so that a wrong mapping fails here exactly as it
would on the cluster."""

from __future__ import annotations

import copy
import io
from pathlib import Path

import pytest
import yaml

from trimbench.config.prepare import prepare
from trimbench.data import contracts, hub, model_checks
from trimbench.data.columns import WORD_SIMILARITY_FILES
from trimbench.data.tables import load_split
from trimbench.errors import ConfigError, DataError

REPO = Path(__file__).resolve().parents[2]
PRESETS = sorted(p.name for p in (REPO / "configs").glob("*.yaml"))
CONTRACTS = sorted(p.stem.replace("--", "/", 1) for p in contracts.CONTRACT_DIR.glob("*.yaml"))
DATASETS = [c for c in CONTRACTS if contracts.load(c).type == "dataset"]
PUBLISHED = sorted({published.name: url for url, published in contracts.published_files().items()
                    if url == published.spec["url"]}.items())


def preset(name: str) -> dict:
    return yaml.safe_load((REPO / "configs" / name).read_text())


def hub_repos(entry: dict) -> list[tuple[str, str | None]]:
    """(repo id, the entry's key pinning its revision) of every hub repository a dataset entry reads."""
    if entry.get("source") != "hub":
        return []
    if entry["kind"] == "retrieval" and entry.get("builder") != "homedepot":
        if entry.get("format", "beir") == "tevatron":
            return [(entry["id"], "revision"), (f"{entry['id']}-corpus", "corpus_revision")]
        return [(entry["id"], "revision"), (f"{entry['id']}-qrels", "qrels_revision")]
    return [(entry["id"], "revision")]


def hub_pins(config: dict) -> list[tuple[str, str, str | None]]:
    """(config key, repo id, pinned revision) of every hub repository a config reads."""
    pins = []
    for name, entry in config["datasets"].items():
        entry = {"splits": {}, **entry}
        for repo, key in hub_repos(entry):
            pins.append((f"datasets.{name}.{key}", repo, entry.get(key) if key else None))
    for name, entry in config["models"].items():
        if entry["source"] == "hub":
            pins.append((f"models.{name}.revision", entry["id"], entry.get("revision")))
    for name, exp in config["experiments"].items():
        hard = (exp.get("train") or {}).get("hard_negatives")
        if hard and hard.get("source", "hub") == "hub":
            repo = hard.get("id", "sentence-transformers/msmarco-hard-negatives")
            pins.append((f"experiments.{name}.train.hard_negatives.revision", repo, hard.get("revision")))
    return pins


def downloaded_files(config: dict) -> list[tuple[str, str]]:
    """(config key, URL) of every file a config's url and word_similarity sources download."""
    found = []
    for name, entry in config["datasets"].items():
        if entry["source"] == "url":
            found += [(f"datasets.{name}.urls.{split}", url) for split, url in entry["urls"].items()]
        elif entry["source"] == "word_similarity":
            files = {**WORD_SIMILARITY_FILES, **entry.get("files", {})}
            found += [(f"datasets.{name}.files.{s}", files[s]) for s in entry.get("sets", WORD_SIMILARITY_FILES)]
    return found


@pytest.mark.parametrize("name", PRESETS)
def test_every_hub_and_url_source_of_a_preset_has_a_contract_and_its_revision_is_pinned(name):
    pins = hub_pins(preset(name))
    assert pins
    for key, repo, revision in pins:
        contract = contracts.load(repo)
        assert contract is not None, f"{key}: {repo} has no contract ({contracts.contract_path(repo)})"
        assert revision == contract.pinned_revision, f"{key}: {revision}, not the contract's {contract.pinned_revision}"
    for key, url in downloaded_files(preset(name)):  # the contract's own URL: the pinned one, not an also_at
        published = contracts.published_file(url)
        assert published is not None, f"{key}: {url} has no contract in {contracts.FILES_CONTRACT_DIR}"
        assert url == published.spec["url"] and published.contract.revision in url, (key, url)


def test_the_electra_preset_downloads_kakaobrains_korsts_and_the_four_word_similarity_files():
    assert len(downloaded_files(preset("electra.yaml"))) == 3 + 4


def test_contract_files_follow_the_format(tmp_path, monkeypatch):
    for repo in CONTRACTS:
        contract = contracts.load(repo)
        assert contract.id == repo and contract.raw["read_from"]
        assert contract.revision or any("revision" in note for note in contract.raw["unknown"])
    assert {published.contract.type for published in contracts.published_files().values()} == {"files"}
    (tmp_path / "files").mkdir()
    monkeypatch.setattr(contracts, "FILES_CONTRACT_DIR", tmp_path / "files")
    contracts.published_files.cache_clear()
    (tmp_path / "files" / "me--files.yaml").write_text(
        "id: me/files\ntype: files\nrevision: " + "ab" * 20 + "\nread_from: [x]\n"
        "files: {a.zip: {url: 'https://x/a.zip', format: tsv, columns: {a: string}}}\n")
    try:
        with pytest.raises(contracts.ContractError, match=r"me--files.yaml: file 'a.zip': 'member' \(the table inside "
                                                          r"the zip\) goes with a \.zip url"):
            contracts.published_files()
    finally:
        contracts.published_files.cache_clear()
    monkeypatch.setattr(contracts, "CONTRACT_DIR", tmp_path)
    contracts.load.cache_clear()
    (tmp_path / "me--data.yaml").write_text("id: me/data\ntype: dataset\nrevision: main\nread_from: [x]\n"
                                            "configs: {default: {features: {a: string}, splits: {train: 1}}}\n")
    try:
        with pytest.raises(contracts.ContractError, match=r"me--data.yaml: 'revision' must be a full 40-hex commit"):
            contracts.load("me/data")
        contracts.load.cache_clear()
        (tmp_path / "me--data.yaml").write_text(f"id: me/data\ntype: dataset\nrevision: {'a' * 40}\nread_from: [x]\n"
                                                "configs: {default: {features: {p: {list: {docid: strin}}}, "
                                                "splits: {train: 1}}}\n")
        with pytest.raises(contracts.ContractError, match=r"feature 'p': unknown type \{'list': \{'docid': 'strin"):
            contracts.load("me/data")
    finally:
        contracts.load.cache_clear()


BERT_BASE = {"model_type": "bert", "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
             "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512}
WRONG_ARCHITECTURE = [
    ({"num_attention_heads": 10}, r"num_attention_heads 10 does not divide hidden_size 768"),
    ({"intermediate_size": "3072"}, r"'intermediate_size' must be a positive integer, not '3072'"),
    ({"vocab_size": 0}, r"'vocab_size' must be a positive integer, not 0"),
    ({"max_position_embeddings": True}, r"'max_position_embeddings' must be a positive integer, not True"),
    ({"embedding_size": 128.0}, r"'embedding_size' must be a positive integer, not 128\.0"),
    ({"n_heads": 12}, r"record DistilBERT's 'n_heads' as 'num_attention_heads'"),
]


@pytest.mark.parametrize(("change", "message"), WRONG_ARCHITECTURE, ids=[next(iter(w[0])) for w in WRONG_ARCHITECTURE])
def test_a_model_contracts_sizes_are_positive_integers_with_heads_dividing_the_width(change, message):
    """The sizes a cost plan builds a model from (issue 31): a contract with a wrong one fails on load."""
    raw = {"id": "me/model", "type": "model", "revision": "a" * 40, "read_from": ["x"], "mlm_head": False}
    path = contracts.contract_path("me/model")
    contracts._validate({**raw, "config": BERT_BASE}, path, "me/model")
    with pytest.raises(contracts.ContractError, match=rf"me--model\.yaml: config: {message}"):
        contracts._validate({**raw, "config": {**BERT_BASE, **change}}, path, "me/model")


def test_every_preset_model_contract_has_the_plans_architecture_or_says_what_it_lacks():
    """A cost plan builds every hub model of a preset from its contract's ``config``: each fact it needs
    is there, or ``unknown`` names it, so the plan's error for that model is foreseeable."""
    complete = set()
    for name in PRESETS:
        for entry in preset(name)["models"].values():
            contract = contracts.load(entry["id"]) if entry["source"] == "hub" else None
            if contract is None:
                continue
            config = contract.raw["config"]
            missing = [key for key in contracts.plan_architecture_keys(config) if key not in config]
            notes = " ".join(contract.raw.get("unknown") or ())
            assert all(key in notes for key in missing), f"{contract.where}: {missing} neither read nor in 'unknown'"
            if not missing:
                complete.add(contract.id)
    assert {"google-bert/bert-base-uncased", "google/electra-small-discriminator", "distilbert-base-uncased",
            "sentence-transformers/all-MiniLM-L6-v2"} <= complete
    electra = contracts.load("google/electra-base-generator").raw["config"]
    assert "embedding_size" in contracts.plan_architecture_keys(electra)


LENGTHS_CONTRACT = (f"id: me/lengths\ntype: dataset\nrevision: {'a' * 40}\nread_from: [x]\n"
                    "configs: {default: {features: {title: string, text: string, score: float64}, "
                    "splits: {test: 3}}}\nlengths: {default: {test: {%s: %s}}}\n")
GOOD_FIGURES = "{mean: 9.5, p50: 9, p90: 14, p99: 20, max: 31, tokenizer: wp, source: all 3 rows of f.jsonl}"


@pytest.mark.parametrize("column, figures, message", [
    ("text", GOOD_FIGURES, None),
    ("title+text", GOOD_FIGURES, None),
    ("score", GOOD_FIGURES, r"lengths.default.test.score: not a text feature of config 'default' \(text features: "
                            r"title, text; or title\+text\)"),
    ("text", GOOD_FIGURES.replace("p90: 14", "p90: 8"), r"lengths.default.test.text: the figures must be ordered"),
    ("text", GOOD_FIGURES.replace("mean: 9.5", "mean: 40"), r"lengths.default.test.text: the figures must be ordered"),
    ("text", GOOD_FIGURES.replace("max: 31", "max: 31.5"), r"max a positive integer"),
    ("text", GOOD_FIGURES.replace("p50: 9", "p50: 0"), r"mean, p50, p90, p99 are positive numbers"),
    ("text", GOOD_FIGURES.replace(", source: all 3 rows of f.jsonl", ""), r"its keys are mean, p50, p90, p99, max, "
                                                                         r"tokenizer, source"),
    ("text", GOOD_FIGURES.replace("tokenizer: wp", "tokenizer: ''"), r"'tokenizer' and 'source' name what measured"),
])
def test_a_contracts_lengths_are_of_a_text_column_ordered_and_sourced(tmp_path, monkeypatch, column, figures, message):
    monkeypatch.setattr(contracts, "CONTRACT_DIR", tmp_path)
    contracts.load.cache_clear()
    (tmp_path / "me--lengths.yaml").write_text(LENGTHS_CONTRACT % (column, figures))
    try:
        if message is None:
            assert contracts.load("me/lengths").lengths("default", "test", column)["p99"] == 20
        else:
            with pytest.raises(contracts.ContractError, match=message):
                contracts.load("me/lengths")
    finally:
        contracts.load.cache_clear()


@pytest.mark.parametrize("lengths, message", [
    ("{other: {test: {}}}", r"lengths: no config 'other' \(configs: default\)"),
    ("{default: {train: {}}}", r"lengths.default: no split 'train' \(splits: test\)"),
])
def test_a_contracts_lengths_name_its_own_configs_and_splits(tmp_path, monkeypatch, lengths, message):
    monkeypatch.setattr(contracts, "CONTRACT_DIR", tmp_path)
    contracts.load.cache_clear()
    text = LENGTHS_CONTRACT.replace("lengths: {default: {test: {%s: %s}}}", f"lengths: {lengths}")
    (tmp_path / "me--lengths.yaml").write_text(text)
    try:
        with pytest.raises(contracts.ContractError, match=message):
            contracts.load("me/lengths")
    finally:
        contracts.load.cache_clear()


# --- validation against contracts ------------------------------------------------------------------

WRONG = [
    # the bug of fidelity review T1.1: the princeton-nlp CSV's column names for the hub dataset
    ("2dmse-sts.yaml", ["datasets", "nli-for-simcse", "columns"],
     {"anchor": "sent0", "positive": "sent1", "negative": "hard_neg"},
     r"config key datasets\.nli-for-simcse\.columns\.anchor: 'sent0' is not a feature of hub dataset "
     r"SeanLee97/nli_for_simcse .*its features: text \(string\), positive \(string\), negative \(string\)"),
    # a text feature mapped to a column of ours that is a number
    ("2dmse-sts-v2.yaml", ["datasets", "stsb", "columns"], {"score": "sentence1"},
     r"config key datasets\.stsb\.columns\.score: feature 'sentence1' of hub dataset .* is string; 'score' needs "
     r"a number"),
    ("2dmse-sts-v2.yaml", ["datasets", "stsb", "splits"], {"test": "dev"},
     r"config key datasets\.stsb\.splits\.test: split 'dev' .*its splits: train, validation, test"),
    ("electra.yaml", ["datasets", "mrpc", "config"], "mrpc-pairs",
     r"config key datasets\.mrpc\.config: hub dataset nyu-mll/glue .* has no config 'mrpc-pairs'; its configs: mrpc"),
    # KorSTS by URL: its contract (reference/files) knows kakaobrain's columns and quoting
    ("electra.yaml", ["datasets", "korsts", "columns"], {"score": "similarity_score"},
     r"config key datasets\.korsts\.columns\.score: 'similarity_score' is not a feature of file KorSTS/sts-train\.tsv "
     r"of kakaobrain/kor-nlu-datasets at 0df0fe7 \(reference/files/kakaobrain--kor-nlu-datasets\.yaml\); its "
     r"features: genre \(string\), filename \(string\), year \(string\), id \(int64\), score \(float64\)"),
    ("electra.yaml", ["datasets", "korsts", "quoting"], "minimal",
     r"config key datasets\.korsts\.quoting: file KorSTS/sts-train\.tsv .* is read with quoting: none \(its cells "
     r"hold quote characters that do not pair up"),
    ("electra.yaml", ["datasets", "korsts", "splits"], {"validation": "dev"},
     r"config key datasets\.korsts\.urls: no file for split 'dev' \(our 'validation', read by "
     r"experiments\.electra-korsts\.tasks\); its files are for \['test', 'train', 'validation'\]"),
    ("electra.yaml", ["datasets", "word-similarity", "files"],
     {"simverb3500": WORD_SIMILARITY_FILES["wordsim353-sim"]},
     r"config key datasets\.word-similarity\.files\.simverb3500: set 'simverb3500' is read as the paper reads it, "
     r"but file word-similarity/monolingual/en/wordsim353-sim\.csv .* is csv with a header, not tsv without one"),
    # SICK's entailment_AB takes three values (the contract's, from the seed's map_dict)
    ("electra.yaml", ["datasets", "sick", "label_values"], {"A_entails_B": 0, "A_neutral_B": 1, "A_contradicts": 2},
     r"config key datasets\.sick\.label_values: feature 'entailment_AB' of hub dataset RobZamp/sick .* takes the "
     r"values \['A_entails_B', 'A_neutral_B', 'A_contradicts_B'\]; label_values lacks \['A_contradicts_B'\]; maps "
     r"\['A_contradicts'\], which it never takes"),
    ("electra.yaml", ["datasets", "sick", "label_values"], None,
     r"config key datasets\.sick\.columns\.label: feature 'entailment_AB' .* is string; 'label' needs class labels "
     r"\(integers\), or datasets\.sick\.label_values mapping its values to ours"),
    ("electra.yaml", ["datasets", "all-nli", "splits"], {},
     r"config key datasets\.all-nli\.splits: split 'validation' .*its splits: train, dev, test"),
    ("electra.yaml", ["datasets", "stsb-de", "columns"], {},
     r"config key datasets\.stsb-de\.columns\.score: 'score' is not a feature .*similarity_score \(float32\)"),
    ("electra.yaml", ["datasets", "sick", "revision"], None,
     r"config key datasets\.sick\.revision: .*loading script \(sick\.py\).*revision: refs/convert/parquet"),
    ("electra.yaml", ["datasets", "sick", "columns"], {"sentence1": "sentence_A", "sentence2": "sentence_B",
                                                       "label": "relatedness_score"},
     r"config key datasets\.sick\.columns\.label: feature 'relatedness_score' .* is float32"),
    ("homedepot.yaml", ["datasets", "home-depot", "columns"], {"query": "search_term"},
     r"config key datasets\.home-depot\.columns\.query: 'search_term' is not a feature of hub dataset "
     r"bstds/home_depot"),
    ("2dmse-retrieval.yaml", ["datasets", "scifact", "splits"], {"dev": "dev"},
     r"config key datasets\.scifact\.splits\.dev: split 'dev' .* no dev\.tsv; its files: test\.tsv, train\.tsv"),
    # Tevatron is read as files too: <split>.jsonl.gz of the query repository
    ("2dmse-retrieval.yaml", ["datasets", "msmarco", "splits"], {"dev": "validation"},
     r"config key datasets\.msmarco\.splits\.dev: hub dataset Tevatron/msmarco-passage at a8eec56 .* has no "
     r"validation\.jsonl\.gz \(our split 'dev', read by .*its files: dev\.jsonl\.gz, train\.jsonl\.gz"),
    ("2dmse-sts.yaml", ["models", "bert-base-uncased", "dim"], 1024,
     r"config key models\.bert-base-uncased\.dim: declares dim=1024, but hub model google-bert/bert-base-uncased .*"
     r"hidden_size=768"),
    ("splade.yaml", ["experiments", "splade", "train", "hard_negatives", "negatives_file"], "negatives.jsonl.gz",
     r"config key experiments\.splade\.train\.hard_negatives\.negatives_file: 'negatives\.jsonl\.gz' is not a file"),
]


@pytest.mark.parametrize(("name", "path", "value", "message"), WRONG, ids=[".".join(w[1][1:]) for w in WRONG])
@pytest.mark.parametrize("smoke", [False, True], ids=["cluster", "smoke"])
def test_a_preset_copy_with_one_wrong_key_fails_naming_it(name, path, value, message, smoke):
    config = preset(name)
    target = config
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ConfigError, match=message):
        prepare({**config, "smoke": smoke}, REPO)


def test_mlm_head_pretrained_on_a_checkpoint_without_one_fails():
    config = preset("splade.yaml")
    config["models"]["electra"] = {"source": "hub", "id": "google/electra-small-discriminator",
                                   "revision": contracts.load("google/electra-small-discriminator").revision,
                                   "layers": 12, "dim": 256}
    config["experiments"]["splade"]["variants"] = {"B": {"model": "electra", "method": "splade_max", "lambda_q": 0.1,
                                                         "lambda_d": 0.1}}
    config["experiments"]["splade"]["ensembles"] = {}
    for smoke in (False, True):  # smoke mode: the tiny stand-in is built without a head, as the contract says
        with pytest.raises(ConfigError, match=r"experiments\.splade\.variants\.B\.mlm_head: model 'electra' has no MLM "
                                              r"head \(its .*contract"):
            prepare({**copy.deepcopy(config), "smoke": smoke}, REPO / "missing")


# --- stand-ins built from contracts ---------------------------------------------------------------


@pytest.mark.parametrize("repo", DATASETS)
def test_standin_has_exactly_the_contracts_configs_splits_and_features(repo, tmp_path):
    import datasets

    contract = contracts.load(repo)
    revision = contract.pinned_revision
    source = hub.Standin(tmp_path, rows=6, seed=1)
    for config, spec in contract.configs(revision).items():
        if contract.script(revision) or spec.get("layout", "").startswith("beir"):
            for split, path in spec["files"].items():  # read as files: the loader names them
                table = hub.read_table(source, repo, revision, path)
                assert list(table.columns) == list(spec["features"]) and len(table) > 0, (config, split)
            continue
        for split in spec["splits"]:
            loaded = source.dataset(repo, config, split, revision)
            assert list(loaded.features) == list(spec["features"]), (config, split)
            for name, feature in spec["features"].items():
                names = contracts.class_names(feature)
                real = loaded.features[name]
                assert (real.names == names) if names else (real.dtype == contracts.dtype(feature)), (name, real)
        built = datasets.get_dataset_split_names(str(source.repo(repo, revision)), config)
        assert sorted(built) == sorted(spec["splits"]), config


def test_datasets_refuses_a_script_revision_and_names_dev_tsv_validation(tmp_path):
    """Why BEIR is read as files: on the hub, load_dataset('BeIR/scifact', 'corpus') meets scifact.py and
    load_dataset('BeIR/msmarco-qrels', split='dev') meets a split named 'validation'."""
    source = hub.Standin(tmp_path, rows=4, seed=1)
    with pytest.raises(RuntimeError, match="Dataset scripts are no longer supported, but found scifact.py"):
        source.dataset("BeIR/scifact", "corpus", "corpus", contracts.load("BeIR/scifact").revision)
    qrels = contracts.load("BeIR/msmarco-qrels")
    with pytest.raises(ValueError, match=r"Unknown split \"dev\". Should be one of \['train', 'validation', 'test'\]"):
        source.dataset(qrels.id, None, "dev", qrels.revision)
    with pytest.raises(RuntimeError, match="found sick.py"):
        source.dataset("RobZamp/sick", None, "train", contracts.load("RobZamp/sick").revision)
    assert len(source.dataset("RobZamp/sick", None, "train", "refs/convert/parquet")) == 4


def test_smoke_mode_reads_through_the_mapping_and_a_wrong_one_fails_the_job():
    config = prepare({**preset("2dmse-sts.yaml"), "smoke": True}, REPO)
    entry = config["datasets"]["nli-for-simcse"]
    frame = load_split("nli-for-simcse", entry, "train", REPO)
    assert list(frame.columns) == ["anchor", "positive", "negative"] and len(frame) == 48
    assert (frame["anchor"] != frame["positive"]).all()
    # Validation is the first gate; the stand-in is the second, as the hub table is on the cluster.
    wrong = {**entry, "columns": {"anchor": "sent0"}}
    with pytest.raises(DataError, match=r"columns sent0 \(for anchor\) not found; it has \['text', 'positive', "
                                        r"'negative'\]"):
        load_split("nli-for-simcse", wrong, "train", REPO)
    with pytest.raises(DataError, match=r"hub dataset 'me/mine' has none: write .*me--mine\.yaml"):
        load_split("mine", {**entry, "id": "me/mine"}, "train", REPO)


@pytest.mark.parametrize(("name", "url"), PUBLISHED, ids=[name for name, _ in PUBLISHED])
def test_file_standin_is_written_in_the_contracts_format_with_its_columns(name, url, tmp_path):
    """The stand-in of a downloaded file, read back as its format says (separator, header, index
    column, zip member), has the contract's columns and types; a `quoting: none` file does not parse
    read with quoting, as KorSTS's train and dev files do not."""
    import csv
    import zipfile

    import pandas as pd

    spec = contracts.published_file(url).spec
    path = hub.write_published_file(url, tmp_path, 1, rows=6, seed=1)
    assert path.name == url.rsplit("/", 1)[1]
    handle = zipfile.ZipFile(path).open(spec["member"]) if spec.get("member") else path.open("rb")
    text = handle.read().decode("utf-8")
    names = list(spec["columns"])
    read = {"sep": "\t" if spec["format"] == "tsv" else ",", "header": 0 if spec.get("header", True) else None,
            "names": None if spec.get("header", True) else names, "index_col": 0 if spec.get("index") else None,
            "quoting": csv.QUOTE_NONE if spec.get("quoting") == "none" else csv.QUOTE_MINIMAL}
    table = pd.read_csv(io.StringIO(text), **read)
    assert list(table.columns) == names
    assert len(table) == 6 + spec.get("blank_rows", 0)
    table = table.dropna(how="all")
    for column, feature in spec["columns"].items():
        if contracts.is_text(feature):
            assert table[column].map(type).eq(str).all(), column
            assert set(table[column]) <= set(contracts.text_values(feature) or table[column]), column
        else:
            low, high = contracts.value_range(feature) or (-float("inf"), float("inf"))
            assert pd.api.types.is_numeric_dtype(table[column]) and table[column].between(low, high).all(), column
    if spec.get("quoting") == "none":  # read with quoting, the unclosed quote swallows rows, or the file
        try:
            misread = len(pd.read_csv(io.StringIO(text), **{**read, "quoting": csv.QUOTE_MINIMAL}))
        except pd.errors.ParserError:
            misread = None
        assert misread != 6


def test_smoke_mode_reads_korsts_and_the_word_sets_from_contract_standins_and_a_wrong_mapping_fails_the_job():
    config = prepare({**preset("electra.yaml"), "smoke": True}, REPO)
    korsts = config["datasets"]["korsts"]
    splits = {split: load_split("korsts", korsts, split, REPO) for split in ("train", "validation", "test")}
    assert all(len(frame) == 48 for frame in splits.values())
    assert not set(splits["train"]["sentence1"]) & set(splits["test"]["sentence1"])  # each file its own rows
    assert splits["train"]["sentence2"][0].startswith('"')  # the unclosed quote, read as text (quoting: none)
    words = load_split("word-similarity", config["datasets"]["word-similarity"], "train", REPO)
    assert (~words["sentence1"].str.contains(" ")).all() and words["score"].between(0, 1).all()
    # Validation is the first gate; the stand-in is the second, as kakaobrain's file is on the cluster.
    with pytest.raises(DataError, match=r"columns similarity_score \(for score\) not found; it has \['genre', "
                                        r"'filename', 'year', 'id', 'score', 'sentence1', 'sentence2'\]"):
        load_split("korsts", {**korsts, "columns": {"score": "similarity_score"}}, "train", REPO)
    with pytest.raises(DataError, match=r"'https://example\.org/sts\.tsv' has none: write one in .*reference/files"):
        load_split("korsts", {**korsts, "urls": {"train": "https://example.org/sts.tsv"}}, "train", REPO)


def test_beir_standins_share_ids_across_corpus_queries_and_judgements():
    from trimbench.data.beir import load_retrieval

    config = prepare({**preset("splade.yaml"), "smoke": True}, REPO)
    split = load_retrieval("msmarco", config["datasets"]["msmarco"], "dev", REPO)
    relevant = split.relevant()
    assert len(split.queries) == len(relevant) > 0
    assert set().union(*relevant.values()) <= set(split.corpus["doc_id"])
    train = load_retrieval("msmarco", config["datasets"]["msmarco"], "train", REPO)
    assert not set(train.queries["query_id"]) & set(split.queries["query_id"])  # train and dev judge other queries


def test_tevatron_standins_share_ids_and_give_each_query_its_own_negatives():
    """Tevatron's two repositories are read as files from stand-ins written from their contracts:
    a query's positive and negative passages are corpus passages (the nested lists of the contract),
    the dev and train splits judge other queries, and DL19 reads MS MARCO's corpus."""
    from trimbench.data.beir import load_retrieval

    assert contracts.dtype(contracts.load("Tevatron/msmarco-passage").configs()["default"]["features"][
        "negative_passages"]) == "list<struct<docid: string, title: string, text: string>>"
    config = prepare({**preset("2dmse-retrieval.yaml"), "smoke": True}, REPO)
    train = load_retrieval("msmarco-train", config["datasets"]["msmarco-train"], "train", REPO)
    dev = load_retrieval("msmarco", config["datasets"]["msmarco"], "dev", REPO)
    corpus = set(train.corpus["doc_id"])
    assert set(dev.corpus["doc_id"]) == corpus and len(corpus) == config["smoke_settings"]["standin_rows"]
    assert not set(train.queries["query_id"]) & set(dev.queries["query_id"])
    positive = dict(zip(train.qrels["query_id"], train.qrels["doc_id"], strict=True))
    per_query = train.negatives.groupby("query_id")["doc_id"].agg(list)
    assert set(per_query.index) == set(train.queries["query_id"])
    for query_id, negatives in per_query.items():  # 30 distinct corpus passages, never the positive
        assert len(set(negatives)) == 30 and set(negatives) <= corpus and positive[query_id] not in negatives
    assert config["experiments"]["2dmse-retrieval"]["_corpus_of"]["trec-dl-2019"] == "msmarco"


def test_every_contracted_models_smoke_stand_in_has_its_architecture():
    """A smoke-mode stand-in is built in its contract's architecture (DeBERTa-v3's model_type is
    deberta-v2), so a preset's DeBERTa runs go through the DeBERTa code paths in smoke mode too."""
    from trimbench.config import smoke

    models = [contracts.load(path.stem.replace("--", "/", 1) if "--" in path.stem else path.stem)
              for path in sorted(contracts.CONTRACT_DIR.glob("*.yaml"))]
    models = [c for c in models if c is not None and c.type == "model"]
    assert len(models) >= 20
    for contract in models:
        assert model_checks.model_fact(contract, "model_type") in smoke.TINY_ARCHITECTURES, contract.id
    assert smoke._architecture({"id": "microsoft/deberta-v3-base"}) == "deberta"
    assert smoke._architecture({"id": "google/electra-base-discriminator"}) == "electra"


def test_lengths_are_none_where_the_contract_records_none():
    """The cost plan falls back on its own estimate where a contract records no lengths: an unrecorded
    split, config or column, or no ``lengths:`` at all, is None, not an error."""
    figures = {"mean": 9.5, "p50": 9, "p90": 14, "p99": 20, "max": 31, "tokenizer": "wp", "source": "f.jsonl"}
    recorded = contracts.Contract("me/x", "dataset", None, Path("me--x.yaml"),
                                  {"lengths": {"default": {"test": {"text": figures}}}})
    assert recorded.lengths("default", "test", "text") == figures
    assert [recorded.lengths(*where) for where in (("default", "train", "text"), ("other", "test", "text"),
                                                   ("default", "test", "title"))] == [None, None, None]
    assert contracts.Contract("me/x", "dataset", None, Path("me--x.yaml"), {}).lengths("default", "test",
                                                                                         "text") is None


def _validated(raw: dict, path: Path, repo_id: str, problem: str | None) -> None:
    """``raw`` passes as the contract at ``path``, or fails with exactly ``problem``, named with the
    contract and the format's page."""
    import re

    if problem is None:
        contracts._validate(raw, path, repo_id)
        return
    with pytest.raises(contracts.ContractError,
                       match=f"^{re.escape(f'contract {path}: {problem} (format: reference/hub/README.md)')}$"):
        contracts._validate(raw, path, repo_id)


FILE_SPEC = {"url": "https://x/a.tsv", "format": "tsv", "columns": {"a": "string", "b": "float64"}}
FILE_KEYS_SHOWN = "also_at, blank_rows, columns, format, header, index, member, quoting, rows, url"


@pytest.mark.parametrize(("files", "problem"), [
    ({"a.tsv": FILE_SPEC}, None),
    ({"a.tsv": {**FILE_SPEC, "quoting": "none"}}, None),
    ({"a.tsv": {**FILE_SPEC, "quoting": "minimal", "also_at": ["https://y/a.tsv"], "rows": 3}}, None),
    ({"a.zip": {**FILE_SPEC, "url": "https://x/a.zip", "member": "a.tsv"}}, None),
    ({}, "a files contract needs 'files': {path in the repository: its facts}"),
    (["a.tsv"], "a files contract needs 'files': {path in the repository: its facts}"),
    ({"a.tsv": {**FILE_SPEC, "colour": "red"}}, f"file 'a.tsv': its keys are {FILE_KEYS_SHOWN}"),
    ({"a.tsv": "https://x/a.tsv"}, f"file 'a.tsv': its keys are {FILE_KEYS_SHOWN}"),
    ({"a.tsv": {**FILE_SPEC, "url": "http://x/a.tsv"}}, "file 'a.tsv' needs 'url' (https) and 'format' (tsv, csv)"),
    ({"a.tsv": {**FILE_SPEC, "format": "json"}}, "file 'a.tsv' needs 'url' (https) and 'format' (tsv, csv)"),
    ({"a.zip": {**FILE_SPEC, "url": "https://x/a.zip"}},
     "file 'a.zip': 'member' (the table inside the zip) goes with a .zip url, and only there"),
    ({"a.tsv": {**FILE_SPEC, "member": "a.tsv"}},
     "file 'a.tsv': 'member' (the table inside the zip) goes with a .zip url, and only there"),
    ({"a.tsv": {**FILE_SPEC, "quoting": "all"}}, "file 'a.tsv': 'quoting' is minimal or none"),
    ({"a.tsv": {key: v for key, v in FILE_SPEC.items() if key != "columns"}},
     "file 'a.tsv' needs 'columns' (in the file's order)"),
    ({"a.tsv": {**FILE_SPEC, "columns": {}}}, "file 'a.tsv' needs 'columns' (in the file's order)"),
    ({"a.tsv": {**FILE_SPEC, "columns": {"a": "strin"}}}, "file 'a.tsv' feature 'a': unknown type 'strin'"),
])
def test_a_files_contract_names_the_file_and_fact_it_gets_wrong(files, problem):
    """reference/files/*.yaml (the URL downloads' facts): each file's https url, format, zip member,
    quoting and typed columns; a wrong one is an error naming the contract, the file and the fact."""
    raw = {"id": "me/files", "type": "files", "revision": "ab" * 20, "read_from": ["x"], "files": files}
    _validated(raw, contracts.FILES_CONTRACT_DIR / "me--files.yaml", "me/files", problem)


# --- every fact of a contract, and its readers ---------------------------------------------------


DATASET = {"id": "me/data", "type": "dataset", "revision": "a" * 40, "read_from": ["x"],
           "configs": {"default": {"features": {"text": "string", "score": {"dtype": "float64", "range": [0, 5]}},
                                   "splits": {"train": 4, "test": 2}}}}


def _spec(**changes) -> dict:
    """DATASET's one config with ``changes``."""
    return {"default": {**DATASET["configs"]["default"], **changes}}


@pytest.mark.parametrize(("change", "problem"), [
    ({}, None),
    ({"revision": None, "unknown": ["revision: no commit found on the hub"]}, None),
    ({"configs": None, "files": ["a.parquet"]}, None),
    ({"configs": _spec(files={"train": "tr.parquet", "test": "te.parquet"}), "parquet_export": {
        "revision": "b" * 40, "files": {"default": {"train": "x"}}}}, None),
    ({"configs": _spec(judged_queries={"test": 1})}, None),
    ({"configs": _spec(judged_queries={"train": 4, "test": 2})}, None),
    ({"configs": _spec(features={"text": {"dtype": "string", "values": ["a"]}})}, None),
    ({"id": "me/other"}, "'id' must be 'me/data'"),
    ({"type": "files"}, "'type' must be dataset or model"),
    ({"revision": None}, "'revision' may be null only where 'unknown' says why no commit was found"),
    ({"revision": None, "unknown": ["the row counts"]},
     "'revision' may be null only where 'unknown' says why no commit was found"),
    ({"revision": "A" * 40}, "'revision' must be a full 40-hex commit"),
    ({"revision": "a" * 39}, "'revision' must be a full 40-hex commit"),
    ({"read_from": []}, "'read_from' must name where the facts come from"),
    ({"configs": {}}, "a dataset needs 'configs' (or, for one read as files only, 'files')"),
    ({"configs": ["default"]}, "a dataset needs 'configs' (or, for one read as files only, 'files')"),
    ({"configs": {"default": {"features": {"text": "string"}}}}, "config 'default' needs 'features' and 'splits'"),
    ({"configs": {"default": {"features": ["text"], "splits": {"train": 1}}}},
     "config 'default' needs 'features' and 'splits'"),
    ({"configs": _spec(features={"text": "strin"})}, "config 'default' feature 'text': unknown type 'strin'"),
    ({"configs": _spec(features={"n": {"dtype": "int64", "values": ["1"]}})},
     "config 'default' feature 'n': 'values' lists the values of a text feature"),
    ({"configs": _spec(features={"text": {"dtype": "string", "values": []}})},
     "config 'default' feature 'text': 'values' lists the values of a text feature"),
    ({"configs": _spec(files={"train": "tr.parquet"})}, "config 'default': 'files' must name a file for each split"),
    *[({"configs": _spec(judged_queries=judged)},
       "config 'default': 'judged_queries' maps some of its splits to a positive count of queries")
      for judged in ([3], {"dev": 3}, {"test": 0}, {"test": True}, {"test": 1.5})],
    ({"lengths": ["default"]}, "'lengths' maps config -> split -> text column -> its figures"),
    ({"lengths": {"other": {}}}, "lengths: no config 'other' (configs: default)"),
    ({"parquet_export": {"revision": "b" * 40}}, "'parquet_export' needs 'revision' and 'files'"),
    ({"parquet_export": {"files": {}}}, "'parquet_export' needs 'revision' and 'files'"),
    ({"type": "model", "config": BERT_BASE}, "a model needs 'config' (config.json facts) and 'mlm_head' (true/false)"),
    ({"type": "model", "config": [], "mlm_head": True},
     "a model needs 'config' (config.json facts) and 'mlm_head' (true/false)"),
])
def test_a_dataset_contract_names_the_fact_it_gets_wrong(change, problem):
    """reference/hub/*.yaml: each wrong fact of a dataset (or model) contract is one error naming the
    contract and the fact, word for word; each right variant passes."""
    raw = {key: value for key, value in {**DATASET, **change}.items() if value is not None or key == "revision"}
    _validated(raw, contracts.contract_path("me/data"), "me/data", problem)


def test_a_model_contract_needs_no_configs_and_a_files_contract_only_files():
    path = contracts.contract_path("me/data")
    model = {key: v for key, v in DATASET.items() if key != "configs"}
    contracts._validate({**model, "type": "model", "config": BERT_BASE, "mlm_head": False}, path, "me/data")
    files_path = contracts.FILES_CONTRACT_DIR / "me--data.yaml"
    with pytest.raises(contracts.ContractError, match=r"'type' must be files \("):
        contracts._validate(DATASET, files_path, "me/data")
    with pytest.raises(contracts.ContractError, match=r"'id' must be 'me/data'"):
        contracts._validate(["me/data"], path, "me/data")


def test_feature_types_read_as_the_contract_writes_them():
    """A feature's type, its fields, class names, listed values and range, and which types are known."""
    nested = {"list": {"docid": "string", "score": "float32"}}
    labels = {"class_label": ["no", "yes"]}
    ranged = {"dtype": "float64", "range": [0, 5]}
    valued = {"dtype": "string", "values": ["a", "b"]}
    assert [contracts.dtype(s) for s in ("int64", nested, labels, ranged, valued)] == [
        "int64", "list<struct<docid: string, score: float32>>", "class_label", "float64", "string"]
    assert [contracts.fields(s) for s in (nested, labels, "string")] == [{"docid": "string", "score": "float32"},
                                                                        None, None]
    assert [contracts.class_names(s) for s in (labels, ranged, "string")] == [["no", "yes"], None, None]
    assert [contracts.text_values(s) for s in (valued, ranged, "string")] == [["a", "b"], None, None]
    assert [contracts.value_range(s) for s in (ranged, valued, "float64")] == [[0, 5], None, None]
    assert [contracts.is_text(s) for s in ("string", "large_string", valued, "int64", labels)] == [
        True, True, True, False, False]
    known = ["string", "bool", "float16", labels, ranged, nested, {"list": {"a": {"list": {"b": "int8"}}}}]
    unknown = ["strin", 5, {"dtype": "decimal"}, {"list": {}}, {"list": ["string"]}, {"list": {"a": "strin"}}]
    assert [contracts._known_type(s) for s in known] == [True] * len(known)
    assert [contracts._known_type(s) for s in unknown] == [False] * len(unknown)
    assert contracts.describe_features({"text": "string", "label": labels, "p": nested}) == (
        "text (string), label (class_label), p (list<struct<docid: string, score: float32>>)")


def test_a_contract_at_its_revision_or_its_parquet_export():
    """A script dataset's contract: at its own revision the script and the configs' own files, at the
    parquet export's revision no script and the export's files of the configs it converted."""
    raw = {"script": "data.py", "files": ["data.py", "extra.tsv"],
           "configs": {"a": {"files": {"train": "a/train.tsv"}}, "b": {"splits": {"test": 1}}},
           "parquet_export": {"revision": "e" * 40, "files": {"a": {"train": "a/train.parquet"}}}}
    contract = contracts.Contract("me/s", "dataset", "c" * 40, contracts.contract_path("me/s"), raw)
    export = "e" * 40
    assert contract.where == "reference/hub/me--s.yaml" and contract.pinned_revision == export
    assert [contract.describes(r) for r in (None, "c" * 40, export, "d" * 40)] == [True, True, True, False]
    assert [contract.is_export(r) for r in (None, "c" * 40, export)] == [False, False, True]
    assert [contract.script(r) for r in (None, export)] == ["data.py", None]
    assert contract.configs() == raw["configs"] and contract.configs("c" * 40) == raw["configs"]
    assert contract.configs(export) == {"a": {"files": {"train": "a/train.parquet"}}}
    assert contract.files() == {"a/train.tsv", "data.py", "extra.tsv"}
    assert contract.files(export) == {"a/train.parquet"}
    assert contract.label() == f"hub dataset me/s at ccccccc ({contract.where})"
    assert contract.label("main") == f"hub dataset me/s at main ({contract.where})"
    assert contract.label(export) == f"hub dataset me/s at eeeeeee ({contract.where})"
    plain = contracts.Contract("me/p", "model", None, contracts.contract_path("me/p"), {"script": "x.py"})
    assert plain.pinned_revision is None and plain.label() == "hub model me/p at main (reference/hub/me--p.yaml)"
    assert plain.is_export(None) is False and plain.script(None) == "x.py" and plain.files() == set()
    assert not plain.describes("c" * 40) and plain.describes(None)
    assert contracts.contract_path("me/p").name == "me--p.yaml" and contracts.contract_path("me/p").parent == (
        contracts.CONTRACT_DIR)


def test_a_split_and_its_config_key_through_holdout_and_splits():
    entry = {"holdout": {"split": "validation", "from": "train"}, "splits": {"train": "tr", "test": "te"}}
    assert [contracts.source_split(entry, s) for s in ("validation", "train", "test", "dev")] == [
        "tr", "tr", "te", "dev"]
    assert [contracts.split_key("datasets.x", entry, s) for s in ("validation", "train", "test", "dev")] == [
        "datasets.x.splits.train", "datasets.x.splits.train", "datasets.x.splits.test", "datasets.x.splits"]
    plain = {"splits": {"validation": "dev"}}
    assert contracts.source_split(plain, "validation") == "dev" and contracts.split_key("d", plain, "train") == (
        "d.splits")
    mismatch = contracts.Mismatch("datasets.x.id", "no such repository")
    assert (mismatch.key, str(mismatch)) == ("datasets.x.id", "no such repository")
    assert contracts.plan_architecture_keys({"model_type": "electra"}) == (*contracts.PLAN_ARCHITECTURE_KEYS,
                                                                          "embedding_size")
    assert contracts.plan_architecture_keys({"model_type": "bert"}) == contracts.PLAN_ARCHITECTURE_KEYS == (
        "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size",
        "max_position_embeddings")


def _failing(problem):
    raise contracts.ContractError(problem)


def test_length_figures_may_all_be_equal_and_one_token():
    """The bounds are inclusive: one token everywhere (mean = p50 = p90 = p99 = max = 1) is a valid record."""
    ones = {"mean": 1, "p50": 1, "p90": 1, "p99": 1, "max": 1, "tokenizer": "wp", "source": "f.jsonl"}
    contracts.validate_length_figures(ones, "w", _failing)
    contracts.validate_length_figures({**ones, "mean": 1.0, "p90": 2.5, "p99": 3, "max": 3}, "w", _failing)
    with pytest.raises(contracts.ContractError, match=r"^w: the figures must be ordered, p50 <= p90 <= p99 <= max "
                                                      r"and mean <= max$"):
        contracts.validate_length_figures({**ones, "p50": 2}, "w", _failing)
    with pytest.raises(contracts.ContractError, match=r"^w: mean, p50, p90, p99 are positive numbers of tokens, max a "
                                                      r"positive integer$"):
        contracts.validate_length_figures({**ones, "p99": True}, "w", _failing)


def test_lengths_name_the_configs_splits_and_text_features_there_are():
    configs = {"default": {"splits": {"test": 3, "dev": 1}, "features": {"text": "string", "body": "large_string",
                                                                        "label": "int64"}},
               "titled": {"splits": {"test": 3}, "features": {"title": "string", "id": "string"}}}
    figures = {"mean": 2, "p50": 2, "p90": 3, "p99": 4, "max": 5, "tokenizer": "wp", "source": "f"}
    for fine in (None, {"default": None}, {"default": {"test": None}}, {"default": {"dev": {"body": figures}}}):
        contracts._validate_lengths(fine, configs, _failing)
    for lengths, problem in [
        ({"other": {}}, "lengths: no config 'other' (configs: default, titled)"),
        ({"default": {"train": {}}}, "lengths.default: no split 'train' (splits: test, dev)"),
        ({"default": {"test": {"label": figures}}},
         "lengths.default.test.label: not a text feature of config 'default' (text features: text, body)"),
        ({"titled": {"test": {"title+text": figures}}},
         "lengths.titled.test.title+text: not a text feature of config 'titled' (text features: title, id)"),
        ({"default": {"test": {"text+body": figures}}},
         "lengths.default.test.text+body: not a text feature of config 'default' (text features: text, body)"),
        ({"default": {"test": {"text": {**figures, "p50": 9}}}},
         "lengths.default.test.text: the figures must be ordered, p50 <= p90 <= p99 <= max and mean <= max"),
    ]:
        with pytest.raises(contracts.ContractError) as raised:
            contracts._validate_lengths(lengths, configs, _failing)
        assert str(raised.value) == problem


def test_a_model_contracts_smallest_sizes_and_a_config_without_heads_pass():
    """One layer, one head, width 1 are positive integers; a config that records no heads (or no width)
    has nothing to divide; 12 heads of 768 divide it, 5 do not."""
    contracts._validate_architecture({key: 1 for key in contracts.ARCHITECTURE_KEYS}, _failing)
    contracts._validate_architecture({"hidden_size": 768}, _failing)
    contracts._validate_architecture({"num_attention_heads": 5}, _failing)
    contracts._validate_architecture({"hidden_size": 768, "num_attention_heads": 12}, _failing)
    with pytest.raises(contracts.ContractError,
                       match=r"^config: num_attention_heads 5 does not divide hidden_size 768$"):
        contracts._validate_architecture({"hidden_size": 768, "num_attention_heads": 5}, _failing)
    with pytest.raises(contracts.ContractError, match=r"^config: record DistilBERT's 'dim' as 'hidden_size' \(the "
                                                      r"common names the checks and the plan read\)$"):
        contracts._validate_architecture({"dim": 768}, _failing)
    with pytest.raises(contracts.ContractError, match=r"^config: 'num_hidden_layers' must be a positive integer, "
                                                      r"not None$"):
        contracts._validate_architecture({"num_hidden_layers": None}, _failing)
