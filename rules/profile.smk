# The trim profile (track profile, docs/profile.md): every cut of each model measured, then the
# models side by side in the report.


include: "functions/profile.smk"


# One job per model: one encoder pass per dataset, then the cuts' quality, the timings (the
# machine's own: one job at a time on the node gives cleaner ones) and the recommended cuts' export.
rule profile_model:
    input:
        model=lambda wc: model_dir(wc.model),
        sts=profile_sts_tables,
        retrieval=profile_retrieval_folders,
    output:
        **{
            table: f"{RESULTS}/profile/{{experiment}}/{{model}}/{table}.csv"
            for table in PROFILE_TABLES
        },
        scores=f"{RESULTS}/profile/{{experiment}}/{{model}}/scores.parquet",
        exported=directory(f"{RESULTS}/profile/{{experiment}}/{{model}}/recommended"),
    log:
        f"{RESULTS}/logs/profile_model/{{experiment}}/{{model}}.log",
    wildcard_constraints:
        model="[^/]+",
    conda:
        "../envs/retrieval.yaml"
    threads: 2
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(120),
    params:
        model=lambda wc: wc.model,
        sts=lambda wc: profile_datasets(experiment(wc), "sts"),
        retrieval=lambda wc: profile_datasets(experiment(wc), "retrieval"),
        split=exp_param("evaluation", "split"),
        settings=profile_settings,
        funnel=exp_param("funnel"),
        ignore_identical_ids=ignore_identical_ids,
        tolerances=exp_param("tolerances"),
        export=exp_param("export_recommended"),
        meta=lambda wc: {"experiment": wc.experiment, "track": "profile"},
        packaged=lambda wc: packaged(model=wc.model),
    script:
        "../scripts/profile_model.py"


rule profile_report:
    input:
        **{
            table: profile_model_tables(table)
            for table in ("quality", "encode", "search", "funnel", "recommend")
        },
    output:
        page=report(
            f"{RESULTS}/profile/{{experiment}}/profile.html",
            caption="../report/profile.rst",
            category="profile",
            subcategory="{experiment}",
            labels={
                "experiment": "{experiment}",
                "view": "tables: cuts, speed, size, funnel",
            },
        ),
    log:
        f"{RESULTS}/logs/profile_report/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        models=exp_param("models"),
    script:
        "../scripts/profile_report.py"


# One figure per (task family, cost): every model's cells side by side.
rule profile_figure:
    input:
        quality=profile_model_tables("quality"),
        encode=profile_model_tables("encode"),
    output:
        png=report(
            f"{RESULTS}/profile/{{experiment}}/figures/pareto.{{family}}.{{cost}}.png",
            caption="../report/profile_figure.rst",
            category="profile",
            subcategory="{experiment}",
            labels={
                "experiment": "{experiment}",
                "view": "Pareto: {family} quality against {cost}",
            },
        ),
        svg=f"{RESULTS}/profile/{{experiment}}/figures/pareto.{{family}}.{{cost}}.svg",
    log:
        f"{RESULTS}/logs/profile_figure/{{experiment}}/{{family}}.{{cost}}.log",
    wildcard_constraints:
        family="sts|retrieval",
        cost="encode|bytes",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        models=exp_param("models"),
    script:
        "../scripts/profile_figure.py"
