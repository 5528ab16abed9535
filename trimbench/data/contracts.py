"""Hub contracts: what a hub dataset or model really is, read from the hub at a pinned commit.

A contract (``reference/hub/<owner>--<name>.yaml``, format in ``reference/hub/README.md``) records
a hub repository's revision and, for a dataset, its configs, splits, row counts, feature names and
types (and, where ``datasets`` infers splits from file names or the revision holds a loading script,
its files); for a model, the ``config.json`` facts the checks use. Config validation checks a hub
entry against the contract of its ``id`` (:func:`check_dataset`, :func:`check_model`) and smoke
mode builds every hub stand-in from it (:mod:`trimbench.data.hub`), so a wrong ``columns``, ``split``
or ``config`` fails here as it would on the hub. Files downloaded by URL (``source: url``,
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

from trimbench.data.columns import (
    GENSIM_COLUMNS,
    HOMEDEPOT_COLUMNS,
    HOMEDEPOT_KEYS,
    KIND_COLUMNS,
    LOCAL_SUFFIXES,
    NUMERIC_COLUMNS,
    WORD_COLUMNS,
    WORD_SET_READS,
    WORD_SIMILARITY_COLUMNS,
    WORD_SIMILARITY_FILES,
    header_columns,
    split_file,
)

CONTRACT_DIR = Path(__file__).resolve().parents[2] / "reference" / "hub"
#: contracts of files downloaded by URL, one per publishing repository (reference/hub/README.md)
FILES_CONTRACT_DIR = CONTRACT_DIR.parent / "files"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TEXT_DTYPES = ("string", "large_string")
NUMBER_DTYPES = ("bool", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
#: BeIR/<name> holds these files; BeIR/<name>-qrels one ``<split>.tsv`` per split (beir-cellar/beir layout)
BEIR_FILES = ("corpus.jsonl.gz", "queries.jsonl.gz")


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
    export = raw.get("parquet_export")
    if export and not (export.get("revision") and isinstance(export.get("files"), dict)):
        fail("'parquet_export' needs 'revision' and 'files'")


def _validate_features(features: dict, where: str, fail) -> None:
    for feature, spec in features.items():
        if not _known_type(spec):
            fail(f"{where} feature '{feature}': unknown type {spec!r}")
        if text_values(spec) is not None and not (is_text(spec) and text_values(spec)):
            fail(f"{where} feature '{feature}': 'values' lists the values of a text feature")


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


# --- checks of config entries (trimbench.config turns a Mismatch into a ConfigError) -------------


def hub_repos(entry: dict) -> list[tuple[str, str | None]]:
    """(repo id, the entry's key pinning its revision) of every hub repository a dataset entry reads."""
    if entry.get("source") != "hub":
        return []
    if entry["kind"] == "retrieval" and entry.get("builder") != "homedepot":
        if entry.get("format", "beir") == "tevatron":
            return [(entry["id"], "revision"), (f"{entry['id']}-corpus", "corpus_revision")]
        return [(entry["id"], "revision"), (f"{entry['id']}-qrels", "qrels_revision")]
    return [(entry["id"], "revision")]


def source_split(entry: dict, split: str) -> str:
    """The source's split name behind our ``split`` (through ``holdout`` and ``splits``)."""
    holdout = entry.get("holdout")
    if holdout and split in (holdout["split"], holdout["from"]):
        split = holdout["from"]
    return entry["splits"].get(split, split)


def _split_key(where: str, entry: dict, split: str) -> str:
    holdout = entry.get("holdout")
    if holdout and split in (holdout["split"], holdout["from"]):
        split = holdout["from"]
    return f"{where}.splits.{split}" if split in entry["splits"] else f"{where}.splits"


def check_dataset(name: str, entry: dict, used_splits: dict[str, str]) -> None:
    """Raise :class:`Mismatch` where a hub dataset entry contradicts its contract.

    ``used_splits`` maps each of our split names the experiments read to the key that reads it.
    Entries without a contract, or pinned to a revision the contract does not describe, pass.
    """
    where = f"datasets.{name}"
    if entry.get("source") == "url":
        _check_urls(where, entry, used_splits)
    elif entry.get("source") == "word_similarity":
        _check_word_sets(where, entry)
    if entry.get("source") != "hub":
        return
    if entry["kind"] == "retrieval" and entry.get("builder") != "homedepot":
        if entry.get("format", "beir") == "beir":
            _check_beir(where, entry, used_splits)
        else:
            _check_tevatron(where, entry, used_splits)
        return
    contract = load(entry["id"])
    revision = entry.get("revision")
    if contract is None or not contract.describes(revision):
        return
    script = contract.script(revision)
    if script:
        export = contract.export and f"; load its parquet export instead: revision: {contract.export['revision']}"
        raise Mismatch(f"{where}.revision", f"{contract.label(revision)} holds a loading script ({script}), which "
                                            f"datasets 4 and later refuse to run{export or ''}")
    configs = contract.configs(revision)
    config_name = entry.get("config") or ("default" if "default" in configs or len(configs) > 1
                                          else next(iter(configs)))
    if config_name not in configs:
        problem = f"has no config '{config_name}'" if entry.get("config") else "needs a config"
        raise Mismatch(f"{where}.config", f"{contract.label(revision)} {problem}; its configs: {', '.join(configs)}")
    spec = configs[config_name]
    described = f"{contract.label(revision)}, config '{config_name}'"
    _check_columns(where, entry, spec["features"], described)
    if entry.get("builder") == "homedepot":  # the builder cuts its own splits out of the hub's train split
        used_splits = {"train": f"{where}.builder"}
    for ours, used_by in used_splits.items():
        split = source_split(entry, ours)
        if split not in spec["splits"]:
            raise Mismatch(_split_key(where, entry, ours),
                           f"split '{split}' (our '{ours}', read by {used_by}) is not a split of {described}; "
                           f"its splits: {', '.join(spec['splits'])}")


def check_source_columns(name: str, entry: dict, used_splits: dict[str, str], workdir: Path) -> None:
    """Raise :class:`Mismatch` where a gensim, local or word-similarity source, or a url entry's local
    file, lacks a column the entry maps (or a local folder a split the experiments read): the
    columns its builder makes, or its files' headers, read now, as hub sources are checked against
    their contracts, so that the job never fails on it after Snakemake removed its outputs."""
    where = f"datasets.{name}"
    if entry["kind"] == "retrieval" and entry.get("builder") != "homedepot":
        return  # corpus, queries and qrels: their own layouts (trimbench/data/beir.py)
    if entry["source"] == "gensim" and entry.get("builder") in GENSIM_COLUMNS:
        extra = ("negative",) if entry["kind"] == "triplets" and entry["builder"] == "lee_ict" else ()
        _check_named_columns(where, entry, [*GENSIM_COLUMNS[entry["builder"]], *extra],
                             f"the rows gensim builder '{entry['builder']}' makes")
    elif entry["source"] == "word_similarity":
        _check_named_columns(where, entry, list(WORD_SIMILARITY_COLUMNS), "the word-similarity sets' rows")
    elif entry["source"] in ("local", "url"):
        if entry["source"] == "local" and not (workdir / Path(entry["path"]).expanduser()).is_dir():
            return  # named by trimbench.config.schema.check_dataset
        splits = {"train": f"{where}.builder"} if entry.get("builder") == "homedepot" else used_splits
        for ours, used_by in splits.items():
            split = source_split(entry, ours)
            path, suffix = _local_table(entry, split, workdir)
            if path is None:
                if entry["source"] == "local":
                    raise Mismatch(_split_key(where, entry, ours) if split != ours else f"{where}.path",
                                   f"local folder '{entry['path']}' has no file for split '{split}' (our '{ours}', "
                                   f"read by {used_by}): none of {split}{{{','.join(LOCAL_SUFFIXES)}}}")
                continue
            header = header_columns(path, entry.get("quoting", "minimal"), suffix)
            if header is not None:
                _check_named_columns(where, entry, header, f"file '{path}' (split '{split}')")


def _local_table(entry: dict, split: str, workdir: Path) -> tuple[Path | None, str | None]:
    """The local file a split is read from (None: none, or one downloaded by URL) and its suffix."""
    if entry["source"] == "local":
        folder = Path(entry["path"]).expanduser()
        return split_file(folder if folder.is_absolute() else workdir / folder, split), None
    location = entry["urls"].get(split, "")
    if not location or location.startswith(("http://", "https://", "file://")):
        return None, None
    path = Path(location).expanduser()
    return (path if path.is_absolute() else workdir / path), Path(location).suffix


def _check_named_columns(where: str, entry: dict, columns: list[str], described: str) -> None:
    for ours, theirs in column_mapping(entry).items():
        if theirs not in columns:
            read = f"maps '{ours}' to '{theirs}'" if ours in entry["columns"] else \
                f"not given: '{ours}' is read from column '{theirs}'"
            raise Mismatch(f"{where}.columns.{ours}", f"{read}, which is not a column of {described}; its columns: "
                                                      f"{', '.join(columns)}")


def column_mapping(entry: dict) -> dict[str, str]:
    """Our column -> the source's column a dataset entry reads (its ``columns`` over the defaults;
    ``score`` too where ``min_score`` keeps a kind-pairs source's rows by it)."""
    if entry.get("builder") == "homedepot":
        return {ours: entry["columns"].get(ours, theirs) for ours, theirs in HOMEDEPOT_COLUMNS.items()}
    mapping = {ours: entry["columns"].get(ours, ours) for ours in KIND_COLUMNS[entry["kind"]]}
    if entry.get("min_score") is not None and entry["kind"] != "sts":
        mapping["score"] = entry["columns"].get("score", "score")
    return mapping


def _check_columns(where: str, entry: dict, features: dict, described: str) -> None:
    mapping = column_mapping(entry)
    numeric, keys = (("relevance",), HOMEDEPOT_KEYS) if entry.get("builder") == "homedepot" else (NUMERIC_COLUMNS, ())
    for ours, theirs in mapping.items():
        if ours == "score" and ours not in KIND_COLUMNS[entry["kind"]]:
            continue  # min_score's column: checked below
        if theirs not in features:
            raise Mismatch(f"{where}.columns.{ours}", f"'{theirs}' is not a feature of {described}; its features: "
                                                      f"{describe_features(features)}")
        text = is_text(features[theirs])
        if ours == "label" and entry["kind"] == "pair-class":  # integers or mapped values: checked below
            continue
        if ours not in keys and text == (ours in numeric):
            wanted = "a number" if ours in numeric else "text"
            raise Mismatch(f"{where}.columns.{ours}", f"feature '{theirs}' of {described} is "
                                                      f"{dtype(features[theirs])}; '{ours}' needs {wanted}; its "
                                                      f"features: {describe_features(features)}")
    if entry["kind"] == "pair-class":
        label = features[mapping["label"]]
        integers = class_names(label) or dtype(label).startswith("int")
        if not (integers or (is_text(label) and entry.get("label_values"))):
            raise Mismatch(f"{where}.columns.label", f"feature '{mapping['label']}' of {described} is {dtype(label)}; "
                                                     f"'label' needs class labels (integers), or {where}.label_values "
                                                     f"mapping its values to ours; its features: "
                                                     f"{describe_features(features)}")
        if entry.get("label_values"):
            _check_label_values(where, entry, mapping["label"], label, described)
        names = class_names(label)
        if names and len(names) != entry["num_labels"]:
            raise Mismatch(f"{where}.num_labels", f"feature '{mapping['label']}' of {described} has "
                                                  f"{len(names)} classes {names}, not {entry['num_labels']}")
    if entry.get("min_score") is not None and entry["kind"] != "sts":  # pairs kept by their score
        score = features.get(mapping["score"])
        if score is None or is_text(score):
            raise Mismatch(f"{where}.columns.score", f"min_score reads '{mapping['score']}', which is "
                                                     f"{'not a feature' if score is None else 'text'} of "
                                                     f"{described}; its features: {describe_features(features)}")
    if "score" in mapping:
        scale = value_range(features[mapping["score"]])
        if scale and [float(v) for v in entry["score_range"]] != [float(v) for v in scale]:
            raise Mismatch(f"{where}.score_range", f"feature '{mapping['score']}' of {described} ranges over "
                                                   f"{scale}, not {list(entry['score_range'])}")


def _check_label_values(where: str, entry: dict, theirs: str, label, described: str) -> None:
    """``label_values`` maps exactly the values the source's label feature takes, where the contract
    knows them: a text feature's listed ``values``, a class label's integers (what ``datasets`` gives)."""
    names = class_names(label)
    known = text_values(label) or ([str(index) for index in range(len(names))] if names else None)
    if known is None:
        return  # values not recorded: a value label_values lacks is named when the data is read
    mapped = set(entry["label_values"])
    if mapped != set(known):
        shown = f"{known} (the class labels {names})" if names else known
        problems = []
        if set(known) - mapped:
            problems.append(f"lacks {[value for value in known if value not in mapped]}")
        if mapped - set(known):
            problems.append(f"maps {sorted(mapped - set(known))}, which it never takes")
        raise Mismatch(f"{where}.label_values", f"feature '{theirs}' of {described} takes the values {shown}; "
                                                f"label_values {'; '.join(problems)}")


def _check_urls(where: str, entry: dict, used_splits: dict[str, str]) -> None:
    """A url entry: a file for every split read, and each file as its contract (reference/files) describes it."""
    for ours, used_by in used_splits.items():
        split = source_split(entry, ours)
        if split not in entry["urls"]:
            raise Mismatch(f"{where}.urls", f"no file for split '{split}' (our '{ours}', read by {used_by}); "
                                            f"its files are for {sorted(entry['urls'])}")
    for split, location in entry["urls"].items():
        published = published_file(location)
        if published is None:
            continue
        spec = published.spec
        if spec.get("member") or not spec.get("header", True) or spec.get("index"):
            raise Mismatch(f"{where}.urls.{split}", f"{published.label} is not one table with a header row and no "
                                                    f"index column, which source url reads")
        quoting = spec.get("quoting", "minimal")
        if quoting != entry["quoting"]:
            why = " (its cells hold quote characters that do not pair up: read them as text)" * (quoting == "none")
            raise Mismatch(f"{where}.quoting", f"{published.label} is read with quoting: {quoting}{why}, not "
                                               f"{entry['quoting']}")
        _check_columns(where, entry, published.columns, published.label)


def _check_word_sets(where: str, entry: dict) -> None:
    """Each set's file, where its URL has a contract, is the table the paper's script reads
    (:data:`trimbench.data.columns.WORD_SET_READS`): separator, header, member, word and score columns, scale."""
    for name in entry["sets"]:
        published = published_file(entry["files"].get(name, WORD_SIMILARITY_FILES[name]))
        if published is not None:
            problem = _word_set_problem(WORD_SET_READS[name], published)
            if problem:
                key = f"{where}.files.{name}" if name in entry["files"] else f"{where}.sets"
                raise Mismatch(key, f"set '{name}' is read as the paper reads it, but {published.label} {problem}")


def _word_set_problem(read: dict, published: PublishedFile) -> str | None:
    spec, columns = published.spec, published.columns
    header = "names" not in read
    if spec["format"] != read["format"] or spec.get("header", True) != header:
        return (f"is {spec['format']} {'with' if spec.get('header', True) else 'without'} a header, not "
                f"{read['format']} {'with' if header else 'without'} one")
    if read.get("member") and Path(spec.get("member") or "").name != read["member"]:
        return f"holds {spec.get('member') or 'no archive member'}, not {read['member']}"
    if read.get("index") and not spec.get("index"):
        return "has no index column (read with index_col=0)"
    if header:
        named = {column: columns.get(column) for column in (*WORD_COLUMNS, read["score"])}
    elif len(columns) != len(read["names"]):
        return f"has {len(columns)} columns ({', '.join(columns)}), not the {len(read['names'])} the paper names"
    else:
        by_position = dict(zip(read["names"], columns.values(), strict=True))
        named = {column: by_position[column] for column in (*WORD_COLUMNS, read["score"])}
    for column, feature in named.items():
        if feature is None:
            return f"has no column '{column}'; its columns: {describe_features(columns)}"
        if is_text(feature) != (column in WORD_COLUMNS):
            return f"column '{column}' is {dtype(feature)}; its columns: {describe_features(columns)}"
    scale = value_range(named[read["score"]])
    if scale and float(scale[1]) != read["scale"]:
        return f"scores on {scale}, which the paper divides by {read['scale']}"
    return None


def _check_beir(where: str, entry: dict, used_splits: dict[str, str]) -> None:
    corpus = load(entry["id"])
    if corpus is not None and corpus.describes(entry.get("revision")):
        missing = [name for name in BEIR_FILES if name not in corpus.files(entry.get("revision"))]
        if missing:
            raise Mismatch(f"{where}.id", f"{corpus.label(entry.get('revision'))} lacks {', '.join(missing)} (the "
                                          f"BEIR layout); its files: {', '.join(sorted(corpus.files()))}")
    qrels = load(f"{entry['id']}-qrels")
    if qrels is None or not qrels.describes(entry.get("qrels_revision")):
        return
    files = qrels.files(entry.get("qrels_revision"))
    for ours, used_by in used_splits.items():
        split = source_split(entry, ours)
        if f"{split}.tsv" not in files:
            raise Mismatch(_split_key(where, entry, ours),
                           f"split '{split}' (our '{ours}', read by {used_by}) has no judgements in "
                           f"{qrels.label(entry.get('qrels_revision'))}: no {split}.tsv; its files: "
                           f"{', '.join(sorted(files))}")


def _check_tevatron(where: str, entry: dict, used_splits: dict[str, str]) -> None:
    """Tevatron's repositories are read as files (trimbench/data/beir.py): ``<split>.jsonl.gz`` of the
    query repository for every split read, ``corpus.jsonl.gz`` of ``<id>-corpus``."""
    reads = [(f"{entry['id']}-corpus", "corpus_revision", "corpus.jsonl.gz", f"{where}.id", "the corpus")]
    if not (entry.get("topics") or entry.get("topics_url")) or not (entry.get("qrels") or entry.get("qrels_url")):
        reads += [(entry["id"], "revision", f"{source_split(entry, ours)}.jsonl.gz", _split_key(where, entry, ours),
                   f"our split '{ours}', read by {used_by}") for ours, used_by in used_splits.items()]
    for repo, revision_key, filename, key, role in reads:
        contract = load(repo)
        if contract is not None and contract.describes(entry.get(revision_key)):
            files = contract.files(entry.get(revision_key))
            if filename not in files:
                raise Mismatch(key, f"{contract.label(entry.get(revision_key))} has no {filename} ({role}); its "
                                    f"files: {', '.join(sorted(files))}")


def check_files(key: str, repo_id: str, revision: str | None, filename: str) -> None:
    """A file a config key names must be one of the hub repository's files, per its contract."""
    contract = load(repo_id)
    if contract is not None and contract.describes(revision) and filename not in contract.files(revision):
        raise Mismatch(key, f"'{filename}' is not a file of {contract.label(revision)}; its files: "
                            f"{', '.join(sorted(contract.files(revision)))}")


def model_fact(contract: Contract, *names: str):
    config = contract.raw["config"]
    return next((config[name] for name in names if config.get(name) is not None), None)


def check_model(name: str, entry: dict) -> None:
    """Raise :class:`Mismatch` where a hub model entry's declared depth or width contradicts its contract."""
    if entry.get("source") != "hub":
        return
    contract = load(entry["id"])
    if contract is None or not contract.describes(entry.get("revision")):
        return
    for key, names in (("layers", ("num_hidden_layers", "n_layers")), ("dim", ("hidden_size", "dim"))):
        real = model_fact(contract, *names)
        if real is not None and entry.get(key) is not None and entry[key] != real:
            raise Mismatch(f"models.{name}.{key}", f"declares {key}={entry[key]}, but {contract.label()} has "
                                                   f"{names[0]}={real} in its config.json")


def has_mlm_head(entry: dict) -> bool | None:
    """Whether a hub model's checkpoint carries MLM head weights, per its contract (None: unknown)."""
    contract = load(entry["id"]) if entry.get("source") == "hub" else None
    if contract is None or not contract.describes(entry.get("revision")):
        return None
    return contract.raw["mlm_head"]
