"""Local copies (``local_copies: <folder>``): the same experiments on copies of their hub data, for
machines without the hub (``make mini`` here reads ``../shared/data``).

Every hub or url dataset the experiments read becomes a ``local`` source in its ``local_copy``
folder (its other keys replacing the entry's: a copy's score scale or split names may differ);
every hub model an experiment uses is replaced by the registry model its ``local_substitute``
names (an experiment listing a model and its substitute keeps it once). Nothing is swapped
silently: each replacement is a line of the experiment's record, shown in the status table. A used
entry without a mapping, or a mapping to nothing, is one :class:`ConfigError` naming its key.

Light (runs while Snakemake parses the workflow).
"""

from __future__ import annotations

import copy
from pathlib import Path

from trimbench.checks import resolve_path, unknown_name
from trimbench.data.columns import WORD_SIMILARITY_FILES
from trimbench.errors import ConfigError
from trimbench.tracks import track_of

#: sources read from outside this machine (hub repositories, URLs): a local copy stands in for them
DOWNLOADED_SOURCES = ("hub", "url")
#: keys of a downloaded entry that name where it is downloaded from: dropped for its local copy
DOWNLOAD_KEYS = ("id", "config", "revision", "qrels_revision", "corpus_revision", "urls", "topics_url", "qrels_url")


def used_datasets(exp: dict) -> list[str]:
    """The registry datasets an experiment reads (its track's ``used_splits``)."""
    return list(dict.fromkeys(dataset for dataset, _, _ in track_of(exp).used_splits(exp)))


def _describe_model(entry: dict) -> str:
    note = f"; {entry['note']}" if entry.get("note") else ""
    if entry["source"] == "hub":
        return f"hub {entry['id']}" + (f"@{entry['revision'][:7]}" if entry.get("revision") else "") + note
    if entry["source"] == "package":
        return f"package {entry['package']}" + (f"/{entry['subfolder']}" if entry.get("subfolder") else "") + note
    return f"{entry['source']} {entry.get('path', '')}".strip() + note


def _describe_dataset(entry: dict) -> str:
    if entry["source"] == "hub":
        return f"hub {entry['id']}" + (f"/{entry['config']}" if entry.get("config") else "")
    return "its URLs"


def apply(config: dict, workdir: str | Path = ".") -> tuple[dict, dict[str, list[str]]]:
    """The config with local copies in place of downloads, and each experiment's record (a line per
    replacement). ``config`` is validated (defaults filled); the result needs validating again."""
    folder = config.get("local_copies")
    if not folder:
        return config, {}
    root = resolve_path(folder, Path(workdir))
    if not root.is_dir():
        raise ConfigError(f"config key local_copies: folder '{folder}' does not exist")
    config = copy.deepcopy(config)
    datasets, models = config["datasets"], config["models"]
    records: dict[str, list[str]] = {}
    copied: dict[str, str] = {}
    for name, exp in config["experiments"].items():
        record = records.setdefault(name, [])
        for dataset in dict.fromkeys(used_datasets(exp)):
            entry = datasets.get(dataset)
            if entry is not None and entry["source"] == "word_similarity":
                _check_word_files(dataset, entry)
            if entry is None or entry["source"] not in DOWNLOADED_SOURCES:
                continue  # unknown names are the tracks' checks' to report
            if dataset not in copied:
                copied[dataset] = _copy_dataset(dataset, entry, root, folder)
            record.append(copied[dataset])
        for file in track_of(exp).hub_files(exp):
            section = file.key.rpartition(".")[0] or file.key
            raise ConfigError(f"config key experiments.{name}.{section}: local_copies is set but its {file.filename} "
                              f"comes from hub {file.repo}, which has no local copy; {file.instead}")
        _substitute_models(name, exp, models, record)
    for name in copied:
        datasets[name] = _local_entry(datasets[name], folder)
    return config, records


def _copy_dataset(name: str, entry: dict, root: Path, folder: str) -> str:
    where = f"datasets.{name}.local_copy"
    local = entry.get("local_copy")
    if not local:
        raise ConfigError(f"config key {where}: local_copies is set ('{folder}') but dataset '{name}' "
                          f"({_describe_dataset(entry)}) has no local copy mapped; give its folder under "
                          f"'{folder}' as {where}.path")
    if not (root / local["path"]).is_dir():
        raise ConfigError(f"config key {where}.path: '{local['path']}' is not a folder of local_copies "
                          f"('{folder}'); it has {sorted(p.name for p in root.iterdir() if p.is_dir())}")
    return f"dataset {name}: {_describe_dataset(entry)} -> local copy {Path(folder) / local['path']}"


def _check_word_files(name: str, entry: dict) -> None:
    """The word-similarity sets are files by URL unless ``files`` gives local paths."""
    for word_set in entry["sets"]:
        location = entry["files"].get(word_set, WORD_SIMILARITY_FILES[word_set])
        if location.startswith(("http://", "https://")):
            raise ConfigError(f"config key datasets.{name}.files.{word_set}: local_copies is set but the set is "
                              f"downloaded from {location}; give the local file's path")


def _local_entry(entry: dict, folder: str) -> dict:
    local = entry["local_copy"]
    replaced = {key: value for key, value in entry.items() if key not in DOWNLOAD_KEYS and key != "local_copy"}
    replaced.update({key: value for key, value in local.items() if key != "path"})
    # relative to the working directory, as every local path (the folder was checked through root)
    replaced.update(source="local", path=str(Path(folder) / local["path"]))
    return replaced


def _substitute_models(name: str, exp: dict, models: dict, record: list[str]) -> None:
    """Each hub model the experiment names -> its substitute, in place; a list keeps each model once."""
    def substitute(key: str, model: str) -> str:
        entry = models.get(model)
        if entry is None or entry["source"] != "hub":
            return model
        target = entry.get("local_substitute")
        where = f"models.{model}.local_substitute"
        if not target:
            raise ConfigError(f"config key {where}: local_copies is set but hub model '{model}' ({entry['id']}), "
                              f"used by experiments.{name}.{key}, has no substitute; name a registry model "
                              "(e.g. one of source package or local)")
        if target not in models:
            raise unknown_name("model", target, models, where)
        if models[target]["source"] == "hub":
            raise ConfigError(f"config key {where}: '{target}' is a hub model too; a substitute must be on this "
                              "machine (source package, local or tiny)")
        record.append(f"model {model}: {_describe_model(entry)} -> {target} ({_describe_model(models[target])})")
        return target

    track_of(exp).substitute_models(exp, substitute, record)
