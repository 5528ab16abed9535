"""gensim's shipped Lee corpus as datasets: inverse-cloze pairs (lee_ict), the Lee similarity ratings
(whole or split by document) and the word-similarity sets gensim ships (simlex999, wordsim353)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd

from trimbench.data.io import gensim_test_data, read_lines, split_sentences
from trimbench.errors import DataError

GENSIM_SPLITS = {"lee_ict": ("train", "heldout"), "lee_similarity": ("test",),
                 "lee_similarity_split": ("train", "validation", "test"), "simlex999": ("train",),
                 "wordsim353": ("train",)}
#: lee_similarity_split: documents per split (of 50), so no document is in two splits
LEE_DOCUMENT_SPLITS = {"train": 30, "validation": 10, "test": 10}


# --- gensim's test data: the embedded default ---------------------------------------------------


def lee_ict(split: str, heldout_fraction: float, pairs_per_article: int, seed: int) -> pd.DataFrame:
    """Inverse-cloze pairs from ``lee_background.cor``: one sentence as anchor, the rest of its
    article as positive. Articles are split, by seed, into ``train`` and a ``heldout`` share kept
    apart for retrieval. Columns: anchor, positive, article_id (the line number in the file)."""
    articles = read_lines(gensim_test_data("lee_background.cor"))
    rng = random.Random(seed)
    order = list(range(len(articles)))
    rng.shuffle(order)
    n_heldout = max(1, round(len(articles) * heldout_fraction))
    chosen = sorted(order[:n_heldout]) if split == "heldout" else sorted(order[n_heldout:])
    rows = []
    for article_id in chosen:
        sentences = split_sentences(articles[article_id])
        if len(sentences) < 2:
            continue
        picks = rng.sample(range(len(sentences)), min(pairs_per_article, len(sentences)))
        for i in picks:
            rest = " ".join(s for j, s in enumerate(sentences) if j != i)
            rows.append({"anchor": sentences[i], "positive": rest, "article_id": article_id})
    # Interleave articles so one batch rarely holds two pairs of the same article.
    rng.shuffle(rows)
    return pd.DataFrame(rows, columns=["anchor", "positive", "article_id"])


def lee_similarity() -> pd.DataFrame:
    """The Lee et al. (2005) document-similarity judgements: 50 documents, 1225 pairs, 0..1."""
    documents = read_lines(gensim_test_data("lee.cor"))
    matrix = np.loadtxt(gensim_test_data("similarities0-1.txt"))
    n = len(documents)
    if matrix.shape != (n, n):
        raise DataError(f"similarities0-1.txt is {matrix.shape}, expected ({n}, {n})")
    i, j = np.triu_indices(n, k=1)
    return pd.DataFrame({"sentence1": [documents[a] for a in i], "sentence2": [documents[b] for b in j],
                         "score": matrix[i, j].astype(float)})


def lee_similarity_split(split: str, seed: int) -> pd.DataFrame:
    """The Lee pairs among one share of the 50 documents, shuffled into splits by ``seed``."""
    pairs = lee_similarity()
    documents = pd.factorize(pd.concat([pairs["sentence1"], pairs["sentence2"]]))[1]
    order = list(range(len(documents)))
    random.Random(seed).shuffle(order)
    start = 0
    for name, count in LEE_DOCUMENT_SPLITS.items():
        if name == split:
            break
        start += count
    chosen = set(documents[sorted(order[start:start + LEE_DOCUMENT_SPLITS[split]])])
    inside = pairs["sentence1"].isin(chosen) & pairs["sentence2"].isin(chosen)
    return pairs[inside].reset_index(drop=True)


def word_pairs(file_name: str) -> pd.DataFrame:
    """A word-similarity set shipped with gensim (``# ``-comment header, tab-separated word1, word2,
    score on 0..10) as sentence1, sentence2, score on 0..1."""
    frame = pd.read_csv(gensim_test_data(file_name), sep="\t", comment="#", header=None,
                        names=["sentence1", "sentence2", "score"])
    return frame.assign(score=frame["score"] / 10.0)


def gensim_split(entry: dict, split: str) -> pd.DataFrame:
    builder = entry["builder"]
    if split not in GENSIM_SPLITS[builder]:
        raise DataError(f"gensim builder '{builder}' has splits {list(GENSIM_SPLITS[builder])}, not '{split}'")
    if builder == "lee_ict":
        frame = lee_ict(split, entry["heldout_fraction"], entry["pairs_per_article"], entry["seed"])
        return with_other_article_negatives(frame, entry["seed"]) if entry["kind"] == "triplets" else frame
    if builder == "lee_similarity_split":
        return lee_similarity_split(split, entry["seed"])
    if builder in ("simlex999", "wordsim353"):
        return word_pairs({"simlex999": "simlex999.txt", "wordsim353": "wordsim353.tsv"}[builder])
    return lee_similarity()


def with_other_article_negatives(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Triplets from ICT pairs: each anchor's negative is the positive of a row drawn, by seed,
    from another article (a random negative; mined hard negatives are the retrieval track's)."""
    rng = np.random.default_rng(seed)
    articles = frame["article_id"].to_numpy()
    negatives = []
    for i in range(len(frame)):
        others = np.flatnonzero(articles != articles[i])
        if len(others) == 0:
            raise DataError("ICT triplets need at least two articles")
        negatives.append(frame["positive"].iat[int(rng.choice(others))])
    return frame.assign(negative=negatives)
