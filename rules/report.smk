# Tables and figures: views of the score table, ours beside the published numbers.


rule sts_table:
    input:
        scores=f"{RESULTS}/{{experiment}}/scores.parquet",
        reference=reference_file,
    output:
        markdown=f"{RESULTS}/{{experiment}}/tables/sts_grid.md",
        csv=f"{RESULTS}/{{experiment}}/tables/sts_grid.csv",
        html=report(
            f"{RESULTS}/{{experiment}}/tables/sts_grid.html",
            caption="../report/sts_table.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "seed table"},
        ),
        comparison=report(
            f"{RESULTS}/{{experiment}}/tables/sts_vs_published.csv",
            caption="../report/sts_comparison.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "ours vs published"},
        ),
    log:
        f"{RESULTS}/logs/sts_table/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        reference_variant=exp_param("reference", "variant"),
        dataset=exp_param("evaluation", "average_name"),
        metric=exp_param("evaluation", "main_metric"),
    script:
        "../scripts/sts_table.py"


rule sts_figure:
    input:
        scores=f"{RESULTS}/{{experiment}}/scores.parquet",
        reference=reference_file,
    output:
        png=report(
            f"{RESULTS}/{{experiment}}/figures/sts_layers.png",
            caption="../report/sts_figure.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "layer subplots"},
        ),
        svg=f"{RESULTS}/{{experiment}}/figures/sts_layers.svg",
    log:
        f"{RESULTS}/logs/sts_figure/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        reference_variant=exp_param("reference", "variant"),
        dataset=exp_param("evaluation", "average_name"),
        metric=exp_param("evaluation", "main_metric"),
        title=lambda wc: f"{wc.experiment}: {experiment(wc)['description']}",
        depth=exp_param("_depth"),
    script:
        "../scripts/sts_figure.py"


rule sts_versions:
    input:
        scores=lambda wc: [
            f"{RESULTS}/{name}/scores.parquet"
            for name in version_experiments(wc.track)
        ],
        references=lambda wc: [
            reference_path(name) for name in version_experiments(wc.track)
        ],
    output:
        markdown=f"{RESULTS}/tracks/{{track}}/sts_versions.md",
        csv=f"{RESULTS}/tracks/{{track}}/sts_versions.csv",
        html=report(
            f"{RESULTS}/tracks/{{track}}/sts_versions.html",
            caption="../report/sts_versions_table.rst",
            category="{track}",
            subcategory="all experiments side by side",
            labels={"track": "{track}", "view": "seed table, all versions"},
        ),
        png=report(
            f"{RESULTS}/tracks/{{track}}/sts_versions_layers.png",
            caption="../report/sts_versions_figure.rst",
            category="{track}",
            subcategory="all experiments side by side",
            labels={"track": "{track}", "view": "layer subplots, all versions"},
        ),
        svg=f"{RESULTS}/tracks/{{track}}/sts_versions_layers.svg",
    log:
        f"{RESULTS}/logs/sts_versions/{{track}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        blocks=lambda wc: [
            version_block(name) for name in version_experiments(wc.track)
        ],
        title=lambda wc: f"{wc.track}: " + " | ".join(version_experiments(wc.track)),
    script:
        "../scripts/sts_versions.py"


rule scoreboard:
    input:
        scores=[f"{RESULTS}/{name}/scores.parquet" for name in EXPERIMENTS],
        references=[reference_path(name) for name in EXPERIMENTS],
        figure=pareto_path(*HEADLINE_PARETO, "png"),
    output:
        csv=f"{RESULTS}/scoreboard/status.csv",
        markdown=f"{RESULTS}/scoreboard/status.md",
        # The report's first result (its front page, report/workflow.rst, points to it).
        html=report(
            f"{RESULTS}/scoreboard/status.html",
            caption="../report/status.rst",
            category="reproduction status",
            labels={"view": "status, one row per experiment"},
        ),
        comparisons=report(
            f"{RESULTS}/scoreboard/comparisons.html",
            caption="../report/comparisons.rst",
            category="reproduction status",
            labels={"view": "ours, published and delta, every common cell"},
        ),
    log:
        f"{RESULTS}/logs/scoreboard/scoreboard.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        names=list(EXPERIMENTS),
        configs=[tb_config.tracked(EXPERIMENTS[name]) for name in EXPERIMENTS],
        main_metrics=[dataset_main_metrics(name) for name in EXPERIMENTS],
        figure_caption="Quality against cost on {}, every variant of every experiment; the "
        "Pareto front in black ({}).".format(*HEADLINE_PARETO),
    script:
        "../scripts/scoreboard.py"


# One job draws every (dataset, cost) figure: each is seconds of work after the same inputs.
rule pareto:
    input:
        scores=[f"{RESULTS}/{name}/scores.parquet" for name in EXPERIMENTS],
        references=[reference_path(name) for name in EXPERIMENTS],
    output:
        points=[pareto_path(d, c, "csv") for d, c in PARETO_FIGURES],
        png=[
            report(
                pareto_path(d, c, "png"),
                caption="../report/pareto.rst",
                category="reproduction status",
                subcategory="quality vs cost",
                labels={"dataset": d, "cost": c},
            )
            for d, c in PARETO_FIGURES
        ],
        svg=[pareto_path(d, c, "svg") for d, c in PARETO_FIGURES],
    log:
        f"{RESULTS}/logs/pareto/pareto.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        figures=PARETO_FIGURES,
        names=list(EXPERIMENTS),
        configs=[tb_config.tracked(EXPERIMENTS[name]) for name in EXPERIMENTS],
        main_metrics=[dataset_main_metrics(name) for name in EXPERIMENTS],
    script:
        "../scripts/pareto.py"


# Every experiment of the track is an input: the 2DMSE retrieval ablation claims compare experiments.
rule claims:
    input:
        scores=lambda wc: [
            f"{RESULTS}/{name}/scores.parquet"
            for name in version_experiments(experiment(wc)["track"])
        ],
        reference=reference_file,
        statements=in_workdir(Path(workflow.basedir) / "reference" / "claims.yaml"),
    output:
        markdown=f"{RESULTS}/{{experiment}}/claims.md",
        csv=f"{RESULTS}/{{experiment}}/claims.csv",
        html=report(
            f"{RESULTS}/{{experiment}}/claims.html",
            caption="../report/claims.rst",
            category="claims",
            subcategory=experiment_track,
            labels={
                "experiment": "{experiment}",
                "view": "claims, ours and published",
            },
        ),
    log:
        f"{RESULTS}/logs/claims/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        names=lambda wc: version_experiments(experiment(wc)["track"]),
        configs=lambda wc: [
            tb_config.tracked(EXPERIMENTS[name])
            for name in version_experiments(experiment(wc)["track"])
        ],
        main_metrics=lambda wc: dataset_main_metrics(wc.experiment),
        model_ids=lambda wc: {
            m: MODELS[m].get("id", "") for m in experiment(wc).get("models", [])
        },
    script:
        "../scripts/claims.py"
