# Embedding texts: one forward pass per model and text set, every grid layer pooled.


rule encode_texts:
    input:
        model=variant_model,
        data=eval_tables,
    output:
        embeddings=directory(f"{RESULTS}/{{experiment}}/embeddings/{{variant}}"),
    log:
        f"{RESULTS}/logs/encode_texts/{{experiment}}/{{variant}}.log",
    conda:
        "../envs/train.yaml"
    # As train_model: one thread feeds a GPU; on CPU, jobs side by side.
    threads: 1
    resources:
        gpu=1,
        mem_mb=per_attempt(4000),
        runtime=per_attempt(60),
    params:
        datasets=exp_param("evaluation", "datasets"),
        layers=lambda wc: list(variant(wc).eval_layers),
        max_dim=lambda wc: max(experiment(wc)["grid"]["dims"]),
        pooling=exp_param("pooling"),
        max_seq_length=exp_param("evaluation", "max_seq_length"),
        batch_size=exp_param("evaluation", "batch_size"),
    script:
        "../scripts/encode_texts.py"


rule all_embeddings:
    input:
        stage_targets("embeddings"),
