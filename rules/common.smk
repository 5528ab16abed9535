# Config validation, expansion of experiments into targets, input functions, wildcard constraints.
import re
import sys
from pathlib import Path

# trimbench is installed in the project's venv; with --sdm conda the rule envs lack it, so this
# file and the scripts (through scripts/_repo.py) also find it beside the Snakefile.
sys.path.insert(0, workflow.basedir)

from trimbench import config as tb_config
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


def model_dir(name):
    """Where a registry model's folder is: shipped (package, local) or made by fetch_model."""
    folder = local_folder(MODELS[name], Path.cwd())
    return str(folder) if folder is not None else f"{RESULTS}/models/{name}"


def data_table(dataset, split):
    return f"{RESULTS}/data/{dataset}/{split}.parquet"


def experiment(wildcards):
    return EXPERIMENTS[wildcards.experiment]


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


def reference_file(wildcards):
    """Published numbers; a relative path is relative to the workflow, not the working directory."""
    path = Path(experiment(wildcards)["reference"]["file"])
    return str(path if path.is_absolute() else Path(workflow.basedir) / path)


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


def all_targets():
    return [path for name in EXPERIMENTS for path in experiment_outputs(name)]


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
