"""A run's complete config: validated with defaults, smoke mode applied, registries, contracts and
each experiment checked by its track's ``check_experiment`` (trimbench.tracks); the params helpers
the rules use.

Everything here runs while Snakemake parses the workflow, so it stays light: no torch, no
transformers. Every problem is raised as one :class:`ConfigError` naming the key or file.
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path

from trimbench.checks import unknown_name
from trimbench.config import local, smoke
from trimbench.config.schema import check_lengths, load_config, validate_schema
from trimbench.cost.gpus import find_gpu, gpu_table
from trimbench.data import column_checks, contracts, dataset_checks, model_checks
from trimbench.errors import ConfigError
from trimbench.jobs.artifacts import RESULTS_ROOT, SMOKE_RESULTS_ROOT
from trimbench.tracks import track_of

#: x axes of the cross-track Pareto figures (computed in trimbench.report.scoreboard.COSTS)
PARETO_COSTS = ("layers_x_dim", "bytes_per_doc")


def check_smoke_report(config: dict, argv: list[str], workdir: str | Path | None = None) -> None:
    """A smoke run's ``--report`` (in snakemake's command line ``argv``) must not replace a real
    run's report: it goes under results-smoke/ or anywhere but results/ of ``workdir`` (the working
    directory, where Snakemake writes the report), compared as resolved paths, so that an absolute or
    a ``../checkout/results/...`` spelling of the real report is refused too."""
    if not config["smoke"]:
        return
    real_results = (Path(workdir or Path.cwd()) / RESULTS_ROOT).resolve()
    for index, word in enumerate(argv):
        path = argv[index + 1] if word == "--report" and index + 1 < len(argv) else (
            word.partition("=")[2] if word.startswith("--report=") else None)
        if path and (Path(workdir or Path.cwd()) / path).resolve().is_relative_to(real_results):
            raise ConfigError(f"--report {path}: a smoke run's report would replace the real run's in "
                              f"{RESULTS_ROOT}/; write it under {SMOKE_RESULTS_ROOT}/ (--report "
                              f"{SMOKE_RESULTS_ROOT}/report.html)")


#: dataset keys only scoring reads: left out of the data rules' params, so that changing one
#: re-scores runs without preparing the data again
SCORING_DATASET_KEYS = ("relevance_level", "ignore_identical_ids")
#: dataset keys only the cost plan reads (trimbench.cost.lengths): no job's params, no job re-runs
PLAN_DATASET_KEYS = ("lengths",)


def beir_format(entry: dict) -> bool:
    """Whether a dataset is retrieval data in BEIR's format and ids, from the hub or a local BEIR
    folder: no builder made it, and it is not Tevatron's."""
    return (entry["kind"] == "retrieval" and entry["source"] in ("hub", "local") and not entry.get("builder")
            and entry.get("format", "beir") == "beir")


def ignores_identical_ids(entry: dict) -> bool:
    """Whether a dataset's evaluation drops a query's hit on the document with the query's own id:
    its ``ignore_identical_ids``, by default on for BEIR-format data (:func:`beir_format`), whose
    ArguAna and Quora queries are corpus documents; off for Tevatron's MS MARCO and the builders'
    data (Home Depot, Lee), whose query and document ids are separate numberings. BEIR's own MS MARCO
    has separate numberings too: its presets' entries set it off."""
    if entry.get("ignore_identical_ids") is not None:
        return bool(entry["ignore_identical_ids"])
    return beir_format(entry)


def on_pyserinis_bm25_corpus(entry: dict) -> bool:
    """Whether pyserini's published BM25 numbers (reference/bm25.csv) were made on this dataset's
    collection, so that our BM25 row may be set beside them: BEIR-format data (:func:`beir_format`),
    the BEIR v1.0.0 corpora pyserini indexes, BeIR's MS MARCO being MS MARCO passage v1 with empty
    titles, pyserini's msmarco-v1-passage. Tevatron's MS MARCO puts each passage's title before its
    text (another collection: other BM25 numbers), and a builder's corpus is its own."""
    return beir_format(entry)


def bm25_published_datasets(exp: dict, datasets: dict) -> list[str]:
    """The experiment's evaluation datasets its BM25 row is compared with pyserini's published numbers
    on (:func:`on_pyserinis_bm25_corpus`); the others' cells stay ours only."""
    return [name for name in exp["evaluation"]["datasets"] if on_pyserinis_bm25_corpus(datasets[name])]


def compared_dataset(exp: dict) -> str:
    """The dataset an experiment is set beside the published work on (its headline, its first grid
    view, its claims, its ablations): its track's choice."""
    return track_of(exp).compared_dataset(exp)


def dataset_main_metrics(exp: dict, datasets: dict) -> dict:
    """Each dataset an experiment is scored on -> the metric its tables lead with (its track's). A
    pure function of the config, so that the parse-time report targets need no track's rule file."""
    return track_of(exp).main_metrics(exp, datasets)


def preparation_entry(entry: dict) -> dict:
    """A dataset's entry as the data rules see it: without :data:`SCORING_DATASET_KEYS` and
    :data:`PLAN_DATASET_KEYS`."""
    return {key: value for key, value in entry.items() if key not in SCORING_DATASET_KEYS + PLAN_DATASET_KEYS}

#: settings that change how many devices a job spreads over, never what it makes (``devices``: the
#: same training; ``encode_devices``: the same array; trimbench/jobs/launch.py): kept out of the
#: params Snakemake compares to decide a re-run. A job gets them as its resource ``gpu``
#: (``resources: gpu=exp_param("train", "devices")`` in the rules; ``Job.devices``), which that
#: comparison leaves out: resources are the scheduler's, not the step's (`--rerun-triggers`).
DEVICE_SETTINGS = ("devices", "encode_devices")

#: settings that change how a training runs, never what it makes (``checkpoint_steps``: how often it
#: saves a state to resume from): kept out of the params Snakemake compares as well. A training job
#: gets them as its param ``resume`` (:func:`resume_settings`), given by a params function of the
#: job's ``resources``: Snakemake counts such a param as derived and leaves it out of that
#: comparison (its params rerun trigger), so a changed checkpoint interval re-trains nothing.
RESUME_SETTINGS = ("checkpoint_steps",)


def tracked(settings):
    """``settings`` without the :data:`DEVICE_SETTINGS` and :data:`RESUME_SETTINGS`, at any depth (a
    whole experiment's config as a param too): what a rule's params hold, so that a change of
    devices or of the checkpoint interval re-runs nothing."""
    if isinstance(settings, dict):
        return {key: tracked(value) for key, value in settings.items()
                if key not in DEVICE_SETTINGS + RESUME_SETTINGS}
    if isinstance(settings, list):
        return [tracked(item) for item in settings]
    return settings


def resume_settings(settings: dict) -> dict:
    """The :data:`RESUME_SETTINGS` of a training's section, for its job's ``resume`` param."""
    return {key: settings[key] for key in RESUME_SETTINGS if key in settings}


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
            raise unknown_name("experiment", name, config["experiments"], "only")
    return {**config, "experiments": {name: exp for name, exp in config["experiments"].items()
                                      if name in config["only"]}}


def tracks_left_out(raw: dict, config: dict) -> set[str]:
    """The tracks of the experiments ``only`` leaves out of a run (``raw``: the config as read,
    ``config``: as :func:`prepare` returned it). A view across experiments reads the run's
    experiments only: the scoreboard and Pareto figures (every track) and a track's side-by-side
    views and claims (its experiments) would be rewritten from a subset, so a run that leaves some
    of their experiments out leaves those views alone (rules/functions/targets.smk)."""
    return {exp["track"] for name, exp in raw["experiments"].items() if name not in config["experiments"]}


def used_splits(config: dict) -> dict[str, dict[str, str]]:
    """Dataset -> each of our split names the experiments read -> the config key that reads it
    (the splits the track rule files ask the data rules for: rules/functions/dense.smk, electra.smk)."""
    used: dict[str, dict[str, str]] = {}

    def use(dataset, split, key):
        used.setdefault(dataset, {}).setdefault(split, key)

    for name, exp in config["experiments"].items():
        for dataset, split, key in track_of(exp).used_splits(exp):
            use(dataset, split, f"experiments.{name}.{key}")
    return used


@contextmanager
def _named_by_key():
    """A contract or source mismatch as one ConfigError naming its key."""
    try:
        yield
    except contracts.Mismatch as mismatch:
        raise ConfigError(f"config key {mismatch.key}: {mismatch}") from None
    except contracts.ContractError as error:
        raise ConfigError(str(error)) from None


def check_source_columns(config: dict, workdir: Path) -> None:
    """The columns each gensim, local or word-similarity dataset the experiments read is mapped to
    exist in it (its builder's columns, its files' headers), as check_contracts checks hub ones."""
    with _named_by_key():
        for name, splits in used_splits(config).items():
            if name in config["datasets"]:
                column_checks.check_source_columns(name, config["datasets"][name], splits, workdir)


def check_contracts(config: dict) -> None:
    """Hub datasets and models against their contracts (reference/hub): before smoke mode swaps
    the hub models for tiny ones, so that smoke mode fails where the cluster would."""
    with _named_by_key():
        for name, entry in config["models"].items():
            model_checks.check_model(name, entry)
        splits = used_splits(config)
        for name, entry in config["datasets"].items():
            dataset_checks.check_dataset(name, entry, splits.get(name, {}))
        for name, exp in config["experiments"].items():
            for file in track_of(exp).hub_files(exp):
                dataset_checks.check_files(f"experiments.{name}.{file.key}", file.repo, file.revision, file.filename)


def prepare(config: dict, workdir: str | Path = ".") -> dict:
    """Validate ``config`` (as Snakemake loaded it) and return the complete, checked config.

    Smoke mode is applied after validation so that the smoke config is validated too.
    """
    workdir = Path(workdir)
    config = _select_experiments(validate_schema(_coerce_switches(config)))
    check_contracts(config)
    check_lengths(config, workdir)
    # Local copies replace the hub entries after the contracts have checked them as on the hub.
    config, local_records = local.apply(config, workdir)
    if local_records:
        config = validate_schema(config)
        check_lengths(config, workdir)
    if config["smoke"]:
        config = validate_schema(smoke.apply(config))
    for name, entry in config["models"].items():
        if entry["source"] == "tiny" and entry["vocab_from"] not in config["models"]:
            raise unknown_name("model", entry["vocab_from"], config["models"], f"models.{name}.vocab_from")
    for name, exp in config["experiments"].items():
        track_of(exp).check_experiment(name, exp, config, workdir)
    check_source_columns(config, workdir)
    check_bm25(config)
    check_plan_gpu(config)
    for name, lines in local_records.items():
        config["experiments"][name]["_local_copies"] = list(dict.fromkeys(lines))
    return canonical(config)


def check_plan_gpu(config: dict) -> None:
    """The cost plan's GPU (plan_gpu, among the known and plan_gpus') and the user's GPUs' fields:
    a typo is one error listing the known GPUs, before any job (the cluster's requests are priced on it)."""
    try:
        find_gpu(config["plan_gpu"], gpu_table(config["plan_gpus"]))
    except ConfigError as error:
        raise ConfigError(f"config key plan_gpu / plan_gpus: {error}") from None


def corpus_per_split(entry: dict) -> bool:
    """Lee's and Home Depot's builders make each split's own corpus, without document titles; a BEIR
    or Tevatron dataset has one corpus for every split, and may have titles (its BM25 index job checks)."""
    return entry["source"] == "gensim" or entry.get("builder") == "homedepot"


def bm25_settings(exp: dict) -> dict:
    """What the BM25 baseline shares with the experiment's other methods (the search depth ``top_k``,
    the average over datasets), as its track's face reads them."""
    return track_of(exp).bm25_settings(exp)


def check_bm25(config: dict) -> None:
    """A multifield BM25 index of a corpus without titles: one error naming the dataset, before any job."""
    for name, exp in config["experiments"].items():
        bm25 = exp.get("bm25")
        if not track_of(exp).bm25 or not bm25["enabled"] or bm25["fields"] != "multifield":
            continue
        for dataset in exp["evaluation"]["datasets"]:
            if corpus_per_split(config["datasets"][dataset]):
                raise ConfigError(f"config key experiments.{name}.bm25.fields: multifield needs document titles "
                                  f"and dataset '{dataset}' has none: set it to flat")


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
