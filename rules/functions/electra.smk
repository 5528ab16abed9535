# Input functions and parse-time tables of rules/electra.smk (Snakemake's linter keeps functions
# out of files with rules).
from trimbench.electra import checks as tb_electra


def electra_run_scores(name):
    return [
        f"{experiment_dir(name)}/runs/{task}/{model}/scores.parquet"
        for task, model in tb_electra.train_jobs(EXPERIMENTS[name])
    ]


def get_electra_runs(wildcards):
    """[k, seed] of every run of a train_electra job."""
    runs = tb_electra.model_runs(experiment(wildcards), wildcards.model)
    return [list(run) for run in runs]


def electra_stage_dirs(name):
    """Domain-adapted models (one per model) and word-similarity pre-tuned ones (per model, k)."""
    exp = EXPERIMENTS[name]
    dirs = []
    if exp["domain_adaptation"]:
        dirs += [f"{experiment_dir(name)}/adapted/{model}" for model in exp["models"]]
    if exp["word_similarity"]:
        dirs += [
            f"{experiment_dir(name)}/pretuned/{model}/L{k}"
            for model, k in tb_electra.stage_models(exp)
        ]
    return dirs


def electra_data(name):
    exp = EXPERIMENTS[name]
    tables = [
        data_table(task, split)
        for task in exp["tasks"]
        for split in ("train", "validation", "test")
    ]
    if exp["domain_adaptation"]:
        tables += adaptation_tables(exp)
    if exp["word_similarity"]:
        tables += word_similarity_tables(exp, "train")
        tables += word_similarity_tables(exp, "validation")
    return tables


def adaptation_tables(exp):
    stage = exp["domain_adaptation"]
    return [data_table(stage["dataset"], split) for split in stage["splits"]]


def word_similarity_tables(exp, split):
    return [data_table(ds, split) for ds in exp["word_similarity"]["datasets"]]


def electra_outputs(name):
    base = f"{experiment_dir(name)}"
    return [
        f"{base}/scores.parquet",
        *expand(
            f"{base}/tables/{{table}}.{{ext}}",
            table=["layers", "dev_choice"],
            ext=["md", "csv", "html"],
        ),
        *expand(
            f"{base}/figures/{{figure}}.{{ext}}",
            figure=["layers", "pareto"],
            ext=["png", "svg"],
        ),
    ]


def electra_stage_targets(name, stage):
    if stage == "data":
        return electra_data(name)
    if stage == "models":
        return electra_stage_dirs(name)
    if stage == "scores":
        return [f"{experiment_dir(name)}/scores.parquet"]
    return []


def adapted_or_registry_model(wildcards):
    """The model a stage or run starts from: domain-adapted where configured."""
    if experiment(wildcards)["domain_adaptation"]:
        return f"{experiment_dir(wildcards.experiment)}/adapted/{wildcards.model}"
    return model_dir(wildcards.model)


def registry_start_model(wildcards):
    """The registry model adapted_or_registry_model names; None where it is the adapted one."""
    return None if experiment(wildcards)["domain_adaptation"] else wildcards.model


def start_model_layers(wildcards):
    """The k of each start model of a train_electra job: one pre-tuned model per k where the
    experiment pre-tunes on word similarity ([] : one start model for every k)."""
    if experiment(wildcards)["word_similarity"]:
        return tb_electra.layers(experiment(wildcards), wildcards.model)
    return []


def run_start_models(wildcards):
    name, model = wildcards.experiment, wildcards.model
    start = adapted_or_registry_model(
        wildcards
    )  # [] for a packaged model: run_start_packaged
    return [
        f"{experiment_dir(name)}/pretuned/{model}/L{k}"
        for k in start_model_layers(wildcards)
    ] or ([start] if start else [])


def run_start_packaged(wildcards):
    """The param `packaged` of train_electra (its input run_start_models)."""
    pretuned = start_model_layers(wildcards)
    return packaged(models=None if pretuned else [registry_start_model(wildcards)])


def run_meta(wildcards):
    """The columns every score row of a train_electra job shares (layer and seed vary)."""
    exp = experiment(wildcards)
    return {
        "experiment": wildcards.experiment,
        "track": exp["track"],
        "variant": tb_electra.variant_name(exp),
        "model": wildcards.model,
        "dim": exp["_widths"][wildcards.model],
        "dataset": wildcards.task,
    }


def main_metrics(wildcards):
    return tb_config.dataset_main_metrics(experiment(wildcards), DATASETS)


def model_roles(wildcards):
    return {
        m: tb_electra.model_role(m, MODELS[m]) for m in experiment(wildcards)["models"]
    }
