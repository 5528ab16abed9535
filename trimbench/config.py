"""Configuration: schema validation with defaults, registry and grid checks, experiment expansion.

Everything here runs while Snakemake parses the workflow, so it stays light: no torch, no
transformers. Every problem is raised as one :class:`ConfigError` naming the key or file.
"""

from __future__ import annotations

import copy
import difflib
import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import yaml

from trimbench import contracts, smoke
from trimbench.models import ModelShape, declared_shape

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "config.schema.yaml"

TRAINED_METHODS = ("full", "separate", "matryoshka", "2dmse", "starbucks-2dmse")
#: the published names of our methods, as the 2DMSE-Reproduce seed's tables and
#: reference/2dmse_sts.csv name them, and Starbucks' (reference/2dmse_retrieval.csv) its "BERT-2DMSE":
#: a reference row joins the one method whose label is its ``method``
SEED_METHOD_LABELS = {"full": "BERT", "separate": "BERT-S", "matryoshka": "MSE", "2dmse": "2DMSE",
                      "starbucks-2dmse": "BERT-2DMSE"}
TRAINING_KINDS = ("pairs", "triplets")
#: x axes of the cross-track Pareto figures (computed in trimbench.scoreboard.COSTS)
PARETO_COSTS = ("layers_x_dim", "bytes_per_doc")
#: tracks scored by dense retrieval (trimbench/search.py) on datasets of kind retrieval
RETRIEVAL_TRACKS = ("2dmse-retrieval", "homedepot")
#: tracks trained on (query, positive, mined negatives) groups (trimbench/retrieval.py)
GROUP_TRAINED_TRACKS = ("2dmse-retrieval",)
RETRIEVAL_METRICS = ("mrr@10", "ndcg@10", "recall@10", "recall@100", "recall@1000")
#: tracks whose cells have no (layer, dim) cost: left out of the dense Pareto figures
SPARSE_TRACKS = ("splade",)
#: tracks whose experiments have their own shape (runs, not variants) and the module whose
#: ``check_experiment`` checks them; imported when used (those modules import this one)
OWN_SHAPE_TRACKS = {"electra": "trimbench.truncation", "splade": "trimbench.splade_config"}


#: settings that only one objective reads: left out of the other's params, so that adding an
#: objective's settings (with defaults) does not re-trigger the other's trained models
OBJECTIVE_ONLY_SETTINGS = {
    "mnrl": ("scale", "n_dims_per_step", "kl_temperature", "kl_div_weight"),
    "angle": ("angle", "ese"),
}


def variant_train_settings(exp: dict, method: str) -> dict:
    """The ``train`` settings one variant's training uses: the other objective's dropped, and
    ``precision_by_method`` resolved into ``precision`` (so a method's params change only when its
    own precision does)."""
    train = exp["train"]
    unused = {key for objective, keys in OBJECTIVE_ONLY_SETTINGS.items() if objective != exp["objective"]
              for key in keys} | {"precision_by_method"}
    settings = {key: value for key, value in train.items() if key not in unused}
    if "precision" in settings:
        settings["precision"] = train.get("precision_by_method", {}).get(method, settings["precision"])
    return settings


#: retrieval settings that only one method reads: left out of the other methods' params likewise
METHOD_ONLY_RETRIEVAL_SETTINGS = {
    "starbucks-2dmse": ("starbucks_layers", "starbucks_dims", "starbucks_kl_weight"),
}


def variant_retrieval_settings(exp: dict, method: str) -> dict:
    """The ``retrieval`` settings one variant's training uses: other methods' own settings dropped."""
    unused = {key for other, keys in METHOD_ONLY_RETRIEVAL_SETTINGS.items() if other != method for key in keys}
    return {key: value for key, value in exp["retrieval"].items() if key not in unused}


#: dataset keys only scoring reads: left out of the data rules' params, so that changing one
#: re-scores runs without preparing the data again
SCORING_DATASET_KEYS = ("relevance_level",)


def preparation_entry(entry: dict) -> dict:
    """A dataset's entry as the data rules see it: without :data:`SCORING_DATASET_KEYS`."""
    return {key: value for key, value in entry.items() if key not in SCORING_DATASET_KEYS}


#: settings that change what a job logs, never what it makes: kept out of the params Snakemake
#: compares to decide a re-run, and handed to the job beside them (:func:`untracked`)
LOGGING_ONLY_SETTINGS = ("logging_steps",)


def untracked(**sections: dict) -> SimpleNamespace:
    """The rule param ``untracked``, which Snakemake's params trigger does not compare:
    ``{param: {setting: value}}`` for the :data:`LOGGING_ONLY_SETTINGS` of each named param's
    settings; :func:`trimbench.rules.job_from_snakemake` merges them back into those params.

    The trigger compares params of plain Python types only (snakemake/persistence/__init__.py,
    ``_serialize_param_builtin``: any other value is UNREPRESENTABLE and skipped); a SimpleNamespace
    pickles into the job's script without trimbench (a ``conda:`` env lacks it).
    """
    return SimpleNamespace(**{name: {key: settings[key] for key in LOGGING_ONLY_SETTINGS if key in settings}
                              for name, settings in sections.items()})


def tracked(settings):
    """``settings`` without the :data:`LOGGING_ONLY_SETTINGS`, at any depth (a whole experiment's
    config as a param too); a job that needs them gets them through :func:`untracked`."""
    if isinstance(settings, dict):
        return {key: tracked(value) for key, value in settings.items() if key not in LOGGING_ONLY_SETTINGS}
    if isinstance(settings, list):
        return [tracked(item) for item in settings]
    return settings


class ConfigError(ValueError):
    """A problem with the configuration, the registries or a file they name."""


def _validator_filling_defaults():
    base = jsonschema.Draft202012Validator
    validate_properties = base.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(base, {"properties": set_defaults})


_SCHEMA_CACHE: dict = {}
# libyaml's parser when PyYAML was built with it: ten times faster on the schema, which every
# snakemake invocation (and every cluster job's) reads while parsing the workflow.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(text: str, source: str = "YAML"):
    """Plain data from YAML text (a safe loader); a key given twice in one mapping is a
    :class:`ConfigError` naming it and both lines (PyYAML would silently keep the last one)."""
    loader = _YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _reject_duplicate_keys(node, [], source, set())
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _reject_duplicate_keys(node, path: list, source: str, seen_nodes: set) -> None:
    if id(node) in seen_nodes:  # an alias of a node checked already
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines = {}
        for key_node, value_node in node.value:
            key = (key_node.tag, key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key[1] != "<<":
                line = key_node.start_mark.line + 1
                if key in lines:
                    raise ConfigError(
                        f"{source}: key '{_key_path([*path, key[1]])}' is given twice, on lines {lines[key]} "
                        f"and {line} (YAML would silently keep only the last one); remove or rename one"
                    )
                lines[key] = line
            _reject_duplicate_keys(value_node, [*path, key[1] if key else "?"], source, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _reject_duplicate_keys(item, [*path, index], source, seen_nodes)


def read_config_file(path: str | Path) -> dict:
    """A config file as a dict; every problem a :class:`ConfigError` naming the file (and the line)."""
    source = f"config file '{path}'"
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ConfigError(f"{source} cannot be read: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ConfigError(f"{source}, line {line}: not UTF-8 text (byte 0x{data[error.start]:02x}); "
                          "save it as UTF-8") from None
    try:
        config = read_yaml(text, source)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        line_text = text.splitlines()[mark.line] if mark and mark.line < len(text.splitlines()) else ""
        hint = " (a tab: YAML indents with spaces, never tabs)" if "\t" in line_text[:mark.column + 1] else ""
        what = "; ".join(part for part in (error.context, error.problem) if part)
        raise ConfigError(f"{source}{where}: not valid YAML: {what}{hint}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: not valid YAML: {error}") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys (datasets, models, experiments, ...), "
                          f"not a {type(config).__name__}")
    return config


def merge_configs(base: dict, update: dict) -> dict:
    """``update`` merged into a copy of ``base`` key by key, nested mappings too: how Snakemake
    combines several ``--configfile``s (``snakemake.utils.update_config``)."""
    merged = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_configs(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


#: the embedded default: the config of a run given no ``--configfile``
DEFAULT_CONFIG_FILE = "config.yaml"


def load_config(files, overrides=None) -> dict:
    """The raw config of a run: the ``--configfile`` files merged in order, or config.yaml (the
    embedded default) when none is given, then the ``--config`` key=value overrides.

    A preset therefore runs alone; combining configs is asked for by listing them all.
    """
    files = [str(f) for f in files] or [DEFAULT_CONFIG_FILE]
    if files == [DEFAULT_CONFIG_FILE] and not Path(DEFAULT_CONFIG_FILE).is_file():
        raise ConfigError(f"no config: '{DEFAULT_CONFIG_FILE}' is not in the working directory {Path.cwd()}; "
                          "run from the checkout or give one with --configfile")
    config: dict = {}
    for path in files:
        config = merge_configs(config, read_config_file(path))
    return merge_configs(config, dict(overrides or {}))


def load_schema() -> dict:
    if "schema" not in _SCHEMA_CACHE:
        _SCHEMA_CACHE["schema"] = read_yaml(SCHEMA_PATH.read_text(), str(SCHEMA_PATH))
    return _SCHEMA_CACHE["schema"]


def _key_path(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _describe(error: jsonschema.ValidationError) -> str:
    where = _key_path(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, allowed, n=1)
            hints.append(f"'{key}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        if allowed:
            return f"config key {where}: unknown key {', '.join(hints)}; allowed: {', '.join(allowed)}"
        return f"config key {where}: unknown key {', '.join(hints)}"
    if error.validator == "enum":
        return f"config key {where}: {error.instance!r} is not one of {error.validator_value}"
    if error.validator == "pattern" and error.validator_value == NAME_PATTERN:
        return (f"config key {where}: name {error.instance!r} is not allowed: names are letters, digits, '.', '_' "
                "and '-', starting with a letter or digit (they become folder names)")
    if error.validator == "not" and "enum" in error.validator_value:
        return (f"config key {where}: the name {error.instance!r} is reserved (results/{error.instance}/ holds "
                f"shared outputs; reserved: {', '.join(error.validator_value['enum'])}): choose another")
    if error.validator == "type" and _reads_as_number(error.instance) and "number" in str(error.validator_value):
        return (f"config key {where}: {error.message} (YAML reads {error.instance} as text: write it with a "
                f"decimal point, e.g. {_with_decimal_point(error.instance)})")
    return f"config key {where}: {error.message}"


#: the pattern the schema gives names (experiments, datasets, models)
NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"


def _reads_as_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return isinstance(value, str)


def _with_decimal_point(text: str) -> str:
    """'5e-5' -> '5.0e-5': YAML 1.1 (PyYAML) reads a float only with a dot in its mantissa."""
    mantissa, _, exponent = text.lower().partition("e")
    return (mantissa if "." in mantissa else f"{mantissa}.0") + (f"e{exponent}" if exponent else "")


def validate_schema(config: dict) -> dict:
    """Return a copy of ``config`` with defaults filled; raise ConfigError on the first problem."""
    config = copy.deepcopy(config)
    validator = _validator_filling_defaults()(load_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        # The deepest error is the most specific one; if/then failures report on the parent.
        error = max(errors, key=lambda e: len(e.absolute_path))
        raise ConfigError(_describe(error))
    return config


def _unknown(kind: str, name: str, known, where: str) -> ConfigError:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return ConfigError(
        f"config key {where}: unknown {kind} '{name}'{hint}; known {kind}s: {', '.join(sorted(known))}"
    )


@dataclass(frozen=True)
class Variant:
    """One model whose embeddings get evaluated: a method, possibly cut to ``cut_layers`` layers."""

    name: str
    method: str
    cut_layers: int | None
    eval_layers: tuple[int, ...]
    #: the variant whose trained model this one reuses (BERT-S at full depth is the full model)
    model_variant: str
    #: retrieval BERT-S only: the one dim the model is trained and scored at
    cut_dim: int | None = None

    @property
    def trained(self) -> bool:
        return self.method != "pretrained"


def variants(experiment: dict, depth: int) -> list[Variant]:
    """Expand an experiment's methods into the variants the workflow trains and evaluates."""
    layers = tuple(sorted(experiment["grid"]["layers"]))
    methods = experiment["methods"]
    out = []
    for method in methods:
        if method == "separate" and experiment["track"] in GROUP_TRAINED_TRACKS:
            out += _retrieval_separate_variants(experiment, depth)
        elif method == "separate":
            for k in layers:
                name = f"separate-L{k}"
                # The seed's BERT-S at full depth is the full model: reuse it rather than train twice.
                reuse_full = k == depth and "full" in methods
                out.append(Variant(name, method, k, (k,), "full" if reuse_full else name))
        else:
            out.append(Variant(method, method, None, layers, method))
    return out


def _retrieval_separate_variants(experiment: dict, depth: int) -> list[Variant]:
    """Retrieval BERT-S: one model per (layer, dim) cell, cut to the layer, trained at the dim."""
    grid = experiment["grid"]
    cells = experiment["retrieval"]["separate_cells"] or [[k, d] for k in grid["layers"] for d in grid["dims"]]
    out = []
    for k, d in sorted(map(tuple, cells)):
        name = f"separate-L{k}-d{d}"
        reuse_full = k == depth and d == experiment.get("_width") and "full" in experiment["methods"]
        out.append(Variant(name, "separate", k, (k,), "full" if reuse_full else name, d))
    return out


def resolve_path(path: str, workdir: Path) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else (workdir / p)


def _check_dataset(name: str, entry: dict, workdir: Path) -> None:
    where = f"datasets.{name}"
    if entry["source"] == "local":
        folder = resolve_path(entry["path"], workdir)
        if not folder.is_dir():
            raise ConfigError(f"config key {where}.path: local dataset folder '{entry['path']}' does not exist")
    values = entry.get("label_values")
    if values and entry["kind"] != "pair-class":
        raise ConfigError(f"config key {where}.label_values: maps class labels; dataset '{name}' is of kind "
                          f"'{entry['kind']}'")
    outside = sorted({label for label in (values or {}).values() if label >= entry["num_labels"]})
    if outside:
        raise ConfigError(f"config key {where}.label_values: labels {outside} are outside 0..{entry['num_labels'] - 1} "
                          f"(datasets.{name}.num_labels is {entry['num_labels']})")
    # Files by URL are fetched by prepare_data; a local path given instead must exist now.
    files_key = {"url": "urls", "word_similarity": "files"}.get(entry["source"])
    files = entry.get(files_key) or {} if files_key else {}
    for key, location in files.items():
        if not location.startswith(("http://", "https://")) and not resolve_path(location, workdir).is_file():
            raise ConfigError(f"config key {where}.{files_key}.{key}: local file '{location}' does not exist")
    check_trec_files(name, entry, workdir)


def check_trec_files(name: str, entry: dict, workdir: Path) -> None:
    """A dataset's TREC topics / qrels file exists, or the dataset says where to download it."""
    for key in ("topics", "qrels"):
        if entry.get(key) and not entry.get(f"{key}_url") and not resolve_path(entry[key], workdir).is_file():
            raise ConfigError(f"config key datasets.{name}.{key}: file '{entry[key]}' does not exist "
                              f"(or give datasets.{name}.{key}_url to download it)")


def corpus_key(entry: dict) -> tuple | None:
    """What a dataset's corpus is read from, where it does not depend on the split (BEIR and
    Tevatron corpora: hub or local folder; in smoke mode the hub's stand-in, written from the
    contract with the entry's rows and seed); None where it does (builders)."""
    if entry.get("builder"):
        return None
    if entry["source"] == "hub":
        standin = (entry.get("standin_rows"), entry.get("seed")) if entry.get("standin") else None
        return ("hub", entry["id"], entry.get("revision"), entry.get("format") or "beir", entry.get("config"),
                entry.get("corpus_revision"), standin)
    if entry["source"] == "local":
        return ("local", entry["path"], entry.get("format") or "beir")
    return None


def shared_corpora(exp: dict, datasets: dict) -> dict[str, str]:
    """Each evaluation dataset -> the first one with the same corpus (itself where none): MS MARCO
    dev, DL19 and DL20 encode (or index) and search one corpus."""
    first: dict = {}
    out = {}
    for ds in exp["evaluation"]["datasets"]:
        key = corpus_key(datasets[ds])
        out[ds] = ds if key is None else first.setdefault(key, ds)
    return out


def _check_model_paths(name: str, entry: dict, workdir: Path) -> None:
    where = f"models.{name}"
    if entry["source"] == "local":
        folder = resolve_path(entry["path"], workdir)
        if not (folder / "config.json").is_file() and not (folder / "modules.json").is_file():
            raise ConfigError(
                f"config key {where}.path: '{entry['path']}' is not a model directory "
                "(no config.json or modules.json there)"
            )


#: the weight files transformers loads (a sharded checkpoint's index names its shards)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json")


def weights_problem(folder: Path) -> str | None:
    """Why a local model folder cannot be loaded, found without loading it: no weight file anywhere
    in it (a sentence-transformers folder may keep them in a module's subfolder), or a safetensors
    file shorter than its own header says (a copy cut short). None when it looks loadable."""
    found = [path for path in folder.rglob("*") if path.name in WEIGHT_FILES]
    if not found:
        return f"holds no weights (none of {', '.join(WEIGHT_FILES)})"
    for path in found:
        if path.suffix == ".safetensors":
            expected = _safetensors_size(path)
            if expected is None or expected != path.stat().st_size:
                return (f"has a damaged weight file '{path.relative_to(folder)}' ({path.stat().st_size} bytes; "
                        f"its header {'cannot be read' if expected is None else f'describes {expected}'})")
    return None


def _safetensors_size(path: Path) -> int | None:
    """The file size a safetensors header describes: 8 bytes of length, the JSON header, the tensors."""
    try:
        with path.open("rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
            if not 0 < length <= 100_000_000:
                return None
            header = json.loads(handle.read(length))
        ends = [tensor["data_offsets"][1] for key, tensor in header.items() if key != "__metadata__"]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return 8 + length + max(ends, default=0)


def model_shape(name: str, entry: dict, workdir: Path) -> ModelShape:
    try:
        shape = declared_shape(entry, workdir)
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise ConfigError(f"config key models.{name}: {exc}") from exc
    problem = weights_problem(resolve_path(entry["path"], workdir)) if entry["source"] == "local" else None
    if problem:
        raise ConfigError(f"config key models.{name}.path: model directory '{entry['path']}' {problem}")
    return shape


def _check_experiment(name: str, exp: dict, config: dict, shapes: dict[str, ModelShape]) -> None:
    where = f"experiments.{name}"
    datasets, models = config["datasets"], config["models"]
    if exp["model"] not in models:
        raise _unknown("model", exp["model"], models, f"{where}.model")
    shape = shapes[exp["model"]]
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
    trained = [m for m in exp["methods"] if m in TRAINED_METHODS]
    if trained:
        train_ds = exp["train"].get("dataset")
        if train_ds is None:
            raise ConfigError(f"config key {where}.train.dataset: methods {trained} need a training dataset")
        if train_ds not in datasets:
            raise _unknown("dataset", train_ds, datasets, f"{where}.train.dataset")
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
            raise _unknown("dataset", ds, datasets, f"{where}.evaluation.datasets")
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
            raise _unknown("model", negatives[key], config["models"], f"{where}.retrieval.negatives.{key}")
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


_BOOLEAN_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _coerce_switches(config: dict) -> dict:
    """``--config smoke=true`` arrives as the string 'true' from some Snakemake versions."""
    smoke_value = config.get("smoke")
    if isinstance(smoke_value, str) and smoke_value.lower() in _BOOLEAN_WORDS:
        config = {**config, "smoke": _BOOLEAN_WORDS[smoke_value.lower()]}
    # `--config only=a,b` arrives as one string.
    if isinstance(config.get("only"), str):
        config = {**config, "only": [name.strip() for name in config["only"].split(",") if name.strip()]}
    return config


def _select_experiments(config: dict) -> dict:
    """Keep only the experiments named in ``only`` (all when it is null).

    A run of several configs (or a preset with many experiments) can run some of them; the others'
    results on disk are untouched.
    """
    if config["only"] is None:
        return config
    for name in config["only"]:
        if name not in config["experiments"]:
            raise _unknown("experiment", name, config["experiments"], "only")
    return {**config, "experiments": {name: exp for name, exp in config["experiments"].items()
                                      if name in config["only"]}}


def used_splits(config: dict) -> dict[str, dict[str, str]]:
    """Dataset -> each of our split names the experiments read -> the config key that reads it
    (the splits the workflow's data rules make: rules/common.smk, truncation_common.smk)."""
    used: dict[str, dict[str, str]] = {}

    def use(dataset, split, key):
        used.setdefault(dataset, {}).setdefault(split, key)

    for name, exp in config["experiments"].items():
        where = f"experiments.{name}"
        if exp["track"] == "electra":
            for task in exp["tasks"]:
                for split in ("train", "validation", "test"):
                    use(task, split, f"{where}.tasks")
            if exp["domain_adaptation"]:
                for split in exp["domain_adaptation"]["splits"]:
                    use(exp["domain_adaptation"]["dataset"], split, f"{where}.domain_adaptation.splits")
            for dataset in (exp["word_similarity"] or {}).get("datasets", []):
                for split in ("train", "validation"):
                    use(dataset, split, f"{where}.word_similarity")
            continue
        for dataset in exp["evaluation"]["datasets"]:
            use(dataset, exp["evaluation"]["split"], f"{where}.evaluation.split")
        train = exp.get("train") or {}
        if train.get("dataset") and (exp["track"] == "splade" or set(exp["methods"]) & set(TRAINED_METHODS)):
            use(train["dataset"], train["split"], f"{where}.train.split")
    return used


def check_contracts(config: dict) -> None:
    """Hub datasets and models against their contracts (reference/hub): before smoke mode swaps
    the hub models for tiny ones, so that smoke mode fails where the cluster would."""
    try:
        for name, entry in config["models"].items():
            contracts.check_model(name, entry)
        splits = used_splits(config)
        for name, entry in config["datasets"].items():
            contracts.check_dataset(name, entry, splits.get(name, {}))
        for name, exp in config["experiments"].items():
            hard = exp["train"].get("hard_negatives") if exp["track"] == "splade" else None
            for key in ("negatives_file", "scores_file") if hard and hard["source"] == "hub" else ():
                contracts.check_files(f"experiments.{name}.train.hard_negatives.{key}", hard["id"],
                                      hard["revision"], hard[key])
    except contracts.Mismatch as mismatch:
        raise ConfigError(f"config key {mismatch.key}: {mismatch}") from None
    except contracts.ContractError as error:
        raise ConfigError(str(error)) from None


def prepare(config: dict, workdir: str | Path = ".") -> dict:
    """Validate ``config`` (as Snakemake loaded it) and return the complete, checked config.

    Smoke mode is applied after validation so that the smoke config is validated too.
    """
    workdir = Path(workdir)
    config = _select_experiments(validate_schema(_coerce_switches(config)))
    check_contracts(config)
    if config["smoke"]:
        config = validate_schema(smoke.apply(config))
    # Experiments of OWN_SHAPE_TRACKS have their own shapes and checks; the rest of this function
    # sees the other tracks' only.
    own_shape = {name: exp for name, exp in config["experiments"].items() if exp["track"] in OWN_SHAPE_TRACKS}
    config["experiments"] = {name: exp for name, exp in config["experiments"].items() if name not in own_shape}
    for name, entry in config["models"].items():
        if entry["source"] == "tiny" and entry["vocab_from"] not in config["models"]:
            raise _unknown("model", entry["vocab_from"], config["models"], f"models.{name}.vocab_from")
    models = config["models"]
    used_models = {exp["model"] for exp in config["experiments"].values()} & set(models)
    used_models |= {models[m]["vocab_from"] for m in used_models if models[m]["source"] == "tiny"}
    for name in sorted(used_models):
        _check_model_paths(name, config["models"][name], workdir)
    used_datasets = set()
    for exp in config["experiments"].values():
        used_datasets |= set(exp["evaluation"]["datasets"])
        if exp["train"].get("dataset"):
            used_datasets.add(exp["train"]["dataset"])
    for name in sorted(used_datasets & set(config["datasets"])):
        _check_dataset(name, config["datasets"][name], workdir)
    shapes = {}
    for name, exp in config["experiments"].items():
        if exp["model"] in config["models"] and exp["model"] not in shapes:
            shapes[exp["model"]] = model_shape(exp["model"], config["models"][exp["model"]], workdir)
        _check_experiment(name, exp, config, shapes)
        if exp["track"] in RETRIEVAL_TRACKS:
            exp["_corpus_of"] = shared_corpora(exp, config["datasets"])
        exp["_depth"] = shapes[exp["model"]].layers
        exp["_width"] = shapes[exp["model"]].dim
    for name, exp in own_shape.items():
        importlib.import_module(OWN_SHAPE_TRACKS[exp["track"]]).check_experiment(name, exp, config, workdir)
    config["experiments"].update(own_shape)
    return canonical(config)


def canonical(obj):
    """Dicts with sorted keys, recursively: Snakemake's params trigger compares params by their
    text, so the same settings written in another key order must not look like a change."""
    if isinstance(obj, dict):
        return {key: canonical(obj[key]) for key in sorted(obj)}
    if isinstance(obj, list):
        return [canonical(item) for item in obj]
    return obj


def load_file(path: str | Path, overrides: dict | None = None, workdir: str | Path = ".") -> dict:
    """Load a YAML config as ``snakemake --configfile`` would, then :func:`prepare` it."""
    return prepare(load_config([path], overrides), workdir)


def main(argv: list[str] | None = None) -> int:
    """``python -m trimbench.config [FILE ...]``: check config files as a run reads them (FILE as
    ``--configfile``; none: config.yaml), naming the file and line of a YAML problem. Snakemake
    reads ``--configfile`` files itself first, and reports a malformed one without file or line."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m trimbench.config", description=main.__doc__)
    parser.add_argument("files", nargs="*", help="config files, merged in order (default: config.yaml)")
    args = parser.parse_args(argv)
    try:
        config = prepare(load_config(args.files), Path.cwd())
    except ConfigError as error:
        print(f"Invalid configuration: {error}")
        return 1
    print(f"valid: experiments {', '.join(config['experiments'])}")
    return 0


if __name__ == "__main__":
    # The module's own copy, not __main__'s: the track modules raise trimbench.config.ConfigError.
    from trimbench.config import main as module_main

    raise SystemExit(module_main())
