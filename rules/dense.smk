# The dense tracks: 2dmse-sts (the STS grid), 2dmse-retrieval (group training, one-pass corpus
# encoding, faiss search, trec_eval metrics) and homedepot (pairs training as 2dmse-sts, scored as
# retrieval). Every (layer, dim) cell of every variant, the seed's tables and figures, the
# side-by-side and ablation views. Data and mined negatives: rules/data.smk.


include: "functions/dense.smk"


# Outputs sit under results/<track>/<experiment>/ (the experiment's `track`). A rule that serves
# one track names it in its paths; train_model (2dmse-sts, homedepot), encode_corpus and
# retrieval_scores (2dmse-retrieval, homedepot) serve two, and constrain {track} to them.


rule train_model:
    input:
        model=lambda wc: model_dir(experiment(wc)["model"]),
        data=train_data,
    output:
        model=directory(f"{RESULTS}/{{track}}/{{experiment}}/models/{{variant}}"),
    log:
        f"{RESULTS}/logs/train_model/{{track}}/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        track=names_regex(tb_variants.pair_trained_tracks()),
    conda:
        "../envs/train.yaml"
    threads: lambda wc: training_threads(experiment(wc)["train"])
    resources:
        # train.devices GPUs of one node (trimbench/jobs/launch.py launches a rank on each)
        gpu=exp_param("train", "devices"),
        nodes=1,
        mem_mb=planned("train_model", "mem_mb", 8000),
        runtime=planned("train_model", "runtime", 240),
    params:
        method=lambda wc: variant(wc).method,
        cut_layers=lambda wc: variant(wc).cut_layers,
        pooling=exp_param("pooling"),
        objective=exp_param("objective"),
        semantics=exp_param("semantics"),
        dims=exp_param("grid", "dims"),
        train=lambda wc: tb_config.tracked(train_settings(wc)),
        # a function of resources: not compared, so a changed checkpoint interval re-trains nothing
        resume=lambda wc, resources: tb_config.resume_settings(train_settings(wc)),
        kind=lambda wc: DATASETS[experiment(wc)["train"]["dataset"]]["kind"],
        packaged=lambda wc: packaged(model=experiment(wc)["model"]),
    script:
        "../scripts/train_model.py"


rule train_retriever:
    input:
        model=lambda wc: model_dir(experiment(wc)["model"]),
        data=lambda wc: retrieval_data(
            experiment(wc)["train"]["dataset"], experiment(wc)["train"]["split"]
        ),
        negatives=lambda wc: negatives_path(experiment(wc)),
    output:
        model=directory(f"{RESULTS}/2dmse-retrieval/{{experiment}}/models/{{variant}}"),
    log:
        f"{RESULTS}/logs/train_retriever/{{experiment}}/{{variant}}.log",
    conda:
        "../envs/retrieval.yaml"
    threads: lambda wc: training_threads(experiment(wc)["train"])
    resources:
        # train.devices GPUs of one node (trimbench/jobs/launch.py launches a rank on each)
        gpu=exp_param("train", "devices"),
        nodes=1,
        # MS MARCO's passage texts (~3 GB) stay in memory for the groups drawn each epoch
        mem_mb=planned("train_retriever", "mem_mb", 16000),
        runtime=planned("train_retriever", "runtime", 480),
    params:
        method=lambda wc: variant(wc).method,
        cut_layers=lambda wc: variant(wc).cut_layers,
        cut_dim=lambda wc: variant(wc).cut_dim,
        pooling=exp_param("pooling"),
        train=lambda wc: tb_config.tracked(train_settings(wc)),
        resume=lambda wc, resources: tb_config.resume_settings(train_settings(wc)),
        settings=retriever_settings,
        packaged=lambda wc: packaged(model=experiment(wc)["model"]),
    script:
        "../scripts/train_retriever.py"


rule encode_texts:
    input:
        model=variant_model,
        data=eval_tables,
    output:
        embeddings=directory(
            f"{RESULTS}/2dmse-sts/{{experiment}}/embeddings/{{variant}}"
        ),
    log:
        f"{RESULTS}/logs/encode_texts/{{experiment}}/{{variant}}.log",
    conda:
        "../envs/train.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=planned("encode_texts", "mem_mb", 4000),
        runtime=planned("encode_texts", "runtime", 60),
    params:
        datasets=exp_param("evaluation", "datasets"),
        layers=lambda wc: list(variant(wc).eval_layers),
        max_dim=lambda wc: max(experiment(wc)["grid"]["dims"]),
        pooling=exp_param("pooling"),
        max_seq_length=exp_param("evaluation", "max_seq_length"),
        batch_size=exp_param("evaluation", "batch_size"),
        precision=exp_param("evaluation", "precision"),
        packaged=variant_packaged,
    script:
        "../scripts/encode_texts.py"


rule encode_corpus:
    input:
        model=variant_model,
        data=eval_retrieval_data,
    output:
        embeddings=directory(
            f"{RESULTS}/{{track}}/{{experiment}}/embeddings/{{variant}}"
        ),
    log:
        f"{RESULTS}/logs/encode_corpus/{{track}}/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        track=names_regex(tb_tracks.names(dense_retrieval=True)),
    conda:
        "../envs/retrieval.yaml"
    threads: exp_param("retrieval", "encode_devices")
    resources:
        # retrieval.encode_devices GPUs of one node (trimbench/jobs/launch.py launches a rank on each)
        gpu=exp_param("retrieval", "encode_devices"),
        nodes=1,
        mem_mb=planned("encode_corpus", "mem_mb", 8000),
        runtime=planned("encode_corpus", "runtime", 240),
    params:
        datasets=exp_param("evaluation", "datasets"),
        corpus_of=exp_param("_corpus_of"),
        layers=encoded_layers,
        max_dim=lambda wc: max(variant_dims(wc)),
        pooling=exp_param("pooling"),
        q_max_length=exp_param("retrieval", "q_max_length"),
        p_max_length=exp_param("retrieval", "p_max_length"),
        batch_size=exp_param("evaluation", "batch_size"),
        chunk=exp_param("retrieval", "encode_chunk"),
        precision=exp_param("evaluation", "precision"),
        packaged=variant_packaged,
    script:
        "../scripts/encode_corpus.py"


rule evaluate_sts:
    input:
        embeddings=variant_embeddings,
        data=eval_tables,
    output:
        scores=f"{RESULTS}/2dmse-sts/{{experiment}}/scores/{{variant}}.parquet",
    log:
        f"{RESULTS}/logs/evaluate_sts/{{experiment}}/{{variant}}.log",
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


rule retrieval_scores:
    input:
        embeddings=variant_embeddings,
        data=eval_retrieval_data,
    output:
        scores=f"{RESULTS}/{{track}}/{{experiment}}/scores/{{variant}}.parquet",
        runs=directory(f"{RESULTS}/{{track}}/{{experiment}}/runs/{{variant}}"),
    log:
        f"{RESULTS}/logs/retrieval_scores/{{track}}/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        track=names_regex(tb_tracks.names(dense_retrieval=True)),
    conda:
        "../envs/retrieval.yaml"
    threads: 2
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(120),
    params:
        datasets=exp_param("evaluation", "datasets"),
        layers=lambda wc: list(variant(wc).eval_layers),
        dims=variant_dims,
        metrics=exp_param("evaluation", "metrics"),
        relevance_level=relevance_level,
        ignore_identical_ids=ignore_identical_ids,
        top_k=exp_param("retrieval", "top_k"),
        similarity=exp_param("retrieval", "similarity"),
        passage_layer=passage_layer,
        average_over=exp_param("retrieval", "average_over"),
        average_name=exp_param("retrieval", "average_name"),
        meta=score_meta,
    script:
        "../scripts/retrieval_scores.py"


# The seed's grid layout (rows layer x method, columns dims) of one dataset, the view: the STS
# average of a 2dmse-sts experiment; each compared dataset (and the average) of a 2dmse-retrieval one.
rule grid_table:
    input:
        scores=scores_table,
        reference=reference_file,
        baseline=bm25_baseline,
    output:
        markdown=f"{RESULTS}/{{track}}/{{experiment}}/tables/grid.{{view}}.md",
        csv=f"{RESULTS}/{{track}}/{{experiment}}/tables/grid.{{view}}.csv",
        html=report(
            f"{RESULTS}/{{track}}/{{experiment}}/tables/grid.{{view}}.html",
            caption="../report/grid_table.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "grid {view}"},
        ),
        comparison=f"{RESULTS}/{{track}}/{{experiment}}/tables/grid_vs_published.{{view}}.csv",
        # in the report as a page: a CSV result is a link that shows nothing when viewed
        comparison_html=report(
            f"{RESULTS}/{{track}}/{{experiment}}/tables/grid_vs_published.{{view}}.html",
            caption="../report/grid_comparison.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "ours vs published {view}"},
        ),
    log:
        f"{RESULTS}/logs/grid_table/{{track}}/{{experiment}}.{{view}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        reference_variant=exp_param("reference", "variant"),
        dataset=lambda wc: wc.view,
        metric=grid_view_metric,
    script:
        "../scripts/grid_table.py"


rule grid_figure:
    input:
        scores=scores_table,
        reference=reference_file,
        baseline=bm25_baseline,
    output:
        png=report(
            f"{RESULTS}/{{track}}/{{experiment}}/figures/grid_layers.{{view}}.png",
            caption="../report/grid_figure.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "layer subplots {view}"},
        ),
        svg=f"{RESULTS}/{{track}}/{{experiment}}/figures/grid_layers.{{view}}.svg",
    log:
        f"{RESULTS}/logs/grid_figure/{{track}}/{{experiment}}.{{view}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        reference_variant=exp_param("reference", "variant"),
        dataset=lambda wc: wc.view,
        metric=grid_view_metric,
        title=grid_figure_title,
        depth=exp_param("_depth"),
    script:
        "../scripts/grid_figure.py"


rule sts_versions:
    input:
        scores=lambda wc: [
            scores_table_of(name) for name in track_experiments(wc.track)
        ],
        references=lambda wc: [
            reference_path(name) for name in track_experiments(wc.track)
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
        blocks=lambda wc: [version_block(name) for name in track_experiments(wc.track)],
        title=lambda wc: f"{wc.track}: " + " | ".join(track_experiments(wc.track)),
    script:
        "../scripts/sts_versions.py"


rule homedepot_table:
    input:
        scores=scores_table,
        reference=reference_file,
        baseline=bm25_baseline,
    output:
        markdown=f"{RESULTS}/homedepot/{{experiment}}/tables/homedepot.md",
        csv=f"{RESULTS}/homedepot/{{experiment}}/tables/homedepot.csv",
        html=report(
            f"{RESULTS}/homedepot/{{experiment}}/tables/homedepot.html",
            caption="../report/homedepot_table.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "table"},
        ),
    log:
        f"{RESULTS}/logs/homedepot_table/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        config=experiment_settings,
    script:
        "../scripts/homedepot_table.py"


rule homedepot_figure:
    input:
        scores=scores_table,
        reference=reference_file,
        baseline=bm25_baseline,
    output:
        png=report(
            f"{RESULTS}/homedepot/{{experiment}}/figures/homedepot_recall.png",
            caption="../report/homedepot_figure.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "recall@10 vs dim"},
        ),
        svg=f"{RESULTS}/homedepot/{{experiment}}/figures/homedepot_recall.svg",
    log:
        f"{RESULTS}/logs/homedepot_figure/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        config=experiment_settings,
        title=lambda wc: f"{wc.experiment}: {experiment(wc)['description']}",
    script:
        "../scripts/homedepot_figure.py"


rule retrieval_ablation:
    input:
        scores=lambda wc: [
            scores_table_of(name)
            for name in retrieval_ablation_groups(wc.track)[wc.group]
        ],
    output:
        png=report(
            f"{RESULTS}/tracks/{{track}}/ablation_{{group}}.png",
            caption="../report/retrieval_ablation.rst",
            category="{track}",
            subcategory="ablations",
            labels={"track": "{track}", "view": "ablation {group}"},
        ),
        svg=f"{RESULTS}/tracks/{{track}}/ablation_{{group}}.svg",
    log:
        f"{RESULTS}/logs/retrieval_ablation/{{track}}.{{group}}.log",
    wildcard_constraints:
        group="loss|dims|doc",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        configs=lambda wc: [
            tb_config.tracked(EXPERIMENTS[name])
            for name in retrieval_ablation_groups(wc.track)[wc.group]
        ],
        dataset=lambda wc: tb_config.compared_dataset(ablation_base(wc)),
        metric=lambda wc: ablation_base(wc)["evaluation"]["main_metric"],
        title=lambda wc: ABLATION_TITLES[wc.group],
    script:
        "../scripts/retrieval_ablation.py"
