# Input functions and parse-time tables of rules/electra.smk.
from trimbench.electra import checks as tb_electra


def fine_tuning_scores(name):
    """The score tables of the experiment's train_electra jobs (one per task and model)."""
    return [
        f"{experiment_dir(name)}/{tb_electra.FINE_TUNINGS_FOLDER}/{task}/{model}/scores.parquet"
        for task, model in tb_electra.train_jobs(EXPERIMENTS[name])
    ]


def job_fine_tunings(wildcards):
    """[k, seed] of every fine-tuning of a train_electra job."""
    fine_tunings = tb_electra.model_fine_tunings(experiment(wildcards), wildcards.model)
    return [list(pair) for pair in fine_tunings]


def adapted_model(name, model):
    """adapt_domain's output: the model after domain-adaptive pre-training."""
    return f"{experiment_dir(name)}/adapted/{model}"


def pretuned_model(name, model, k):
    """pretune_word_similarity's output: the model cut to k layers, pre-tuned on word similarity."""
    return f"{experiment_dir(name)}/pretuned/{model}/L{k}"


def electra_stage_dirs(name):
    """Domain-adapted models (one per model) and word-similarity pre-tuned ones (per model, k)."""
    exp = EXPERIMENTS[name]
    dirs = []
    if exp["domain_adaptation"]:
        dirs += [adapted_model(name, model) for model in exp["models"]]
    if exp["word_similarity"]:
        dirs += [
            pretuned_model(name, model, k) for model, k in tb_electra.stage_models(exp)
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
        scores_table_of(name),
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
        return [scores_table_of(name)]
    return []


def adapted_or_registry_model(wildcards):
    """The model a stage or a job's fine-tunings start from: domain-adapted where configured."""
    if experiment(wildcards)["domain_adaptation"]:
        return adapted_model(wildcards.experiment, wildcards.model)
    return model_dir(wildcards.model)


def registry_start_model(wildcards):
    """The registry model adapted_or_registry_model names; None where it is the adapted one."""
    return None if experiment(wildcards)["domain_adaptation"] else wildcards.model


def pretuned_layers(wildcards):
    """The k of each pre-tuned start model of a train_electra job ([]: no pre-tuning)."""
    return tb_electra.pretuned_layers(experiment(wildcards), wildcards.model)


def pretuned_start_models(wildcards):
    """train_electra's start models where the experiment pre-tunes: one per k."""
    name, model = wildcards.experiment, wildcards.model
    return [pretuned_model(name, model, k) for k in pretuned_layers(wildcards)]


def shared_start_model(wildcards):
    """train_electra's one start model of every k where the experiment does not pre-tune (none for a
    packaged model: shared_start_packaged)."""
    return [] if pretuned_layers(wildcards) else adapted_or_registry_model(wildcards)


def shared_start_packaged(wildcards):
    """The param `packaged` of train_electra (its input shared_start_model)."""
    pretuned = pretuned_layers(wildcards)
    return packaged(model=None if pretuned else registry_start_model(wildcards))


def fine_tuning_meta(wildcards):
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


#: which epoch our test scores are (train.select): the views set published cells beside ours of their kind
scored_epoch = exp_param("train", "select")


def main_metrics(wildcards):
    return tb_config.dataset_main_metrics(experiment(wildcards), DATASETS)


def model_roles(wildcards):
    return {
        m: tb_electra.model_role(m, MODELS[m]) for m in experiment(wildcards)["models"]
    }
