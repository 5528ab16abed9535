# SPLADE (track: splade): training triplets, training, sparse encoding, pyserini impact indexes,
# search, ensembles and the seed's table. Data and mined negatives: rules/data.smk.


include: "functions/splade.smk"


rule fetch_hard_negatives:
    output:
        file=f"{HARD_NEGATIVES}/{{file}}",
    log:
        f"{RESULTS}/logs/fetch_hard_negatives/{{file}}.log",
    wildcard_constraints:
        file=r"[^/]+\.(jsonl|pkl)\.gz",
    localrule: True
    conda:
        "../envs/retrieval.yaml"
    resources:
        runtime=per_attempt(120),
    params:
        hard_negatives=lambda wc: next(
            EXPERIMENTS[name]["train"]["hard_negatives"]
            for name in SPLADE_EXPERIMENTS
            if EXPERIMENTS[name]["train"]["hard_negatives"]
        ),
    script:
        "../scripts/fetch_hard_negatives.py"


rule convert_ce_scores:
    input:
        scores=lambda wc: next(
            hard_negatives_file(name, "scores_file")
            for name in SPLADE_EXPERIMENTS
            if EXPERIMENTS[name]["train"]["hard_negatives"]
        ),
    output:
        table=CE_SCORES,
    log:
        f"{RESULTS}/logs/convert_ce_scores/convert_ce_scores.log",
    conda:
        "../envs/retrieval.yaml"
    # The pickle holds ~17 GB of Python dicts once loaded; it is read once, here.
    resources:
        mem_mb=per_attempt(24000),
        runtime=per_attempt(60),
    script:
        "../scripts/convert_ce_scores.py"


rule splade_triplets:
    input:
        unpack(splade_triplet_inputs),
    output:
        triplets=f"{RESULTS}/splade/{{experiment}}/triplets/{{method}}.parquet",
    log:
        f"{RESULTS}/logs/splade_triplets/{{experiment}}/{{method}}.log",
    wildcard_constraints:
        method="splade_max|distil_splade",
    conda:
        "../envs/retrieval.yaml"
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(60),
    params:
        hard_negatives=exp_param("train", "hard_negatives"),
        seed=exp_param("train", "seed"),
        max_samples=exp_param("train", "max_samples"),
    script:
        "../scripts/splade_triplets.py"


rule train_splade:
    input:
        model=lambda wc: model_dir(splade_variant(wc)["model"]),
        triplets=lambda wc: triplets_table(wc.experiment, splade_variant(wc)["method"]),
        # the passages the pools point into
        data=splade_training_data,
    output:
        model=directory(f"{RESULTS}/splade/{{experiment}}/models/{{variant}}"),
    log:
        f"{RESULTS}/logs/train_splade/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        variant=names_regex(SPLADE_TRAINED),
    conda:
        "../envs/retrieval.yaml"
    threads: lambda wc: training_threads(experiment(wc)["train"])
    resources:
        # train.devices GPUs of one node (trimbench/jobs/launch.py launches a rank on each)
        gpu=exp_param("train", "devices"),
        nodes=1,
        mem_mb=planned("train_splade", "mem_mb", 16000),
        runtime=planned("train_splade", "runtime", 1440),
    params:
        variant=splade_variant,
        semantics=exp_param("semantics"),
        train=lambda wc: {
            k: v
            for k, v in tb_config.tracked(experiment(wc)["train"]).items()
            if k not in ("negatives", "hard_negatives")
        },
        resume=lambda wc, resources: tb_config.resume_settings(experiment(wc)["train"]),
        max_length=lambda wc: tb_splade.max_length(
            experiment(wc), splade_variant(wc)["method"]
        ),
        packaged=lambda wc: packaged(model=splade_variant(wc)["model"]),
    script:
        "../scripts/train_splade.py"


rule encode_sparse:
    input:
        model=lambda wc: trained_model(wc.experiment, wc.variant),
        data=eval_retrieval_data,
    output:
        vectors=directory(f"{RESULTS}/splade/{{experiment}}/vectors/{{variant}}"),
    log:
        f"{RESULTS}/logs/encode_sparse/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        variant=names_regex(SPLADE_TRAINED),
    conda:
        "../envs/retrieval.yaml"
    threads: exp_param("splade", "encode_devices")
    resources:
        # splade.encode_devices GPUs of one node (trimbench/jobs/launch.py launches a rank on each)
        gpu=exp_param("splade", "encode_devices"),
        nodes=1,
        mem_mb=planned("encode_sparse", "mem_mb", 16000),
        runtime=planned("encode_sparse", "runtime", 480),
    params:
        datasets=exp_param("evaluation", "datasets"),
        corpus_of=exp_param("_corpus_of"),
        settings=lambda wc: tb_config.tracked(experiment(wc)["splade"]),
        max_length=lambda wc: tb_splade.max_length(
            experiment(wc), splade_variant(wc)["method"]
        ),
    script:
        "../scripts/encode_sparse.py"


rule index_sparse:
    input:
        vectors=lambda wc: splade_vectors(wc.experiment, wc.variant),
        data=eval_retrieval_data,
    output:
        index=directory(f"{RESULTS}/splade/{{experiment}}/indexes/{{variant}}"),
    log:
        f"{RESULTS}/logs/index_sparse/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        variant=names_regex(SPLADE_TRAINED),
    conda:
        "../envs/retrieval.yaml"
    # One job per trained variant indexes each of its corpora in turn (as encode_sparse encodes them), with
    # Anserini's indexing threads.
    threads: 4
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(480),
    params:
        datasets=exp_param("evaluation", "datasets"),
        corpus_of=exp_param("_corpus_of"),
    script:
        "../scripts/index_sparse.py"


rule splade_scores:
    input:
        vectors=lambda wc: splade_vectors(wc.experiment, wc.variant),
        index=lambda wc: splade_index(wc.experiment, wc.variant),
        data=eval_retrieval_data,
    output:
        scores=f"{RESULTS}/splade/{{experiment}}/scores/{{variant}}.parquet",
        runs=directory(f"{RESULTS}/splade/{{experiment}}/runs/{{variant}}"),
    log:
        f"{RESULTS}/logs/splade_scores/{{experiment}}/{{variant}}.log",
    # a trained variant's scores; an ensemble's (same paths) are splade_ensemble's
    wildcard_constraints:
        variant=names_regex(SPLADE_TRAINED),
    conda:
        "../envs/retrieval.yaml"
    threads: 2
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(240),
    params:
        datasets=exp_param("evaluation", "datasets"),
        index_of=lambda wc: splade_index_of(wc.experiment, wc.variant),
        metrics=exp_param("evaluation", "metrics"),
        relevance_level=relevance_level,
        ignore_identical_ids=ignore_identical_ids,
        top_k=exp_param("splade", "top_k"),
        average_over=exp_param("evaluation", "average_over"),
        average_name=exp_param("evaluation", "average_name"),
        meta=lambda wc: splade_meta(wc, wc.variant, splade_variant(wc)["model"]),
    script:
        "../scripts/splade_scores.py"


rule splade_ensemble:
    input:
        runs=lambda wc: [
            splade_runs(wc.experiment, member) for member in ensemble_members(wc)
        ],
        member_scores=lambda wc: [
            variant_scores_of(wc.experiment, member) for member in ensemble_members(wc)
        ],
        data=eval_retrieval_data,
    output:
        scores=f"{RESULTS}/splade/{{experiment}}/scores/{{variant}}.parquet",
        runs=directory(f"{RESULTS}/splade/{{experiment}}/runs/{{variant}}"),
    log:
        f"{RESULTS}/logs/splade_ensemble/{{experiment}}/{{variant}}.log",
    wildcard_constraints:
        variant=names_regex(SPLADE_ENSEMBLES),
    conda:
        "../envs/retrieval.yaml"
    resources:
        mem_mb=per_attempt(8000),
        runtime=per_attempt(60),
    params:
        datasets=exp_param("evaluation", "datasets"),
        metrics=exp_param("evaluation", "metrics"),
        relevance_level=relevance_level,
        top_k=exp_param("splade", "top_k"),
        average_over=exp_param("evaluation", "average_over"),
        average_name=exp_param("evaluation", "average_name"),
        meta=lambda wc: splade_meta(wc, wc.variant),
    script:
        "../scripts/splade_ensemble.py"


rule splade_table:
    input:
        scores=scores_table,
        reference=reference_file,
        baseline=bm25_baseline,
    output:
        markdown=f"{RESULTS}/splade/{{experiment}}/tables/splade.md",
        csv=f"{RESULTS}/splade/{{experiment}}/tables/splade.csv",
        html=report(
            f"{RESULTS}/splade/{{experiment}}/tables/splade.html",
            caption="../report/splade_table.rst",
            category=experiment_track,
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "view": "table"},
        ),
    log:
        f"{RESULTS}/logs/splade_table/{{experiment}}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        config=experiment_settings,
    script:
        "../scripts/splade_table.py"
