"""The profile track's config checks (run while Snakemake parses, from trimbench.config.prepare): every
problem is one error naming its key, before any job."""

from __future__ import annotations

import json
from pathlib import Path

from trimbench.checks import check_dataset, check_model_paths, model_shape, resolve_path, unknown_name
from trimbench.errors import ConfigError
from trimbench.profile.cost import PRECISIONS
from trimbench.profile.recommend import check_tolerances

#: what the profile reads of each kind of dataset, and the metric it reports there (MTEB's main score)
READS = {"sts": "sentence1, sentence2, score", "retrieval": "corpus, queries, qrels"}
METRIC = {"sts": "spearman_cosine", "retrieval": "ndcg@10"}


def main_metrics(exp: dict, datasets: dict) -> dict:
    """Each profiled dataset -> MTEB's main score for its kind."""
    return {name: METRIC[datasets[name]["kind"]] for name in exp["evaluation"]["datasets"]}


def matryoshka_dims(width: int) -> list[int]:
    """The default dims: the width and its halvings down to 8 or less (384: 384, 192, 96, 48, 24, 12, 6),
    the Matryoshka papers' nesting."""
    dims = [width]
    while dims[-1] > 8:
        dims.append(dims[-1] // 2)
    return dims


def static_embedding(entry: dict, workdir: Path) -> bool:
    """Whether a local sentence-transformers folder has no transformer module at all (a static embedding:
    a lookup table, no layer to cut)."""
    if entry["source"] != "local":
        return False
    modules = resolve_path(entry["path"], workdir) / "modules.json"
    if not modules.is_file():
        return False
    return not any(module.get("type", "").endswith("Transformer") for module in json.loads(modules.read_text()))


def check_experiment(name: str, exp: dict, config: dict, workdir: Path) -> None:
    """Models that have layers to cut, datasets the profile can read, layers, dims, precisions, funnel
    and tolerances within the models; fills ``exp['_depths']`` and ``exp['_widths']``."""
    where = f"experiments.{name}"
    datasets, models = config["datasets"], config["models"]
    depths, widths = {}, {}
    for model in exp["models"]:
        if model not in models:
            raise unknown_name("model", model, models, f"{where}.models")
        check_model_paths(model, models[model], workdir)
        if static_embedding(models[model], workdir):
            raise ConfigError(f"config key {where}.models: model '{model}' is a static embedding (its modules.json "
                              "has no Transformer module): it has no layers to cut, nothing to profile")
        shape = model_shape(model, models[model], workdir)
        if shape.layers < 2:
            raise ConfigError(f"config key {where}.models: model '{model}' has {shape.layers} transformer layer(s): "
                              "no layer to cut, so no trim to profile (it needs 2 or more)")
        depths[model], widths[model] = shape.layers, shape.dim
    for dataset in exp["evaluation"]["datasets"]:
        if dataset not in datasets:
            raise unknown_name("dataset", dataset, datasets, f"{where}.evaluation.datasets")
        kind = datasets[dataset]["kind"]
        if kind not in READS:
            raise ConfigError(f"config key {where}.evaluation.datasets: dataset '{dataset}' is of kind '{kind}': the "
                              "profile reads STS pairs (kind sts: " + READS["sts"] + ") or retrieval sets "
                              "(kind retrieval: " + READS["retrieval"] + ")")
        check_dataset(dataset, datasets[dataset], workdir)
    for dataset in exp["evaluation"]["splits"]:
        if dataset not in exp["evaluation"]["datasets"]:
            raise ConfigError(f"config key {where}.evaluation.splits: '{dataset}' is not one of the profiled "
                              f"datasets {exp['evaluation']['datasets']}")
    for layer in exp["layers"] or []:
        for model, depth in depths.items():
            if not 1 <= layer <= depth:
                raise ConfigError(f"config key {where}.layers: layer {layer} is outside model '{model}', which has "
                                  f"{depth} layers (1..{depth})")
    narrowest = min(widths.values())
    for dim in exp["dims"] or []:
        if dim > narrowest:
            model = min(widths, key=widths.get)
            raise ConfigError(f"config key {where}.dims: dim {dim} is larger than model '{model}', "
                              f"{narrowest} wide")
    for shortlist_dim, shortlist_size in exp["funnel"]:
        if shortlist_dim > narrowest:
            raise ConfigError(f"config key {where}.funnel: shortlist dim {shortlist_dim} is larger than the "
                              f"narrowest model ({narrowest} dims)")
        if shortlist_size < 10:
            raise ConfigError(f"config key {where}.funnel: shortlist size {shortlist_size} is below the 10 hits "
                              "nDCG@10 reads")
    if "float32" not in exp["precisions"]:
        raise ConfigError(f"config key {where}.precisions: float32 must be among them: the full model's cell is "
                          f"float32 (known: {list(PRECISIONS)})")
    check_tolerances(exp["tolerances"], f"config key {where}.tolerances")
    exp["_depths"], exp["_widths"] = depths, widths


def split_of(exp: dict, dataset: str) -> str:
    """The split of a dataset the profile reads: its own in ``evaluation.splits``, else ``evaluation.split``."""
    evaluation = exp["evaluation"]
    return evaluation["splits"].get(dataset, evaluation["split"])


def layers_of(exp: dict, model: str) -> list[int]:
    """The layers a model is profiled at: the configured ones and its depth (the full model), else every
    layer 1..depth."""
    depth = exp["_depths"][model]
    return sorted({*(exp["layers"] or range(1, depth + 1)), depth})


def dims_of(exp: dict, model: str) -> list[int]:
    """The dims a model is profiled at: the configured ones and its width (the full model), else
    :func:`matryoshka_dims` of its width."""
    width = exp["_widths"][model]
    return sorted({*(exp["dims"] or matryoshka_dims(width)), width}, reverse=True)
