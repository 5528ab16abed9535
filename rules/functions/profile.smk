# Input functions and parse-time tables of rules/profile.smk.
from trimbench.profile import checks as tb_profile


def profile_dir(name, model=None):
    """A profile experiment's outputs: results/profile/<experiment>[/<model>]."""
    return str(Path(experiment_dir(name), model or ""))


#: each model's tables (rule profile_model), CSV
PROFILE_TABLES = ("quality", "encode", "search", "funnel", "flops", "recommend")


def profile_datasets(exp, kind):
    """The experiment's profiled datasets of one kind (sts / retrieval), config order."""
    return [d for d in exp["evaluation"]["datasets"] if DATASETS[d]["kind"] == kind]


def profile_input(exp, dataset):
    """A profiled dataset's prepared split: a table (kind sts) or a BEIR-style folder (retrieval)."""
    split = tb_profile.split_of(exp, dataset)
    if DATASETS[dataset]["kind"] == "sts":
        return data_table(dataset, split)
    return retrieval_data(dataset, split)


def profile_sts_tables(wildcards):
    exp = experiment(wildcards)
    return [profile_input(exp, d) for d in profile_datasets(exp, "sts")]


def profile_retrieval_folders(wildcards):
    exp = experiment(wildcards)
    return [profile_input(exp, d) for d in profile_datasets(exp, "retrieval")]


def profile_settings(wildcards):
    """What profile_model measures for one model (trimbench.profile.run.Settings, but the funnel)."""
    exp, model = experiment(wildcards), wildcards.model
    return {
        "layers": tb_profile.layers_of(exp, model),
        "dims": tb_profile.dims_of(exp, model),
        "precisions": exp["precisions"],
        "rescore_multiplier": exp["rescore_multiplier"],
        "repeats": exp["repeats"],
        "batch_size": exp["batch_size"],
        "speed_texts": exp["speed_texts"],
    }


def profile_figures(name):
    """The (task family, cost) of each Pareto figure: the families the experiment profiles."""
    kinds = {DATASETS[d]["kind"] for d in EXPERIMENTS[name]["evaluation"]["datasets"]}
    return [
        [family, cost]
        for family in ("sts", "retrieval")
        if family in kinds
        for cost in ("encode", "bytes")
    ]


def profile_figure_paths(name, ext):
    return [
        f"{profile_dir(name)}/figures/pareto.{family}.{cost}.{ext}"
        for family, cost in profile_figures(name)
    ]


def profile_model_tables(table):
    """One table of every model of the experiment (profile_report's input)."""
    return lambda wc: [
        f"{profile_dir(wc.experiment, model)}/{table}.csv"
        for model in experiment(wc)["models"]
    ]


def profile_scores(name):
    return [
        f"{profile_dir(name, model)}/scores.parquet"
        for model in EXPERIMENTS[name]["models"]
    ]


def profile_outputs(name):
    return [
        scores_table_of(name),
        f"{profile_dir(name)}/profile.html",
        *profile_figure_paths(name, "png"),
        *profile_figure_paths(name, "svg"),
        *[
            f"{profile_dir(name, model)}/recommended"
            for model in EXPERIMENTS[name]["models"]
        ],
    ]


def profile_stage_targets(name, stage):
    exp = EXPERIMENTS[name]
    if stage == "data":
        return [profile_input(exp, d) for d in exp["evaluation"]["datasets"]]
    if stage == "scores":
        return [scores_table_of(name)]
    return []
