"""What the shared data stages of a run make (rules/data.smk): the negative miners its experiments
mine with, and the split whose corpus each BM25 index reads. Read while Snakemake parses the
workflow: light, no torch.
"""

from __future__ import annotations

from trimbench.config.prepare import corpus_per_split
from trimbench.face import Miner
from trimbench.tracks import track_of


def miner_key(miner: Miner) -> str:
    """The cached mining stage's name: the miner and every setting that changes its output."""
    negatives = miner.negatives
    if negatives["miner"] == "dataset":  # the training dataset's own: no depth, no keep
        key = "dataset"
    else:
        key = f"{negatives['miner']}-d{negatives['depth']}-k{negatives['keep']}"
    if miner.searches_bm25:
        key += "-k1_{k1:g}-b{b:g}".format(**miner.bm25_parameters)
    if negatives["miner"] == "dense":
        key += f"-{negatives['model']}"
    if negatives["cross_encoder"]:
        key += f"-ce-{negatives['cross_encoder']}-m{negatives['margin']:g}"
    return key


def miners(experiments: dict) -> dict[str, Miner]:
    """Miner key -> the miner of the experiments that mine with it, as each one's track asks
    (:attr:`trimbench.face.Track.miner`): the group-trained dense ones first, then the others
    (SPLADE's), whose miner is kept where both name one key."""
    found = {}
    for exp in sorted(experiments.values(), key=lambda exp: not track_of(exp).group_trained):
        miner = track_of(exp).miner(exp)
        if miner is not None:
            found[miner_key(miner)] = miner
    return found


def _bm25_read_splits(experiments: dict) -> dict[str, set[str]]:
    """Each dataset a BM25 index may be built for -> the splits the experiments read of it: the
    evaluation splits of the BM25 baseline's tracks, the training splits of the mining tracks (an
    experiment that trains on nothing reads none)."""
    splits: dict[str, set[str]] = {}
    for exp in experiments.values():
        track = track_of(exp)
        if track.bm25:
            evaluation = exp["evaluation"]
            for dataset in evaluation["datasets"]:
                splits.setdefault(dataset, set()).add(evaluation["split"])
        training = track.training_data(exp) if track.trains_on_retrieval else None
        if training is not None:
            dataset, split = training
            splits.setdefault(dataset, set()).add(split)
    return splits


def bm25_corpus_splits(config: dict) -> dict[str, str]:
    """Each dataset with one corpus for every split (BEIR, Tevatron) -> the split whose corpus its
    BM25 index is built from: the first (by name) any experiment reads, so the miner's training split
    and the evaluation split share one index. Datasets whose builder makes a corpus per split (Lee,
    Home Depot: ``corpus_per_split``) are not in it: each split has its own index."""
    return {dataset: min(splits) for dataset, splits in _bm25_read_splits(config["experiments"]).items()
            if not corpus_per_split(config["datasets"][dataset])}
