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
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    params:
        datasets=lambda wc: experiment(wc)["evaluation"]["datasets"],
        layers=lambda wc: list(variant(wc).eval_layers),
        max_dim=lambda wc: max(experiment(wc)["grid"]["dims"]),
        pooling=lambda wc: experiment(wc)["pooling"],
        max_seq_length=lambda wc: experiment(wc)["evaluation"]["max_seq_length"],
        batch_size=lambda wc: experiment(wc)["evaluation"]["batch_size"],
    script:
        "../scripts/encode_texts.py"


rule all_embeddings:
    input:
        stage_targets("embeddings"),
