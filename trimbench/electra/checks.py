"""The ELECTRA track (``track: electra``, truncated encoders): "Are ELECTRA's sentence embeddings beyond repair?".

Each model of an experiment is cut after layer k (k = 0 is the embedding output), mean-pooled and
fine-tuned per task and seed; the published curves are test scores per k. This module is what
the workflow needs while Snakemake parses it (config checks, the expansion into fine-tunings, the
objective of a task); training lives in :mod:`trimbench.electra.train`, the summaries,
tables and figures in :mod:`trimbench.electra.report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trimbench.checks import check_dataset, check_model_paths, model_shape, resolve_path, unknown_name
from trimbench.errors import ConfigError
from trimbench.jobs.artifacts import results_root

TASK_KINDS = ("sts", "pair-class")
#: objective -> the metric that picks the epoch and the layer (and the tables show)
MAIN_METRIC = {"cosine_mse": "spearman_cosine", "cosine_bce": "f1", "softmax": "macro_f1"}
#: the metric of the score table's parameter-count rows (the cut model's, embeddings included)
PARAMETERS = "parameters"
#: the split name of the score table's rows of the last epoch's model on test (what the archived
#: results score: training_stsbenchmark_hf.py at 4b995f6), recorded beside the kept epoch's
LAST_EPOCH_SPLIT = "test-last-epoch"
WORKFLOW_DIR = Path(__file__).resolve().parents[2]


def objective(dataset: dict) -> str:
    """How a task is trained, from its dataset's kind, as the paper's code does per task.

    ``sts``: MSE between the cosine and the score (``CosineSimilarityLoss``); ``pair-class`` with
    two labels (MRPC): binary cross-entropy with the cosine as the logit; more labels (SICK): a
    softmax classifier on ``[u; v; |u - v|]`` (``SoftmaxLoss``).
    """
    if dataset["kind"] == "sts":
        return "cosine_mse"
    return "cosine_bce" if dataset["num_labels"] == 2 else "softmax"


def main_metrics(exp: dict, datasets: dict) -> dict:
    """Each task of an experiment -> the metric its tables lead with (by the task's objective)."""
    return {task: MAIN_METRIC[objective(datasets[task])] for task in exp["tasks"]}


def variant_name(exp: dict) -> str:
    """The score table's ``variant``: which optional stages ran before fine-tuning."""
    stages = ["cut"]
    if exp["random_init"]:
        stages.append("random-init")
    if exp["domain_adaptation"]:
        stages.append("dapt-mlm")
    if exp["word_similarity"]:
        stages.append("wordsim")
    return "+".join(stages)


def model_role(name: str, entry: dict) -> str:
    """discriminator / generator / encoder, from the registry name and hub id (for the figures)."""
    text = f"{name} {entry.get('id', '')}".lower()
    if "generator" in text:
        return "generator"
    if "electra" in text or "electricidad" in text:
        return "discriminator"
    return "encoder"


def layers(exp: dict, model: str) -> list[int]:
    """The k a model is cut at: the configured list, or every ``layer_step``-th k from 0 and the
    model's depth (the uncut model is always scored)."""
    if exp["layers"] is not None:
        return sorted(exp["layers"])
    depth = exp["_depths"][model]
    return sorted({*range(0, depth + 1, exp["layer_step"]), depth})


def pretuned_layers(exp: dict, model: str) -> list[int]:
    """The k of each word-similarity pre-tuned model a train_electra job of ``model`` starts its
    cuts from, one per k; [] where the experiment does not pre-tune: every cut starts from the one
    domain-adapted or registry model."""
    return layers(exp, model) if exp["word_similarity"] else []


@dataclass(frozen=True)
class FineTuning:
    """One fine-tuning: a task, a model cut to ``k`` layers, a seed."""

    task: str
    model: str
    k: int
    seed: int


def fine_tunings(exp: dict) -> list[FineTuning]:
    return [FineTuning(task, model, k, seed) for task, model in train_jobs(exp)
            for k, seed in model_fine_tunings(exp, model)]


#: the folder of an experiment's train_electra outputs (fine-tunings/<task>/<model>/); before, runs/,
#: the name of the other tracks' TREC runs
FINE_TUNINGS_FOLDER, FORMER_FINE_TUNINGS_FOLDER = "fine-tunings", "runs"


def check_former_layout(experiment_folder: str | Path) -> None:
    """An experiment folder holding its fine-tunings under their former name: one error saying how to
    keep them, rather than training every cut and seed again (GPU-hours in a paper preset)."""
    folder = Path(experiment_folder)
    former, current = folder / FORMER_FINE_TUNINGS_FOLDER, folder / FINE_TUNINGS_FOLDER
    if former.is_dir() and not current.exists():
        raise ConfigError(f"{former}: an ELECTRA experiment keeps its fine-tunings in {current} now (runs/ names "
                          f"TREC runs in the other tracks): rename it to keep them (mv {former} {current}), or "
                          "remove it to train them again")


def train_jobs(exp: dict) -> list[tuple[str, str]]:
    """(task, model): one job fine-tunes every cut of a model on a task with every seed. The
    fine-tunings of a job share its data and start model; a job per fine-tuning made the paper presets' DAG thousands
    of jobs long (seconds of Snakemake planning, seconds of imports per job)."""
    return [(task, model) for task in exp["tasks"] for model in exp["models"]]


def model_fine_tunings(exp: dict, model: str) -> list[tuple[int, int]]:
    """(k, seed) of the fine-tunings of one job, in the order it trains them."""
    return [(k, seed) for k in layers(exp, model) for seed in exp["seeds"]]


def stage_models(exp: dict) -> list[tuple[str, int]]:
    """(model, k) pairs that get a word-similarity pre-tuned model."""
    return [(model, k) for model in exp["models"] for k in layers(exp, model)]


# --- configuration checks (run while Snakemake parses, from trimbench.config.prepare) ----------


def _check_kind(where: str, name: str, datasets: dict, kinds) -> None:
    if name not in datasets:
        raise unknown_name("dataset", name, datasets, where)
    if datasets[name]["kind"] not in kinds:
        raise ConfigError(f"config key {where}: dataset '{name}' is of kind '{datasets[name]['kind']}', "
                          f"this needs one of {list(kinds)}")


def check_experiment(name: str, exp: dict, config: dict, workdir: Path) -> None:
    """Registries, depths, tasks and stages of one experiment; fills ``exp['_depths']`` and
    ``exp['_widths']`` (model -> layers, hidden size)."""
    where = f"experiments.{name}"
    check_former_layout(Path(workdir) / results_root(config) / "electra" / name)
    datasets, models = config["datasets"], config["models"]
    depths, widths = {}, {}
    for model in exp["models"]:
        if model not in models:
            raise unknown_name("model", model, models, f"{where}.models")
        check_model_paths(model, models[model], workdir)
        shape = model_shape(model, models[model], workdir)
        depths[model], widths[model] = shape.layers, shape.dim
    if exp["layers"] is not None and exp["layer_step"] != 1:
        raise ConfigError(f"config key {where}.layer_step: it thins the every-k default, but {where}.layers lists "
                          "the k already; drop one of them")
    for k in exp["layers"] or []:
        for model, depth in depths.items():
            if k > depth:
                raise ConfigError(f"config key {where}.layers: layer {k} is beyond model '{model}', "
                                  f"which has {depth} layers")
    if exp["random_init"] and (exp["domain_adaptation"] or exp["word_similarity"]):
        raise ConfigError(f"config key {where}.random_init: a randomly initialised encoder has nothing to adapt or "
                          "pre-tune; drop domain_adaptation / word_similarity or random_init")
    used = []
    for task in exp["tasks"]:
        _check_kind(f"{where}.tasks", task, datasets, TASK_KINDS)
        used.append(task)
    if exp["domain_adaptation"]:
        stage = exp["domain_adaptation"]
        _check_kind(f"{where}.domain_adaptation.dataset", stage["dataset"], datasets,
                    ("sts", "pairs", "triplets", "pair-class"))
        used.append(stage["dataset"])
    if exp["word_similarity"]:
        for dataset in exp["word_similarity"]["datasets"]:
            _check_kind(f"{where}.word_similarity.datasets", dataset, datasets, ("sts",))
            used.append(dataset)
    for dataset in used:
        check_dataset(dataset, datasets[dataset], workdir)
    reference = exp["reference"]
    for task in reference["experiments"]:
        if task not in exp["tasks"]:
            raise ConfigError(f"config key {where}.reference.experiments: '{task}' is not one of the "
                              f"experiment's tasks {exp['tasks']}")
    if reference["experiments"] and not resolve_path(reference["file"], WORKFLOW_DIR).is_file():
        raise ConfigError(f"config key {where}.reference.file: '{reference['file']}' does not exist "
                          "(relative paths are relative to the workflow)")
    exp["_depths"], exp["_widths"] = depths, widths
