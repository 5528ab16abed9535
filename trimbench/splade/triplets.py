"""SPLADE training pools (each query's positives and negatives, rotated per epoch by
:class:`trimbench.pools.EpochGroups` into one triplet a step): from negatives mined over the
training split (:func:`trimbench.pools.mined_pool_frame`), or from
``sentence-transformers/msmarco-hard-negatives`` with its cross-encoder scores.

``msmarco-hard-negatives.jsonl.gz`` has one line per MS MARCO training query:
``{"qid": int, "pos": [pid, ...], "neg": {system: [pid, ...], ...}}`` (13 systems).
``cross-encoder-ms-marco-MiniLM-L-6-v2-scores.pkl.gz`` is a pickled ``{qid: {pid: score}}`` that
takes ~17 GB of RAM as Python dicts: :func:`convert_ce_scores` turns it once into a parquet table
(qid, pid, score; 16 bytes a pair) that :class:`CrossEncoderScores` reads as two numpy arrays.

The seed's selection (sentence-transformers' MS MARCO examples it is built on): per query, up to
``per_system`` negatives from each system, in the system's order, skipping passages already taken;
``splade_max`` (train_max.py) also skips a negative whose CE score exceeds
``min(CE of the positives) − ce_margin`` (3.0); ``distil_splade`` learns the margin
``CE(q, pos) − CE(q, neg)``.
"""

from __future__ import annotations

import gzip
import json
import logging
import pickle
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench.data.io import RetrievalSplit
from trimbench.pools import EpochGroups, passage_texts, pool_dataset, pool_frame

log = logging.getLogger(__name__)


def read_hard_negatives(path: Path) -> Iterator[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def convert_ce_scores(pickle_path: Path, out_path: Path) -> int:
    """The pickled ``{qid: {pid: score}}`` as a parquet table sorted by (qid, pid); returns pairs."""
    opener = gzip.open if str(pickle_path).endswith(".gz") else open
    with opener(pickle_path, "rb") as handle:
        scores = pickle.load(handle)  # noqa: S301 - the published scores file, named in the config
    total = sum(len(by_pid) for by_pid in scores.values())
    qids = np.empty(total, dtype=np.int64)
    pids = np.empty(total, dtype=np.int64)
    values = np.empty(total, dtype=np.float32)
    at = 0
    for qid in list(scores):
        by_pid = scores.pop(qid)  # freed as we go: the dicts are the memory
        n = len(by_pid)
        qids[at:at + n] = int(qid)
        pids[at:at + n] = np.fromiter(map(int, by_pid.keys()), dtype=np.int64, count=n)
        values[at:at + n] = np.fromiter(by_pid.values(), dtype=np.float32, count=n)
        at += n
    order = np.lexsort((pids, qids))
    pd.DataFrame({"qid": qids[order], "pid": pids[order], "score": values[order]}).to_parquet(out_path, index=False)
    return total


class CrossEncoderScores:
    """CE score of (qid, pid) pairs from the converted table (binary search on a combined key)."""

    def __init__(self, path: Path):
        table = pd.read_parquet(path)
        self.keys = _key(table["qid"].to_numpy(np.int64), table["pid"].to_numpy(np.int64))
        self.scores = table["score"].to_numpy(np.float32)

    def get(self, qid: int, pids: list[int]) -> np.ndarray:
        """Scores of ``pids`` for ``qid``; NaN where the file has no score."""
        keys = _key(np.full(len(pids), qid, dtype=np.int64), np.asarray(pids, dtype=np.int64))
        at = np.clip(np.searchsorted(self.keys, keys), 0, max(len(self.keys) - 1, 0))
        found = (len(self.keys) > 0) & (self.keys[at] == keys)
        return np.where(found, self.scores[at], np.nan)


def _key(qids: np.ndarray, pids: np.ndarray) -> np.ndarray:
    return (qids << 32) | pids  # MS MARCO ids are below 2**32


def select_negatives(row: dict, ce: CrossEncoderScores | None, ce_margin: float | None, per_system: int,
                     systems: list[str] | None) -> list[int]:
    """The seed's negatives of one query (see the module docstring); ``ce_margin`` None: no CE filter."""
    threshold = None
    if ce_margin is not None:
        threshold = float(np.min(ce.get(row["qid"], row["pos"]))) - ce_margin
    chosen: list[int] = []
    for system in systems or list(row["neg"]):
        pids = row["neg"].get(system, [])
        scores = ce.get(row["qid"], pids) if threshold is not None else None
        added = 0
        for i, pid in enumerate(pids):
            if threshold is not None and scores[i] > threshold:
                continue
            if pid not in chosen:
                chosen.append(pid)
                added += 1
                if added >= per_system:
                    break
    return chosen


def hard_negative_pools(split: RetrievalSplit, rows: Iterator[dict], ce: CrossEncoderScores, method: str,
                        settings: dict, seed: int, max_samples: int | None = None) -> pd.DataFrame:
    """The pool table (:func:`trimbench.pools.pool_frame`) of every training query with a positive and
    a negative: its positives in the file's order and its selected negatives as positions into the
    split's corpus, which :class:`trimbench.pools.EpochGroups` rotates through one pair per epoch as
    the seed does (``train_max.py:184-196``, ``train_distil.py:176-195``); ``distil_splade`` also keeps
    each passage's CE score, so the MarginMSE label is that of the pair shown."""
    position = {doc_id: at for at, doc_id in enumerate(split.corpus["doc_id"])}
    query_text = dict(zip(split.queries["query_id"], split.queries["text"], strict=True))
    margin = settings["ce_margin"] if method == "splade_max" else None
    out = []
    for row in rows:
        if str(row["qid"]) not in query_text or not row["pos"]:
            continue
        negatives = [pid for pid in select_negatives(row, ce, margin, settings["per_system"], settings["systems"])
                     if str(pid) in position]
        positives = [pid for pid in row["pos"] if str(pid) in position]
        if not negatives or not positives:
            continue
        item = {"query": query_text[str(row["qid"])], "positives": [position[str(p)] for p in positives],
                "negatives": [position[str(n)] for n in negatives]}
        if method == "distil_splade":
            item["positive_scores"] = ce.get(row["qid"], positives).tolist()
            item["negative_scores"] = ce.get(row["qid"], negatives).tolist()
            missing = [pid for pid, score in zip(positives + negatives, item["positive_scores"]
                                                 + item["negative_scores"], strict=True) if np.isnan(score)]
            if missing:  # the seed would fail on the lookup (ce_scores[qid][pid]) as well
                raise ValueError(f"the cross-encoder scores file has no score for query {row['qid']} and "
                                 f"passages {missing[:5]}: distil_splade's labels need one for each")
        out.append(item)
    return pool_frame(out, max_samples, seed)


def epoch_pairs(pools: pd.DataFrame, split: RetrievalSplit, seed: int):
    """The training set rule train_splade hands the trainer: the pool table as a dataset that shows
    each query one (positive, negative) a step, the next of each in every epoch, as the seed's
    ``pop(0)`` / ``append`` (``train_max.py:184-196``, ``train_distil.py:176-195``): positives from
    the front of the file's order, negatives through the query's shuffled pool; with the
    distillation label of the pair shown where the pools carry CE scores. Returns the dataset and
    its :class:`trimbench.pools.EpochGroups`, whose ``callback()`` the trainer calls at each epoch."""
    pairs = EpochGroups(passage_texts(split), group_size=2, seed=seed, positives_from_first=True)
    return pool_dataset(pools).with_transform(pairs), pairs


def standin_files(split: RetrievalSplit, folder: Path, seed: int, systems: int = 2, per_system: int = 3) -> None:
    """Smoke mode: a hard-negatives file and a CE scores pickle of the published layout over a
    stand-in training split (random negatives, random scores; positives score highest)."""
    rng = np.random.default_rng(seed)
    doc_ids = list(split.corpus["doc_id"])
    numeric = {d: i for i, d in enumerate(doc_ids)}
    relevant = split.relevant()
    scores, lines = {}, []
    for qnum, query_id in enumerate(split.queries["query_id"]):
        positives = [numeric[d] for d in sorted(relevant.get(query_id, ())) if d in numeric]
        negs = {f"system{s}": [int(i) for i in rng.choice(len(doc_ids), per_system, replace=False)]
                for s in range(systems)}
        lines.append({"qid": qnum, "pos": positives, "neg": negs})
        scores[qnum] = {pid: float(rng.normal()) for pids in negs.values() for pid in pids}
        scores[qnum].update({pid: 10.0 for pid in positives})
    # The stand-in ids are positions; the stand-in split is renamed to match.
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "negatives.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    with gzip.open(folder / "scores.pkl.gz", "wb") as handle:
        pickle.dump(scores, handle)


def numbered(split: RetrievalSplit) -> RetrievalSplit:
    """The stand-in split with MS MARCO-like integer ids (positions), as :func:`standin_files` writes."""
    doc_map = {d: str(i) for i, d in enumerate(split.corpus["doc_id"])}
    query_map = {q: str(i) for i, q in enumerate(split.queries["query_id"])}
    return RetrievalSplit(split.corpus.assign(doc_id=split.corpus["doc_id"].map(doc_map)),
                          split.queries.assign(query_id=split.queries["query_id"].map(query_map)),
                          split.qrels.assign(query_id=split.qrels["query_id"].map(query_map),
                                             doc_id=split.qrels["doc_id"].map(doc_map)))
