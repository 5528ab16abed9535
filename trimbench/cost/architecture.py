"""The architecture facts of a registry model that its cost depends on, read without loading it.

Each fact comes from the first place that gives it: the model's own ``config.json`` on disk (a local
or packaged folder, a hub model in the local cache: :func:`trimbench.models.config_facts`), else its
hub contract's ``config:`` (``reference/hub``, :mod:`trimbench.data.contracts`), else the registry
entry's own ``architecture_facts:`` mapping (config.json's names), else its declared ``layers`` /
``dim``. A fact the entry gives that the config.json or contract contradicts is an error; a fact none
gives is an error naming the model, the missing keys and where to give them: never a silent default
(transformers' config classes would fill one, e.g. ELECTRA's ``embedding_size`` 128).

Tiny models (``source: tiny``) take their facts from the entry, as :func:`trimbench.models.build_tiny_model`
builds them; their vocabulary is another model's tokenizer's, so ``vocab_size`` must be given in
``architecture_facts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trimbench.data import contracts
from trimbench.errors import ConfigError
from trimbench.models import TINY_DEBERTA_LAYOUT, TINY_MAX_POSITIONS, config_facts, tiny_heads

#: the facts every model needs, in config.json's (BERT's) names
REQUIRED = ("model_type", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
            "vocab_size", "max_position_embeddings")
#: DistilBERT's config.json names for the same facts
ALIASES = {"n_layers": "num_hidden_layers", "dim": "hidden_size", "n_heads": "num_attention_heads",
           "hidden_dim": "intermediate_size"}
#: config.json keys that say nothing about the computation (kept out of ``extra`` and the cache key)
_NOT_ARCHITECTURE = {"architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "id2label",
                     "label2id", "auto_map", "tokenizer_class", "gradient_checkpointing", "use_cache",
                     "output_past", "summary_type", "summary_use_proj", "summary_activation",
                     "summary_last_dropout", "embedding_size"}
#: the tiny builder's architecture -> config.json model_type (trimbench.models.build_tiny_model)
TINY_MODEL_TYPES = {"bert": "bert", "electra": "electra", "distilbert": "distilbert", "deberta": "deberta-v2"}


@dataclass(frozen=True)
class Architecture:
    model_type: str
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    #: the feed-forward width
    intermediate_size: int
    vocab_size: int
    #: absolute positions: the longest sequence the model takes
    max_position_embeddings: int
    #: ELECTRA's embedding width (its embeddings are projected to hidden_size where they differ); None
    #: for the models that have none
    embedding_size: int | None = None
    #: where the facts were read, per source
    source: str = ""
    #: the other config.json facts that shape the computation (DeBERTa's relative attention, dropout, ...)
    extra: Mapping = field(default_factory=dict)

    def config_kwargs(self, layers: int | None = None) -> dict:
        """The transformers config's arguments, with the encoder cut to ``layers`` blocks where given."""
        kwargs = dict(self.extra, vocab_size=self.vocab_size, max_position_embeddings=self.max_position_embeddings)
        depth = self.num_hidden_layers if layers is None else layers
        if self.model_type == "distilbert":
            kwargs.update(n_layers=depth, dim=self.hidden_size, n_heads=self.num_attention_heads,
                          hidden_dim=self.intermediate_size)
        else:
            kwargs.update(num_hidden_layers=depth, hidden_size=self.hidden_size,
                          num_attention_heads=self.num_attention_heads, intermediate_size=self.intermediate_size)
        if self.embedding_size is not None:
            kwargs["embedding_size"] = self.embedding_size
        return kwargs


def _named(facts: Mapping) -> dict:
    """``facts`` with DistilBERT's names as BERT's."""
    return {ALIASES.get(key, key): value for key, value in facts.items()}


def _tiny_facts(entry: dict) -> dict:
    arch = entry.get("architecture", "bert")
    facts = {"model_type": TINY_MODEL_TYPES[arch], "num_hidden_layers": entry["layers"], "hidden_size": entry["dim"],
             "num_attention_heads": tiny_heads(entry), "intermediate_size": entry.get("intermediate_size", 64),
             "max_position_embeddings": TINY_MAX_POSITIONS}
    if arch == "electra":
        facts["embedding_size"] = entry["dim"]
    if arch == "deberta":
        facts.update(TINY_DEBERTA_LAYOUT)
    return facts


def _sources(name: str, entry: dict, workdir: Path) -> list[tuple[str, dict]]:
    """(where, facts) in order of precedence."""
    sources = []
    if entry["source"] == "tiny":
        sources.append(("the tiny model's registry entry (as trimbench.models.build_tiny_model builds it)",
                        _tiny_facts(entry)))
    else:
        read = config_facts(entry, workdir)
        if read is not None:
            sources.append((f"config.json {read[1]}", _named(read[0])))
        elif entry["source"] in ("local", "package"):  # said in the error: a folder a rule makes may not exist yet
            sources.append((f"no config.json in its folder ({entry.get('path') or entry.get('package')})", {}))
        contract = contracts.load(entry["id"]) if entry["source"] == "hub" and entry.get("id") else None
        if contract is not None:
            sources.append((f"contract {contract.where}", _named(contract.raw.get("config") or {})))
    own = entry.get("architecture_facts") or {}
    if own:
        sources.append((f"models.{name}.architecture_facts", _named(own)))
    declared = {key: entry[field_] for field_, key in (("layers", "num_hidden_layers"), ("dim", "hidden_size"))
                if entry.get(field_) is not None}
    if declared:
        sources.append((f"models.{name}.layers/dim", declared))
    return sources


def _where_to_give(name: str, entry: dict) -> str:
    own = f"models.{name}.architecture_facts"
    contract_file = contracts.contract_path(entry["id"]) if entry["source"] == "hub" and entry.get("id") else None
    if contract_file is None:
        return own
    shown = f"reference/hub/{contract_file.name}"
    return f"the contract's config: ({shown}, with their source) or {own}"


def architecture(name: str, model_entry: dict, workdir: Path) -> Architecture:
    """The architecture of registry model ``name`` (``model_entry``: its validated entry)."""
    sources = _sources(name, model_entry, workdir)
    facts: dict = {}
    found_in: dict[str, str] = {}
    for where, given in sources:
        for key, value in given.items():
            if key in facts:
                if key in REQUIRED and facts[key] != value and where.startswith("models."):
                    raise ConfigError(f"model '{name}': {where} gives {key}={value} but {found_in[key]} says "
                                      f"{facts[key]}")
                continue
            facts[key], found_in[key] = value, where
    required = REQUIRED + (("embedding_size",) if facts.get("model_type") == "electra" else ())
    missing = [key for key in required if facts.get(key) is None]
    if missing:
        read = "; ".join(where for where, _ in sources) or "no config.json, contract or architecture_facts"
        raise ConfigError(f"model '{name}': the cost model needs {', '.join(missing)}, which no source gives (read: "
                          f"{read}); give them in {_where_to_give(name, model_entry)}")
    used = sorted({found_in[key] for key in required}, key=[where for where, _ in sources].index)
    extra = {key: value for key, value in facts.items()
             if key not in REQUIRED and key not in _NOT_ARCHITECTURE and not key.startswith("_")}
    embedding = facts.get("embedding_size")
    return Architecture(
        model_type=str(facts["model_type"]),
        **{key: int(facts[key]) for key in REQUIRED[1:]},
        embedding_size=None if embedding is None else int(embedding),
        source="; ".join(used),
        extra=extra,
    )
