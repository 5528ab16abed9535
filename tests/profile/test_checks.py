"""Bad profile input is one error naming the culprit, before any job (trimbench.config.prepare)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from trimbench.config import prepare as tb_config
from trimbench.errors import ConfigError
from trimbench.profile.checks import dims_of, layers_of, matryoshka_dims

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def config() -> dict:
    """The embedded default's datasets and models with its profile experiment alone."""
    default = yaml.safe_load((REPO / "config.yaml").read_text())
    return {**default, "experiments": {"p": copy.deepcopy(default["experiments"]["profile"])}}


def _prepare(config, workdir=REPO):
    return tb_config.prepare(config, workdir)["experiments"]["p"]


def test_the_embedded_profile_fills_every_layer_and_dim_it_needs(config):
    exp = _prepare(config)
    assert layers_of(exp, "minilm") == [3, 6]  # the full depth added
    assert dims_of(exp, "minilm") == [384, 48]
    assert exp["tolerances"] == [0.01, 0.03, 0.05] and exp["precisions"] == ["float32", "int8", "binary"]
    config["experiments"]["p"].update(layers=None, dims=None)
    exp = _prepare(config)
    assert layers_of(exp, "minilm") == [1, 2, 3, 4, 5, 6]
    assert dims_of(exp, "minilm") == matryoshka_dims(384) == [384, 192, 96, 48, 24, 12, 6]


def test_a_one_layer_model_is_refused_naming_why(config):
    config["models"]["one"] = {"source": "tiny", "layers": 1, "dim": 32}
    config["experiments"]["p"]["models"] = ["minilm", "one"]
    with pytest.raises(ConfigError, match=r"experiments\.p\.models: model 'one' has 1 transformer layer\(s\): no "
                                          r"layer to cut"):
        _prepare(config)


def test_a_static_embedding_is_refused_naming_why(config, tmp_path):
    folder = tmp_path / "static"
    folder.mkdir()
    (folder / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "0_StaticEmbedding",
                                                      "type": "sentence_transformers.models.StaticEmbedding"}]))
    config["models"]["static"] = {"source": "local", "path": str(folder)}
    config["experiments"]["p"]["models"] = ["static"]
    with pytest.raises(ConfigError, match=r"experiments\.p\.models: model 'static' is a static embedding \(its "
                                          r"modules.json has no Transformer module\): it has no layers to cut"):
        _prepare(config)


def test_a_dataset_the_profile_cannot_read_is_named_with_the_columns_it_reads(config):
    config["experiments"]["p"]["evaluation"]["datasets"] = ["lee-sim", "lee-ict"]
    with pytest.raises(ConfigError, match=r"experiments\.p\.evaluation\.datasets: dataset 'lee-ict' is of kind "
                                          r"'pairs': the profile reads STS pairs \(kind sts: sentence1, sentence2, "
                                          r"score\) or retrieval sets \(kind retrieval: corpus, queries, qrels\)"):
        _prepare(config)


@pytest.mark.parametrize("bad", [0, 1, 1.2, -0.1])
def test_a_tolerance_outside_zero_one_is_named(config, bad):
    config["experiments"]["p"]["tolerances"] = [0.01, bad]
    with pytest.raises(ConfigError, match=rf"config key experiments\.p\.tolerances: tolerance {bad!r} is outside "
                                          r"\(0, 1\)"):
        _prepare(config)


def test_dims_wider_than_the_model_and_layers_beyond_it_are_named(config):
    config["experiments"]["p"]["dims"] = [384, 512]
    with pytest.raises(ConfigError, match=r"experiments\.p\.dims: dim 512 is larger than model 'minilm', 384 wide"):
        _prepare(copy.deepcopy(config))
    config["experiments"]["p"]["dims"] = None
    config["experiments"]["p"]["layers"] = [2, 7]
    with pytest.raises(ConfigError, match=r"experiments\.p\.layers: layer 7 is outside model 'minilm', which has 6 "
                                          r"layers \(1\.\.6\)"):
        _prepare(config)


def test_a_funnel_wider_than_the_model_or_shorter_than_ten_hits_is_named(config):
    config["experiments"]["p"]["funnel"] = [[512, 100]]
    with pytest.raises(ConfigError, match=r"experiments\.p\.funnel: shortlist dim 512 is larger than the narrowest "
                                          r"model \(384 dims\)"):
        _prepare(copy.deepcopy(config))
    config["experiments"]["p"]["funnel"] = [[48, 5]]
    with pytest.raises(ConfigError, match=r"experiments\.p\.funnel: shortlist size 5 is below the 10 hits"):
        _prepare(config)


def test_a_profile_without_float32_has_no_full_model_and_is_refused(config):
    config["experiments"]["p"]["precisions"] = ["int8", "binary"]
    with pytest.raises(ConfigError, match=r"experiments\.p\.precisions: float32 must be among them"):
        _prepare(config)


def test_a_split_for_a_dataset_not_profiled_is_named(config):
    config["experiments"]["p"]["evaluation"]["splits"] = {"lee-sim-split": "test"}
    with pytest.raises(ConfigError, match=r"experiments\.p\.evaluation\.splits: 'lee-sim-split' is not one of"):
        _prepare(config)
