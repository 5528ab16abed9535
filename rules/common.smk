# Config validation, expansion of experiments into targets, input functions, wildcard constraints.
import re
import sys
from pathlib import Path

# trimbench is installed in the project's venv; with --sdm conda the rule envs lack it, so this
# file and the scripts (through scripts/_repo.py) also find it beside the Snakefile.
sys.path.insert(0, workflow.basedir)

from trimbench.config import prepare as tb_config
from trimbench.config import schema as tb_schema
from trimbench.dense import variants as tb_variants
from trimbench.electra import checks as tb_electra
from trimbench.dense.ablations import TITLES as ABLATION_TITLES, ablation_groups
from trimbench.models import local_folder

# The config is read here, not by a `configfile:` directive: config.yaml (the embedded default)
# only when no --configfile is given, so that a preset runs alone (several --configfile files are
# merged in order, as Snakemake does), and every file through trimbench's reader, which names the
# file and line of a YAML error and rejects a key given twice. Snakemake has read the --configfile
# files already (into `config`); they are read again for those checks.
try:
    RAW_CONFIG = tb_schema.load_config(
        workflow.config_settings.configfiles, workflow.config_settings.config
    )
    CONFIG = tb_config.prepare(RAW_CONFIG, Path.cwd())
except tb_schema.ConfigError as error:
    raise WorkflowError(f"Invalid configuration: {error}") from None
# `config` as the run sees it (the report's front page lists its experiments), and config.yaml
# among the run's config files (the report's and --archive's list) where it was read.
config.clear()
config.update(RAW_CONFIG)
if not workflow.config_settings.configfiles:
    workflow.configfiles.append(tb_schema.DEFAULT_CONFIG_FILE)

RESULTS = "results"
DATASETS = CONFIG["datasets"]
MODELS = CONFIG["models"]
EXPERIMENTS = CONFIG["experiments"]
VARIANTS = {
    name: {v.name: v for v in tb_variants.variants(exp, exp["_depth"])}
    for name, exp in EXPERIMENTS.items()
    # runs, not variants: rules/electra.smk and rules/splade.smk
    if exp["track"] not in tb_config.OWN_SHAPE_TRACKS
}


wildcard_constraints:
    experiment="|".join(map(re.escape, EXPERIMENTS)) or "NONE",
    dataset="[^/]+",
    split="[^/]+",
    model="[^/]+",
    variant="[^/]+",
    track="[^/]+",


def in_workdir(path):
    """``path`` relative to the working directory where it lies inside it: a checkout or working
    directory moved elsewhere then names the same input files, and Snakemake re-runs nothing.
    """
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def model_dir(name):
    """Where a registry model's folder is: shipped (package, local) or made by fetch_model."""
    folder = local_folder(MODELS[name], Path.cwd())
    return in_workdir(folder) if folder is not None else f"{RESULTS}/models/{name}"


def data_table(dataset, split):
    return f"{RESULTS}/data/{dataset}/{split}.parquet"


def experiment(wildcards):
    return EXPERIMENTS[wildcards.experiment]


def exp_param(*keys):
    """A params function reading ``EXPERIMENTS[wildcards.experiment][key][key]...`` (PyPSA's
    ``config_provider``): ``datasets=exp_param("evaluation", "datasets")``."""

    def get(wildcards):
        value = experiment(wildcards)
        for key in keys:
            value = value[key]
        return value

    return get


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
    return in_workdir(path if path.is_absolute() else Path(workflow.basedir) / path)


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
    if track in tb_variants.RETRIEVAL_TRACKS:
        return retrieval_track_outputs(track)
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


def train_settings(wildcards):
    return tb_variants.variant_train_settings(
        experiment(wildcards), variant(wildcards).method
    )


def retriever_settings(wildcards):
    return tb_variants.variant_retrieval_settings(
        experiment(wildcards), variant(wildcards).method
    )


def training_threads(train):
    """CPUs a training job uses: per device (train.devices ranks), its process and each process
    tokenising batches beside it."""
    return train.get("devices", 1) * (1 + train.get("dataloader_workers", 0))


def train_data(wildcards):
    train = experiment(wildcards)["train"]
    return data_table(train["dataset"], train["split"])


def eval_tables(wildcards):
    evaluation = experiment(wildcards)["evaluation"]
    return [data_table(ds, evaluation["split"]) for ds in evaluation["datasets"]]


def experiment_scores(wildcards):
    if experiment(wildcards)["track"] == "electra":
        return electra_run_scores(wildcards.experiment)
    if experiment(wildcards)["track"] == "splade":
        return splade_scores(wildcards.experiment)
    return [
        f"{RESULTS}/{wildcards.experiment}/scores/{v}.parquet"
        for v in VARIANTS[wildcards.experiment]
    ]


def experiment_outputs(name):
    if EXPERIMENTS[name]["track"] == "electra":
        return electra_outputs(name)
    if EXPERIMENTS[name]["track"] == "splade":
        return splade_outputs(name)
    if EXPERIMENTS[name]["track"] in tb_variants.RETRIEVAL_TRACKS:
        return retrieval_outputs(name)
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
            task: tb_electra.MAIN_METRIC[tb_electra.objective(DATASETS[task])]
            for task in exp["tasks"]
        }
    evaluation = exp["evaluation"]
    return dict.fromkeys(evaluation["datasets"], evaluation["main_metric"])


def experiments_per_dataset(skip_tracks=()):
    """Every dataset some experiment (of a track not in ``skip_tracks``) is scored on (config
    order) -> how many experiments are."""
    counts = {}
    for name in EXPERIMENTS:
        if EXPERIMENTS[name]["track"] in skip_tracks:
            continue
        for dataset in dataset_main_metrics(name):
            counts[dataset] = counts.get(dataset, 0) + 1
    return counts


def pareto_path(dataset, cost, ext):
    return f"{RESULTS}/scoreboard/pareto/{dataset}.{cost}.{ext}"


# The front page shows the quality-vs-cost Pareto of the dataset most experiments share (ties:
# config order).
# Sparse experiments have no (layer, dim) cost: only datasets dense experiments are scored on get
# a Pareto figure (a SPLADE-only config gets one, empty, for the status page).
DATASET_COUNTS = experiments_per_dataset(tb_config.SPARSE_TRACKS) or dict(
    list(experiments_per_dataset().items())[:1]
)
HEADLINE_PARETO = (
    max(DATASET_COUNTS, key=DATASET_COUNTS.get),
    tb_config.PARETO_COSTS[0],
)
PARETO_FIGURES = [
    (dataset, cost) for dataset in DATASET_COUNTS for cost in tb_config.PARETO_COSTS
]
SCOREBOARD = [
    f"{RESULTS}/scoreboard/{name}"
    for name in ("status.csv", "status.md", "status.html", "comparisons.html")
] + [
    pareto_path(dataset, cost, ext)
    for dataset, cost in PARETO_FIGURES
    for ext in ("csv", "png", "svg")
]


def exported_models(name):
    """The standalone trimmed models of an experiment's export cells (rules/export.smk)."""
    export = EXPERIMENTS[name].get("export") or {"cells": []}
    return [
        f"{RESULTS}/{name}/exported/{variant}/L{layer}_d{dim}"
        for variant in export["cells"] and export["variants"]
        for layer, dim in export["cells"]
    ]


def all_targets():
    tracks = sorted({exp["track"] for exp in EXPERIMENTS.values()})
    return (
        [path for name in EXPERIMENTS for path in experiment_outputs(name)]
        + [path for track in tracks for path in track_outputs(track)]
        + [path for name in EXPERIMENTS for path in exported_models(name)]
        + SCOREBOARD
    )


def stage_targets(stage):
    """Targets of one stage over every experiment (rules all_data, all_models, ...)."""
    out = []
    for name, exp in EXPERIMENTS.items():
        if exp["track"] == "electra":
            out += electra_stage_targets(name, stage)
            continue
        if exp["track"] == "splade":
            out += splade_stage_targets(name, stage)
            continue
        evaluation = exp["evaluation"]
        retrieval_targets = retrieval_stage_targets(name, stage)
        if retrieval_targets is not None:
            out += retrieval_targets
        elif stage == "data":
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


# --- retrieval tracks (2DMSE retrieval, Home Depot): the rules are in rules/retrieval.smk ---
RETRIEVAL_EXPERIMENTS = [
    name
    for name, exp in EXPERIMENTS.items()
    if exp["track"] in tb_variants.RETRIEVAL_TRACKS
]
GROUP_TRAINED_EXPERIMENTS = [
    name
    for name, exp in EXPERIMENTS.items()
    if exp["track"] in tb_variants.GROUP_TRAINED_TRACKS
]


def names_regex(names):
    return "|".join(map(re.escape, names)) or "NONE"


def retrieval_data(dataset, split):
    """A BEIR-style split: corpus, queries and qrels tables in one folder."""
    return f"{RESULTS}/data/{dataset}/beir-{split}"


def miner_key(negatives):
    """The cached mining stage's name: the miner and every setting that changes its output."""
    if negatives["miner"] == "dataset":  # the training dataset's own: no depth, no keep
        key = "dataset"
    else:
        key = f"{negatives['miner']}-d{negatives['depth']}-k{negatives['keep']}"
    if negatives["miner"] == "dense":
        key += f"-{negatives['model']}"
    if negatives["cross_encoder"]:
        key += f"-ce-{negatives['cross_encoder']}-m{negatives['margin']:g}"
    return key


def negatives_path(name):
    exp = EXPERIMENTS[name]
    train, negatives = exp["train"], exp["retrieval"]["negatives"]
    return f"{RESULTS}/negatives/{train['dataset']}/{train['split']}/{miner_key(negatives)}.jsonl"


# miner key -> (settings, pooling, similarity) of the experiments that use it
MINERS = {
    miner_key(EXPERIMENTS[name]["retrieval"]["negatives"]): (
        EXPERIMENTS[name]["retrieval"]["negatives"],
        EXPERIMENTS[name]["pooling"],
        EXPERIMENTS[name]["retrieval"]["similarity"],
    )
    for name in GROUP_TRAINED_EXPERIMENTS
}


def retrieval_views(name):
    """Datasets the tables and figures show: the compared one, the others searching its corpus
    (TREC DL 2019 / 2020 beside MS MARCO dev), then the average when configured."""
    exp = EXPERIMENTS[name]
    compared = exp["reference"]["dataset"] or exp["evaluation"]["datasets"][0]
    views = [compared] + [
        ds
        for ds, first in exp["_corpus_of"].items()
        if first == exp["_corpus_of"].get(compared) and ds != compared
    ]
    if exp["retrieval"]["average_over"]:
        views.append(exp["retrieval"]["average_name"])
    return list(dict.fromkeys(views))


def retrieval_outputs(name):
    base = f"{RESULTS}/{name}"
    if EXPERIMENTS[name]["track"] == "homedepot":
        return [
            f"{base}/scores.parquet",
            *expand(f"{base}/tables/homedepot.{{ext}}", ext=["md", "csv", "html"]),
            *expand(f"{base}/figures/homedepot_recall.{{ext}}", ext=["png", "svg"]),
        ]
    return [
        f"{base}/scores.parquet",
        *expand(
            f"{base}/tables/retrieval_grid.{{view}}.{{ext}}",
            view=retrieval_views(name),
            ext=["md", "csv", "html"],
        ),
        *expand(
            f"{base}/figures/retrieval_layers.{{view}}.{{ext}}",
            view=retrieval_views(name),
            ext=["png", "svg"],
        ),
    ]


def retrieval_stage_targets(name, stage):
    """A retrieval experiment's targets of a stage where they differ from STS's (else None)."""
    if name not in RETRIEVAL_EXPERIMENTS:
        return [] if stage == "negatives" else None
    exp = EXPERIMENTS[name]
    if stage == "data":
        split = exp["evaluation"]["split"]
        out = [retrieval_data(ds, split) for ds in exp["evaluation"]["datasets"]]
        if name in GROUP_TRAINED_EXPERIMENTS and trained_variants(name):
            out.append(retrieval_data(exp["train"]["dataset"], exp["train"]["split"]))
        elif trained_variants(name):
            out.append(data_table(exp["train"]["dataset"], exp["train"]["split"]))
        return out
    if stage == "negatives":
        if name in GROUP_TRAINED_EXPERIMENTS and trained_variants(name):
            return [negatives_path(name)]
        return []
    return None


def retrieval_ablation_groups(track):

    names = version_experiments(track)
    return ablation_groups({name: EXPERIMENTS[name] for name in names})


def retrieval_track_outputs(track):
    """The ablation figures (loss variants, target-dim sets, fixed vs paired doc) found in the track."""
    return expand(
        f"{RESULTS}/tracks/{track}/ablation_{{group}}.{{ext}}",
        group=list(retrieval_ablation_groups(track)),
        ext=["png", "svg"],
    )


HOMEDEPOT_EXPERIMENTS = [
    name for name, exp in EXPERIMENTS.items() if exp["track"] == "homedepot"
]


def retrieval_eval_data(wildcards):
    evaluation = experiment(wildcards)["evaluation"]
    return [retrieval_data(ds, evaluation["split"]) for ds in evaluation["datasets"]]


def preparation_entry(wildcards):
    return tb_config.preparation_entry(DATASETS[wildcards.dataset])


def relevance_level(wildcards):
    """Each evaluation dataset's lowest judgement that MRR and recall count relevant."""
    datasets = experiment(wildcards)["evaluation"]["datasets"]
    return {ds: DATASETS[ds]["relevance_level"] for ds in datasets}


def passage_layer(wildcards):
    """Fixed-doc models score passages from the last layer (BERT-S models are cut: their own)."""
    exp, v = experiment(wildcards), variant(wildcards)
    fixed = exp["retrieval"]["passage_to_last_layer"] and v.method != "separate"
    return exp["_depth"] if fixed else None


def encoded_layers(wildcards):
    layers = list(variant(wildcards).eval_layers)
    extra = passage_layer(wildcards)
    return sorted(set(layers + ([extra] if extra else [])))


def variant_dims(wildcards):
    v = variant(wildcards)
    return [v.cut_dim] if v.cut_dim else experiment(wildcards)["grid"]["dims"]


def retrieval_view_metric(wildcards):
    """The compared dataset in the main metric; the others (the BEIR average: the seed's figures;
    TREC DL: graded judgements) in nDCG@10."""
    exp = experiment(wildcards)
    if wildcards.view == (
        exp["reference"]["dataset"] or exp["evaluation"]["datasets"][0]
    ):
        return exp["evaluation"]["main_metric"]
    return "ndcg@10"


def ablation_base(wildcards):
    """The plain 2DMSE experiment an ablation group is compared with."""
    return EXPERIMENTS[retrieval_ablation_groups(wildcards.track)[wildcards.group][0]]
