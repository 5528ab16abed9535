"""The config schema: YAML reading (file and line of a problem), validation filling defaults, and the
token lengths checked against each model's position limit. The checks of single entries that every
track's ``check_experiment`` uses are in :mod:`trimbench.checks`.

Everything here runs while Snakemake parses the workflow, so it stays light: no torch, no
transformers. Every problem is raised as one :class:`ConfigError` naming the key or file.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
from pathlib import Path

import jsonschema
import yaml

from trimbench.data import contracts
from trimbench.errors import ConfigError
from trimbench.models import config_facts, position_limit
from trimbench.tracks import TRACKS, track_of

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"


def _whole_number(checker, instance) -> bool:
    """JSON Schema's ``integer`` with no decimal point: the standard accepts ``16.0`` (a float whose
    fraction is zero), which then reaches torch, numpy and range() as a float and fails inside the
    job, after Snakemake has deleted the finished outputs whose params it changed."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _validator_filling_defaults():
    base = jsonschema.Draft202012Validator
    validate_properties = base.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(base, {"properties": set_defaults},
                                        type_checker=base.TYPE_CHECKER.redefine("integer", _whole_number))


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
        raise ConfigError(f"{source} is empty (no keys, only comments or blank lines): a config gives datasets, "
                          "models and experiments (configs/ holds the presets)")
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
    for index, path in enumerate(files):
        read = read_config_file(path)
        if read.get("overlay_on"):
            _check_overlay_base(path, read["overlay_on"], files[:index])
        config = merge_configs(config, read)
    overrides = dict(overrides or {})
    _reject_empty_overrides(config, overrides, [])
    return merge_configs(config, overrides)


def _check_overlay_base(path: str, base: str, before: list[str]) -> None:
    """An overlay (a file naming its base preset in ``overlay_on``) runs after its base: alone it is
    no complete config, and the schema would only say which keys it lacks."""
    base_path = (Path(path).parent / base).resolve()
    if not any(Path(earlier).resolve() == base_path for earlier in before):
        shown = Path(os.path.relpath(base_path)) if base_path.is_relative_to(Path.cwd()) else base_path
        raise ConfigError(f"config file '{path}' is an overlay on '{shown}' (its overlay_on): it changes a few keys "
                          f"of that preset and cannot run alone; give the preset first: --configfile {shown} {path}")


def _reject_empty_overrides(config: dict, overrides: dict, path: list) -> None:
    """An empty mapping in ``--config`` (``experiments={}``) merges into the files' mapping key by key,
    as Snakemake merges it: it would change nothing, silently, where the user meant to empty it."""
    for key, value in overrides.items():
        here = config.get(key) if isinstance(config, dict) else None
        if isinstance(value, dict) and not value and here:
            raise ConfigError(f"--config {_key_path([*path, key])}={{}}: an empty mapping cannot empty or replace "
                              f"'{_key_path([*path, key])}' (--config merges mappings key by key, so it would change "
                              "nothing); to run some experiments only, give --config only=NAME,NAME")
        if isinstance(value, dict) and isinstance(here, dict):
            _reject_empty_overrides(here, value, [*path, key])


def load_schema() -> dict:
    """The whole config schema: schemas/config.schema.yaml with each track's own definitions (its
    package's, :attr:`trimbench.face.Track.experiment_schema`) and ``experiments`` routed on ``track``
    to them, assembled from the table of tracks."""
    if "schema" not in _SCHEMA_CACHE:
        _SCHEMA_CACHE["schema"] = assemble_schema(read_yaml(SCHEMA_PATH.read_text(), str(SCHEMA_PATH)), TRACKS)
    return _SCHEMA_CACHE["schema"]


def track_shapes(tracks: dict) -> dict:
    """Each experiment shape (an ExperimentSchema) -> the names of the tracks whose experiments take
    it, in the table's order (the dense tracks share one)."""
    shapes: dict = {}
    for name, track in tracks.items():
        shapes.setdefault(track.experiment_schema, []).append(name)
    return shapes


def _one_of(names: list[str]) -> dict:
    return {"const": names[0]} if len(names) == 1 else {"enum": list(names)}


def assemble_schema(schema: dict, tracks: dict) -> dict:
    """``schema`` (the shared file) with the tracks' definitions added to its ``$defs`` and
    ``experiments.<name>`` routed on ``track``: one if/then branch per shape, the first shape of the
    table the last ``else``, whose ``track`` lists every track (an unknown one is refused naming them).
    A definition named twice, or a shape that is not in its file, is an error naming both places."""
    schema = copy.deepcopy(schema)
    defined_in = dict.fromkeys(schema["$defs"], str(SCHEMA_PATH))
    shapes = track_shapes(tracks)
    for shape, names in shapes.items():
        own = read_yaml(shape.file.read_text(encoding="utf-8"), str(shape.file)) or {}
        definitions = own.get("$defs") or {}
        if shape.definition not in definitions:
            raise ValueError(f"track {', '.join(names)}: its experiment_schema names definition '{shape.definition}', "
                             f"which {shape.file} does not define under $defs")
        for key, definition in definitions.items():
            if key in defined_in:
                raise ValueError(f"schema definition '{key}' is defined twice: in {defined_in[key]} and {shape.file}; "
                                 "rename one")
            defined_in[key] = str(shape.file)
            schema["$defs"][key] = definition
        schema["$defs"][shape.definition].setdefault("properties", {}).setdefault("track", {}).update(_one_of(names))
    (first, *others) = shapes
    schema["$defs"][first.definition]["properties"]["track"]["enum"] = list(tracks)
    routing = {"$ref": f"#/$defs/{first.definition}"}
    for shape in reversed(others):
        names = shapes[shape]
        routing = {"if": {"required": ["track"], "properties": {"track": _one_of(names)}},
                   "then": {"$ref": f"#/$defs/{shape.definition}"}, "else": routing}
    schema["properties"]["experiments"]["additionalProperties"] = routing
    return schema


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
    if error.validator == "type" and _written_as_float(error.instance) and "integer" in str(error.validator_value):
        return (f"config key {where}: {error.instance!r} is written with a decimal point (or an exponent) and this "
                f"key takes a whole number: write {int(error.instance)}")
    if (error.validator == "type" and _reads_as_number(error.instance) and "integer" in str(error.validator_value)
            and float(error.instance).is_integer()):
        return (f"config key {where}: {error.instance!r} is text to YAML (its exponent has no sign) and this key "
                f"takes a whole number: write {int(float(error.instance))}")
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


def _written_as_float(value) -> bool:
    """16.0 or 1.0e5: a whole number YAML reads as a float."""
    return isinstance(value, float) and value.is_integer()


def _with_decimal_point(text: str) -> str:
    """'5e-5' -> '5.0e-5': YAML 1.1 (PyYAML) reads a float only with a dot in its mantissa."""
    mantissa, _, exponent = text.lower().partition("e")
    return (mantissa if "." in mantissa else f"{mantissa}.0") + (f"e{exponent}" if exponent else "")


def reject_non_finite(value, path: tuple = ()) -> None:
    """No NaN or infinite number anywhere in the config (YAML reads ``.nan`` and ``.inf`` as numbers).
    The schema cannot refuse them: every comparison with NaN is false, so ``lr: .nan`` passes
    ``exclusiveMinimum: 0``, changes the training's params and only the job rejects it (torch's
    "Invalid learning rate: nan"), after Snakemake has deleted the finished models."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"config key {_key_path(path)}: {value} is not a finite number (YAML reads .nan and .inf "
                          "as numbers); give a finite value")
    if isinstance(value, dict):
        for key, item in value.items():
            reject_non_finite(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            reject_non_finite(item, (*path, index))


#: config keys given new names (a path; "*" for any name) -> (the new name, why): an old config gets
#: one error naming the new key rather than "unknown key"
RENAMED_KEYS = {
    ("experiments", "*", "runs"): ("variants", "a SPLADE experiment's trained models are its variants, "
                                               "as in every track; runs are the TREC runs they rank"),
    ("experiments", "*", "ensembles", "*", "runs"): ("variants", "an ensemble fuses the runs of these variants"),
    ("smoke_settings", "max_runs"): ("max_variants", "SPLADE's trained models are its variants"),
}


def _paths_of(value, pattern: tuple, path: tuple = ()):
    """The paths in ``value`` that ``pattern`` (keys, "*" for any) reaches."""
    if not pattern:
        yield path
        return
    if not isinstance(value, dict):
        return
    head, rest = pattern[0], pattern[1:]
    for key in (value if head == "*" else [head] if head in value else []):
        yield from _paths_of(value[key], rest, (*path, key))


def reject_renamed_keys(config: dict) -> None:
    """A key that has a new name (RENAMED_KEYS): one error naming the key to write instead."""
    for pattern, (new, why) in RENAMED_KEYS.items():
        for path in _paths_of(config, pattern):
            raise ConfigError(f"config key {_key_path(path)}: renamed to {_key_path((*path[:-1], new))} ({why}); "
                              f"write '{new}:'")


def validate_schema(config: dict) -> dict:
    """Return a copy of ``config`` with defaults filled; raise ConfigError on the first problem."""
    reject_non_finite(config)
    reject_renamed_keys(config)
    config = copy.deepcopy(config)
    validator = _validator_filling_defaults()(load_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        # The deepest error is the most specific one; if/then failures report on the parent.
        error = max(errors, key=lambda e: len(e.absolute_path))
        raise ConfigError(_describe(error))
    return config


#: the keys of an experiment (at any depth) that give tokens per text
LENGTH_KEYS = ("max_seq_length", "q_max_length", "p_max_length")


def model_position_limit(name: str, entry: dict, workdir: Path) -> tuple[int, str] | None:
    """The most tokens per text model ``name`` takes, and where that was read: its config.json
    (local, packaged, cached, tiny), else its hub contract (reference/hub); None where neither says."""
    read = config_facts(entry, workdir)
    if read is None and entry["source"] == "hub":
        contract = contracts.load(entry["id"])
        if contract is not None and contract.describes(entry.get("revision")):
            read = contract.raw["config"], contract.where
    limit = position_limit(read[0]) if read else None
    return (limit[0], f"{limit[1]} in {read[1]}") if limit else None


def check_lengths(config: dict, workdir: Path) -> None:
    """Every token length an experiment gives (training, evaluation, retrieval's query and passage
    lengths, SPLADE's) within the position limit of each model it encodes with: a longer text
    fails inside the model (an index out of range) or silently never occurs on short test texts."""
    limits = {}
    for name, exp in config["experiments"].items():
        for model in track_of(exp).models(exp):
            if model in config["models"] and model not in limits:
                limits[model] = model_position_limit(model, config["models"][model], workdir)
        for path, value in _lengths(exp, (f"experiments.{name}",)):
            for model in track_of(exp).models(exp):
                limit = limits.get(model)
                if limit and value > limit[0]:
                    raise ConfigError(f"config key {_key_path(path)}: {value} tokens per text is more than model "
                                      f"'{model}' takes ({limit[0]}: {limit[1]}); give at most {limit[0]}")


def _lengths(value, path: tuple):
    if isinstance(value, dict):
        for key, item in value.items():
            # a float too: 1.0e5 must not slip past the limit because it is not an int
            if key in LENGTH_KEYS and isinstance(item, (int, float)) and not isinstance(item, bool):
                yield (*path, key), item
            else:
                yield from _lengths(item, (*path, key))
