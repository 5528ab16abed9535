"""Each training query's pool (positives, negatives) and the group drawn from it per epoch.

One mechanism for every track that trains on mined or published negatives: a table with one row
per query (``row``, ``query``, ``positives`` and ``negatives`` as positions into the passage texts,
optionally ``positive_scores`` / ``negative_scores``: a teacher's score of each), and
:class:`EpochGroups`, a ``datasets`` transform that draws each query's group for the current epoch,
rotating through its pool as the originals do:

- the 2DMSE retrieval seed (its Tevatron fork, ``src/tevatron/retriever/dataset.py:42-79``): groups
  of ``group_size`` passages, the positive offset by the row's hash;
- SPLADE (naver/splade ``training_with_sentence_transformers/train_max.py:184-196``,
  ``train_distil.py:176-195`` at eb74d1a): one positive and one negative a step, each query's
  negatives shuffled once, then ``pop(0)`` / ``append`` per access (positives likewise, unshuffled),
  the MarginMSE label ``CE(q, pos) − CE(q, neg)`` of the pair shown.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trimbench.data.io import RetrievalSplit, doc_texts

if TYPE_CHECKING:
    import datasets
    import pyarrow as pa

#: the columns of a pool table (:func:`pool_frame`); scores are optional
POOL_COLUMNS = ("row", "query", "positives", "negatives")
SCORE_COLUMNS = ("positive_scores", "negative_scores")


def passage_texts(split: RetrievalSplit) -> pa.Array:
    """The corpus' passages (``title text``, as Tevatron's ``format_passage``) in corpus order: the
    texts a pool table's positions point into."""
    import pyarrow as pa

    return pa.array((text for text in doc_texts(split.corpus)), type=pa.large_string(), size=len(split.corpus))


def pool_frame(rows: list[dict], max_samples: int | None = None, seed: int = 42) -> pd.DataFrame:
    """The pool table of ``rows`` (dicts with query, positives, negatives[, the scores]):
    ``max_samples`` of them by seed (in their order), numbered 0.. in ``row``."""
    keep = np.arange(len(rows))
    if max_samples is not None and len(keep) > max_samples:
        keep = np.sort(np.random.default_rng(seed).choice(len(keep), size=max_samples, replace=False))
    scored = bool(rows) and SCORE_COLUMNS[0] in rows[0]
    columns = [*POOL_COLUMNS[1:], *(SCORE_COLUMNS if scored else ())]
    frame = pd.DataFrame([rows[i] for i in keep], columns=columns)
    frame.insert(0, "row", np.arange(len(frame)))
    return frame


def mined_pool_frame(split: RetrievalSplit, pools: Iterable[dict], max_samples: int | None = None,
                     seed: int = 42) -> pd.DataFrame:
    """The pool table of the negatives cache's rows (``trimbench.negatives``: query id, positives in
    the source's order, negatives best first), one row per training query with a positive."""
    position = pd.Index(split.corpus["doc_id"])
    query_text = dict(zip(split.queries["query_id"], split.queries["text"], strict=True))
    rows = []
    for pool in pools:
        if not pool["positives"] or pool["query_id"] not in query_text:
            continue
        rows.append({"query": query_text[pool["query_id"]],
                     "positives": position.get_indexer(pool["positives"]).tolist(),
                     "negatives": position.get_indexer([n["doc_id"] for n in pool["negatives"]]).tolist()})
    if any(-1 in row["positives"] + row["negatives"] for row in rows):
        raise ValueError("the negatives cache names passages that are not in the training corpus: rebuild it")
    return pool_frame(rows, max_samples, seed)


def group_pools(split: RetrievalSplit, pools: Iterable[dict], max_samples: int | None = None,
                seed: int = 42) -> tuple[datasets.Dataset, pa.Array]:
    """The training table the trainer draws groups from (:func:`mined_pool_frame` as a ``datasets``
    table), and the passage texts it points into."""
    return pool_dataset(mined_pool_frame(split, pools, max_samples, seed)), passage_texts(split)


def pool_dataset(frame: pd.DataFrame) -> datasets.Dataset:
    import datasets

    return datasets.Dataset.from_dict({column: frame[column].tolist() for column in frame.columns})


class EpochGroups:
    """Each query's training group, drawn afresh every epoch; a ``datasets`` transform over a pool
    table that the sentence-transformers trainer reads as columns query, positive, negative_1 ..
    negative_{group_size-1} (and ``label`` when the table has scores: ``group_size`` 2 only).

    For row ``i`` in epoch ``e``, with ``h = i + seed`` (Tevatron's ``hash(item + seed)``: an int's
    hash is itself): the positive is ``positives[(h + e) % len(positives)]`` (Tevatron), or with
    ``positives_from_first`` ``positives[e % len(positives)]`` (SPLADE's ``pop(0)`` / ``append``);
    with a pool of at least ``group_size - 1`` negatives, the pool is shuffled once by
    ``random.Random(h)``, doubled, and epoch ``e`` takes the ``group_size - 1`` after offset
    ``e·(group_size-1) mod len(pool)`` (so successive epochs walk through the pool: with one negative
    a group, SPLADE's rotation exactly). A smaller pool is sampled with replacement (Tevatron:
    ``random.choices`` on the global generator; here one seeded by (h, e), so a rerun draws the
    same); a query with none gets random passages that are not its positives (Tevatron would fail).
    The epoch is set by :meth:`callback` at each epoch's start.

    Where the originals differ in detail: SPLADE's seed rotates per access, so a query whose
    item falls in a dropped last batch (``train_distil.py``'s ``drop_last``) lags one step in that
    epoch; here the draw is a function of (row, epoch), the same on every rank and on a resume.
    """

    def __init__(self, texts, group_size: int, seed: int, positives_from_first: bool = False):
        self.texts = texts
        self.negatives_per_group = group_size - 1
        self.seed = seed
        self.positives_from_first = positives_from_first
        self.epoch = 0

    def indices(self, row: int, n_positives: int, n_negatives: int, epoch: int) -> tuple[int, list[int]]:
        """Which of ``row``'s positives and negatives (indices into its lists) ``epoch`` shows;
        ``n_negatives`` must be at least 1."""
        hashed = row + self.seed
        n = self.negatives_per_group
        positive = self._positive(row, n_positives, epoch)
        if n_negatives >= n:
            order = list(range(n_negatives))
            random.Random(hashed).shuffle(order)
            offset = epoch * n % n_negatives
            return positive, (order * 2)[offset:offset + n]
        return positive, random.Random(hashed * 1_000_003 + epoch).choices(range(n_negatives), k=n)

    def _positive(self, row: int, n_positives: int, epoch: int) -> int:
        """The position of ``row``'s positive in ``epoch``: the seed's pop(0)/append from the front
        (SPLADE), else from a per-query offset (the 2DMSE retrieval track)."""
        return (epoch if self.positives_from_first else row + self.seed + epoch) % n_positives

    def draw(self, row: int, positives: list[int], negatives: list[int], epoch: int) -> tuple[int, list[int]]:
        """(positive, negatives) of ``row`` in ``epoch``, as positions into the texts."""
        if negatives:
            positive, chosen = self.indices(row, len(positives), len(negatives), epoch)
            return positives[positive], [negatives[k] for k in chosen]
        n = self.negatives_per_group
        rng = random.Random((row + self.seed) * 1_000_003 + epoch)
        positive = positives[self._positive(row, len(positives), epoch)]
        banned = set(positives)
        others = [i for i in rng.sample(range(len(self.texts)), min(len(self.texts), n + len(banned)))
                  if i not in banned]
        return positive, rng.choices(others, k=n) if len(others) < n else others[:n]

    def labelled(self, row: int, positive_scores: list[float], negative_scores: list[float],
                 epoch: int) -> float:
        """The distillation label of the pair ``row`` shows in ``epoch``: teacher(pos) − teacher(neg)."""
        if self.negatives_per_group != 1:
            raise ValueError("teacher-score labels need groups of one positive and one negative")
        positive, (negative,) = self.indices(row, len(positive_scores), len(negative_scores), epoch)
        return float(positive_scores[positive] - negative_scores[negative])

    def __call__(self, batch: dict) -> dict:
        drawn = [self.draw(row, positives, negatives, self.epoch)
                 for row, positives, negatives in zip(batch["row"], batch["positives"], batch["negatives"],
                                                      strict=True)]
        out = {"query": list(batch["query"]), "positive": self._texts([p for p, _ in drawn])}
        for k in range(self.negatives_per_group):
            out[f"negative_{k + 1}"] = self._texts([negs[k] for _, negs in drawn])
        if SCORE_COLUMNS[0] in batch:
            out["label"] = [self.labelled(row, pos, neg, self.epoch) for row, pos, neg in
                            zip(batch["row"], batch["positive_scores"], batch["negative_scores"], strict=True)]
        return out

    def _texts(self, positions: list[int]) -> list[str]:
        return self.texts.take(positions).to_pylist()

    def callback(self):
        """A trainer callback that sets the epoch the groups are drawn for (a resumed run's too)."""
        from transformers import TrainerCallback

        groups = self

        class RedrawGroups(TrainerCallback):
            def on_epoch_begin(self, args, state, control, **kwargs):
                groups.epoch = math.floor(state.epoch + 1e-6)

        return RedrawGroups()
