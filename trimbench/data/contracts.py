"""Hub contracts: what a hub dataset or model really is, read from the hub at a pinned commit.

A contract (``reference/hub/<owner>--<name>.yaml``, format in ``reference/hub/README.md``) records
a hub repository's revision and, for a dataset, its configs, splits, row counts, feature names and
types (and, where ``datasets`` infers splits from file names or the revision holds a loading script,
its files); for a model, the ``config.json`` facts the checks use. Config validation checks a hub
entry against the contract of its ``id`` (:mod:`~trimbench.data.dataset_checks`,
:mod:`~trimbench.data.model_checks`, :mod:`~trimbench.data.column_checks`,
:mod:`~trimbench.data.file_checks`) and smoke mode builds every hub stand-in from it
(:mod:`trimbench.data.hub`), so a wrong ``columns``, ``split`` or ``config`` fails here as it would on
the hub. Files downloaded by URL (``source: url``,
``word_similarity``) have contracts too (``reference/files``, :func:`published_file`): each file's
URL, format, columns and rows, checked and stood in for the same way. Light: runs while Snakemake
parses the workflow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

CONTRACT_DIR = Path(__file__).resolve().parents[2] / "reference" / "hub"
#: contracts of files downloaded by URL, one per publishing repository (reference/hub/README.md)
FILES_CONTRACT_DIR = CONTRACT_DIR.parent / "files"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TEXT_DTYPES = ("string", "large_string")
NUMBER_DTYPES = ("bool", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
#: BeIR/<name> holds these files; BeIR/<name>-qrels one ``<split>.tsv`` per split (beir-cellar/beir layout)
BEIR_FILES = ("corpus.jsonl.gz", "queries.jsonl.gz")
#: the architecture facts a cost plan builds a model from (issue 31, trimbench.cost.architecture)
PLAN_ARCHITECTURE_KEYS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                          "vocab_size", "max_position_embeddings")
#: sizes a model contract's ``config`` may carry: positive integers (ELECTRA's embeddings have their own width)
ARCHITECTURE_KEYS = (*PLAN_ARCHITECTURE_KEYS, "embedding_size")
#: DistilBERT's own names of those facts; a contract records them under the common names instead
DISTILBERT_NAMES = {"n_layers": "num_hidden_layers", "dim": "hidden_size", "n_heads": "num_attention_heads",
                    "hidden_dim": "intermediate_size"}


class ContractError(ValueError):
    """A contract file that does not follow the format (reference/hub/README.md)."""


class Mismatch(ValueError):
    """A config entry that contradicts the contract of its hub repository; ``key`` is the config key."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def contract_path(repo_id: str) -> Path:
    return CONTRACT_DIR / f"{repo_id.replace('/', '--')}.yaml"


def dtype(spec) -> str:
    """A feature's type: a ``datasets`` Value dtype, ``class_label``, or a list of structs in arrow's
    notation (``list<struct<docid: string, ...>>``)."""
    if isinstance(spec, str):
        return spec
    if "list" in spec:
        return f"list<struct<{', '.join(f'{name}: {dtype(inner)}' for name, inner in spec['list'].items())}>>"
    return "class_label" if "class_label" in spec else spec["dtype"]


def fields(spec) -> dict | None:
    """The fields of a list-of-structs feature (``{list: {field: type, ...}}``); None for any other."""
    return spec["list"] if isinstance(spec, dict) and "list" in spec else None


def _known_type(spec) -> bool:
    if fields(spec) is not None:
        return isinstance(spec["list"], dict) and bool(spec["list"]) and all(map(_known_type, spec["list"].values()))
    return isinstance(spec, str | dict) and dtype(spec) in TEXT_DTYPES + NUMBER_DTYPES + ("class_label",)


def class_names(spec) -> list[str] | None:
    return spec["class_label"] if isinstance(spec, dict) and "class_label" in spec else None


def text_values(spec) -> list[str] | None:
    """The values a text feature takes, where the contract lists them (``{dtype: string, values: [...]}``)."""
    return list(spec["values"]) if isinstance(spec, dict) and "values" in spec else None


def value_range(spec) -> list[float] | None:
    return list(spec["range"]) if isinstance(spec, dict) and "range" in spec else None


def is_text(spec) -> bool:
    return dtype(spec) in TEXT_DTYPES


def describe_features(features: dict) -> str:
    return ", ".join(f"{name} ({dtype(spec)})" for name, spec in features.items())


@dataclass(frozen=True)
class Contract:
    id: str
    type: str
    #: the commit the facts were read at; None where no commit was found (see the contract's ``unknown``)
    revision: str | None
    path: Path
    raw: dict

    @property
    def where(self) -> str:
        return f"reference/{self.path.parent.name}/{self.path.name}"

    @property
    def export(self) -> dict | None:
        """The hub's parquet conversion of a script dataset (branch refs/convert/parquet)."""
        return self.raw.get("parquet_export")

    @property
    def pinned_revision(self) -> str | None:
        """The revision a preset loads: the parquet export where the revision holds a loading script."""
        if self.raw.get("script") and self.export:
            return self.export["revision"]
        return self.revision

    def describes(self, revision: str | None) -> bool:
        """Whether the contract's facts hold for ``revision`` (None: the hub's current main)."""
        return revision is None or revision == self.revision or self.is_export(revision)

    def is_export(self, revision: str | None) -> bool:
        return bool(self.export) and revision == self.export["revision"]

    def script(self, revision: str | None) -> str | None:
        return None if self.is_export(revision) else self.raw.get("script")

    def label(self, revision: str | None = None) -> str:
        return f"hub {self.type} {self.id} at {_shown(revision or self.revision)} ({self.where})"

    def configs(self, revision: str | None = None) -> dict[str, dict]:
        """Each config's features, splits and data files at ``revision``."""
        configs = self.raw.get("configs") or {}
        if not self.is_export(revision):
            return configs
        files = self.export["files"]
        return {name: {**spec, "files": files[name]} for name, spec in configs.items() if name in files}

    def lengths(self, config: str, split: str, column: str) -> dict | None:
        """The token lengths recorded for a text column of a config's split (``lengths:``, the cost
        plan's :mod:`trimbench.cost.lengths`): mean, p50, p90, p99, max, tokenizer, source; None
        where none are recorded."""
        return ((self.raw.get("lengths") or {}).get(config) or {}).get(split, {}).get(column)

    def files(self, revision: str | None = None) -> set[str]:
        """The data files the contract names at ``revision`` (its configs' and any it lists alone)."""
        named = {path for spec in self.configs(revision).values() for path in (spec.get("files") or {}).values()}
        return named | (set() if self.is_export(revision) else set(self.raw.get("files") or ()))


def _shown(revision: str | None) -> str:
    return revision[:7] if revision and _COMMIT.match(revision) else (revision or "main")


@dataclass(frozen=True)
class PublishedFile:
    """One file of a ``type: files`` contract: a file downloaded by URL, as its publisher serves it."""

    name: str
    #: url, format, header, index, quoting, member, columns, rows, blank_rows (reference/hub/README.md)
    spec: dict
    contract: Contract

    @property
    def columns(self) -> dict:
        return self.spec["columns"]

    @property
    def label(self) -> str:
        return f"file {self.name} of {self.contract.id} at {_shown(self.contract.revision)} ({self.contract.where})"


@cache
def load(repo_id: str) -> Contract | None:
    """The contract of a hub repository; None when the project records none."""
    path = contract_path(repo_id)
    return _read(path, repo_id) if path.is_file() else None


def _read(path: Path, repo_id: str) -> Contract:
    raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    _validate(raw, path, repo_id)
    return Contract(raw["id"], raw["type"], raw.get("revision"), path, raw)


@cache
def published_files() -> dict[str, PublishedFile]:
    """URL -> the file a ``type: files`` contract (reference/files) describes, its ``also_at`` URLs included."""
    index = {}
    for path in sorted(FILES_CONTRACT_DIR.glob("*.yaml")):
        contract = _read(path, path.stem.replace("--", "/", 1))
        for name, spec in contract.raw["files"].items():
            for url in [spec["url"], *spec.get("also_at", ())]:
                index[url] = PublishedFile(name, spec, contract)
    return index


def published_file(location: str) -> PublishedFile | None:
    """The contract's description of the file at a URL; None for a local path or a URL without one."""
    return published_files().get(location)


def _validate(raw, path: Path, repo_id: str) -> None:
    def fail(problem):
        raise ContractError(f"contract {path}: {problem} (format: reference/hub/README.md)")

    if not isinstance(raw, dict) or raw.get("id") != repo_id:
        fail(f"'id' must be '{repo_id}'")
    wanted = ("files",) if path.parent.name == FILES_CONTRACT_DIR.name else ("dataset", "model")
    if raw.get("type") not in wanted:
        fail(f"'type' must be {' or '.join(wanted)}")
    if raw.get("revision") is None:
        if not any("revision" in str(note) for note in raw.get("unknown") or ()):
            fail("'revision' may be null only where 'unknown' says why no commit was found")
    elif not _COMMIT.match(str(raw["revision"])):
        fail("'revision' must be a full 40-hex commit")
    if not raw.get("read_from"):
        fail("'read_from' must name where the facts come from")
    if raw["type"] == "model":
        if not isinstance(raw.get("config"), dict) or not isinstance(raw.get("mlm_head"), bool):
            fail("a model needs 'config' (config.json facts) and 'mlm_head' (true/false)")
        _validate_architecture(raw["config"], fail)
        return
    if raw["type"] == "files":
        _validate_files(raw, fail)
        return
    configs = raw.get("configs") or {}
    if not isinstance(configs, dict) or not (configs or raw.get("files")):
        fail("a dataset needs 'configs' (or, for one read as files only, 'files')")
    for name, spec in configs.items():
        if not isinstance(spec.get("features"), dict) or not isinstance(spec.get("splits"), dict):
            fail(f"config '{name}' needs 'features' and 'splits'")
        _validate_features(spec["features"], f"config '{name}'", fail)
        if spec.get("files") and set(spec["files"]) != set(spec["splits"]):
            fail(f"config '{name}': 'files' must name a file for each split")
        judged = spec.get("judged_queries")
        if judged is not None and not (isinstance(judged, dict) and set(judged) <= set(spec["splits"]) and all(
                isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in judged.values())):
            fail(f"config '{name}': 'judged_queries' maps some of its splits to a positive count of queries")
    _validate_lengths(raw.get("lengths"), configs, fail)
    export = raw.get("parquet_export")
    if export and not (export.get("revision") and isinstance(export.get("files"), dict)):
        fail("'parquet_export' needs 'revision' and 'files'")


def _validate_architecture(config: dict, fail) -> None:
    """The sizes a cost plan reads: positive integers, the heads splitting the width evenly (an
    attention head's width is hidden_size / num_attention_heads)."""
    for own, common in DISTILBERT_NAMES.items():
        if own in config:
            fail(f"config: record DistilBERT's '{own}' as '{common}' (the common names the checks and the plan read)")
    for key in ARCHITECTURE_KEYS:
        value = config.get(key)
        if key in config and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            fail(f"config: '{key}' must be a positive integer, not {value!r}")
    heads, width = config.get("num_attention_heads"), config.get("hidden_size")
    if heads and width and width % heads:
        fail(f"config: num_attention_heads {heads} does not divide hidden_size {width}")


def plan_architecture_keys(config: dict) -> tuple[str, ...]:
    """The facts a cost plan needs of a model with this ``config``: ELECTRA's embedding width too."""
    electra = config.get("model_type") == "electra"
    return (*PLAN_ARCHITECTURE_KEYS, "embedding_size") if electra else PLAN_ARCHITECTURE_KEYS


def _validate_features(features: dict, where: str, fail) -> None:
    for feature, spec in features.items():
        if not _known_type(spec):
            fail(f"{where} feature '{feature}': unknown type {spec!r}")
        if text_values(spec) is not None and not (is_text(spec) and text_values(spec)):
            fail(f"{where} feature '{feature}': 'values' lists the values of a text feature")


#: a ``lengths:`` column's keys: tokens per text (untruncated) and what measured them on which file
LENGTH_FIGURES, LENGTH_NOTES = ("mean", "p50", "p90", "p99", "max"), ("tokenizer", "source")
#: the joined text of a BEIR or Tevatron document (title and text, as the encoders read it)
JOINED_TEXT = "title+text"


def _validate_lengths(lengths, configs: dict, fail) -> None:
    """``lengths: {config: {split: {column: {mean, p50, p90, p99, max, tokenizer, source}}}}``: of a
    config's split and its text features (or ``title+text``), figures ordered, with their source."""
    if lengths is None:
        return
    if not isinstance(lengths, dict):
        fail("'lengths' maps config -> split -> text column -> its figures")
    for config, splits in lengths.items():
        if config not in configs:
            fail(f"lengths: no config '{config}' (configs: {', '.join(configs)})")
        spec = configs[config]
        for split, columns in (splits or {}).items():
            if split not in spec["splits"]:
                fail(f"lengths.{config}: no split '{split}' (splits: {', '.join(spec['splits'])})")
            for column, figures in (columns or {}).items():
                where = f"lengths.{config}.{split}.{column}"
                parts = column.split("+") if column == JOINED_TEXT else [column]
                if not all(part in spec["features"] and is_text(spec["features"][part]) for part in parts):
                    texts = [name for name, feature in spec["features"].items() if is_text(feature)]
                    fail(f"{where}: not a text feature of config '{config}' (text features: {', '.join(texts)}"
                         f"{'; or ' + JOINED_TEXT if {'title', 'text'} <= set(texts) else ''})")
                validate_length_figures(figures, where, fail)


def validate_length_figures(figures, where: str, fail) -> None:
    """Recorded token lengths (a contract's, or a dataset entry's ``lengths``): ``fail(message)`` unless
    they are mean, p50, p90, p99, max, ordered, with the tokenizer and the file that measured them."""
    if not isinstance(figures, dict) or set(figures) != set(LENGTH_FIGURES + LENGTH_NOTES):
        fail(f"{where}: its keys are {', '.join(LENGTH_FIGURES + LENGTH_NOTES)}")
    numbers = [figures[key] for key in LENGTH_FIGURES]
    if not all(isinstance(n, int | float) and not isinstance(n, bool) and n > 0 for n in numbers) \
            or not isinstance(figures["max"], int):
        fail(f"{where}: mean, p50, p90, p99 are positive numbers of tokens, max a positive integer")
    mean, p50, p90, p99, top = numbers
    if not (p50 <= p90 <= p99 <= top and mean <= top):
        fail(f"{where}: the figures must be ordered, p50 <= p90 <= p99 <= max and mean <= max")
    if not all(isinstance(figures[key], str) and figures[key].strip() for key in LENGTH_NOTES):
        fail(f"{where}: 'tokenizer' and 'source' name what measured the lengths on which file")


FILE_FORMATS = ("tsv", "csv")
FILE_KEYS = {"url", "also_at", "format", "header", "index", "quoting", "member", "columns", "rows", "blank_rows"}


def _validate_files(raw: dict, fail) -> None:
    files = raw.get("files")
    if not isinstance(files, dict) or not files:
        fail("a files contract needs 'files': {path in the repository: its facts}")
    for name, spec in files.items():
        where = f"file '{name}'"
        if not isinstance(spec, dict) or set(spec) - FILE_KEYS:
            fail(f"{where}: its keys are {', '.join(sorted(FILE_KEYS))}")
        if not str(spec.get("url", "")).startswith("https://") or spec.get("format") not in FILE_FORMATS:
            fail(f"{where} needs 'url' (https) and 'format' ({', '.join(FILE_FORMATS)})")
        if spec["url"].endswith(".zip") != bool(spec.get("member")):
            fail(f"{where}: 'member' (the table inside the zip) goes with a .zip url, and only there")
        if spec.get("quoting", "minimal") not in ("minimal", "none"):
            fail(f"{where}: 'quoting' is minimal or none")
        if not isinstance(spec.get("columns"), dict) or not spec["columns"]:
            fail(f"{where} needs 'columns' (in the file's order)")
        _validate_features(spec["columns"], where, fail)


# --- what the checks of config entries share (trimbench.config turns a Mismatch into a ConfigError) ---


def source_split(entry: dict, split: str) -> str:
    """The source's split name behind our ``split`` (through ``holdout`` and ``splits``)."""
    holdout = entry.get("holdout")
    if holdout and split in (holdout["split"], holdout["from"]):
        split = holdout["from"]
    return entry["splits"].get(split, split)


def split_key(where: str, entry: dict, split: str) -> str:
    holdout = entry.get("holdout")
    if holdout and split in (holdout["split"], holdout["from"]):
        split = holdout["from"]
    return f"{where}.splits.{split}" if split in entry["splits"] else f"{where}.splits"
