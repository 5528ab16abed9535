# The score table of each experiment and the views across experiments and tracks: the
# reproduction status (the report's front page) and the quality-vs-cost Pareto figures.


include: "functions/report.smk"


rule collect_scores:
    input:
        scores=experiment_scores,
    output:
        scores=f"{RESULTS}/{{track}}/{{experiment}}/scores.parquet",
    log:
        f"{RESULTS}/logs/collect_scores/{{track}}/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../scripts/collect_scores.py"


rule scoreboard:
    input:
        scores=[scores_table_of(name) for name in EXPERIMENTS],
        references=[reference_path(name) for name in EXPERIMENTS],
        figure=pareto_path(*HEADLINE_PARETO, "png"),
        bm25=[path for name in EXPERIMENTS for path in bm25_scores_of(name)],
        bm25_reference=in_workdir(Path(workflow.basedir) / "reference" / "bm25.csv"),
    output:
        csv=f"{RESULTS}/scoreboard/status.csv",
        markdown=f"{RESULTS}/scoreboard/status.md",
        # The report's first result (its front page, report/workflow.rst, points to it).
        html=report(
            f"{RESULTS}/scoreboard/status.html",
            caption="../report/status.rst",
            category="reproduction status",
            subcategory=STATUS_SUBCATEGORY,
            labels={"view": "status, one row per experiment"},
        ),
        comparisons=report(
            f"{RESULTS}/scoreboard/comparisons.html",
            caption="../report/comparisons.rst",
            category="reproduction status",
            subcategory=STATUS_SUBCATEGORY,
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
        main_metrics=MAIN_METRICS,
        bm25_names=bm25_experiments(),
        bm25_published=[
            tb_config.bm25_published_datasets(EXPERIMENTS[name], DATASETS)
            for name in bm25_experiments()
        ],
        figure_caption="Quality against cost on {}, every variant of every experiment; the "
        "Pareto front in black ({}).".format(*HEADLINE_PARETO),
    script:
        "../scripts/scoreboard.py"


# One job draws every (dataset, cost) figure: each is seconds of work after the same inputs.
rule scoreboard_pareto:
    input:
        scores=[scores_table_of(name) for name in EXPERIMENTS],
        references=[reference_path(name) for name in EXPERIMENTS],
    output:
        points=[pareto_path(d, c, "csv") for d, c in PARETO_FIGURES],
        png=[
            report(
                pareto_path(d, c, "png"),
                caption="../report/scoreboard_pareto.rst",
                category="quality vs cost",
                subcategory=d,
                labels={"dataset": d, "cost": c},
            )
            for d, c in PARETO_FIGURES
        ],
        svg=[pareto_path(d, c, "svg") for d, c in PARETO_FIGURES],
    log:
        f"{RESULTS}/logs/scoreboard_pareto/scoreboard_pareto.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        figures=PARETO_FIGURES,
        names=list(EXPERIMENTS),
        configs=[tb_config.tracked(EXPERIMENTS[name]) for name in EXPERIMENTS],
        main_metrics=MAIN_METRICS,
    script:
        "../scripts/scoreboard_pareto.py"


# Every experiment of the track is an input: the 2DMSE retrieval ablation claims compare experiments.
rule claims:
    input:
        scores=sibling_scores,
        reference=reference_file,
        statements=in_workdir(Path(workflow.basedir) / "reference" / "claims.yaml"),
    output:
        markdown=f"{RESULTS}/{{track}}/{{experiment}}/claims.md",
        csv=f"{RESULTS}/{{track}}/{{experiment}}/claims.csv",
        html=report(
            f"{RESULTS}/{{track}}/{{experiment}}/claims.html",
            caption="../report/claims.rst",
            category="claims",
            subcategory=experiment_track,
            labels={
                "experiment": "{experiment}",
                "view": "claims, ours and published",
            },
        ),
    log:
        f"{RESULTS}/logs/claims/{{track}}/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        names=sibling_experiments,
        configs=lambda wc: [
            tb_config.tracked(EXPERIMENTS[name]) for name in sibling_experiments(wc)
        ],
        main_metrics=lambda wc: tb_config.dataset_main_metrics(experiment(wc), DATASETS),
        model_ids=lambda wc: {
            m: MODELS[m].get("id", "") for m in experiment(wc).get("models", [])
        },
    script:
        "../scripts/claims.py"
