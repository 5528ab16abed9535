# Input functions and parse-time tables of rules/data.smk (Snakemake's linter keeps functions
# out of files with rules).


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


# miner key -> (settings, pooling, similarity) of the experiments that mine with it: the miner each
# one's training asks for (its track's face, trimbench.face.Track.miner).
MINERS = {
    miner_key(miner[0]): miner
    for miner in (tb_tracks.track_of(exp).miner(exp) for exp in EXPERIMENTS.values())
    if miner is not None
}


# --- BM25: one index per corpus (bm25_index), searched by the miner and the baseline ---
def _retrieval_splits():
    """Each retrieval dataset -> the splits the experiments read of it (training, evaluation)."""
    splits = {}
    for exp in EXPERIMENTS.values():
        evaluation, train = exp["evaluation"], exp["train"]
        if tb_tracks.track_of(exp).bm25:
            for ds in evaluation["datasets"]:
                splits.setdefault(ds, set()).add(evaluation["split"])
        if tb_tracks.track_of(exp).trains_on_retrieval:
            splits.setdefault(train["dataset"], set()).add(train["split"])
    return splits


RETRIEVAL_SPLITS = _retrieval_splits()


def bm25_index_dir(dataset, split, fields):
    """The BM25 index of (dataset, split)'s corpus: a dataset with one corpus for every split (BEIR,
    Tevatron) is indexed once, from the first split any experiment reads (the miner's training split
    and the evaluation split then share it); Lee's and Home Depot's builders make a corpus per split.
    """
    if not tb_config.corpus_per_split(DATASETS[dataset]):
        split = min(RETRIEVAL_SPLITS.get(dataset, {split}))
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
