# Datasets and models, prepared once and shared by all experiments.


rule prepare_data:
    output:
        table=f"{RESULTS}/data/{{dataset}}/{{split}}.parquet",
    params:
        name=lambda wc: wc.dataset,
        entry=lambda wc: DATASETS[wc.dataset],
        workdir=str(Path.cwd()),
    log:
        f"{RESULTS}/logs/prepare_data/{{dataset}}/{{split}}.log",
    conda:
        "../envs/train.yaml"
    localrule: True
    script:
        "../scripts/prepare_data.py"


rule fetch_model:
    output:
        model=directory(f"{RESULTS}/models/{{model}}"),
    params:
        entry=lambda wc: MODELS[wc.model],
        vocab_folder=lambda wc: (
            model_dir(MODELS[wc.model]["vocab_from"])
            if MODELS[wc.model]["source"] == "tiny"
            else ""
        ),
    log:
        f"{RESULTS}/logs/fetch_model/{{model}}.log",
    conda:
        "../envs/train.yaml"
    localrule: True
    script:
        "../scripts/fetch_model.py"


rule all_data:
    input:
        stage_targets("data"),
