# Dense retrieval: BEIR-style data, hard-negative mining, group training, one-pass corpus
# encoding, faiss search and trec_eval metrics (tracks 2dmse-retrieval and homedepot).
# The STS rules make the same kinds of outputs (models/, embeddings/, scores/); ruleorder gives
# these rules the retrieval experiments, and their wildcard constraints keep them off the others.


ruleorder: train_retriever > train_model
ruleorder: encode_corpus > encode_texts
ruleorder: retrieval_scores > evaluate_sts


rule prepare_retrieval:
    output:
        folder=directory(retrieval_data("{dataset}", "{split}")),
    log:
        f"{RESULTS}/logs/prepare_retrieval/{{dataset}}/{{split}}.log",
    conda:
        "../envs/retrieval.yaml"
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(60),
    params:
        name=lambda wc: wc.dataset,
        entry=preparation_entry,
    script:
        "../scripts/prepare_retrieval.py"


rule mine_negatives:
    input:
        data=retrieval_data("{dataset}", "{split}"),
        miner=lambda wc: (
            model_dir(MINERS[wc.miner][0]["model"])
            if MINERS[wc.miner][0]["miner"] == "dense"
            else []
        ),
        cross_encoder=lambda wc: (
            model_dir(MINERS[wc.miner][0]["cross_encoder"])
            if MINERS[wc.miner][0]["cross_encoder"]
            else []
        ),
    output:
        negatives=f"{RESULTS}/negatives/{{dataset}}/{{split}}/{{miner}}.jsonl",
    log:
        f"{RESULTS}/logs/mine_negatives/{{dataset}}/{{split}}/{{miner}}.log",
    wildcard_constraints:
        miner=names_regex(MINERS),
    conda:
        "../envs/retrieval.yaml"
    threads: 2
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(240),
    params:
        negatives=lambda wc: MINERS[wc.miner][0],
        pooling=lambda wc: MINERS[wc.miner][1],
        similarity=lambda wc: MINERS[wc.miner][2],
    script:
        "../scripts/mine_negatives.py"


rule train_retriever:
    input:
        model=lambda wc: model_dir(experiment(wc)["model"]),
        data=lambda wc: retrieval_data(
            experiment(wc)["train"]["dataset"], experiment(wc)["train"]["split"]
        ),
        negatives=lambda wc: negatives_path(wc.experiment),
    output:
        model=directory(f"{RESULTS}/{{experiment}}/models/{{variant}}"),
    log:
        f"{RESULTS}/logs/train_retriever/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        experiment=names_regex(GROUP_TRAINED_EXPERIMENTS),
    conda:
        "../envs/retrieval.yaml"
    # As train_model: one thread feeds a GPU, one more per dataloader worker.
    threads: lambda wc: training_threads(experiment(wc)["train"])
    resources:
        # train.devices GPUs of one node (trimbench/distributed.py launches a rank on each)
        gpu=lambda wc: experiment(wc)["train"]["devices"],
        nodes=1,
        # MS MARCO's passage texts (~3 GB) stay in memory for the groups drawn each epoch
        mem_mb=per_attempt(16000),
        runtime=per_attempt(480),
    params:
        method=lambda wc: variant(wc).method,
        cut_layers=lambda wc: variant(wc).cut_layers,
        cut_dim=lambda wc: variant(wc).cut_dim,
        pooling=exp_param("pooling"),
        train=lambda wc: tb_config.tracked(train_settings(wc)),
        settings=retriever_settings,
        untracked=lambda wc: tb_config.untracked(train=train_settings(wc)),
    script:
        "../scripts/train_retriever.py"


rule encode_corpus:
    input:
        model=variant_model,
        data=retrieval_eval_data,
    output:
        embeddings=directory(f"{RESULTS}/{{experiment}}/embeddings/{{variant}}"),
    log:
        f"{RESULTS}/logs/encode_corpus/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        experiment=names_regex(RETRIEVAL_EXPERIMENTS),
    conda:
        "../envs/retrieval.yaml"
    # As train_model: one thread feeds a GPU; on CPU, jobs side by side.
    threads: 1
    resources:
        gpu=1,
        mem_mb=per_attempt(8000),
        runtime=per_attempt(240),
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
    script:
        "../scripts/encode_corpus.py"


rule retrieval_scores:
    input:
        embeddings=variant_embeddings,
        data=retrieval_eval_data,
    output:
        scores=f"{RESULTS}/{{experiment}}/scores/{{variant}}.parquet",
        runs=directory(f"{RESULTS}/{{experiment}}/runs/{{variant}}"),
    log:
        f"{RESULTS}/logs/retrieval_scores/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        experiment=names_regex(RETRIEVAL_EXPERIMENTS),
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
        top_k=exp_param("retrieval", "top_k"),
        similarity=exp_param("retrieval", "similarity"),
        passage_layer=passage_layer,
        average_over=exp_param("retrieval", "average_over"),
        average_name=exp_param("retrieval", "average_name"),
        meta=score_meta,
    script:
        "../scripts/retrieval_scores.py"


rule retrieval_table:
    input:
        scores=f"{RESULTS}/{{experiment}}/scores.parquet",
        reference=reference_file,
    output:
        markdown=f"{RESULTS}/{{experiment}}/tables/retrieval_grid.{{view}}.md",
        csv=f"{RESULTS}/{{experiment}}/tables/retrieval_grid.{{view}}.csv",
        html=report(
            f"{RESULTS}/{{experiment}}/tables/retrieval_grid.{{view}}.html",
            caption="../report/retrieval_table.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "grid {view}"},
        ),
        comparison=f"{RESULTS}/{{experiment}}/tables/retrieval_vs_published.{{view}}.csv",
    log:
        f"{RESULTS}/logs/retrieval_table/{{experiment}}.{{view}}.log",
    wildcard_constraints:
        experiment=names_regex(GROUP_TRAINED_EXPERIMENTS),
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        reference_variant=exp_param("reference", "variant"),
        dataset=lambda wc: wc.view,
        metric=lambda wc: retrieval_view_metric(wc),
    script:
        "../scripts/sts_table.py"


rule retrieval_figure:
    input:
        scores=f"{RESULTS}/{{experiment}}/scores.parquet",
        reference=reference_file,
    output:
        png=report(
            f"{RESULTS}/{{experiment}}/figures/retrieval_layers.{{view}}.png",
            caption="../report/retrieval_figure.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "layer subplots {view}"},
        ),
        svg=f"{RESULTS}/{{experiment}}/figures/retrieval_layers.{{view}}.svg",
    log:
        f"{RESULTS}/logs/retrieval_figure/{{experiment}}.{{view}}.log",
    wildcard_constraints:
        experiment=names_regex(GROUP_TRAINED_EXPERIMENTS),
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        reference_variant=exp_param("reference", "variant"),
        dataset=lambda wc: wc.view,
        metric=lambda wc: retrieval_view_metric(wc),
        title=lambda wc: f"{wc.experiment} ({wc.view}): {experiment(wc)['description']}",
        depth=exp_param("_depth"),
    script:
        "../scripts/sts_figure.py"


rule all_negatives:
    input:
        stage_targets("negatives"),


rule homedepot_table:
    input:
        scores=f"{RESULTS}/{{experiment}}/scores.parquet",
        reference=reference_file,
    output:
        markdown=f"{RESULTS}/{{experiment}}/tables/homedepot.md",
        csv=f"{RESULTS}/{{experiment}}/tables/homedepot.csv",
        html=report(
            f"{RESULTS}/{{experiment}}/tables/homedepot.html",
            caption="../report/homedepot_table.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "table"},
        ),
    log:
        f"{RESULTS}/logs/homedepot_table/{{experiment}}.log",
    wildcard_constraints:
        experiment=names_regex(HOMEDEPOT_EXPERIMENTS),
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        config=experiment_settings,
    script:
        "../scripts/homedepot_table.py"


rule homedepot_figure:
    input:
        scores=f"{RESULTS}/{{experiment}}/scores.parquet",
        reference=reference_file,
    output:
        png=report(
            f"{RESULTS}/{{experiment}}/figures/homedepot_recall.png",
            caption="../report/homedepot_figure.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "recall@10 vs dim"},
        ),
        svg=f"{RESULTS}/{{experiment}}/figures/homedepot_recall.svg",
    log:
        f"{RESULTS}/logs/homedepot_figure/{{experiment}}.log",
    wildcard_constraints:
        experiment=names_regex(HOMEDEPOT_EXPERIMENTS),
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
            f"{RESULTS}/{name}/scores.parquet"
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
        dataset=lambda wc: ablation_base(wc)["reference"]["dataset"]
        or ablation_base(wc)["evaluation"]["datasets"][0],
        metric=lambda wc: ablation_base(wc)["evaluation"]["main_metric"],
        title=lambda wc: ABLATION_TITLES[wc.group],
    script:
        "../scripts/retrieval_ablation.py"
