# Fine-tuning: one job per trained variant (BERT-S: one per layer, cut physically).


rule train_model:
    input:
        model=lambda wc: model_dir(experiment(wc)["model"]),
        data=train_data,
    output:
        model=directory(f"{RESULTS}/{{experiment}}/models/{{variant}}"),
    log:
        f"{RESULTS}/logs/train_model/{{experiment}}/{{variant}}.log",
    # Experiments of variants only (the SPLADE track's runs have their own rules).
    wildcard_constraints:
        experiment=names_regex(VARIANTS),
    conda:
        "../envs/train.yaml"
    # One thread feeds a GPU (batches are tokenised in the main process), plus one per process
    # tokenising beside it (train.dataloader_workers): what SLURM is asked for (cpus_per_task). On
    # CPU, single-threaded jobs side by side beat fewer multi-threaded ones (tiny test config on 2
    # cores: 283 s vs 326 s).
    threads: lambda wc: training_threads(experiment(wc)["train"])
    resources:
        # train.devices GPUs of one node (trimbench/distributed.py launches a rank on each)
        gpu=lambda wc: experiment(wc)["train"]["devices"],
        nodes=1,
        mem_mb=per_attempt(8000),
        runtime=per_attempt(240),
    params:
        method=lambda wc: variant(wc).method,
        cut_layers=lambda wc: variant(wc).cut_layers,
        pooling=exp_param("pooling"),
        objective=exp_param("objective"),
        semantics=exp_param("semantics"),
        dims=exp_param("grid", "dims"),
        train=lambda wc: tb_config.tracked(train_settings(wc)),
        kind=lambda wc: DATASETS[experiment(wc)["train"]["dataset"]]["kind"],
        untracked=lambda wc: tb_config.untracked(train=train_settings(wc)),
    script:
        "../scripts/train_model.py"


rule all_models:
    input:
        stage_targets("models"),
