# Scoring: every (layer, dim) cell of every variant, into the tidy score table.


rule evaluate_sts:
    input:
        embeddings=variant_embeddings,
        data=eval_tables,
    output:
        scores=f"{RESULTS}/{{experiment}}/scores/{{variant}}.parquet",
    log:
        f"{RESULTS}/logs/evaluate_sts/{{experiment}}/{{variant}}.log",
    # Experiments of variants only (the SPLADE track's runs have their own rules).
    wildcard_constraints:
        experiment=names_regex(VARIANTS),
    conda:
        "../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(30),
    params:
        datasets=exp_param("evaluation", "datasets"),
        layers=lambda wc: list(variant(wc).eval_layers),
        dims=exp_param("grid", "dims"),
        metrics=exp_param("evaluation", "metrics"),
        average_name=exp_param("evaluation", "average_name"),
        meta=score_meta,
    script:
        "../scripts/evaluate_sts.py"


rule collect_scores:
    input:
        scores=experiment_scores,
    output:
        scores=f"{RESULTS}/{{experiment}}/scores.parquet",
    log:
        f"{RESULTS}/logs/collect_scores/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../scripts/collect_scores.py"


rule all_scores:
    input:
        stage_targets("scores"),
