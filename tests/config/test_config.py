"""Validation: every bad input gets one clear message naming the culprit."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trimbench import checks as tb_checks
from trimbench.config import prepare as tb_config
from trimbench.config import schema as tb_schema
from trimbench.dense import variants as tb_variants
from trimbench.errors import ConfigError
from trimbench.models import weights_problem

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def default() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text())


def prepare(cfg):
    return tb_config.prepare(cfg, REPO)


def test_embedded_default_validates_and_fills_defaults(default):
    cfg = prepare(default)
    exp = cfg["experiments"]["sts-v1"]
    assert exp["_depth"] == 6
    assert exp["train"]["gradient_accumulation"] == 1
    assert exp["evaluation"]["metrics"] == ["spearman_cosine", "pearson_cosine"]
    assert cfg["smoke"] is False


@pytest.mark.parametrize("preset", sorted(p.name for p in (REPO / "configs").glob("*.yaml")))
def test_presets_validate_offline_and_in_smoke_mode(preset, tmp_path):
    raw = yaml.safe_load((REPO / "configs" / preset).read_text())
    # TREC topic / qrels files a preset names (SPLADE's DL19 / DL20) must exist at config time:
    # empty ones stand in for them here.
    for entry in raw["datasets"].values():
        for key in ("topics", "qrels"):
            if key in entry:
                (tmp_path / entry[key]).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / entry[key]).touch()
    assert tb_config.prepare(copy.deepcopy(raw), tmp_path)["experiments"]
    if any("topics" in entry and "topics_url" not in entry for entry in raw["datasets"].values()):
        with pytest.raises(ConfigError, match=r"datasets\.[a-z0-9-]+\.topics: file '.*' does not exist"):
            tb_config.prepare(copy.deepcopy(raw), tmp_path / "elsewhere")
    elif any(key in entry for entry in raw["datasets"].values() for key in ("topics", "qrels")):
        # every TREC file has its official URL: downloaded on first contact, no file needed
        assert tb_config.prepare(copy.deepcopy(raw), tmp_path / "elsewhere")["experiments"]
    smoke = prepare({**raw, "smoke": True})
    assert all(m["source"] != "hub" for m in smoke["models"].values())
    # Hub datasets stay hub entries (checked against their contracts) read from contract-built stand-ins.
    assert all(d["standin"] for d in smoke["datasets"].values() if d["source"] == "hub")


def test_only_keeps_the_named_experiments(default):
    cfg = prepare({**default, "only": "sts-v2, retrieval"})  # as `--config only=sts-v2,retrieval` gives it
    assert sorted(cfg["experiments"]) == ["retrieval", "sts-v2"]
    with pytest.raises(ConfigError, match=r"config key only: unknown experiment 'retrievl' \(did you mean "
                                          r"'retrieval'\?\)"):
        prepare({**default, "only": ["retrievl"]})


def test_unknown_key_names_it_and_suggests(default):
    default["experiments"]["sts-v1"]["grid"]["lyers"] = [1]
    with pytest.raises(ConfigError, match=r"experiments\.sts-v1\.grid.*'lyers' \(did you mean 'layers'\?\)"):
        prepare(default)


def test_unknown_top_level_key(default):
    default["experimnts"] = {}
    with pytest.raises(ConfigError, match="'experimnts' \\(did you mean 'experiments'\\?\\)"):
        prepare(default)


@pytest.mark.parametrize(("old_key", "message"), [
    (("experiments", "splade", "runs"), r"experiments\.splade\.runs: renamed to experiments\.splade\.variants"),
    (("smoke_settings", "max_runs"), r"smoke_settings\.max_runs: renamed to smoke_settings\.max_variants"),
])
def test_a_renamed_key_names_its_new_name(default, old_key, message):
    """A config written before SPLADE's runs became variants gets one error naming the new key."""
    section, key = default, old_key[-1]
    for name in old_key[:-1]:
        section = section.setdefault(name, {})
    section[key] = section.pop("variants", 2)
    with pytest.raises(ConfigError, match=message):
        prepare(default)


def test_an_ensemble_of_runs_names_its_variants_key():
    config = yaml.safe_load((REPO / "tests" / "configs" / "tiny_splade.yaml").read_text())
    ensemble = config["experiments"]["splade-tiny"]["ensembles"]["AD"]
    ensemble["runs"] = ensemble.pop("variants")
    with pytest.raises(ConfigError, match=r"experiments\.splade-tiny\.ensembles\.AD\.runs: renamed to "
                                          r"experiments\.splade-tiny\.ensembles\.AD\.variants"):
        tb_schema.validate_schema(config)


def test_bad_enum_value(default):
    default["experiments"]["sts-v1"]["semantics"] = "st5"
    with pytest.raises(ConfigError, match=r"experiments\.sts-v1\.semantics: 'st5' is not one of"):
        prepare(default)


def test_unknown_dataset_lists_known(default):
    default["experiments"]["sts-v1"]["evaluation"]["datasets"] = ["lee-simm"]
    with pytest.raises(ConfigError, match=r"unknown dataset 'lee-simm' \(did you mean 'lee-sim'\?\); "
                                          r"known datasets: lee-ict, lee-ict-retrieval, lee-ict-triplets, lee-sim"):
        prepare(default)


def test_unknown_model_lists_known(default):
    default["experiments"]["sts-v1"]["model"] = "bert"
    with pytest.raises(ConfigError, match=r"experiments\.sts-v1\.model: unknown model 'bert'.*known models: minilm"):
        prepare(default)


def test_missing_local_dataset_folder(default, tmp_path):
    default["datasets"]["lee-sim"] = {"source": "local", "path": str(tmp_path / "nowhere"), "kind": "sts"}
    with pytest.raises(ConfigError, match=r"datasets\.lee-sim\.path: local dataset folder '.*nowhere' does not exist"):
        prepare(default)


def test_missing_local_model_folder(default, tmp_path):
    default["models"]["minilm"] = {"source": "local", "path": str(tmp_path)}
    with pytest.raises(ConfigError, match=r"models\.minilm\.path: '.*' is not a model directory"):
        prepare(default)


def test_a_local_model_without_weights_or_with_a_cut_weight_file_is_refused_before_any_job(default, tmp_path,
                                                                                          minilm_dir):
    """The probe's 18b/18c: once a job failed at encoding; now the config check names the key."""
    model = tmp_path / "mine"
    shutil.copytree(minilm_dir, model)
    default["models"]["minilm"] = {"source": "local", "path": str(model)}
    prepare(copy.deepcopy(default))  # the intact copy passes
    weights = model / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) - 100])
    with pytest.raises(ConfigError, match=r"config key models\.minilm\.path: model directory '.*mine' has a damaged "
                                          rf"weight file 'model\.safetensors' \({len(data) - 100} bytes; its header "
                                          rf"describes {len(data)}\)"):
        prepare(copy.deepcopy(default))
    weights.unlink()
    with pytest.raises(ConfigError, match=r"models\.minilm\.path: model directory '.*mine' holds no weights"):
        prepare(copy.deepcopy(default))


def test_the_shipped_minilm_folder_passes_the_weights_check(minilm_dir):
    assert weights_problem(minilm_dir) is None


def test_a_local_models_broken_config_json_is_named(default, tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "bert", "num_hidden_layers": 3, garbage')
    default["models"]["minilm"] = {"source": "local", "path": str(tmp_path)}
    with pytest.raises(ConfigError, match=rf"config key models\.minilm: '{tmp_path}/config.json' is not valid JSON: "
                                          r"Expecting property name"):
        prepare(default)


def test_source_requires_its_key(default):
    default["datasets"]["lee-sim"] = {"source": "hub", "kind": "sts"}
    with pytest.raises(ConfigError, match=r"datasets\.lee-sim: 'id' is a required property"):
        prepare(default)


def test_layer_beyond_depth(default):
    default["experiments"]["sts-v1"]["grid"]["layers"] = [2, 7]
    with pytest.raises(ConfigError, match=r"grid\.layers: layer 7 is beyond model 'minilm', which has 6 layers"):
        prepare(default)


def test_dim_beyond_width(default):
    default["experiments"]["sts-v1"]["grid"]["dims"] = [512, 384]
    with pytest.raises(ConfigError, match=r"grid\.dims: dim 512 is larger than model 'minilm''s width 384"):
        prepare(default)


def test_declared_shape_must_match_the_model(default):
    default["models"]["minilm"]["layers"] = 12
    with pytest.raises(ConfigError, match=r"models\.minilm: declares layers=12 but the model's config says 6"):
        prepare(default)


def test_hub_model_without_declared_shape_offline(default, monkeypatch):
    monkeypatch.setattr("trimbench.models._cached_hub_config", lambda entry: None)
    default["models"]["minilm"] = {"source": "hub", "id": "someone/not-cached"}
    with pytest.raises(ConfigError, match="declare 'layers' and 'dim'"):
        prepare(default)


def test_hub_model_shape_from_the_local_cache_without_huggingface_hub(default, monkeypatch, tmp_path):
    snapshot = tmp_path / "models--someone--cached" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"num_hidden_layers": 6, "hidden_size": 384}')
    (tmp_path / "models--someone--cached" / "refs").mkdir()
    (tmp_path / "models--someone--cached" / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    default["models"]["minilm"] = {"source": "hub", "id": "someone/cached"}  # no layers/dim declared
    assert prepare(copy.deepcopy(default))["experiments"]["sts-v1"]["_depth"] == 6
    default["models"]["minilm"]["dim"] = 768
    with pytest.raises(ConfigError, match=r"models\.minilm: declares dim=768 but the model's config says 384"):
        prepare(default)


def test_training_dataset_kind(default):
    default["experiments"]["sts-v1"]["train"]["dataset"] = "lee-sim"
    with pytest.raises(ConfigError, match=r"train\.dataset: dataset 'lee-sim' is of kind 'sts'"):
        prepare(default)


def test_variants_expand_separate_per_layer_and_reuse_full_at_depth(default):
    exp = prepare(default)["experiments"]["sts-v1"]
    variants = {v.name: v for v in tb_variants.variants(exp, 6)}
    assert set(variants) == {"pretrained", "full", "separate-L2", "separate-L4", "separate-L6", "matryoshka", "2dmse"}
    assert variants["separate-L2"].cut_layers == 2 and variants["separate-L2"].eval_layers == (2,)
    assert variants["separate-L6"].model_variant == "full"
    assert variants["full"].eval_layers == (2, 4, 6)
    assert not variants["pretrained"].trained


def test_angle_objective_needs_triplets(default):
    default["experiments"]["sts-v2"]["train"]["dataset"] = "lee-ict"
    with pytest.raises(ConfigError, match=r"experiments\.sts-v2\.train\.dataset: objective 'angle' trains "
                                          r"on \(text, positive, negative\) triplets; dataset 'lee-ict' is of "
                                          r"kind 'pairs'"):
        prepare(default)


def test_semantics_must_belong_to_the_objective(default):
    default["experiments"]["sts-v2"]["semantics"] = "st6"
    with pytest.raises(ConfigError, match=r"experiments\.sts-v2\.semantics: 'st6' is not a semantics of objective "
                                          r"'angle'; it has \['seed', 'corrected'\]"):
        prepare(default)
    default["experiments"]["sts-v2"]["semantics"] = "corrected"
    default["experiments"]["sts-v1"]["semantics"] = "corrected"
    with pytest.raises(ConfigError, match=r"experiments\.sts-v1\.semantics: 'corrected'"):
        prepare(default)


def test_compression_size_beyond_width(default):
    default["experiments"]["sts-v2"]["train"]["ese"]["compression_size"] = 512
    with pytest.raises(ConfigError, match=r"experiments\.sts-v2\.train\.ese\.compression_size: 512 is larger than "
                                          r"model 'minilm''s width 384"):
        prepare(default)


def test_angle_weight_typo_is_named(default):
    default["experiments"]["sts-v2"]["train"]["angle"]["ibn_weight"] = 3
    with pytest.raises(ConfigError, match=r"train\.angle: unknown key 'ibn_weight' \(did you mean 'ibn_w'\?\)"):
        prepare(default)


@pytest.mark.parametrize("name", ["tracks", "logs", "a/b"])
def test_experiment_names_that_would_clash_with_results_folders(default, name):
    default["experiments"][name] = default["experiments"].pop("sts-v1")
    with pytest.raises(ConfigError, match=r"config key experiments"):
        prepare(default)


def test_paper_presets_train_with_the_seeds_settings(tmp_path):
    """What each dense preset's variants train with, resolved as the rules resolve it (fidelity
    review X2, T1.4-T1.7, T2.3, T2.6)."""
    from trimbench.training import training_arguments

    def experiments(preset):
        return tb_config.load_file(REPO / "configs" / preset, workdir=REPO)["experiments"]

    for preset in ("2dmse-sts.yaml", "2dmse-sts-v2.yaml", "2dmse-retrieval.yaml", "2dmse-retrieval-ablations.yaml",
                   "homedepot.yaml"):
        for exp in experiments(preset).values():
            if exp["train"].get("dataset"):
                assert exp["train"]["weight_decay"] == 0.0, preset  # the HF default every seed ran
    v1, v2 = experiments("2dmse-sts.yaml")["2dmse-sts-v1"], experiments("2dmse-sts-v2.yaml")["2dmse-sts-v2"]
    assert v1["train"]["max_seq_length"] == 512 and v2["train"]["max_seq_length"] == 128
    assert v1["evaluation"]["max_seq_length"] == v2["evaluation"]["max_seq_length"] == 512
    assert tb_variants.variant_train_settings(v2, "2dmse")["precision"] == "fp32"
    retrieval = experiments("2dmse-retrieval.yaml")["2dmse-retrieval"]
    precision = {m: tb_variants.variant_train_settings(retrieval, m)["precision"] for m in retrieval["methods"]}
    # Starbucks' BERT-2DMSE as its own command (--bf16), on the same Tevatron data
    assert precision == {"full": "fp32", "separate": "bf16", "matryoshka": "fp32", "2dmse": "fp32",
                         "starbucks-2dmse": "bf16"}
    assert "precision_by_method" not in tb_variants.variant_train_settings(retrieval, "full")
    assert retrieval["train"]["batch_sampler"] == "batch_sampler"
    assert retrieval["retrieval"]["negatives"]["miner"] == "dataset"
    assert {8, 16} <= set(retrieval["grid"]["dims"])
    assert {"trec-dl-2019", "trec-dl-2020"} <= set(retrieval["evaluation"]["datasets"])
    datasets = tb_config.load_file(REPO / "configs" / "2dmse-retrieval.yaml", workdir=REPO)["datasets"]
    assert {ds: datasets[ds]["relevance_level"] for ds in ("msmarco", "trec-dl-2019", "trec-dl-2020")} == {
        "msmarco": 1, "trec-dl-2019": 2, "trec-dl-2020": 2}  # graded DL judgements: level 2, as SPLADE's
    # Tevatron's warmup_ratio 0.1 and the Home Depot seed's: 10 % of the run's steps, rounded up
    args = training_arguments(retrieval["train"], tmp_path)
    assert args.get_warmup_steps(9393) == 940
    homedepot = experiments("homedepot.yaml")["homedepot-minilm"]
    assert homedepot["train"]["max_seq_length"] == 256
    # 9,202 pairs at 16 a batch: 576 steps an epoch, 17,280 in 30 epochs
    assert training_arguments(homedepot["train"], tmp_path).get_warmup_steps(17280) == 1728
# --- reading config files: duplicate keys, malformed YAML, which files make a run's config ------


DUPLICATE_EXPERIMENT = """\
experiments:
  tiny-sts:
    track: 2dmse-sts
    model: tiny
  tiny-sts:
    track: 2dmse-sts
    model: minilm
"""


@pytest.mark.parametrize(("text", "key", "lines"), [
    (DUPLICATE_EXPERIMENT, "experiments.tiny-sts", (2, 5)),
    ("datasets:\n  a: {kind: sts}\n  a: {kind: pairs}\n", "datasets.a", (2, 3)),
    ("models:\n  m:\n    source: tiny\n    layers: 2\n    layers: 3\n", "models.m.layers", (4, 5)),
    ("smoke: true\nexperiments: {}\nsmoke: false\n", "smoke", (1, 3)),
    ("experiments:\n  x:\n    grid: {layers: [1], layers: [2]}\n", "experiments.x.grid.layers", (3, 3)),
    ("datasets:\n  - {kind: sts, kind: pairs}\n", "datasets.0.kind", (2, 2)),
])
def test_a_key_given_twice_is_an_error_naming_it_and_both_lines(tmp_path, text, key, lines):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        tb_schema.read_config_file(path)
    assert str(error.value).startswith(f"config file '{path}': key '{key}' is given twice, "
                                       f"on lines {lines[0]} and {lines[1]}")


def test_keys_that_only_look_alike_and_aliases_are_not_duplicates(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: &x {k: 1}\nb: *x\nc: {1: one, '1': string}\n")
    assert tb_schema.read_config_file(path) == {"a": {"k": 1}, "b": {"k": 1}, "c": {1: "one", "1": "string"}}


@pytest.mark.parametrize(("text", "where", "what"), [
    ("experiments:\n  x: [1, 2\n", "line 3, column 1",
     "not valid YAML: while parsing a flow sequence; did not find expected ','"),
    ("experiments:\n\tx: 1\n", "line 2, column 1", "(a tab: YAML indents with spaces, never tabs)"),
    ("experiments:\n  x: 1\n y: 2\n", "line 3, column 2", "not valid YAML"),
    ("smoke: true\n# caf\xe9\n", "line 2", "not UTF-8 text (byte 0xe9); save it as UTF-8"),
])
def test_malformed_config_names_the_file_and_the_line(tmp_path, text, where, what):
    path = tmp_path / "config.yaml"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ConfigError) as error:
        tb_schema.read_config_file(path)
    message = str(error.value)
    assert message.startswith(f"config file '{path}', {where}:"), message
    assert what in message


def test_a_config_that_is_not_a_mapping_or_missing_is_named(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match=r"config file '.*list.yaml': the top level must be a mapping"):
        tb_schema.read_config_file(path)
    with pytest.raises(ConfigError, match=r"config file '.*absent.yaml' cannot be read: No such file"):
        tb_schema.read_config_file(tmp_path / "absent.yaml")


def test_config_yaml_is_read_only_without_configfiles_and_configfiles_merge_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("experiments: {toy: {model: a}}\nsmoke: false\n")
    (tmp_path / "one.yaml").write_text("experiments: {paper: {model: b, grid: {layers: [1], dims: [8]}}}\n")
    (tmp_path / "two.yaml").write_text("experiments: {paper: {grid: {dims: [4]}}, other: {model: c}}\n")
    assert tb_schema.load_config([]) == {"experiments": {"toy": {"model": "a"}}, "smoke": False}
    # A preset alone: config.yaml is not merged in.
    assert tb_schema.load_config(["one.yaml"], {"smoke": True}) == {
        "experiments": {"paper": {"model": "b", "grid": {"layers": [1], "dims": [8]}}}, "smoke": True}
    # Several files on purpose: merged key by key, later files win, as Snakemake merges them.
    assert tb_schema.load_config(["one.yaml", "two.yaml"]) == {
        "experiments": {"paper": {"model": "b", "grid": {"layers": [1], "dims": [4]}}, "other": {"model": "c"}}}
    (tmp_path / "config.yaml").unlink()
    with pytest.raises(ConfigError, match=r"no config: 'config.yaml' is not in the working directory"):
        tb_schema.load_config([])


def test_the_config_checker_names_file_and_line_of_a_configfile(tmp_path, monkeypatch, capsys):
    """Snakemake reads --configfile files itself ("Config file is not valid JSON or YAML", no file
    or line); `python -m trimbench.config FILE` reads them as a run does."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "preset.yaml").write_text((REPO / "configs" / "splade.yaml").read_text().replace(
        "lambda_q: 0.0008", "lambda_q: -1", 1))
    (tmp_path / "broken.yaml").write_text("experiments:\n  x: [1, 2\n")
    assert tb_config.main(["broken.yaml"]) == 1
    assert "config file 'broken.yaml', line 3, column 1: not valid YAML" in capsys.readouterr().out
    # A track module's check, through `python -m` (whose __main__ is a second copy of the module).
    checked = subprocess.run([sys.executable, "-m", "trimbench.config", "preset.yaml"], capture_output=True,
                             text=True, cwd=tmp_path, timeout=120)
    assert checked.returncode == 1 and "Invalid configuration: config key experiments.splade" in checked.stdout
    assert tb_config.main([str(REPO / "configs" / "splade.yaml")]) == 0
    assert capsys.readouterr().out == "valid: experiments splade\n"


@pytest.mark.parametrize(("edit", "message"), [
    # The probe's "partly" messages: a regex, jsonschema's "should not be valid under", no hint for 5e-5.
    (lambda c: c["experiments"].update({"sts v1": c["experiments"].pop("sts-v1")}),
     "config key experiments: name 'sts v1' is not allowed: names are letters, digits, '.', '_' and '-'"),
    (lambda c: c["experiments"].update(data=c["experiments"].pop("sts-v1")),
     "config key experiments: the name 'data' is reserved (results/data/ holds shared outputs"),
    (lambda c: c["experiments"]["sts-v1"]["train"].update(lr="5e-5"),
     "config key experiments.sts-v1.train.lr: '5e-5' is not of type 'number' (YAML reads 5e-5 as text: write it "
     "with a decimal point, e.g. 5.0e-5)"),
])
def test_name_and_number_messages_say_what_to_write(default, edit, message):
    edit(default)
    with pytest.raises(ConfigError) as error:
        prepare(default)
    assert str(error.value).startswith(message), str(error.value)


FIGURES = {"mean": 12.0, "p50": 10.0, "p90": 20.0, "p99": 30.0, "max": 40, "tokenizer": "a tokenizer",
           "source": "a file"}


#: a url dataset (the ELECTRA preset's KorSTS, read from kakaobrain's release): no copy here to measure
URL_STS = {"source": "url", "urls": {"test": "https://raw.githubusercontent.com/kakaobrain/kor-nlu-datasets/"
                                               "0df0fe7d496eb61b092e022e238c2230b29f1cbc/KorSTS/sts-test.tsv"},
           "quoting": "none", "kind": "sts", "score_range": [0, 5]}


@pytest.mark.parametrize(("lengths", "message"), [
    ({"test": {"sentence1": FIGURES}}, None),
    ({"test": {"anchor": FIGURES}},
     "config key datasets.lee-sim.lengths.test.anchor: not a text column of kind 'sts' (its text columns: "
     "sentence1, sentence2)"),
    ({"test": {"sentence1": {**FIGURES, "p90": 5.0}}},
     "config key datasets.lee-sim.lengths.test.sentence1: the figures must be ordered"),
    ({"test": {"sentence1": {key: value for key, value in FIGURES.items() if key != "source"}}},
     "config key datasets.lee-sim.lengths.test.sentence1: its keys are mean, p50, p90, p99, max, tokenizer, source"),
])
def test_a_datasets_own_recorded_lengths_are_checked_as_a_contracts(default, lengths, message):
    """A source no contract records and the plan cannot measure here (url, word_similarity) may record its
    texts' lengths for the plan."""
    # the default's judgements, read from a URL instead
    default["datasets"]["lee-sim"] = {**URL_STS, "lengths": lengths}
    if message is None:
        assert prepare(default)["datasets"]["lee-sim"]["lengths"] == lengths
        return
    with pytest.raises(ConfigError) as error:
        prepare(default)
    assert str(error.value).startswith(message), str(error.value)


def test_a_dataset_measured_here_records_no_lengths(default):
    """A gensim or local dataset's texts are on this machine: the plan measures them and would never read
    recorded figures, so they are refused rather than kept."""
    default["datasets"]["lee-sim"]["lengths"] = {"test": {"sentence1": FIGURES}}
    with pytest.raises(ConfigError, match=r"^config key datasets.lee-sim.lengths: a gensim dataset's lengths are "
                                          r"measured on its files here"):
        prepare(default)


def test_a_url_datasets_lengths_are_of_the_splits_it_names():
    """Figures of a split the entry does not name would never be read: the plan would price the real
    split at its maximum length without a word."""
    entry = {"source": "url", "urls": {"train": "https://x/train.tsv", "validation": "https://x/dev.tsv"},
             "kind": "sts", "lengths": {"train": {"sentence1": FIGURES}}}
    tb_checks.check_recorded_lengths("korsts", entry)
    entry["lengths"] = {"valid": {"sentence1": FIGURES}}
    with pytest.raises(ConfigError, match=r"config key datasets.korsts.lengths.valid: not a split of dataset "
                                          r"'korsts' \(its splits: train, validation\)"):
        tb_checks.check_recorded_lengths("korsts", entry)


def test_a_hub_datasets_lengths_are_its_contracts_not_the_configs():
    entry = {"source": "hub", "id": "sentence-transformers/stsb", "kind": "sts", "lengths": {"test": {}}}
    with pytest.raises(ConfigError, match=r"config key datasets.stsb.lengths: a hub dataset's lengths are its "
                                          r"contract's \(reference/hub/sentence-transformers--stsb.yaml"):
        tb_checks.check_recorded_lengths("stsb", entry)


def test_a_variant_gets_only_its_own_methods_retrieval_settings_and_data_rules_no_scoring_keys():
    exp = {"retrieval": {"group_size": 8, "starbucks_layers": [2, 12], "starbucks_dims": [32],
                         "starbucks_kl_weight": 1.0}}
    assert tb_variants.variant_retrieval_settings(exp, "2dmse") == {"group_size": 8}
    assert tb_variants.variant_retrieval_settings(exp, "starbucks-2dmse") == exp["retrieval"]
    entry = {"source": "hub", "id": "BeIR/msmarco", "relevance_level": 2}
    assert tb_config.preparation_entry(entry) == {"source": "hub", "id": "BeIR/msmarco"}
    # recorded lengths are the plan's: a data job that never reads them is not re-run for them
    entry = {"source": "url", "urls": {"test": "https://x/y.tsv"}, "lengths": {"test": {"sentence1": FIGURES}}}
    assert tb_config.preparation_entry(entry) == {"source": "url", "urls": {"test": "https://x/y.tsv"}}


def test_devices_must_share_the_batch_equally(default):
    default["experiments"]["sts-v1"]["train"].update(batch_size=30, devices=4)
    with pytest.raises(ConfigError, match=r"config key experiments\.sts-v1\.train\.devices: 4 devices cannot share "
                                          r"train\.batch_size 30 equally"):
        prepare(default)
    default["experiments"]["sts-v1"]["train"].update(batch_size=32)
    assert prepare(default)["experiments"]["sts-v1"]["train"]["devices"] == 4


def test_splade_devices_must_share_the_batch_equally():
    config = tb_schema.load_config([REPO / "tests" / "configs" / "tiny_splade.yaml"])
    config["experiments"]["splade-tiny"]["train"].update(batch_size=6, devices=4)
    with pytest.raises(ConfigError, match=r"experiments\.splade-tiny\.train\.devices: 4 devices cannot share"):
        prepare(config)


def test_smoke_batch_stays_divisible_by_devices(default):
    default["smoke"] = True
    default["experiments"]["sts-v1"]["train"].update(batch_size=96, devices=3)
    assert prepare(default)["experiments"]["sts-v1"]["train"]["batch_size"] % 3 == 0


def test_angle_objective_trains_on_several_devices(default):
    """AnglE / ESE gather the whole batch (tests/dense/test_dense_ddp.py): no longer refused."""
    default["experiments"]["sts-v2"]["train"]["devices"] = 2
    assert prepare(default)["experiments"]["sts-v2"]["train"]["devices"] == 2


def test_devices_re_run_nothing_and_the_logging_interval_is_a_param(default):
    """A model trained on one GPU is the training on four: train.devices is out of the params
    Snakemake compares (the job gets it as its gpu resource: tests/workflow/test_multi_device.py);
    logging_steps is a param like any other."""
    train = prepare(default)["experiments"]["sts-v1"]["train"]
    assert "devices" not in tb_config.tracked(train)
    assert tb_config.tracked(train)["logging_steps"] == train["logging_steps"]


def test_encode_devices_is_checked_and_re_runs_nothing(default):
    """retrieval.encode_devices: at least 1; the array of N devices is the one device's, so neither
    the encoding nor the training (whose settings are the retrieval block's) re-runs for it."""
    default["experiments"]["retrieval"]["retrieval"] = {"encode_devices": 0}
    with pytest.raises(ConfigError, match=r"config key experiments\.retrieval\.retrieval\.encode_devices: 0 is less "
                                          r"than the minimum of 1"):
        prepare(copy.deepcopy(default))
    default["experiments"]["retrieval"]["retrieval"]["encode_devices"] = 4
    exp = prepare(default)["experiments"]["retrieval"]
    assert "encode_devices" not in tb_config.tracked(tb_variants.variant_retrieval_settings(exp, "2dmse"))
    assert "encode_devices" not in tb_config.tracked(exp)["retrieval"]


def test_compared_dataset_is_the_sts_average_or_the_references_else_the_first_evaluated():
    sts = {"track": "2dmse-sts", "evaluation": {"average_name": "sts-avg", "datasets": ["stsb"]}, "reference": {}}
    retrieval = {"track": "2dmse-retrieval", "evaluation": {"datasets": ["msmarco", "trec-dl-2019"]},
                 "reference": {"dataset": None}}
    assert tb_config.compared_dataset(sts) == "sts-avg"
    assert tb_config.compared_dataset(retrieval) == "msmarco"
    retrieval["reference"]["dataset"] = "trec-dl-2019"
    assert tb_config.compared_dataset(retrieval) == "trec-dl-2019"


def test_a_smoke_runs_report_never_replaces_the_real_runs():
    from trimbench.config.prepare import check_smoke_report

    for argv in (["snakemake", "--report", "results/report.html"], ["snakemake", "--report=results/r.html"]):
        with pytest.raises(ConfigError, match=r"a smoke run's report would replace the real run's in "
                                                        r"results/; write it under results-smoke/"):
            check_smoke_report({"smoke": True}, argv)
    check_smoke_report({"smoke": True}, ["snakemake", "--report", "results-smoke/report.html"])
    check_smoke_report({"smoke": False}, ["snakemake", "--report", "results/report.html"])


def test_a_smoke_report_by_an_absolute_or_parent_path_is_refused_too(tmp_path):
    """The probe (C51, C52): only the first component was compared, so ``<checkout>/results/report.html``
    and ``../<checkout>/results/report.html`` replaced the real report."""
    from trimbench.config.prepare import check_smoke_report

    checkout = tmp_path / "checkout"
    (checkout / "results").mkdir(parents=True)
    for path in (checkout / "results" / "report.html", "../checkout/results/report.html",
                 "results-smoke/../results/report.html", "./results//sub/report.html"):
        with pytest.raises(ConfigError, match=rf"^--report {re.escape(str(path))}: a smoke run's report would "
                                              r"replace the real run's in results/"):
            check_smoke_report({"smoke": True}, ["snakemake", f"--report={path}"], checkout)
    for path in (checkout / "results-smoke" / "report.html", "../checkout/results-smoke/report.html",
                 tmp_path / "results" / "report.html", "../results/report.html", "results.html"):
        check_smoke_report({"smoke": True}, ["snakemake", "--report", str(path)], checkout)


def test_smoke_mode_encodes_a_bf16_presets_texts_in_fp32_on_the_cpu_stand_ins():
    """The 2DMSE retrieval seed's bf16 encoding stays the preset's; its smoke run encodes in fp32 as it
    trains in fp32 (bf16 autocast on this CPU: about 8x slower), the bf16 path tested in test_encoding."""
    path = REPO / "configs" / "2dmse-retrieval.yaml"
    preset = tb_config.load_file(path, workdir=REPO)["experiments"]
    smoke = tb_config.load_file(path, {"smoke": True}, REPO)["experiments"]
    assert {exp["evaluation"]["precision"] for exp in preset.values()} == {"bf16"}
    assert {exp["evaluation"]["precision"] for exp in smoke.values()} == {"fp32"}
