"""The Home Depot Matryoshka study's data (seed 001: product search with all-MiniLM-L6-v2).

Data (``bstds/home_depot``: query, description, entity_id, id, relevance 1-3), as the seed's
``src/data.py`` builds it: the table shuffled as ``datasets.Dataset.shuffle(seed)`` does, the first
``rows`` kept and split as ``train_test_split(test_fraction, seed)`` does. Training pairs are every
(query, description) row of the train part with relevance > 2.5 (9,202 in the seed's log); test
queries are the test part's rows with relevance >= 2.5, each keyed by its row ``id`` with its own
product as the one relevant document. Products are keyed by ``entity_id``: the corpus is every
product of the test part plus ``distractors`` products of neither part.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench.data import hub
from trimbench.data.columns import HOMEDEPOT_COLUMNS
from trimbench.data.io import RetrievalSplit, local_split_file, read_table
from trimbench.errors import DataError

#: our column names -> the hub table's (what the seed's src/data.py reads)
COLUMNS = HOMEDEPOT_COLUMNS


def raw_table(entry: dict) -> pd.DataFrame:
    if entry["source"] == "local":
        return read_table(local_split_file(Path(entry["path"]).expanduser(), "train"))
    with hub.opened(entry) as source:
        return source.dataset(entry["id"], entry.get("config"), "train", entry.get("revision")).to_pandas()


def cut_and_split(entry: dict, table: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(train part, test part, the whole shuffled table), in our column names.

    ``src/data.py:115-120``: ``ds_full.shuffle(seed)`` (= rows in ``default_rng(seed).permutation``
    order), ``select(range(rows))``, ``train_test_split(test_size, seed)`` (test = the first
    ``ceil(test_size * rows)`` of another ``default_rng(seed).permutation``, train the rest, both in
    that permutation's order). ``table``: the raw table (default: read from the entry's source).
    """
    settings, seed = entry["homedepot"], entry["seed"]
    ours_of = {theirs: ours for ours, theirs in {**COLUMNS, **entry["columns"]}.items()}
    table = raw_table(entry) if table is None else table
    missing = [theirs for theirs, ours in ours_of.items() if theirs not in table.columns]
    if missing:
        raise DataError(f"the Home Depot table lacks columns {missing} (it has {list(table.columns)}); map ours "
                        f"({', '.join(COLUMNS)}) to its names with the dataset's 'columns'")
    table = table.rename(columns=ours_of)[list(COLUMNS)]
    table = table.astype({"query": str, "document": str, "relevance": float})
    shuffled = table.iloc[np.random.default_rng(seed).permutation(len(table))].reset_index(drop=True)
    kept = shuffled.iloc[:settings["rows"]]
    order = np.random.default_rng(seed).permutation(len(kept))
    n_test = math.ceil(settings["test_fraction"] * len(kept))
    test, train = kept.iloc[order[:n_test]], kept.iloc[order[n_test:]]
    return train.reset_index(drop=True), test.reset_index(drop=True), shuffled


def pairs_table(entry: dict, split: str) -> pd.DataFrame:
    """Training pairs (anchor = query, positive = product description), in the source's column
    names so the registry's mapping still applies: every train row with relevance above
    ``train_min_relevance`` (``src/data.py:86``). ``unseen_only`` drops pairs whose query or
    product occurs in the test part, and repeated pairs (what the write-up says; the code does not)."""
    if split != "train":
        raise ValueError(f"the Home Depot builder makes training pairs for split 'train', not '{split}'")
    train, test, _ = cut_and_split(entry)
    settings = entry["homedepot"]
    pairs = train[train["relevance"] > settings["train_min_relevance"]]
    if settings["unseen_only"]:
        unseen = ~pairs["query"].isin(set(test["query"])) & ~pairs["product"].isin(set(test["product"]))
        pairs = pairs[unseen].drop_duplicates(["query", "product"])
    return pd.DataFrame({"anchor": pairs["query"].to_numpy(), "positive": pairs["document"].to_numpy()})


def distractor_products(train: pd.DataFrame, test: pd.DataFrame, full: pd.DataFrame, count: int) -> list:
    """``count`` products of neither part, as ``src/data.py:47-54`` picks them: the first of
    ``list(set(full) - (set(train) | set(test)))``. For integer entity ids (the hub's) that set's
    order is CPython's, the same on every run; other ids (whose hashes are salted per process)
    are taken in the shuffled table's order instead, so a rebuild picks the same ones."""
    if count == 0:
        return []
    ids = full["product"].tolist()
    if all(isinstance(i, int) for i in ids):
        neither = set(ids).difference(set(train["product"].tolist()).union(set(test["product"].tolist())))
        return list(neither)[:count]
    used = set(train["product"]) | set(test["product"])
    return [p for p in dict.fromkeys(ids) if p not in used][:count]


def retrieval_split(entry: dict, split: str):
    """Test queries (relevance >= threshold) keyed by row id, each with its product; the corpus is
    the test part's products and the distractors, each with its last description in the shuffled
    table, in order of first appearance there (``src/data.py:23-66``)."""
    if split != "test":
        raise ValueError(f"the Home Depot builder makes a retrieval split 'test', not '{split}'")
    train, test, full = cut_and_split(entry)
    settings = entry["homedepot"]
    judged = test[test["relevance"] >= settings["test_min_relevance"]]
    judged = judged.assign(query_id=judged["query_id"].astype(str)).drop_duplicates("query_id", keep="last")
    wanted = set(test["product"]) | set(distractor_products(train, test, full, settings["distractors"]))
    rows = full[full["product"].isin(wanted)]
    text = rows.groupby("product", sort=False)["document"].last()
    products = list(dict.fromkeys(rows["product"]))
    corpus = pd.DataFrame({"doc_id": [str(p) for p in products], "title": "", "text": [text[p] for p in products]})
    queries = pd.DataFrame({"query_id": judged["query_id"].to_numpy(), "text": judged["query"].to_numpy()})
    qrels = pd.DataFrame({"query_id": queries["query_id"], "doc_id": judged["product"].astype(str).to_numpy(),
                          "relevance": 1})
    return RetrievalSplit(corpus, queries, qrels)


# --- views: table, figure and the scoreboard's comparison ---------------------------------------
