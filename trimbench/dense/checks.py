"""The dense tracks' config checks (2dmse-sts, 2dmse-retrieval, homedepot): an experiment against
its model's depth and width and the datasets it names (light: runs while Snakemake parses)."""

from __future__ import annotations

from pathlib import Path

from trimbench.checks import (
    RETRIEVAL_METRICS,
    check_dataset,
    check_devices,
    check_model_paths,
    check_search_depth,
    model_shape,
    unknown_name,
)
from trimbench.data.corpora import shared_corpora
from trimbench.dense.variants import (
    GROUP_TRAINED_TRACKS,
    PAIR_TRAINED_TRACKS,
    RETRIEVAL_TRACKS,
    TRAINED_METHODS,
    TRAINING_KINDS,
)
from trimbench.errors import ConfigError
from trimbench.models import ModelShape


def check_experiment(name: str, exp: dict, config: dict, workdir: Path) -> None:
    """A dense experiment (the face's check): its model's folder and shape, its datasets' folders, then
    its settings against the shape; adds the derived keys ``_depth``, ``_width`` (and ``_corpus_of``
    for the retrieval tracks)."""
    models, datasets = config["models"], config["datasets"]
    if exp["model"] not in models:
        raise unknown_name("model", exp["model"], models, f"experiments.{name}.model")
    entry = models[exp["model"]]
    check_model_paths(exp["model"], entry, workdir)
    if entry["source"] == "tiny":
        check_model_paths(entry["vocab_from"], models[entry["vocab_from"]], workdir)
    named = [*exp["evaluation"]["datasets"], *([exp["train"]["dataset"]] if exp["train"].get("dataset") else [])]
    for dataset in dict.fromkeys(named):
        if dataset in datasets:  # an unknown name is check_settings' to report, naming its key
            check_dataset(dataset, datasets[dataset], workdir)
    shape = model_shape(exp["model"], entry, workdir)
    check_settings(name, exp, config, shape)
    if exp["track"] in RETRIEVAL_TRACKS:
        exp["_corpus_of"] = shared_corpora(exp, datasets)
    exp["_depth"], exp["_width"] = shape.layers, shape.dim


def check_settings(name: str, exp: dict, config: dict, shape: ModelShape) -> None:
    """The experiment's settings against its model's ``shape`` and the datasets it names."""
    where = f"experiments.{name}"
    datasets = config["datasets"]
    for k in exp["grid"]["layers"]:
        if k > shape.layers:
            raise ConfigError(
                f"config key {where}.grid.layers: layer {k} is beyond model '{exp['model']}', "
                f"which has {shape.layers} layers"
            )
    for d in exp["grid"]["dims"]:
        if d > shape.dim:
            raise ConfigError(
                f"config key {where}.grid.dims: dim {d} is larger than model '{exp['model']}''s "
                f"width {shape.dim}"
            )
    _check_trained_dims(where, exp, shape)
    trained = [m for m in exp["methods"] if m in TRAINED_METHODS]
    check_devices(where, exp["train"])
    if trained:
        train_ds = exp["train"].get("dataset")
        if train_ds is None:
            raise ConfigError(f"config key {where}.train.dataset: methods {trained} need a training dataset")
        if train_ds not in datasets:
            raise unknown_name("dataset", train_ds, datasets, f"{where}.train.dataset")
        kinds = ("retrieval",) if exp["track"] in GROUP_TRAINED_TRACKS else TRAINING_KINDS
        if datasets[train_ds]["kind"] not in kinds:
            raise ConfigError(
                f"config key {where}.train.dataset: dataset '{train_ds}' is of kind "
                f"'{datasets[train_ds]['kind']}', training needs one of {list(kinds)}"
            )
    if "starbucks-2dmse" in exp["methods"] and exp["track"] not in GROUP_TRAINED_TRACKS:
        raise ConfigError(f"config key {where}.methods: starbucks-2dmse is trained on retrieval groups: tracks "
                          f"{list(GROUP_TRAINED_TRACKS)} only")
    _check_objective(where, exp, datasets, shape, bool(trained))
    stray = [m for m in exp["train"]["precision_by_method"] if m not in exp["methods"]]
    if stray:
        raise ConfigError(f"config key {where}.train.precision_by_method: {stray} are not among the experiment's "
                          f"methods {exp['methods']}")
    for ds in exp["evaluation"]["datasets"]:
        if ds not in datasets:
            raise unknown_name("dataset", ds, datasets, f"{where}.evaluation.datasets")
        needed = "retrieval" if exp["track"] in RETRIEVAL_TRACKS else "sts"
        if datasets[ds]["kind"] != needed:
            raise ConfigError(
                f"config key {where}.evaluation.datasets: dataset '{ds}' is of kind "
                f"'{datasets[ds]['kind']}', {exp['track']} evaluation needs kind '{needed}'"
            )
    if exp["evaluation"]["main_metric"] not in exp["evaluation"]["metrics"]:
        raise ConfigError(
            f"config key {where}.evaluation.main_metric: '{exp['evaluation']['main_metric']}' "
            f"is not among evaluation.metrics {exp['evaluation']['metrics']}"
        )
    if exp["track"] in RETRIEVAL_TRACKS:
        _check_retrieval(where, exp, config, shape)
    _check_export(where, exp, shape)


#: methods trained at several dims of one model (the Matryoshka wrappers)
MULTI_DIM_METHODS = ("matryoshka", "2dmse")


def _check_trained_dims(where: str, exp: dict, shape: ModelShape) -> None:
    """Dims a method trains at (grid.dims and retrieval.target_dims are evaluation cuts elsewhere, where
    any 1..width works, in any order: the losses and views sort them). With objective mnrl the STS and
    Home Depot tracks' matryoshka and 2dmse train at grid.dims, which must hold the full width: the
    wrappers train the full embedding only there (sentence-transformers warns the full dimension
    "won't be trained" otherwise), while the 2dmse teacher and every report compare with it. The
    retrieval track's target_dims are trained besides the full width, so the width is not one of them."""
    multi_dim = [m for m in exp["methods"] if m in MULTI_DIM_METHODS]
    if not multi_dim:
        return
    if exp["track"] in PAIR_TRAINED_TRACKS and exp["objective"] == "mnrl" and shape.dim not in exp["grid"]["dims"]:
        raise ConfigError(f"config key {where}.grid.dims: methods {multi_dim} train at the grid's dims, and "
                          f"{exp['grid']['dims']} lacks model '{exp['model']}''s width {shape.dim}, so its full "
                          f"embedding would not be trained; add {shape.dim}")
    if exp["track"] in GROUP_TRAINED_TRACKS and shape.dim in exp["retrieval"]["target_dims"]:
        raise ConfigError(f"config key {where}.retrieval.target_dims: methods {multi_dim} train the full width "
                          f"{shape.dim} always, and target_dims are the sub-model dims besides it: {shape.dim} there "
                          "would count its loss twice; remove it")


def _check_export(where: str, exp: dict, shape: ModelShape) -> None:
    """Exported cells within the model's depth and width, of variants the experiment has."""
    export = exp["export"]
    for layer, dim in export["cells"]:
        if layer > shape.layers:
            raise ConfigError(f"config key {where}.export.cells: [{layer}, {dim}] keeps {layer} layers; model "
                              f"'{exp['model']}' has {shape.layers}")
        if not 1 <= dim <= shape.dim:
            raise ConfigError(f"config key {where}.export.cells: [{layer}, {dim}] truncates to {dim} dims; model "
                              f"'{exp['model']}' has width {shape.dim} (dims 1..{shape.dim})")
    if export["cells"]:
        missing = [v for v in export["variants"] if v not in exp["methods"]]
        if missing:
            raise ConfigError(f"config key {where}.export.variants: {missing} are not among the experiment's "
                              f"methods {exp['methods']}")


def _check_retrieval(where: str, exp: dict, config: dict, shape: ModelShape) -> None:
    """Retrieval metrics, target dims within the width, the ablation flags' dependencies."""
    evaluation, settings = exp["evaluation"], exp["retrieval"]
    wrong = [m for m in evaluation["metrics"] if m not in RETRIEVAL_METRICS]
    if wrong:
        raise ConfigError(f"config key {where}.evaluation.metrics: {wrong} are not retrieval metrics; "
                          f"use some of {list(RETRIEVAL_METRICS)}")
    check_search_depth(where, "retrieval.top_k", settings["top_k"], evaluation["metrics"])
    for d in settings["target_dims"]:
        if d > shape.dim:
            raise ConfigError(f"config key {where}.retrieval.target_dims: dim {d} is larger than model "
                              f"'{exp['model']}''s width {shape.dim}")
    if "starbucks-2dmse" in exp["methods"]:
        _check_starbucks(where, exp, settings, shape)
    if settings["compare_to_last_layer"] and not settings["score_align"]:
        raise ConfigError(f"config key {where}.retrieval.compare_to_last_layer: needs retrieval.score_align "
                          "(it chooses the score-alignment target)")
    for cell in settings["separate_cells"] or []:
        if cell[0] not in exp["grid"]["layers"] or cell[1] not in exp["grid"]["dims"]:
            raise ConfigError(f"config key {where}.retrieval.separate_cells: {cell} is not a (layer, dim) "
                              f"of the grid {exp['grid']['layers']} x {exp['grid']['dims']}")
    for ds in settings["average_over"] or []:
        if ds not in evaluation["datasets"]:
            raise ConfigError(f"config key {where}.retrieval.average_over: '{ds}' is not an evaluation dataset")
    negatives = settings["negatives"]
    for key in ("model", "cross_encoder"):
        if negatives[key] is not None and negatives[key] not in config["models"]:
            raise unknown_name("model", negatives[key], config["models"], f"{where}.retrieval.negatives.{key}")
    if exp["track"] in GROUP_TRAINED_TRACKS and negatives["miner"] == "dense" and negatives["model"] is None:
        raise ConfigError(f"config key {where}.retrieval.negatives.model: the dense miner needs a model")
    train_ds = exp["train"].get("dataset")
    if exp["track"] in GROUP_TRAINED_TRACKS and negatives["miner"] == "dataset" and train_ds in config["datasets"] \
            and config["datasets"][train_ds].get("format") != "tevatron":
        raise ConfigError(f"config key {where}.retrieval.negatives.miner: 'dataset' takes the training dataset's "
                          f"own negatives, and dataset '{train_ds}' has none (only format tevatron carries them)")
    reference = exp["reference"]["dataset"]
    if reference is not None and reference not in evaluation["datasets"] + [settings["average_name"]]:
        raise ConfigError(f"config key {where}.reference.dataset: '{reference}' is not an evaluation dataset")


def _check_starbucks(where: str, exp: dict, settings: dict, shape: ModelShape) -> None:
    """Starbucks' layer list ends at the full model (its "full layer" is the list's last) and its
    dims fit the width."""
    layers = sorted(settings["starbucks_layers"])
    if len(layers) < 2 or layers[-1] != shape.layers:
        raise ConfigError(f"config key {where}.retrieval.starbucks_layers: {settings['starbucks_layers']} must hold "
                          f"at least one sub-layer and end at model '{exp['model']}''s last layer {shape.layers}")
    wide = [d for d in settings["starbucks_dims"] if d > shape.dim]
    if wide:
        raise ConfigError(f"config key {where}.retrieval.starbucks_dims: {wide} larger than model '{exp['model']}''s "
                          f"width {shape.dim}")


#: the ``semantics`` values each objective knows
OBJECTIVE_SEMANTICS = {"mnrl": ("seed", "st6"), "angle": ("seed", "corrected")}


def _check_objective(where: str, exp: dict, datasets: dict, shape: ModelShape, trained: bool) -> None:
    objective, semantics = exp["objective"], exp["semantics"]
    if semantics not in OBJECTIVE_SEMANTICS[objective]:
        raise ConfigError(
            f"config key {where}.semantics: '{semantics}' is not a semantics of objective '{objective}'; "
            f"it has {list(OBJECTIVE_SEMANTICS[objective])}"
        )
    if objective != "angle" or not trained:
        return
    kind = datasets[exp["train"]["dataset"]]["kind"]
    if kind != "triplets":
        raise ConfigError(
            f"config key {where}.train.dataset: objective 'angle' trains on (text, positive, negative) "
            f"triplets; dataset '{exp['train']['dataset']}' is of kind '{kind}'"
        )
    size = exp["train"]["ese"]["compression_size"]
    if size > shape.dim:
        raise ConfigError(
            f"config key {where}.train.ese.compression_size: {size} is larger than model "
            f"'{exp['model']}''s width {shape.dim}"
        )

