# Input functions and parse-time tables of rules/data.smk (Snakemake's linter keeps functions
# out of files with rules).
from trimbench.dense import variants as tb_variants


def preparation_entry(wildcards):
    return tb_config.preparation_entry(DATASETS[wildcards.dataset])


def vocab_model(wildcards):
    """The registry model whose vocabulary a tiny model is built with; None for other models."""
    entry = MODELS[wildcards.model]
    return entry["vocab_from"] if entry["source"] == "tiny" else None


def miner_key(negatives):
    """The cached mining stage's name: the miner and every setting that changes its output."""
    if negatives["miner"] == "dataset":  # the training dataset's own: no depth, no keep
        key = "dataset"
    else:
        key = f"{negatives['miner']}-d{negatives['depth']}-k{negatives['keep']}"
    if negatives["miner"] == "dense":
        key += f"-{negatives['model']}"
    if negatives["cross_encoder"]:
        key += f"-ce-{negatives['cross_encoder']}-m{negatives['margin']:g}"
    return key


def negatives_path(train, negatives):
    """Mined negatives of a training split, cached per miner."""
    return f"{RESULTS}/negatives/{train['dataset']}/{train['split']}/{miner_key(negatives)}.jsonl"


# miner key -> (settings, pooling, similarity) of the experiments that mine with it: the dense
# group-trained ones, then the SPLADE ones without downloaded hard negatives (a dense miner pools
# the model's own way and scores by dot product for SPLADE).
MINERS = {
    **{
        miner_key(exp["retrieval"]["negatives"]): (
            exp["retrieval"]["negatives"],
            exp["pooling"],
            exp["retrieval"]["similarity"],
        )
        for exp in EXPERIMENTS.values()
        if exp["track"] in tb_variants.GROUP_TRAINED_TRACKS
    },
    **{
        miner_key(exp["train"]["negatives"]): (exp["train"]["negatives"], None, "dot")
        for exp in EXPERIMENTS.values()
        if exp["track"] == "splade" and exp["train"]["hard_negatives"] is None
    },
}
