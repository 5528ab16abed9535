# Input functions and parse-time tables of rules/report.smk.
# The report's status category holds one subcategory, which its menu entry opens directly (one
# click from the front page; a result without a subcategory would sit under Snakemake's "Other").
STATUS_SUBCATEGORY = "status and every common cell"


def pareto_path(dataset, cost, ext):
    return f"{RESULTS}/scoreboard/pareto/{dataset}.{cost}.{ext}"


def experiments_per_dataset(skip_tracks=()):
    """Every dataset some experiment (of a track not in ``skip_tracks``) is scored on (config
    order) -> how many experiments are."""
    counts = {}
    for name, exp in EXPERIMENTS.items():
        if exp["track"] in skip_tracks:
            continue
        for dataset in tb_config.dataset_main_metrics(exp, DATASETS):
            counts[dataset] = counts.get(dataset, 0) + 1
    return counts


# The front page shows the quality-vs-cost Pareto of the dataset most experiments share (ties:
# config order).
# Sparse experiments have no (layer, dim) cost: only datasets dense experiments are scored on get
# a Pareto figure (a SPLADE-only config gets one, empty, for the status page).
DATASET_COUNTS = experiments_per_dataset(tb_tracks.names(layer_dim_cost=False)) or dict(
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


def experiment_scores(wildcards):
    """The score tables collect_scores joins; TRACKS (rules/targets.smk) is read when the DAG is
    built, after every rule file is included."""
    return TRACKS[experiment_track(wildcards)].scores(wildcards.experiment)


MAIN_METRICS = [
    tb_config.dataset_main_metrics(EXPERIMENTS[name], DATASETS) for name in EXPERIMENTS
]


#: the claims rule's outputs per experiment
CLAIMS_OUTPUTS = ("md", "csv", "html")


def claims_outputs(name):
    return [f"{experiment_dir(name)}/claims.{ext}" for ext in CLAIMS_OUTPUTS]


def sibling_experiments(wildcards):
    """The experiments of this one's track (config order): claims compare them."""
    return track_experiments(experiment_track(wildcards))


def sibling_scores(wildcards):
    return [scores_table_of(name) for name in sibling_experiments(wildcards)]
