# Input functions and parse-time tables of rules/data.smk.
from trimbench.config import data_plan as tb_data_plan


def preparation_entry(wildcards):
    return tb_config.preparation_entry(DATASETS[wildcards.dataset])


def vocab_model(wildcards):
    """The registry model whose vocabulary a tiny model is built with; None for other models."""
    entry = MODELS[wildcards.model]
    return entry["vocab_from"] if entry["source"] == "tiny" else None


def negatives_path(exp):
    """The mined negatives of an experiment's training split, cached per miner (its track's)."""
    train, miner = exp["train"], tb_tracks.track_of(exp).miner(exp)
    return f"{RESULTS}/negatives/{train['dataset']}/{train['split']}/{tb_data_plan.miner_key(miner)}.jsonl"


#: miner key -> the experiments' Miner (its negatives settings, pooling, similarity)
MINERS = tb_data_plan.miners(EXPERIMENTS)
#: dataset -> the split whose corpus its one BM25 index reads (datasets with one corpus)
BM25_CORPUS_SPLITS = tb_data_plan.bm25_corpus_splits(CONFIG)


def miner_of(wildcards):
    return MINERS[wildcards.miner]


def bm25_index_dir(dataset, split, fields):
    """The BM25 index of (dataset, split)'s corpus (one per corpus: BM25_CORPUS_SPLITS)."""
    split = BM25_CORPUS_SPLITS.get(dataset, split)
    return f"{RESULTS}/bm25/{dataset}/{split}/{fields}"


def bm25_experiments():
    return [
        name
        for name, exp in EXPERIMENTS.items()
        if tb_tracks.track_of(exp).bm25 and exp["bm25"]["enabled"]
    ]


def bm25_scores_of(name):
    """The experiment's BM25 baseline scores (none when its bm25 is off)."""
    enabled = name in bm25_experiments()
    return [f"{experiment_dir(name)}/bm25/scores.parquet"] if enabled else []


def bm25_baseline(wildcards):
    """The BM25 baseline's scores a view shows beside the experiment's methods."""
    return bm25_scores_of(wildcards.experiment)


def bm25_eval_indexes(wildcards):
    """Each evaluation dataset's index: datasets over one corpus (MS MARCO dev, DL19, DL20) search
    the first one's."""
    exp = experiment(wildcards)
    return [
        bm25_index_dir(
            exp["_corpus_of"][ds], exp["evaluation"]["split"], exp["bm25"]["fields"]
        )
        for ds in exp["evaluation"]["datasets"]
    ]


def bm25_meta(wildcards):
    exp = experiment(wildcards)
    return {
        "experiment": wildcards.experiment,
        "track": exp["track"],
        "variant": "bm25",
        "model": None,
        "split": exp["evaluation"]["split"],
        "seed": None,
    }
