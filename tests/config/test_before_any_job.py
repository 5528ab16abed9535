"""Every value a job would reject is rejected while the config is read, naming its key: a job that
rejects it runs only after Snakemake removed the outputs the changed params invalidated
(../shared/reviews/reliability-ux-2026-11-recheck.md, problems 1-3). The same cases on a finished
directory: tests/workflow/test_workflow.py."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from trimbench.config import prepare as tb_config
from trimbench.config import schema as tb_schema
from trimbench.data.columns import GENSIM_COLUMNS
from trimbench.errors import ConfigError
from trimbench.models import position_limit

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def default() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text())


def refused(config: dict, workdir: Path = REPO) -> str:
    with pytest.raises(ConfigError) as error:
        tb_config.prepare(config, workdir)
    return str(error.value)


# --- NaN and infinite numbers -----------------------------------------------------------------


@pytest.mark.parametrize(("path", "value"), [
    (("experiments", "sts-v1", "train", "lr"), float("nan")),  # the re-probe's problem 1
    (("experiments", "sts-v2", "train", "angle", "ibn_tau"), float("inf")),
    (("experiments", "splade", "variants", "max", "lambda_d"), float("nan")),
    (("experiments", "retrieval", "retrieval", "kl_temperature"), float("-inf")),
    (("experiments", "sts-v1", "reference", "tolerance"), float("nan")),
    (("datasets", "lee-sim", "heldout_fraction"), float("inf")),
])
def test_a_nan_or_infinite_number_anywhere_is_refused_naming_its_key(default, path, value):
    node = default
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    message = refused(default)
    assert message == (f"config key {'.'.join(map(str, path))}: {value} is not a finite number (YAML reads .nan and "
                       ".inf as numbers); give a finite value"), message


def test_yaml_nan_from_a_file_is_refused(tmp_path):
    config = (REPO / "config.yaml").read_text().replace("lr: 5.0e-5", "lr: .nan", 1)
    (tmp_path / "nan.yaml").write_text(config)
    with pytest.raises(ConfigError, match=r"config key experiments\.sts-v1\.train\.lr: nan is not a finite number"):
        tb_config.prepare(tb_schema.load_config([tmp_path / "nan.yaml"]), REPO)


# --- whole numbers written with a decimal point -----------------------------------------------


@pytest.mark.parametrize(("path", "value"), [  # the probe's C28-C31 and A18
    (("experiments", "sts-v1", "train", "batch_size"), 16.0),
    (("experiments", "sts-v1", "train", "seed"), 42.0),
    (("experiments", "sts-v1", "grid", "layers"), [2.0, 4, 6]),
    (("experiments", "sts-v1", "grid", "dims"), [384.0, 256, 128, 64, 32, 16, 8]),
    (("experiments", "sts-v1", "evaluation", "max_seq_length"), 100000.0),
    (("experiments", "retrieval", "retrieval", "top_k"), 100.0),
    (("experiments", "electra-toy", "layers"), [0, 3.0]),
])
def test_a_whole_number_written_as_a_float_is_refused_naming_its_key(default, path, value):
    """JSON Schema's integer accepts 16.0; torch, numpy and slices do not, inside the job, after
    Snakemake has deleted the finished outputs whose params changed (4-11 files per probe)."""
    node = default
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    where, bad = ".".join(path), value
    if isinstance(value, list):  # the item is named
        index = next(i for i, item in enumerate(value) if isinstance(item, float))
        where, bad = f"{where}.{index}", value[index]
    assert refused(default) == (f"config key {where}: {bad!r} is written with a decimal point (or an exponent) and "
                                f"this key takes a whole number: write {int(bad)}")


@pytest.mark.parametrize(("written", "message"), [
    ("1.0e+5", "100000.0 is written with a decimal point (or an exponent) and this key takes a whole number: "
               "write 100000"),
    ("1.0e5", "'1.0e5' is text to YAML (its exponent has no sign) and this key takes a whole number: write 100000"),
])
def test_an_exponent_written_length_is_refused_naming_the_whole_number(tmp_path, written, message):
    """YAML 1.1 reads 1.0e+5 as a float and 1.0e5 as text: each refused by its type, naming the number."""
    text, replaced = re.subn(r"max_seq_length: \d+", f"max_seq_length: {written}", (REPO / "config.yaml").read_text(),
                             count=1)
    assert replaced == 1  # sts-v1's, the first experiment's
    (tmp_path / "exponent.yaml").write_text(text)
    with pytest.raises(ConfigError) as error:
        tb_config.prepare(tb_schema.load_config([tmp_path / "exponent.yaml"]), REPO)
    assert str(error.value) == f"config key experiments.sts-v1.train.max_seq_length: {message}"


def test_the_length_check_reads_a_float_length_too(default):
    """The length check on its own sees a float (it looked at ints only, so 100000.0 got past it)."""
    config = tb_schema.validate_schema(default)
    config["experiments"]["sts-v1"]["evaluation"]["max_seq_length"] = 100000.0
    with pytest.raises(ConfigError, match=r"max_seq_length: 100000.0 tokens per text is more than model 'minilm'"):
        tb_schema.check_lengths(config, REPO)


@pytest.mark.parametrize(("path", "value", "bound"), [
    (("experiments", "sts-v1", "train", "scale"), 0, "less than or equal to the minimum of 0"),  # C42
    (("experiments", "sts-v1", "train", "scale"), -20.0, "less than or equal to the minimum of 0"),  # C41
    (("experiments", "sts-v1", "train", "kl_temperature"), 0, "less than or equal to the minimum of 0"),  # C40
])
def test_a_value_the_loss_refuses_or_divides_by_is_refused(default, path, value, bound):
    """train.scale <= 0: sentence-transformers' "Scale must be a positive value" inside the job;
    kl_temperature 0: the 2DMSE loss divides by it and trains a NaN model."""
    node = default
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert refused(default) == f"config key {'.'.join(path)}: {value} is {bound}"


@pytest.mark.parametrize(("experiment", "depth_key"), [("retrieval", "retrieval.top_k"), ("splade", "splade.top_k")])
def test_a_search_depth_below_a_metrics_cut_off_is_refused_naming_both(default, experiment, depth_key):
    """The probe's C43: top_k 5 beside recall@100 scored recall@100 on 5 hits (0.8167 for 1.0)."""
    section, key = depth_key.split(".")
    default["experiments"][experiment].setdefault(section, {})[key] = 5
    assert refused(default) == (
        f"config key experiments.{experiment}.{depth_key}: 5 hits per query is fewer than metric 'recall@100' of "
        f"experiments.{experiment}.evaluation.metrics reads (100); give {depth_key} at least 100, or leave "
        "'recall@100' out")
    default["experiments"][experiment][section][key] = 100
    tb_config.prepare(default, REPO)
    default["experiments"][experiment][section][key] = 10
    default["experiments"][experiment]["evaluation"]["metrics"] = ["mrr@10", "ndcg@10", "recall@10"]
    tb_config.prepare(default, REPO)


@pytest.mark.parametrize("preset", ["2dmse-retrieval.yaml", "splade.yaml"])
def test_smoke_mode_keeps_the_search_as_deep_as_the_presets_metrics(preset):
    """Smoke mode shortens the search, never below recall@1000's 1000 hits."""
    config = tb_config.load_file(REPO / "configs" / preset, {"smoke": True}, REPO)
    for exp in config["experiments"].values():
        depth = (exp.get("retrieval") or exp.get("splade"))["top_k"]
        assert "recall@1000" in exp["evaluation"]["metrics"] and depth == 1000


# --- columns of gensim, local and url sources -------------------------------------------------


def test_a_column_a_gensim_builder_does_not_make_is_refused(default):
    default["datasets"]["lee-sim"]["columns"] = {"score": "scorez"}  # the re-probe's problem 2
    assert refused(default) == (
        "config key datasets.lee-sim.columns.score: maps 'score' to 'scorez', which is not a column of the rows "
        "gensim builder 'lee_similarity' makes; its columns: sentence1, sentence2, score")


@pytest.mark.parametrize("builder", sorted(GENSIM_COLUMNS))
def test_the_gensim_builders_make_the_columns_the_check_reads(builder):
    from trimbench.data.lee import GENSIM_SPLITS, gensim_split

    entry = {"builder": builder, "kind": "pairs", "heldout_fraction": 0.2, "pairs_per_article": 1, "seed": 42}
    frame = gensim_split(entry, GENSIM_SPLITS[builder][0])
    assert tuple(frame.columns) == GENSIM_COLUMNS[builder]


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet"])
def test_a_column_a_local_files_header_lacks_is_refused(default, tmp_path, suffix):
    import pandas as pd

    frame = pd.DataFrame({"s1": ["a", "b"], "s2": ["c", "d"], "score": [0.1, 0.9]})
    path = tmp_path / f"test{suffix}"
    {".csv": lambda: frame.to_csv(path, index=False), ".tsv": lambda: frame.to_csv(path, sep="\t", index=False),
     ".jsonl": lambda: frame.to_json(path, orient="records", lines=True),
     ".parquet": lambda: frame.to_parquet(path)}[suffix]()
    default["datasets"]["lee-sim"] = {"source": "local", "path": str(tmp_path), "kind": "sts",
                                      "columns": {"sentence1": "s1", "sentence2": "s2"}}
    tb_config.prepare(copy.deepcopy(default), REPO)  # mapped right: accepted
    default["datasets"]["lee-sim"]["columns"]["sentence2"] = "s3"
    assert refused(default) == (
        "config key datasets.lee-sim.columns.sentence2: maps 'sentence2' to 's3', which is not a column of file "
        f"'{path}' (split 'test'); its columns: s1, s2, score")
    del default["datasets"]["lee-sim"]["columns"]
    assert refused(default).startswith(
        "config key datasets.lee-sim.columns.sentence1: not given: 'sentence1' is read from column 'sentence1', "
        "which is not a column of file")


def test_a_local_folder_without_a_split_the_experiments_read_is_refused(default, tmp_path):
    (tmp_path / "train.csv").write_text("sentence1,sentence2,score\na,b,1\n")
    default["datasets"]["lee-sim"] = {"source": "local", "path": str(tmp_path), "kind": "sts"}
    assert refused(default) == (
        f"config key datasets.lee-sim.path: local folder '{tmp_path}' has no file for split 'test' (our 'test', read "
        "by experiments.sts-v1.evaluation.split): none of test{.jsonl,.json,.parquet,.csv,.tsv}")


def test_min_scores_column_and_a_url_entrys_local_file_are_read_too(default, tmp_path):
    (tmp_path / "train.csv").write_text("anchor,positive,similarity\na,b,1\n")
    default["datasets"]["lee-ict"] = {"source": "url", "urls": {"train": str(tmp_path / "train.csv")},
                                      "kind": "pairs", "min_score": 0.5}
    assert refused(default).startswith("config key datasets.lee-ict.columns.score: not given: 'score' is read from "
                                       "column 'score'")
    default["datasets"]["lee-ict"]["columns"] = {"score": "similarity"}
    tb_config.prepare(default, REPO)


# --- token lengths within the model's positions -----------------------------------------------


@pytest.mark.parametrize(("path", "value"), [
    (("experiments", "sts-v1", "evaluation", "max_seq_length"), 100000),  # the re-probe's problem 3
    (("experiments", "sts-v1", "train", "max_seq_length"), 513),
    (("experiments", "retrieval", "retrieval", "p_max_length"), 600),
    (("experiments", "splade", "splade", "q_max_length"), 1024),
    (("experiments", "electra-toy", "train", "max_seq_length"), 513),
])
def test_a_length_beyond_the_models_positions_is_refused(default, path, value):
    node = default
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    message = refused(default)
    assert message.startswith(f"config key {'.'.join(path)}: {value} tokens per text is more than model 'minilm' "
                              "takes (512: max_position_embeddings 512 in '"), message
    assert message.endswith("config.json'); give at most 512"), message
    node[path[-1]] = 512
    tb_config.prepare(default, REPO)


def test_position_limits_from_config_json_facts():
    assert position_limit({"model_type": "bert", "max_position_embeddings": 512})[0] == 512
    # RoBERTa and MPNet count positions from the padding index + 1: 514 positions take 512 tokens
    assert position_limit({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1})[0] == 512
    assert position_limit({"model_type": "mpnet", "max_position_embeddings": 514})[0] == 512
    # DeBERTa-v3: relative positions only, no limit from max_position_embeddings
    assert position_limit({"model_type": "deberta-v2", "max_position_embeddings": 512,
                           "position_biased_input": False}) is None
    assert position_limit({"model_type": "deberta-v2", "max_position_embeddings": 512,
                           "position_biased_input": True})[0] == 512
    assert position_limit({"model_type": "bert"}) is None


def test_hub_and_tiny_models_limits_come_from_their_contract_and_build(default, monkeypatch):
    monkeypatch.setattr("trimbench.models._cached_hub_config", lambda entry: None)
    hub = {"source": "hub", "id": "google/electra-small-discriminator", "layers": 12, "dim": 256}
    limit = tb_schema.model_position_limit("electra", hub, REPO)
    assert limit == (512, "max_position_embeddings 512 in reference/hub/google--electra-small-discriminator.yaml")
    deberta = {"source": "hub", "id": "microsoft/deberta-v3-base"}  # relative positions: its contract sets no limit
    assert tb_schema.model_position_limit("deberta", deberta, REPO) is None
    assert tb_schema.model_position_limit("t", {"source": "tiny", "layers": 2, "dim": 8}, REPO)[0] == 512
    assert tb_schema.model_position_limit("t", {"source": "tiny", "architecture": "deberta"}, REPO) is None
    assert tb_schema.model_position_limit("x", {"source": "hub", "id": "nobody/unknown"}, REPO) is None


def test_a_local_roberta_folder_is_read_with_its_padding_offset(default, tmp_path, minilm_dir):
    config = json.loads((minilm_dir / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "roberta",
                                                      "max_position_embeddings": 130, "pad_token_id": 1}))
    limit = tb_schema.model_position_limit("mine", {"source": "local", "path": str(tmp_path)}, REPO)
    assert limit == (128, f"max_position_embeddings 130 less 2: roberta counts positions from its padding index + 1 "
                          f"in '{tmp_path}/config.json'")


# --- dims a method trains at ------------------------------------------------------------------


def test_matryoshka_and_2dmse_train_at_the_grid_so_it_holds_the_full_width(default):
    default["experiments"]["sts-v1"]["grid"]["dims"] = [256, 128, 7]
    assert refused(copy.deepcopy(default)) == (
        "config key experiments.sts-v1.grid.dims: methods ['matryoshka', '2dmse'] train at the grid's dims, and "
        "[256, 128, 7] lacks model 'minilm''s width 384, so its full embedding would not be trained; add 384")
    # any dim 1..width, in any order, trains and evaluates: an odd one too (AnglE pads odd dims)
    default["experiments"]["sts-v1"]["grid"]["dims"] = [7, 384, 16]
    tb_config.prepare(copy.deepcopy(default), REPO)
    # without a multi-dim method the grid is evaluation cuts only
    default["experiments"]["sts-v1"]["methods"] = ["pretrained", "full"]
    default["experiments"]["sts-v1"]["grid"]["dims"] = [256, 7]
    default["experiments"]["sts-v1"]["export"]["cells"] = []
    tb_config.prepare(default, REPO)


def test_the_angle_objective_trains_its_compression_size_not_the_grid(default):
    default["experiments"]["sts-v2"]["grid"]["dims"] = [256, 128]
    tb_config.prepare(default, REPO)


def test_retrieval_target_dims_are_besides_the_full_width(default):
    default["experiments"]["retrieval"]["retrieval"]["target_dims"] = [64, 384]
    assert refused(default) == (
        "config key experiments.retrieval.retrieval.target_dims: methods ['2dmse'] train the full width 384 always, "
        "and target_dims are the sub-model dims besides it: 384 there would count its loss twice; remove it")


# --- messages ---------------------------------------------------------------------------------


def test_an_empty_config_file_says_it_is_empty_and_names_it(tmp_path):
    (tmp_path / "config.yaml").write_text("# nothing yet\n\n")
    with pytest.raises(ConfigError, match=rf"^config file '{tmp_path}/config.yaml' is empty \(no keys, only comments "
                                          r"or blank lines\)"):
        tb_schema.read_config_file(tmp_path / "config.yaml")


def test_an_override_that_would_empty_a_mapping_is_refused(tmp_path):
    """Snakemake merges `--config experiments={}` into the files' experiments key by key: a no-op."""
    (tmp_path / "one.yaml").write_text("experiments: {toy: {model: a}}\nsmoke_settings: {max_steps: 3}\n")
    for key in ("experiments", "smoke_settings"):
        with pytest.raises(ConfigError, match=rf"^--config {key}={{}}: an empty mapping cannot empty or replace "
                                              rf"'{key}' \(--config merges mappings key by key"):
            tb_schema.load_config([tmp_path / "one.yaml"], {key: {}})
    with pytest.raises(ConfigError, match=r"^--config experiments\.toy={}"):
        tb_schema.load_config([tmp_path / "one.yaml"], {"experiments": {"toy": {}}})
    assert tb_schema.load_config([tmp_path / "one.yaml"], {"datasets": {}})["datasets"] == {}  # schema says "empty"


def test_an_overlay_alone_names_its_base_preset(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    overlay, base = "configs/overlays/splade-1-epoch.yaml", "configs/splade.yaml"
    with pytest.raises(ConfigError) as error:
        tb_schema.load_config([overlay])
    assert str(error.value) == (
        f"config file '{overlay}' is an overlay on '{base}' (its overlay_on): it changes a few keys of that preset "
        f"and cannot run alone; give the preset first: --configfile {base} {overlay}")
    with pytest.raises(ConfigError, match="is an overlay on"):
        tb_schema.load_config([overlay, base])
    exp = tb_config.prepare({**tb_schema.load_config([str(REPO / base), overlay]), "smoke": True}, REPO)
    assert exp["experiments"]["splade"]["train"]["epochs"] == 1


def test_an_unknown_plan_gpu_is_refused_listing_the_known(default):
    """The GPU the cluster's requests are priced on (docs/plan.md): a typo is one error, before any job."""
    message = refused({**default, "plan_gpu": "a100"})
    assert "plan_gpu" in message and "'a100'" in message and "a100-80gb" in message and "h100-80gb" in message
    # a GPU of the user's own is known once given, with its fields
    mine = {"memory_gib": 48, "peak_tflops": {"bf16": 200}, "source": "our site"}
    assert tb_config.prepare({**default, "plan_gpu": "ours", "plan_gpus": {"ours": mine}}, REPO)["plan_gpu"] == "ours"
    message = refused({**default, "plan_gpu": "ours", "plan_gpus": {"ours": {**mine, "peak": 1}}})
    assert "ours" in message and "peak" in message
