# Trimmed models as standalone sentence-transformers folders: a grid cell (k, d) that runs alone.


include: "functions/export.smk"


rule export_model:
    input:
        model=variant_model,
    output:
        model=directory(
            f"{RESULTS}/{{track}}/{{experiment}}/exported/{{variant}}/L{{layer}}_d{{dim}}"
        ),
    log:
        f"{RESULTS}/logs/export_model/{{track}}/{{experiment}}/{{variant}}/L{{layer}}_d{{dim}}.log",
    wildcard_constraints:
        layer=r"\d+",
        dim=r"\d+",
    conda:
        "../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(30),
    params:
        layers=lambda wc: int(wc.layer),
        dim=lambda wc: int(wc.dim),
        pooling=exp_param("pooling"),
        max_seq_length=exp_param("evaluation", "max_seq_length"),
        packaged=variant_packaged,
    script:
        "../scripts/export_model.py"
