"""The face every track gives the table of tracks (:mod:`trimbench.tracks`): a :class:`Track`, and
the small parts the tracks' faces share (a claim's :class:`View` and cell, the default compared dataset
and main metrics).

It sits below the track packages, so that each builds its face without importing the config or the
report (which read the table). Light: the table is read while Snakemake parses the workflow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Miner:
    """One cached mining stage (rule mine_negatives): the experiments' ``negatives`` settings, how a
    dense miner embeds (``pooling``; None: the model's own) and scores (``similarity``), and the
    experiment's ``bm25`` section, whose k1 and b a BM25 miner searches with (as the baseline)."""

    negatives: dict
    pooling: str | None
    similarity: str
    bm25: dict

    @property
    def searches_bm25(self) -> bool:
        """Whether it searches the training corpus's BM25 index."""
        return self.negatives["miner"] == "bm25"

    @property
    def bm25_parameters(self) -> dict | None:
        """A BM25 miner's ``{"k1": .., "b": ..}``; None for another miner (no setting of the
        ``bm25`` section changes what it mines)."""
        return {"k1": self.bm25["k1"], "b": self.bm25["b"]} if self.searches_bm25 else None

    @property
    def model(self) -> str | None:
        """The registry model a dense miner encodes with; None for another miner."""
        return self.negatives["model"] if self.negatives["miner"] == "dense" else None

    @property
    def cross_encoder(self) -> str | None:
        """The registry cross-encoder that filters the mined negatives; None for no filter."""
        return self.negatives["cross_encoder"] or None


@dataclass(frozen=True)
class ExperimentSchema:
    """Where a track's experiments' shape is defined: ``file``, a YAML file of JSON Schema
    definitions (``$defs``) beside its package, and ``definition``, the one an experiment of the
    track is (the others are its parts). trimbench.config.schema adds the definitions to
    schemas/config.schema.yaml's and routes ``experiments.<name>`` on ``track`` to it."""

    file: Path
    definition: str


def package_schema(package_file: str, definition: str) -> ExperimentSchema:
    """The ``experiment.schema.yaml`` beside a track package's module ``package_file`` (its ``__file__``)."""
    return ExperimentSchema(Path(package_file).resolve().parent / "experiment.schema.yaml", definition)


@dataclass(frozen=True)
class HubFile:
    """A file an experiment downloads from a hub dataset repository, outside the registry's datasets
    (SPLADE's hard negatives): checked against its contract, and refused with local copies."""

    #: the experiment's key that names it (``train.hard_negatives.scores_file``)
    key: str
    repo: str
    revision: str | None
    filename: str
    #: what to do instead when it cannot be downloaded (local copies), keys under the experiment
    instead: str


@dataclass(frozen=True)
class Track:
    """What config, rules and report know of one track (the config's ``track``): one line of the
    table. ``exp`` is one experiment's config; ``experiment`` the scoreboard's view of one (``name``,
    ``config``, ``scores``, ``published``, ``main_metrics``: trimbench.report.scoreboard.Experiment)."""

    name: str
    #: the reproduced work's name in the status table, formatted with the experiment's ``reference``
    work: str
    #: check_experiment(name, exp, config, workdir): one ConfigError naming the key; may add the
    #: experiment's derived keys (``_depth``, ...)
    check_experiment: Callable[..., None]
    #: main_metrics(exp, datasets) -> each dataset the experiment is scored on -> the metric its tables lead with
    main_metrics: Callable[[dict, dict], dict]
    #: compared_dataset(exp): the dataset its headline, first grid view and claims set beside the work
    compared_dataset: Callable[[dict], str]
    #: used_splits(exp) -> [(dataset, our split, the experiment's key that reads it)]: what it reads
    #: (contracts, local copies)
    used_splits: Callable[[dict], list]
    #: smoke(exp, settings): the experiment cut to its smoke stand-ins in place (``smoke_settings``)
    smoke: Callable[[dict, dict], None]
    #: substitute_models(exp, substitute, record): local copies; each hub model the experiment names
    #: replaced, in place, by ``substitute(key under the experiment, model)``; what else changes is a
    #: line of ``record``
    substitute_models: Callable[[dict, Callable[[str, str], str], list], None]
    #: miner(exp) -> the negatives miner its training asks for (trimbench/negatives.py), or None
    miner: Callable[[dict], Miner | None]
    #: comparison(experiment) -> the long table over every cell either side covers: key columns, then
    #: ours, published, delta
    comparison: Callable[[Any], pd.DataFrame]
    #: headline(experiment) -> {ours, ours_cell, published, published_cell}: the status table's numbers
    headline: Callable[[Any], dict]
    #: claim_views(subject, configs, scores, published, main_metrics, model_ids) -> (ours, published):
    #: both sides as its claim checks read them; configs and scores hold every experiment of the track
    claim_views: Callable[..., tuple]
    #: the id of each claim of reference/claims.yaml the track checks -> its check (a View -> its cells)
    claim_checks: Mapping[str, Callable[[View], list]]
    #: where its experiments' keys are defined (the config schema routes ``track: <name>`` there)
    experiment_schema: ExperimentSchema
    #: models(exp) -> the registry models the experiment encodes with, in its order (token lengths are
    #: checked against each one's position limit)
    models: Callable[[dict], list]
    #: hub_files(exp) -> the HubFiles it downloads besides the registry's datasets and models
    hub_files: Callable[[dict], list]
    #: training_data(exp) -> (dataset, split) it trains on, None where it trains on none (pretrained only)
    training_data: Callable[[dict], tuple | None]
    #: bm25_settings(exp) -> what its BM25 baseline shares with its other methods: ``top_k``,
    #: ``average_over``, ``average_name`` (read only where ``bm25`` is true)
    bm25_settings: Callable[[dict], dict]
    #: its presets for the cost pages (trimbench.plan.costs): a run's name -> its config files, the
    #: first a preset of configs/ (a run of one file is a row of README's tracks table)
    presets: Mapping[str, tuple]
    #: cost(rule, wildcards, exp, context) -> the work one job of its rules does on a GPU
    #: (trimbench.cost.work.Work), None for a job that runs no model; context: a CostContext
    #: (rows, lengths, model facts). The plan (trimbench.plan) prices it
    cost: Callable[..., Any]
    #: whether its cells have a (layer, dim) cost: drawn on the cross-track Pareto figures
    layer_dim_cost: bool
    #: the score column that tells a Pareto figure's lines apart (``variant``; ELECTRA: ``model``)
    pareto_line: str
    #: scored by dense retrieval (trimbench/dense/search.py) on datasets of kind retrieval
    dense_retrieval: bool
    #: trained on (query, positive, mined negatives) groups (trimbench/dense/retrieval_loss.py)
    group_trained: bool
    #: whether its training reads a retrieval dataset's split (the BM25 index shares it)
    trains_on_retrieval: bool
    #: whether its experiments carry the BM25 baseline (``bm25.enabled``; trimbench/bm25.py)
    bm25: bool


@dataclass(frozen=True)
class View:
    """One side's numbers (ours, or the work's published ones) in the shape its track's claims read."""

    cells: pd.DataFrame
    #: 2DMSE retrieval ablations: (member, base, switches the member changes, member cells, base cells)
    ablations: tuple = ()
    #: how close two scores are to count as comparable (the experiment's reference tolerance)
    tolerance: float = 0.01


def claim_cell(cell: str, evidence: str, holds) -> dict:
    """One cell a claim covers: where, the numbers that decide it, whether it holds there."""
    return {"cell": cell, "evidence": evidence, "holds": bool(holds)}


def reference_dataset(exp: dict) -> str:
    """The compared dataset of most tracks: the reference's ``dataset``, by default the first evaluated one."""
    return exp["reference"].get("dataset") or exp["evaluation"]["datasets"][0]


def evaluation_main_metrics(exp: dict, datasets: dict) -> dict:
    """The main metrics of most tracks: every evaluated dataset in ``evaluation.main_metric``."""
    evaluation = exp["evaluation"]
    return dict.fromkeys(evaluation["datasets"], evaluation["main_metric"])


def evaluated_splits(exp: dict, trained: bool) -> list[tuple[str, str, str]]:
    """The splits an experiment with an ``evaluation`` (and a ``train`` it reads when ``trained``) reads."""
    used = [(dataset, exp["evaluation"]["split"], "evaluation.split") for dataset in exp["evaluation"]["datasets"]]
    train = exp.get("train") or {}
    if trained and train.get("dataset"):
        used.append((train["dataset"], train["split"], "train.split"))
    return used


def substitute_model_list(exp: dict, substitute, record: list[str]) -> None:
    """Local copies for a track whose experiments name a list of ``models`` (ELECTRA, the profile): each
    model of the list substituted; a model whose substitute is in the list already is left out."""
    replaced = [substitute("models", model) for model in exp["models"]]
    for index, (model, target) in enumerate(zip(exp["models"], replaced, strict=True)):
        if target in replaced[:index]:
            record.append(f"model {model}: left out, {target} is in the experiment already")
    exp["models"] = list(dict.fromkeys(replaced))


def no_miner(exp: dict) -> None:
    """The negatives miner of a track that mines none (ELECTRA, the profile)."""
    return None


def no_training_data(exp: dict) -> None:
    """The training dataset of a track with none of its own: ELECTRA fine-tunes on each task's own train
    split (its used_splits); the profile trains nothing."""
    return None


def no_hub_files(exp: dict) -> list:
    """The hub files of a track whose experiments download only registry entries."""
    return []


def no_bm25_baseline(exp: dict) -> dict:
    """The BM25 settings of a track without the baseline (``bm25`` false): never read."""
    raise LookupError(f"track {exp['track']} has no BM25 baseline")


def trained_on(exp: dict) -> tuple[str, str] | None:
    """The training data of most tracks: ``train.dataset`` and ``train.split``, None without a dataset."""
    train = exp.get("train") or {}
    return (train["dataset"], train["split"]) if train.get("dataset") else None


def shared_by_devices(train: dict) -> None:
    """A smaller smoke batch still split equally over ``train.devices`` (at least one text each)."""
    devices = train["devices"]
    train["batch_size"] = max(devices, train["batch_size"] - train["batch_size"] % devices)
