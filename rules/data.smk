# Datasets and models, prepared once and shared by all experiments.


rule prepare_data:
    output:
        table=f"{RESULTS}/data/{{dataset}}/{{split}}.parquet",
    log:
        f"{RESULTS}/logs/prepare_data/{{dataset}}/{{split}}.log",
    localrule: True
    conda:
        "../envs/train.yaml"
    params:
        name=lambda wc: wc.dataset,
        entry=preparation_entry,
    script:
        "../scripts/prepare_data.py"


rule fetch_model:
    output:
        model=directory(f"{RESULTS}/models/{{model}}"),
    log:
        f"{RESULTS}/logs/fetch_model/{{model}}.log",
    localrule: True
    conda:
        "../envs/train.yaml"
    params:
        entry=lambda wc: MODELS[wc.model],
        vocab_folder=lambda wc: (
            model_dir(MODELS[wc.model]["vocab_from"])
            if MODELS[wc.model]["source"] == "tiny"
            else ""
        ),
    script:
        "../scripts/fetch_model.py"


rule all_data:
    input:
        stage_targets("data"),
