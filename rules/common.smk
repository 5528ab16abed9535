# The config (read and validated once), wildcard constraints and the helpers every rule file uses.
# Each track's own helpers sit at the top of its rule file; the track dispatch is rules/targets.smk.
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

# trimbench is installed in the project's venv; with --sdm conda the rule envs lack it, so this
# file and the scripts (through scripts/_repo.py) also find it beside the Snakefile.
sys.path.insert(0, workflow.basedir)

from trimbench.config import prepare as tb_config
from trimbench.config import profiles as tb_profiles
from trimbench import tracks as tb_tracks
from trimbench.jobs import artifacts as tb_artifacts
from trimbench.jobs import packaged as tb_packaged
from trimbench.plan import resources as tb_plan_resources
from trimbench.config import schema as tb_schema
from trimbench.errors import ConfigError
from trimbench.models import local_folder

# The config is read here, not by a `configfile:` directive: config.yaml (the embedded default)
# only when no --configfile is given, so that a preset runs alone (several --configfile files are
# merged in order, as Snakemake does), and every file through trimbench's reader, which names the
# file and line of a YAML error and rejects a key given twice. Snakemake has read the --configfile
# files already (into `config`); they are read again for those checks. A --config on the command
# line goes on top of the profiles' config: entries, which Snakemake would drop (a cluster profile's
# plan_max_runtime: trimbench/config/profiles.py).
try:
    RAW_CONFIG = tb_schema.load_config(
        workflow.config_settings.configfiles,
        {
            **tb_profiles.profile_config(
                sys.argv, folders=[os.environ.get("PWD"), workflow.basedir]
            ),
            **workflow.config_settings.config,
        },
    )
    CONFIG = tb_config.prepare(RAW_CONFIG, Path.cwd())
    tb_config.check_smoke_report(CONFIG, sys.argv)
except ConfigError as error:
    raise WorkflowError(f"Invalid configuration: {error}") from None
# `config` as the run sees it (the report's front page lists its experiments), and config.yaml
# among the run's config files (the report's and --archive's list) where it was read.
config.clear()
config.update(RAW_CONFIG)
if not workflow.config_settings.configfiles:
    workflow.configfiles.append(tb_schema.DEFAULT_CONFIG_FILE)

# A smoke run writes under results-smoke/, never over a real run in results/.
RESULTS = tb_artifacts.results_root(CONFIG)
DATASETS = CONFIG["datasets"]
MODELS = CONFIG["models"]
EXPERIMENTS = CONFIG["experiments"]
# `--config only=`: views across experiments of these tracks are left alone (all_targets)
TRACKS_LEFT_OUT = tb_config.tracks_left_out(RAW_CONFIG, CONFIG)


wildcard_constraints:
    experiment="|".join(map(re.escape, EXPERIMENTS)) or "NONE",
    dataset="[^/]+",
    split="[^/]+",
    model="[^/]+",
    variant="[^/]+",
    track="[^/]+",


def names_regex(names):
    return "|".join(map(re.escape, names)) or "NONE"


def in_workdir(path):
    """``path`` relative to the working directory where it lies inside it: a checkout or working
    directory moved elsewhere then names the same input files, and Snakemake re-runs nothing.
    """
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def model_dir(name):
    """A registry model's folder as an input (local, or fetch_model's); none for no model (None)
    or a packaged model (see packaged)."""
    if name is None or MODELS[name]["source"] == "package":
        return []
    folder = local_folder(MODELS[name], Path.cwd())
    return in_workdir(folder) if folder is not None else f"{RESULTS}/models/{name}"


def packaged(**models):
    """The param `packaged`, given the registry model behind each named input that may be one
    (None for none): each packaged model by package, subfolder and version, not by a path into the
    environment, which a copied checkout or another venv changes (trimbench.jobs.packaged.packaged_models).
    None packaged: a value the params trigger skips, so the params of runs on hub and local models
    stay what they were."""
    return tb_packaged.packaged_models(MODELS, **models) or SimpleNamespace()


def data_table(dataset, split):
    return f"{RESULTS}/data/{dataset}/{split}.parquet"


def retrieval_data(dataset, split):
    """A BEIR-style split: corpus, queries and qrels tables in one folder."""
    return f"{RESULTS}/data/{dataset}/beir-{split}"


def experiment_dir(name):
    """An experiment's outputs: results/<track>/<experiment>, so a path names its rule file."""
    return f"{RESULTS}/{EXPERIMENTS[name]['track']}/{name}"


def experiment(wildcards):
    return EXPERIMENTS[wildcards.experiment]


def scores_table_of(name):
    """An experiment's score table (collect_scores'): what its views and the reports read."""
    return f"{experiment_dir(name)}/scores.parquet"


def scores_table(wildcards):
    return scores_table_of(wildcards.experiment)


def trained_model(name, variant):
    """A trained variant's model folder (train_model's, train_retriever's, train_splade's)."""
    return f"{experiment_dir(name)}/models/{variant}"


def variant_scores_of(name, variant):
    """A variant's score table (each track's scoring rule's), which collect_scores joins."""
    return f"{experiment_dir(name)}/scores/{variant}.parquet"


def exp_param(*keys):
    """A params function reading ``EXPERIMENTS[wildcards.experiment][key][key]...`` (PyPSA's
    ``config_provider``): ``datasets=exp_param("evaluation", "datasets")``."""

    def get(wildcards):
        value = experiment(wildcards)
        for key in keys:
            value = value[key]
        return value

    return get


PLANNER = tb_plan_resources.RulePlanner(CONFIG, Path.cwd())
# the rules whose runtime and mem_mb are planned (the GPU rules)
PLANNED_RULES = set()


def planned(rule_name, kind, local):
    """A GPU job's SLURM ``runtime`` (minutes) or ``mem_mb``, from its plan (trimbench.plan: counted
    FLOPs on plan_gpu x plan_margin), times the attempt; ``local``, times the attempt, where the plan
    cannot price the job (the dry run says why) and in a local run, which queues nothing and counts
    nothing (trimbench/plan/resources.py). ``local``: a number, or a function of the wildcards.
    """

    PLANNED_RULES.add(rule_name)

    def value(wildcards, attempt):
        fallback = local(wildcards) if callable(local) else local
        queued = not workflow.local_exec or workflow.dryrun
        return PLANNER.resource(
            rule_name, dict(wildcards.items()), kind, fallback, attempt, queued=queued
        )

    return value


onstart:
    # A queued run submits no job planned over plan_max_runtime unless plan_submit_over_limit: every
    # planned job's resources are asked for (each priced once) before any job starts.
    if not workflow.local_exec:
        for job in workflow.dag.needrun_jobs():
            if job.rule.name in PLANNED_RULES:
                job.resources
        PLANNER.refuse_over_limit()


def per_attempt(base):
    """A resource that grows with each attempt: ``base`` on the first, twice it on the second, ..."""
    return lambda wildcards, attempt: base * attempt


def experiment_settings(wildcards):
    """The experiment's config as a view's param: without the logging-only settings, so that
    changing those re-runs nothing (trimbench.config.tracked)."""
    return tb_config.tracked(experiment(wildcards))


def experiment_track(wildcards):
    """The report groups results by track (category), then experiment (subcategory)."""
    return experiment(wildcards)["track"]


def track_experiments(*tracks):
    """The names of the experiments of ``tracks``, in config order."""
    return [name for name, exp in EXPERIMENTS.items() if exp["track"] in tracks]


def reference_path(name):
    """Published numbers; a relative path is relative to the workflow, not the working directory."""
    path = Path(EXPERIMENTS[name]["reference"]["file"])
    return in_workdir(path if path.is_absolute() else Path(workflow.basedir) / path)


def reference_file(wildcards):
    return reference_path(wildcards.experiment)


def eval_retrieval_data(wildcards):
    """The BEIR-style folders of the experiment's evaluation datasets (dense retrieval, SPLADE)."""
    evaluation = experiment(wildcards)["evaluation"]
    return [retrieval_data(ds, evaluation["split"]) for ds in evaluation["datasets"]]


def relevance_level(wildcards):
    """Each evaluation dataset's lowest judgement that MRR and recall count relevant."""
    datasets = experiment(wildcards)["evaluation"]["datasets"]
    return {ds: DATASETS[ds]["relevance_level"] for ds in datasets}


def ignore_identical_ids(wildcards):
    """Each evaluation dataset -> whether a query's hit on its own id is dropped (BEIR's
    ignore_identical_ids; trimbench.config.prepare.ignores_identical_ids)."""
    datasets = experiment(wildcards)["evaluation"]["datasets"]
    return {ds: tb_config.ignores_identical_ids(DATASETS[ds]) for ds in datasets}


def training_threads(train):
    """CPUs a training job uses: per device (train.devices ranks), its process and each process
    tokenising batches beside it."""
    return train.get("devices", 1) * (1 + train.get("dataloader_workers", 0))
