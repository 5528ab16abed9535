# Config validation, expansion of experiments into targets, input functions, wildcard constraints.
import re
import sys
from pathlib import Path

# trimbench is installed in the project's venv; with --sdm conda the rule envs lack it, so this
# file and the scripts (through scripts/_repo.py) also find it beside the Snakefile.
sys.path.insert(0, workflow.basedir)

from trimbench import config as tb_config
from trimbench import truncation as tb_truncation
from trimbench.models import local_folder

try:
    CONFIG = tb_config.prepare(config, Path.cwd())
except tb_config.ConfigError as error:
    raise WorkflowError(f"Invalid configuration: {error}") from None

RESULTS = "results"
DATASETS = CONFIG["datasets"]
MODELS = CONFIG["models"]
EXPERIMENTS = CONFIG["experiments"]
VARIANTS = {
    name: {v.name: v for v in tb_config.variants(exp, exp["_depth"])}
    for name, exp in EXPERIMENTS.items()
    if exp["track"] != "electra"  # runs, not variants: rules/truncation.smk
}


wildcard_constraints:
    experiment="|".join(map(re.escape, EXPERIMENTS)) or "NONE",
    dataset="[^/]+",
    split="[^/]+",
    model="[^/]+",
    variant="[^/]+",
    track="[^/]+",
    cost="|".join(tb_config.PARETO_COSTS),


def model_dir(name):
    """Where a registry model's folder is: shipped (package, local) or made by fetch_model."""
    folder = local_folder(MODELS[name], Path.cwd())
    return str(folder) if folder is not None else f"{RESULTS}/models/{name}"


def data_table(dataset, split):
    return f"{RESULTS}/data/{dataset}/{split}.parquet"


def experiment(wildcards):
    return EXPERIMENTS[wildcards.experiment]


def experiment_track(wildcards):
    """The report groups results by track (category), then experiment (subcategory)."""
    return experiment(wildcards)["track"]


def variant(wildcards):
    return VARIANTS[wildcards.experiment][wildcards.variant]


def trained_variants(name):
    return [
        v for v in VARIANTS[name].values() if v.trained and v.model_variant == v.name
    ]


def variant_model(wildcards):
    v = variant(wildcards)
    if not v.trained:
        return model_dir(experiment(wildcards)["model"])
    return f"{RESULTS}/{wildcards.experiment}/models/{v.model_variant}"


def variant_embeddings(wildcards):
    """Embeddings a variant is scored on: BERT-S at full depth reuses the full model's."""
    return f"{RESULTS}/{wildcards.experiment}/embeddings/{variant(wildcards).model_variant}"


def encoded_variants(name):
    return [v for v in VARIANTS[name].values() if v.model_variant == v.name]


def reference_path(name):
    """Published numbers; a relative path is relative to the workflow, not the working directory."""
    path = Path(EXPERIMENTS[name]["reference"]["file"])
    return str(path if path.is_absolute() else Path(workflow.basedir) / path)


def reference_file(wildcards):
    return reference_path(wildcards.experiment)


#: tracks whose experiments are also shown side by side (the seed's v1 and v2 halves)
SIDE_BY_SIDE_TRACKS = ("2dmse-sts",)


def version_experiments(track):
    """Experiments shown side by side in one table (the seed's v1 and v2 halves), config order."""
    return [name for name, exp in EXPERIMENTS.items() if exp["track"] == track]


def version_block(name):
    exp = EXPERIMENTS[name]
    return {
        "label": name,
        "reference_variant": exp["reference"]["variant"],
        "dataset": exp["evaluation"]["average_name"],
        "metric": exp["evaluation"]["main_metric"],
    }


def track_outputs(track):
    """Views across a track's experiments: only where there is more than one to compare."""
    if track not in SIDE_BY_SIDE_TRACKS or len(version_experiments(track)) < 2:
        return []
    base = f"{RESULTS}/tracks/{track}"
    return [
        *expand(f"{base}/sts_versions.{{ext}}", ext=["md", "csv", "html"]),
        *expand(f"{base}/sts_versions_layers.{{ext}}", ext=["png", "svg"]),
    ]


def score_meta(wildcards):
    """The columns every score row of this variant shares (the tidy table's key)."""
    exp, v = experiment(wildcards), variant(wildcards)
    return {
        "experiment": wildcards.experiment,
        "track": exp["track"],
        "variant": v.method,
        "model": exp["model"],
        "split": exp["evaluation"]["split"],
        "seed": exp["train"]["seed"] if v.trained else None,
    }


# Settings that only one objective reads: left out of the other's params, so that adding an
# objective's settings (with defaults) does not re-trigger the other's trained models.
OBJECTIVE_ONLY_SETTINGS = {
    "mnrl": ("scale", "n_dims_per_step", "kl_temperature", "kl_div_weight"),
    "angle": ("angle", "ese"),
}


def train_settings(wildcards):
    exp = experiment(wildcards)
    other = [o for o in OBJECTIVE_ONLY_SETTINGS if o != exp["objective"]]
    unused = {key for o in other for key in OBJECTIVE_ONLY_SETTINGS[o]}
    return {k: v for k, v in exp["train"].items() if k not in unused}


def train_data(wildcards):
    train = experiment(wildcards)["train"]
    return data_table(train["dataset"], train["split"])


def eval_tables(wildcards):
    evaluation = experiment(wildcards)["evaluation"]
    return [data_table(ds, evaluation["split"]) for ds in evaluation["datasets"]]


def experiment_scores(wildcards):
    if experiment(wildcards)["track"] == "electra":
        return truncation_runs(wildcards.experiment)
    return [
        f"{RESULTS}/{wildcards.experiment}/scores/{v}.parquet"
        for v in VARIANTS[wildcards.experiment]
    ]


def experiment_outputs(name):
    if EXPERIMENTS[name]["track"] == "electra":
        return truncation_outputs(name)
    base = f"{RESULTS}/{name}"
    return [
        f"{base}/scores.parquet",
        *expand(f"{base}/tables/sts_grid.{{ext}}", ext=["md", "csv", "html"]),
        f"{base}/tables/sts_vs_published.csv",
        *expand(f"{base}/figures/sts_layers.{{ext}}", ext=["png", "svg"]),
    ]


def dataset_main_metrics(name):
    """Each dataset an experiment is scored on -> the metric its tables lead with."""
    exp = EXPERIMENTS[name]
    if exp["track"] == "electra":
        return {
            task: tb_truncation.MAIN_METRIC[tb_truncation.objective(DATASETS[task])]
            for task in exp["tasks"]
        }
    evaluation = exp["evaluation"]
    return dict.fromkeys(evaluation["datasets"], evaluation["main_metric"])


def experiments_per_dataset():
    """Every dataset some experiment is scored on (config order) -> how many experiments are."""
    counts = {}
    for name in EXPERIMENTS:
        for dataset in dataset_main_metrics(name):
            counts[dataset] = counts.get(dataset, 0) + 1
    return counts


def pareto_path(dataset, cost, ext):
    return f"{RESULTS}/scoreboard/pareto/{dataset}.{cost}.{ext}"


# The front page shows the quality-vs-cost Pareto of the dataset most experiments share (ties:
# config order).
DATASET_COUNTS = experiments_per_dataset()
HEADLINE_PARETO = (
    max(DATASET_COUNTS, key=DATASET_COUNTS.get),
    tb_config.PARETO_COSTS[0],
)
SCOREBOARD = [
    f"{RESULTS}/scoreboard/{name}"
    for name in ("status.csv", "status.md", "status.html", "comparisons.html")
] + [
    pareto_path(dataset, cost, ext)
    for dataset in DATASET_COUNTS
    for cost in tb_config.PARETO_COSTS
    for ext in ("csv", "png", "svg")
]


def all_targets():
    tracks = sorted({exp["track"] for exp in EXPERIMENTS.values()})
    return (
        [path for name in EXPERIMENTS for path in experiment_outputs(name)]
        + [path for track in tracks for path in track_outputs(track)]
        + SCOREBOARD
    )


def stage_targets(stage):
    """Targets of one stage over every experiment (rules all_data, all_models, ...)."""
    out = []
    for name, exp in EXPERIMENTS.items():
        if exp["track"] == "electra":
            out += truncation_stage_targets(name, stage)
            continue
        evaluation = exp["evaluation"]
        if stage == "data":
            out += [
                data_table(ds, evaluation["split"]) for ds in evaluation["datasets"]
            ]
            if trained_variants(name):
                out.append(data_table(exp["train"]["dataset"], exp["train"]["split"]))
        elif stage == "models":
            out += [f"{RESULTS}/{name}/models/{v.name}" for v in trained_variants(name)]
        elif stage == "embeddings":
            out += [
                f"{RESULTS}/{name}/embeddings/{v.name}" for v in encoded_variants(name)
            ]
        elif stage == "scores":
            out.append(f"{RESULTS}/{name}/scores.parquet")
    return out
