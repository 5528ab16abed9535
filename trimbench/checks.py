"""The checks of config entries that every track's ``check_experiment`` shares: unknown names with a
suggestion, devices, dataset and model entries, model shapes. Each problem is one
:class:`~trimbench.errors.ConfigError` naming the config key.

Run while Snakemake parses the workflow (from :mod:`trimbench.config.prepare` and the tracks' ``checks``
modules), so it stays light: no torch, no transformers.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from trimbench.data.columns import DOCUMENT, QUERY, WORD_SIMILARITY_SPLITS, text_columns
from trimbench.data.contracts import validate_length_figures
from trimbench.errors import ConfigError
from trimbench.models import ModelShape, declared_shape, weights_problem

RETRIEVAL_METRICS = ("mrr@10", "ndcg@10", "recall@10", "recall@100", "recall@1000")


def cut_offs(metrics) -> dict[str, int]:
    """Each metric cut at a rank (``recall@100``) -> that rank."""
    return {metric: int(metric.partition("@")[2]) for metric in metrics if metric.partition("@")[2].isdigit()}


def deepest_cut_off(metrics) -> int:
    """The most hits per query a metric of ``metrics`` reads (0: none is cut at a rank)."""
    return max(cut_offs(metrics).values(), default=0)


def check_search_depth(where: str, depth_key: str, top_k: int, metrics) -> None:
    """A metric cut at rank n reads n hits per query: a run of ``top_k`` < n hits would score
    recall@100 as recall@top_k (the probe: 0.8167 for 1.0 at top_k 5), with no warning."""
    ranks = cut_offs(metrics)
    deepest = max(ranks, key=ranks.get, default=None)
    if deepest is not None and top_k < ranks[deepest]:
        raise ConfigError(f"config key {where}.{depth_key}: {top_k} hits per query is fewer than metric "
                          f"'{deepest}' of {where}.evaluation.metrics reads ({ranks[deepest]}); give "
                          f"{depth_key} at least {ranks[deepest]}, or leave '{deepest}' out")


def unknown_name(kind: str, name: str, known, where: str) -> ConfigError:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return ConfigError(
        f"config key {where}: unknown {kind} '{name}'{hint}; known {kind}s: {', '.join(sorted(known))}"
    )


def check_devices(where: str, train: dict) -> None:
    """``train.devices``: every device gets an equal share of each batch (``batch_size`` is the
    global batch whose texts are each other's in-batch negatives)."""
    devices, batch = train["devices"], train["batch_size"]
    if batch % devices:
        raise ConfigError(f"config key {where}.train.devices: {devices} devices cannot share train.batch_size "
                          f"{batch} equally (each device takes batch_size / devices of every batch); give a "
                          "batch size divisible by devices")


def resolve_path(path: str, workdir: Path) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else (workdir / p)


def check_dataset(name: str, entry: dict, workdir: Path) -> None:
    where = f"datasets.{name}"
    if entry["source"] == "local":
        folder = resolve_path(entry["path"], workdir)
        if not folder.is_dir():
            raise ConfigError(f"config key {where}.path: local dataset folder '{entry['path']}' does not exist")
    if entry.get("min_score") is not None and entry["kind"] != "pairs":
        raise ConfigError(f"config key {where}.min_score: keeps pairs by their score; dataset '{name}' is of kind "
                          f"'{entry['kind']}'")
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
    check_recorded_lengths(name, entry)


def check_recorded_lengths(name: str, entry: dict) -> None:
    """A dataset entry's ``lengths``: of a source whose texts the plan cannot measure here and no contract
    records (url, word_similarity), each of a split the source names and a text column of its kind, its
    figures as a contract's. Figures the plan would never read are refused, not kept: it would price the
    texts otherwise without a word."""
    lengths = entry.get("lengths")
    if not lengths:
        return
    where = f"datasets.{name}.lengths"
    if entry["source"] == "hub":
        raise ConfigError(f"config key {where}: a hub dataset's lengths are its contract's "
                          f"(reference/hub/{entry['id'].replace('/', '--')}.yaml, lengths:), not the config's")
    if entry["source"] in ("local", "gensim"):
        raise ConfigError(f"config key {where}: a {entry['source']} dataset's lengths are measured on its files "
                          "here (trimbench.cost.lengths); the key is for url and word_similarity sources")
    columns = (QUERY, DOCUMENT) if entry["kind"] == "retrieval" else text_columns(entry["kind"])
    # the splits a source names (a url entry's files, the word-similarity builder's cut): figures of
    # another split would never be read, the plan silently pricing the real one at its maximum length
    splits = tuple(entry.get("urls") or ()) if entry["source"] == "url" else WORD_SIMILARITY_SPLITS

    def fail(message: str):
        raise ConfigError(f"config key {message}")

    for split, figures_of in lengths.items():
        if split not in splits:
            fail(f"{where}.{split}: not a split of dataset '{name}' (its splits: {', '.join(splits)})")
        for column, figures in figures_of.items():
            if column not in columns:
                fail(f"{where}.{split}.{column}: not a text column of kind '{entry['kind']}' "
                     f"(its text columns: {', '.join(columns)})")
            validate_length_figures(figures, f"{where}.{split}.{column}", fail)


def check_trec_files(name: str, entry: dict, workdir: Path) -> None:
    """A dataset's TREC topics / qrels file exists, or the dataset says where to download it."""
    for key in ("topics", "qrels"):
        if entry.get(key) and not entry.get(f"{key}_url") and not resolve_path(entry[key], workdir).is_file():
            raise ConfigError(f"config key datasets.{name}.{key}: file '{entry[key]}' does not exist "
                              f"(or give datasets.{name}.{key}_url to download it)")


def check_model_paths(name: str, entry: dict, workdir: Path) -> None:
    where = f"models.{name}"
    if entry["source"] == "local":
        folder = resolve_path(entry["path"], workdir)
        if not (folder / "config.json").is_file() and not (folder / "modules.json").is_file():
            raise ConfigError(
                f"config key {where}.path: '{entry['path']}' is not a model directory "
                "(no config.json or modules.json there)"
            )


def model_shape(name: str, entry: dict, workdir: Path) -> ModelShape:
    try:
        shape = declared_shape(entry, workdir)
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise ConfigError(f"config key models.{name}: {exc}") from exc
    problem = weights_problem(resolve_path(entry["path"], workdir)) if entry["source"] == "local" else None
    if problem:
        raise ConfigError(f"config key models.{name}.path: model directory '{entry['path']}' {problem}")
    return shape
