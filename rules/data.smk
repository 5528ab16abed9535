# Data shared by every track: datasets, registry models, BEIR-style retrieval splits, mined
# hard negatives (cached per miner, shared by the dense retrieval and SPLADE tracks), and BM25:
# one Lucene index per corpus, searched by the BM25 miner and the retrieval tracks' BM25 baseline.


include: "functions/data.smk"


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
    input:
        # a tiny model's vocabulary: another registry model's
        vocab=lambda wc: model_dir(vocab_model(wc)),
    output:
        model=directory(f"{RESULTS}/models/{{model}}"),
    log:
        f"{RESULTS}/logs/fetch_model/{{model}}.log",
    localrule: True
    conda:
        "../envs/train.yaml"
    params:
        entry=lambda wc: MODELS[wc.model],
        packaged=lambda wc: packaged(vocab=vocab_model(wc)),
    script:
        "../scripts/fetch_model.py"


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
        index=lambda wc: (
            bm25_index_dir(wc.dataset, wc.split, "flat")
            if miner_of(wc).searches_bm25
            else []
        ),
        miner=lambda wc: model_dir(miner_of(wc).model),
        cross_encoder=lambda wc: model_dir(miner_of(wc).cross_encoder),
    output:
        negatives=f"{RESULTS}/negatives/{{dataset}}/{{split}}/{{miner}}.jsonl",
    log:
        f"{RESULTS}/logs/mine_negatives/{{dataset}}/{{split}}/{{miner}}.log",
    # a configured miner only
    wildcard_constraints:
        miner=names_regex(MINERS),
    conda:
        "../envs/retrieval.yaml"
    threads: 2
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(240),
    params:
        negatives=lambda wc: miner_of(wc).negatives,
        bm25=lambda wc: miner_of(wc).bm25_parameters,
        pooling=lambda wc: miner_of(wc).pooling,
        similarity=lambda wc: miner_of(wc).similarity,
        packaged=lambda wc: packaged(
            miner=miner_of(wc).model, cross_encoder=miner_of(wc).cross_encoder
        ),
    script:
        "../scripts/mine_negatives.py"


rule bm25_index:
    input:
        data=retrieval_data("{dataset}", "{split}"),
    output:
        index=directory(f"{RESULTS}/bm25/{{dataset}}/{{split}}/{{fields}}"),
    log:
        f"{RESULTS}/logs/bm25_index/{{dataset}}/{{split}}/{{fields}}.log",
    wildcard_constraints:
        fields="flat|multifield",
    conda:
        "../envs/retrieval.yaml"
    threads: 2
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(240),
    params:
        name=lambda wc: wc.dataset,
        fields=lambda wc: wc.fields,
    script:
        "../scripts/bm25_index.py"


rule bm25_scores:
    input:
        index=bm25_eval_indexes,
        data=eval_retrieval_data,
    output:
        scores=f"{RESULTS}/{{track}}/{{experiment}}/bm25/scores.parquet",
        runs=directory(f"{RESULTS}/{{track}}/{{experiment}}/bm25/runs"),
    log:
        f"{RESULTS}/logs/bm25_scores/{{track}}/{{experiment}}.log",
    wildcard_constraints:
        track=names_regex(tb_tracks.names(bm25=True)),
    conda:
        "../envs/retrieval.yaml"
    threads: 2
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(120),
    params:
        datasets=exp_param("evaluation", "datasets"),
        bm25=exp_param("bm25"),
        metrics=exp_param("evaluation", "metrics"),
        relevance_level=relevance_level,
        ignore_identical_ids=ignore_identical_ids,
        top_k=lambda wc: tb_config.bm25_settings(experiment(wc))["top_k"],
        average_over=lambda wc: tb_config.bm25_settings(experiment(wc))["average_over"],
        average_name=lambda wc: tb_config.bm25_settings(experiment(wc))["average_name"],
        meta=bm25_meta,
    script:
        "../scripts/bm25_scores.py"
