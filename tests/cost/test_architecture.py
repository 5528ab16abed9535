"""trimbench.cost.architecture: a model's facts from its config.json, contract or entry; never a default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trimbench.cost import architecture as architecture_module
from trimbench.cost.architecture import architecture
from trimbench.data.contracts import Contract
from trimbench.errors import ConfigError

BERT_MINI = {"model_type": "bert", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
             "intermediate_size": 1024, "vocab_size": 30522, "max_position_embeddings": 512,
             "architectures": ["BertForMaskedLM"], "hidden_dropout_prob": 0.1}


def hub_entry(**more) -> dict:
    return {"source": "hub", "id": "someone/some-model", "revision": None, **more}


@pytest.fixture
def contract(monkeypatch, tmp_path):
    """A hand-made contract for someone/some-model with the given config: facts."""
    def give(config: dict) -> None:
        made = Contract(id="someone/some-model", type="model", revision=None,
                        path=Path("reference/hub/someone--some-model.yaml"), raw={"config": config})
        monkeypatch.setattr(architecture_module.contracts, "load",
                            lambda repo_id: made if repo_id == "someone/some-model" else None)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))  # no cached config.json
    return give


def test_a_local_folders_config_json_gives_the_facts(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(BERT_MINI))
    arch = architecture("mine", {"source": "local", "path": str(folder)}, tmp_path)
    assert (arch.model_type, arch.num_hidden_layers, arch.hidden_size, arch.num_attention_heads,
            arch.intermediate_size, arch.vocab_size, arch.max_position_embeddings) == \
        ("bert", 4, 256, 4, 1024, 30522, 512)
    assert "config.json" in arch.source and str(folder) in arch.source
    assert arch.extra == {"hidden_dropout_prob": 0.1}  # architectures says nothing of the computation


def test_distilbert_names_are_read_as_berts(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "distilbert", "n_layers": 6, "dim": 768,
                                                    "n_heads": 12, "hidden_dim": 3072, "vocab_size": 30522,
                                                    "max_position_embeddings": 512}))
    arch = architecture("distil", {"source": "local", "path": str(folder)}, tmp_path)
    assert (arch.num_hidden_layers, arch.hidden_size, arch.num_attention_heads, arch.intermediate_size) == \
        (6, 768, 12, 3072)
    assert arch.config_kwargs(layers=3) | {"n_layers": 3, "dim": 768} == arch.config_kwargs(layers=3)


def test_the_contract_and_the_entry_complete_each_other(contract, tmp_path):
    contract({"model_type": "bert", "num_hidden_layers": 12, "hidden_size": 768, "architectures": ["BertForMaskedLM"]})
    entry = hub_entry(architecture_facts={"num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
                                          "max_position_embeddings": 512})
    arch = architecture("bert-base", entry, tmp_path)
    assert (arch.num_hidden_layers, arch.num_attention_heads) == (12, 12)
    assert arch.source == "contract reference/hub/someone--some-model.yaml; models.bert-base.architecture_facts"


def test_missing_facts_name_the_model_the_keys_and_where_to_give_them(contract, tmp_path):
    contract({"model_type": "bert", "num_hidden_layers": 12, "hidden_size": 768})
    with pytest.raises(ConfigError) as error:
        architecture("bert-base", hub_entry(), tmp_path)
    message = str(error.value)
    assert "model 'bert-base'" in message
    assert "num_attention_heads, intermediate_size, vocab_size, max_position_embeddings" in message
    assert "reference/hub/someone--some-model.yaml" in message and "models.bert-base.architecture_facts" in message


def test_electra_needs_its_embedding_size(contract, tmp_path):
    # transformers' ElectraConfig would fill 128, the small model's: a base model's is 768
    facts = dict(BERT_MINI, model_type="electra")
    contract(facts)
    with pytest.raises(ConfigError, match="needs embedding_size"):
        architecture("electra", hub_entry(), tmp_path)
    contract(dict(facts, embedding_size=128))
    assert architecture("electra", hub_entry(), tmp_path).config_kwargs()["embedding_size"] == 128


def test_an_entry_contradicting_the_contract_is_named(contract, tmp_path):
    contract(BERT_MINI)
    with pytest.raises(ConfigError, match=r"models.m.architecture_facts gives hidden_size=768 but contract "
                                          r"reference/hub/someone--some-model.yaml says 256"):
        architecture("m", hub_entry(architecture_facts={"hidden_size": 768}), tmp_path)
    with pytest.raises(ConfigError, match="models.m.layers/dim gives num_hidden_layers=12"):
        architecture("m", hub_entry(layers=12), tmp_path)


def test_a_hub_model_without_a_contract_is_pointed_at_its_entry(contract, tmp_path):
    entry = {"source": "hub", "id": "nobody/unknown", "revision": None, "layers": 2, "dim": 64}
    with pytest.raises(ConfigError, match=r"needs model_type, num_attention_heads.*give them in "
                                          r"the contract's config: \(reference/hub/nobody--unknown.yaml"):
        architecture("u", entry, tmp_path)
    facts = {key: value for key, value in BERT_MINI.items() if key not in ("num_hidden_layers", "hidden_size")}
    arch = architecture("u", dict(entry, architecture_facts=facts), tmp_path)
    assert (arch.num_hidden_layers, arch.hidden_size) == (2, 64)  # the declared layers / dim


def test_a_tiny_model_is_what_the_builder_builds(tmp_path):
    entry = {"source": "tiny", "layers": 2, "dim": 30, "architecture": "electra", "attention_heads": 4,
             "intermediate_size": 64}
    with pytest.raises(ConfigError, match=r"needs vocab_size.*models.t.architecture_facts"):
        architecture("t", entry, tmp_path)
    arch = architecture("t", dict(entry, architecture_facts={"vocab_size": 30522}), tmp_path)
    # 30 is not divisible by 4: build_tiny_model falls back to one head
    assert (arch.model_type, arch.num_attention_heads, arch.embedding_size) == ("electra", 1, 30)
    deberta = architecture("t", dict(entry, architecture="deberta", architecture_facts={"vocab_size": 30522}), tmp_path)
    assert deberta.model_type == "deberta-v2" and deberta.extra["relative_attention"] is True


@pytest.mark.parametrize("kind", ["bert", "electra"])
def test_a_tiny_models_facts_are_the_config_its_builder_writes(tmp_path, kind):
    """Read against what build_tiny_model really writes (its config.json), not against the helpers both
    share: a default of the builder's that the facts miss fails here."""
    import json

    from conftest import minilm_folder

    from trimbench.models import build_tiny_model

    entry = {"source": "tiny", "layers": 2, "dim": 32, "architecture": kind, "attention_heads": 4}
    build_tiny_model(entry, minilm_folder(), tmp_path / "built")
    written = json.loads((tmp_path / "built" / "config.json").read_text())
    arch = architecture("t", dict(entry, architecture_facts={"vocab_size": written["vocab_size"]}), tmp_path)
    assert {key: getattr(arch, key) for key in ("model_type", "num_hidden_layers", "hidden_size", "num_attention_heads",
                                                "intermediate_size", "max_position_embeddings")} == {
        key: written[key] for key in ("model_type", "num_hidden_layers", "hidden_size", "num_attention_heads",
                                      "intermediate_size", "max_position_embeddings")}
    assert arch.embedding_size == written.get("embedding_size")


def test_a_local_folder_without_config_json_is_said(tmp_path):
    with pytest.raises(ConfigError, match=r"no config.json in its folder \(results/models/splade\).*"
                                          r"give them in models.s.architecture_facts"):
        architecture("s", {"source": "local", "path": "results/models/splade", "layers": 2, "dim": 128}, tmp_path)
