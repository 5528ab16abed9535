"""The SPLADE track's config checks and settings (light: no torch; runs while Snakemake parses).

An experiment of ``track: splade`` names ``variants`` (each a registry model, a method and its λq,
λd: one row of the seed's table), optional ``ensembles`` of variants, one training set-up and the
evaluation datasets. Every problem is one :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import json
from pathlib import Path

from trimbench.checks import (
    RETRIEVAL_METRICS,
    check_devices,
    check_search_depth,
    check_trec_files,
    model_shape,
    resolve_path,
    unknown_name,
)
from trimbench.data.corpora import shared_corpora
from trimbench.data.model_checks import has_mlm_head
from trimbench.errors import ConfigError
from trimbench.models import _transformer_folder, local_folder

#: the seed's max_seq_length per script (train_max.py 300, train_distill.py 256)
SEED_MAX_LENGTH = {"splade_max": 300, "distil_splade": 256}
#: the seed's DataLoader drop_last per script (train_distil.py:207 drops the last partial batch,
#: train_max.py:205 keeps it)
SEED_DROP_LAST = {"splade_max": False, "distil_splade": True}
SPARSITY_METRICS = ("flops", "q_terms", "d_terms")


def max_length(exp: dict, method: str) -> int:
    return exp["train"]["max_seq_length"] or SEED_MAX_LENGTH[method]


def drop_last(train: dict, method: str) -> bool:
    """Whether an epoch drops its last partial batch: ``train.drop_last``, or the seed's per method."""
    return SEED_DROP_LAST[method] if train["drop_last"] is None else train["drop_last"]


def table_columns(exp: dict) -> list[tuple[str, str]]:
    """(dataset, metric) columns of the seed-layout table."""
    evaluation = exp["evaluation"]
    if evaluation["table"]:
        return [(ds, m) for ds, m in evaluation["table"]]
    datasets = list(evaluation["datasets"]) + ([evaluation["average_name"]] if evaluation["average_over"] else [])
    columns = [(ds, m) for ds in datasets for m in evaluation["metrics"]]
    return columns + [(evaluation["datasets"][0], m) for m in SPARSITY_METRICS]


def _has_mlm_head(folder: Path) -> bool | None:
    config = _transformer_folder(folder) / "config.json"
    if not config.is_file():
        return None
    return any(a.endswith("ForMaskedLM") for a in json.loads(config.read_text()).get("architectures") or [])


def _check_variant(where: str, run: dict, config: dict, workdir: Path) -> None:
    models = config["models"]
    if run["model"] not in models:
        raise unknown_name("model", run["model"], models, f"{where}.model")
    entry = models[run["model"]]
    model_shape(run["model"], entry, workdir)  # a readable model folder (or a declared hub shape)
    if run["mlm_head"] != "pretrained":
        return
    folder = local_folder(entry, workdir)
    if entry["source"] == "tiny":  # built with a head unless it stands in for a checkpoint without one
        head, why = entry.get("mlm_head") is not False, "its hub checkpoint's contract says mlm_head: false"
    elif folder is not None:
        head, why = _has_mlm_head(folder), "its config.json names no *ForMaskedLM architecture"
    else:
        head, why = has_mlm_head(entry), "its contract (reference/hub) says mlm_head: false"
    if head is False:
        raise ConfigError(
            f"config key {where}.mlm_head: model '{run['model']}' has no MLM head ({why}); use a masked-LM "
            "checkpoint or set mlm_head: tied to build one whose decoder is tied to the word embeddings"
        )


def check_experiment(name: str, exp: dict, config: dict, workdir: Path) -> None:
    where = f"experiments.{name}"
    datasets, models = config["datasets"], config["models"]
    for variant_name, variant in exp["variants"].items():
        _check_variant(f"{where}.variants.{variant_name}", variant, config, workdir)
        # The reference names models by hub id: resolved once here, for the tables and the scoreboard.
        variant["published_model"] = (variant["published_model"] or models[variant["model"]].get("id")
                                      or variant["model"])
    train = exp["train"]
    if train.get("dataset") is None:
        raise ConfigError(f"config key {where}.train.dataset: SPLADE variants need a training dataset")
    check_devices(where, train)
    for key, names in (("train.dataset", [train["dataset"]]), ("evaluation.datasets", exp["evaluation"]["datasets"])):
        for ds in names:
            if ds not in datasets:
                raise unknown_name("dataset", ds, datasets, f"{where}.{key}")
            if datasets[ds]["kind"] != "retrieval":
                raise ConfigError(f"config key {where}.{key}: dataset '{ds}' is of kind '{datasets[ds]['kind']}', "
                                  "the SPLADE track needs kind 'retrieval'")
            if datasets[ds]["source"] == "local" and not resolve_path(datasets[ds]["path"], workdir).is_dir():
                raise ConfigError(f"config key datasets.{ds}.path: local dataset folder '{datasets[ds]['path']}' "
                                  "does not exist")
            check_trec_files(ds, datasets[ds], workdir)
    negatives = train["negatives"]
    for key in ("model", "cross_encoder"):
        if negatives[key] is not None and negatives[key] not in models:
            raise unknown_name("model", negatives[key], models, f"{where}.train.negatives.{key}")
    if negatives["miner"] == "dense" and negatives["model"] is None and train["hard_negatives"] is None:
        raise ConfigError(f"config key {where}.train.negatives.model: the dense miner needs a model")
    hard = train["hard_negatives"]
    if hard is not None and hard["source"] == "local":
        folder = resolve_path(hard["path"] or "", workdir)
        for file in (hard["negatives_file"], hard["scores_file"]):
            if not hard["path"] or not (folder / file).is_file():
                raise ConfigError(f"config key {where}.train.hard_negatives.path: '{folder / file}' does not exist")
    distilled = [v for v, spec in exp["variants"].items() if spec["method"] == "distil_splade"]
    if distilled and hard is None:
        raise ConfigError(f"config key {where}.train.hard_negatives: variants {distilled} (distil_splade) learn "
                          "cross-encoder score margins; configure train.hard_negatives (the CE scores file)")
    for ensemble, spec in exp["ensembles"].items():
        for member in spec["variants"]:
            if member not in exp["variants"]:
                raise unknown_name("variant", member, exp["variants"], f"{where}.ensembles.{ensemble}.variants")
        if ensemble in exp["variants"]:
            raise ConfigError(f"config key {where}.ensembles.{ensemble}: a trained variant has that name already")
    _check_evaluation(where, exp)
    exp["_corpus_of"] = shared_corpora(exp, datasets)


def _check_evaluation(where: str, exp: dict) -> None:
    evaluation = exp["evaluation"]
    wrong = [m for m in evaluation["metrics"] if m not in RETRIEVAL_METRICS]
    if wrong:
        raise ConfigError(f"config key {where}.evaluation.metrics: {wrong} are not retrieval metrics")
    check_search_depth(where, "splade.top_k", exp["splade"]["top_k"], evaluation["metrics"])
    if evaluation["main_metric"] not in evaluation["metrics"]:
        raise ConfigError(f"config key {where}.evaluation.main_metric: '{evaluation['main_metric']}' is not among "
                          f"evaluation.metrics {evaluation['metrics']}")
    named = list(evaluation["datasets"]) + [evaluation["average_name"]]
    for ds in evaluation["average_over"] or []:
        if ds not in evaluation["datasets"]:
            raise ConfigError(f"config key {where}.evaluation.average_over: '{ds}' is not an evaluation dataset")
    for ds, metric in evaluation["table"] or []:
        if ds not in named:
            raise ConfigError(f"config key {where}.evaluation.table: '{ds}' is not an evaluation dataset "
                              f"(nor average_name); known: {named}")
        if metric not in evaluation["metrics"] and metric not in SPARSITY_METRICS:
            raise ConfigError(f"config key {where}.evaluation.table: {[ds, metric]}: '{metric}' is not in "
                              "evaluation.metrics")
    reference = exp["reference"]["dataset"]
    if reference is not None and reference not in named:
        raise ConfigError(f"config key {where}.reference.dataset: '{reference}' is not an evaluation dataset")
