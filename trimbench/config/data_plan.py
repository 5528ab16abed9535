"""What the shared data stages of a run make (rules/data.smk): the negative miners its experiments
mine with, and the split whose corpus each BM25 index reads. Read while Snakemake parses the
workflow: light, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from trimbench.config.prepare import BM25_TRACKS, corpus_per_split
from trimbench.dense.variants import GROUP_TRAINED_TRACKS

#: tracks that train on mined or downloaded negatives, read off their `train` split's corpus
NEGATIVES_TRACKS = (*GROUP_TRAINED_TRACKS, "splade")


@dataclass(frozen=True)
class Miner:
    """One cached mining stage (rule mine_negatives): the experiments' ``negatives`` settings, and
    how a dense miner embeds (``pooling``; None: the model's own) and scores (``similarity``)."""

    negatives: dict
    pooling: str | None
    similarity: str

    @property
    def searches_bm25(self) -> bool:
        """Whether it searches the training corpus's BM25 index."""
        return self.negatives["miner"] == "bm25"

    @property
    def model(self) -> str | None:
        """The registry model a dense miner encodes with; None for another miner."""
        return self.negatives["model"] if self.negatives["miner"] == "dense" else None

    @property
    def cross_encoder(self) -> str | None:
        """The registry cross-encoder that filters the mined negatives; None for no filter."""
        return self.negatives["cross_encoder"] or None


def miner_key(negatives: dict) -> str:
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


def miners(experiments: dict) -> dict[str, Miner]:
    """Miner key -> the miner of the experiments that mine with it: the dense group-trained ones
    (the experiment's pooling and similarity), then the SPLADE ones without downloaded hard
    negatives (a dense miner pools the model's own way and scores by dot product for SPLADE)."""
    found = {}
    for exp in experiments.values():
        if exp["track"] in GROUP_TRAINED_TRACKS:
            negatives = exp["retrieval"]["negatives"]
            found[miner_key(negatives)] = Miner(negatives, exp["pooling"], exp["retrieval"]["similarity"])
    for exp in experiments.values():
        if exp["track"] == "splade" and exp["train"]["hard_negatives"] is None:
            found[miner_key(exp["train"]["negatives"])] = Miner(exp["train"]["negatives"], None, "dot")
    return found


def _bm25_read_splits(experiments: dict) -> dict[str, set[str]]:
    """Each dataset a BM25 index may be built for -> the splits the experiments read of it: the
    evaluation splits of the BM25 baseline's tracks, the training splits of the mining tracks."""
    splits: dict[str, set[str]] = {}
    for exp in experiments.values():
        evaluation, train = exp["evaluation"], exp["train"]
        if exp["track"] in BM25_TRACKS:
            for dataset in evaluation["datasets"]:
                splits.setdefault(dataset, set()).add(evaluation["split"])
        if exp["track"] in NEGATIVES_TRACKS:
            splits.setdefault(train["dataset"], set()).add(train["split"])
    return splits


def bm25_corpus_splits(config: dict) -> dict[str, str]:
    """Each dataset with one corpus for every split (BEIR, Tevatron) -> the split whose corpus its
    BM25 index is built from: the first (by name) any experiment reads, so the miner's training split
    and the evaluation split share one index. Datasets whose builder makes a corpus per split (Lee,
    Home Depot: ``corpus_per_split``) are not in it: each split has its own index."""
    return {dataset: min(splits) for dataset, splits in _bm25_read_splits(config["experiments"]).items()
            if not corpus_per_split(config["datasets"][dataset])}
