# The ELECTRA track (truncated encoders): each model cut after every layer k, fine-tuned per
# task and seed (one job per task and model; optional stages first), scored on dev and test;
# tables and figures per experiment.


include: "functions/electra.smk"


rule adapt_domain:
    input:
        model=lambda wc: model_dir(wc.model),
        data=lambda wc: adaptation_tables(experiment(wc)),
    output:
        model=directory(f"{RESULTS}/electra/{{experiment}}/adapted/{{model}}"),
    log:
        f"{RESULTS}/logs/adapt_domain/{{experiment}}/{{model}}.log",
    conda:
        "../envs/train.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=planned("adapt_domain", "mem_mb", 16000),
        runtime=planned("adapt_domain", "runtime", 720),
    params:
        stage=lambda wc: tb_config.tracked(experiment(wc)["domain_adaptation"]),
        resume=lambda wc, resources: tb_config.resume_settings(
            experiment(wc)["domain_adaptation"]
        ),
        kind=lambda wc: DATASETS[experiment(wc)["domain_adaptation"]["dataset"]]["kind"],
        packaged=lambda wc: packaged(model=wc.model),
    script:
        "../scripts/adapt_domain.py"


rule pretune_word_similarity:
    input:
        model=adapted_or_registry_model,
        train=lambda wc: word_similarity_tables(experiment(wc), "train"),
        validation=lambda wc: word_similarity_tables(experiment(wc), "validation"),
    output:
        model=directory(f"{RESULTS}/electra/{{experiment}}/pretuned/{{model}}/L{{k}}"),
    log:
        f"{RESULTS}/logs/pretune_word_similarity/{{experiment}}/{{model}}/L{{k}}.log",
    wildcard_constraints:
        k=r"\d+",
    conda:
        "../envs/train.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=planned("pretune_word_similarity", "mem_mb", 8000),
        runtime=planned("pretune_word_similarity", "runtime", 120),
    params:
        k=lambda wc: int(wc.k),
        stage=lambda wc: tb_config.tracked(experiment(wc)["word_similarity"]),
        pooling=exp_param("pooling"),
        eval_batch_size=exp_param("evaluation", "batch_size"),
        packaged=lambda wc: packaged(model=registry_start_model(wc)),
    script:
        "../scripts/pretune_word_similarity.py"


rule train_electra:
    input:
        # one word-similarity pre-tuned model per k, or one model every k starts from
        pretuned=pretuned_start_models,
        model=shared_start_model,
        train=lambda wc: data_table(wc.task, "train"),
        validation=lambda wc: data_table(wc.task, "validation"),
        test=lambda wc: data_table(wc.task, "test"),
    output:
        scores=f"{RESULTS}/electra/{{experiment}}/{tb_electra.FINE_TUNINGS_FOLDER}/{{task}}/{{model}}/scores.parquet",
        history=f"{RESULTS}/electra/{{experiment}}/{tb_electra.FINE_TUNINGS_FOLDER}/{{task}}/{{model}}/history.json",
    log:
        f"{RESULTS}/logs/train_electra/{{experiment}}/{{task}}/{{model}}.log",
    wildcard_constraints:
        task="[^/]+",
        model="[^/]+",
    conda:
        "../envs/train.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=planned("train_electra", "mem_mb", 8000),
        # Every cut and seed of the model in turn: a paper fine-tune takes minutes on a GPU.
        runtime=planned(
            "train_electra", "runtime", lambda wc: 15 * len(job_fine_tunings(wc))
        ),
    params:
        fine_tunings=job_fine_tunings,
        start_layers=pretuned_layers,
        random_init=exp_param("random_init"),
        objective=lambda wc: tb_electra.objective(DATASETS[wc.task]),
        num_labels=lambda wc: DATASETS[wc.task]["num_labels"],
        kind=lambda wc: DATASETS[wc.task]["kind"],
        train=lambda wc: tb_config.tracked(experiment(wc)["train"]),
        pooling=exp_param("pooling"),
        eval_batch_size=exp_param("evaluation", "batch_size"),
        meta=fine_tuning_meta,
        packaged=shared_start_packaged,
    script:
        "../scripts/train_electra.py"


rule electra_table:
    input:
        scores=scores_table,
        reference=reference_file,
    output:
        layers_markdown=f"{RESULTS}/electra/{{experiment}}/tables/layers.md",
        layers_csv=f"{RESULTS}/electra/{{experiment}}/tables/layers.csv",
        layers_html=report(
            f"{RESULTS}/electra/{{experiment}}/tables/layers.html",
            caption="../report/electra_layers.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "per layer"},
        ),
        choice_markdown=f"{RESULTS}/electra/{{experiment}}/tables/dev_choice.md",
        choice_csv=f"{RESULTS}/electra/{{experiment}}/tables/dev_choice.csv",
        choice_html=report(
            f"{RESULTS}/electra/{{experiment}}/tables/dev_choice.html",
            caption="../report/electra_choice.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "layer chosen by dev"},
        ),
    log:
        f"{RESULTS}/logs/electra_table/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        main_metrics=main_metrics,
        reference_experiments=exp_param("reference", "experiments"),
        select=scored_epoch,
    script:
        "../scripts/electra_table.py"


rule electra_figure:
    input:
        scores=scores_table,
        reference=reference_file,
    output:
        png=report(
            f"{RESULTS}/electra/{{experiment}}/figures/layers.png",
            caption="../report/electra_figure.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "score per layer"},
        ),
        svg=f"{RESULTS}/electra/{{experiment}}/figures/layers.svg",
    log:
        f"{RESULTS}/logs/electra_figure/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        main_metrics=main_metrics,
        reference_experiments=exp_param("reference", "experiments"),
        select=scored_epoch,
        roles=model_roles,
        title=lambda wc: f"{wc.experiment}: {experiment(wc)['description']}",
    script:
        "../scripts/electra_figure.py"


rule electra_pareto_figure:
    input:
        scores=scores_table,
        reference=reference_file,
    output:
        png=report(
            f"{RESULTS}/electra/{{experiment}}/figures/pareto.png",
            caption="../report/electra_pareto_figure.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "Pareto front"},
        ),
        svg=f"{RESULTS}/electra/{{experiment}}/figures/pareto.svg",
    log:
        f"{RESULTS}/logs/electra_pareto_figure/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        main_metrics=main_metrics,
        reference_experiments=exp_param("reference", "experiments"),
        select=scored_epoch,
        roles=model_roles,
        title=lambda wc: f"{wc.experiment}: parameters used against test score",
    script:
        "../scripts/electra_pareto_figure.py"
