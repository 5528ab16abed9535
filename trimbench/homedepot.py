"""The Home Depot Matryoshka study (seed 001): product search with all-MiniLM-L6-v2.

Data (``bstds/home_depot``: query, description, entity_id, id, relevance 1-3), as the seed's
``src/data.py`` builds it: the table shuffled as ``datasets.Dataset.shuffle(seed)`` does, the first
``rows`` kept and split as ``train_test_split(test_fraction, seed)`` does. Training pairs are every
(query, description) row of the train part with relevance > 2.5 (9,202 in the seed's log); test
queries are the test part's rows with relevance >= 2.5, each keyed by its row ``id`` with its own
product as the one relevant document. Products are keyed by ``entity_id``: the corpus is every
product of the test part plus ``distractors`` products of neither part.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench.columns import HOMEDEPOT_COLUMNS

#: our method names -> the write-up's
METHOD_LABELS = {"pretrained": "pretrained", "full": "fine-tuned", "matryoshka": "fine-tuned-matryoshka"}
#: our column names -> the hub table's (what the seed's src/data.py reads)
COLUMNS = HOMEDEPOT_COLUMNS


def raw_table(entry: dict) -> pd.DataFrame:
    if entry["source"] == "local":
        from trimbench.data import local_split_file, read_table

        return read_table(local_split_file(Path(entry["path"]).expanduser(), "train"))
    from trimbench import hub

    with hub.opened(entry) as source:
        return source.dataset(entry["id"], entry.get("config"), "train", entry.get("revision")).to_pandas()


def cut_and_split(entry: dict, table: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(train part, test part, the whole shuffled table), in our column names.

    ``src/data.py:115-120``: ``ds_full.shuffle(seed)`` (= rows in ``default_rng(seed).permutation``
    order), ``select(range(rows))``, ``train_test_split(test_size, seed)`` (test = the first
    ``ceil(test_size * rows)`` of another ``default_rng(seed).permutation``, train the rest, both in
    that permutation's order). ``table``: the raw table (default: read from the entry's source).
    """
    from trimbench.data import DataError

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
    from trimbench.beir import RetrievalSplit

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


def ours_table(scores: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Our cells at the deepest layer: model, method (the write-up's), dim, metric, value."""
    ours = scores[scores["layer"] == scores["layer"].max()]
    model = config["reference"].get("model") or config["model"]
    return pd.DataFrame({"model": model, "method": ours["variant"].map(lambda v: METHOD_LABELS.get(v, v)),
                         "dim": ours["dim"].astype(int), "metric": ours["metric"], "value": ours["value"]})


def comparison(scores: pd.DataFrame, published: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Long table (model, method, metric, dim, ours, published, delta) over every cell either side has."""
    ours = ours_table(scores, config).rename(columns={"value": "ours"})
    model = ours["model"].iloc[0] if len(ours) else config["reference"].get("model")
    pub = published[published["model"] == model][["model", "method", "dim", "metric", "value"]]
    pub = pub.rename(columns={"value": "published"}).astype({"dim": int})
    merged = ours.merge(pub, on=["model", "method", "dim", "metric"], how="outer")
    merged["delta"] = merged["ours"] - merged["published"]
    return merged.sort_values(["model", "metric", "method", "dim"], ascending=[True, True, True, False],
                              kind="stable").reset_index(drop=True)


def headline(scores: pd.DataFrame, published: pd.DataFrame, config: dict) -> dict:
    """recall@10 of the last method at the widest dim, ours and published."""
    long = comparison(scores, published, config)
    method = METHOD_LABELS.get(config["methods"][-1], config["methods"][-1])
    cells = long[(long["method"] == method) & (long["metric"] == "recall@10")]
    out = {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
    for side in ("ours", "published"):
        have = cells.dropna(subset=[side])
        if len(have):
            top = have.loc[have["dim"].idxmax()]
            out[side] = float(top[side])
            out[f"{side}_cell"] = f"{top['model']} {method} d{top['dim']} recall@10"
    return out


def tables(scores: pd.DataFrame, published: pd.DataFrame, config: dict) -> dict[str, str]:
    """Rows method × metric, columns dims: 'ours (published)'; Markdown, CSV (ours) and HTML."""
    long = comparison(scores, published, config)
    text = [" ".join(p for p in ("" if pd.isna(o) else f"{o:.4f}", "" if pd.isna(q) else f"({q:.4f})") if p) or "–"
            for o, q in zip(long["ours"], long["published"], strict=True)]
    wide = long.assign(cell=text).pivot(index=["model", "metric", "method"], columns="dim", values="cell")
    wide = wide[sorted(wide.columns, reverse=True)].fillna("")
    wide.columns = [str(c) for c in wide.columns]
    plain = long.dropna(subset=["ours"]).pivot(index=["model", "metric", "method"], columns="dim", values="ours")
    plain = plain[sorted(plain.columns, reverse=True)]
    plain.columns = [str(c) for c in plain.columns]
    summary = f"Home Depot test, cosine; ours (published in parentheses). {_summary(long)}"
    return {
        "markdown": f"{summary}\n\n{wide.reset_index().to_markdown(index=False)}\n",
        "csv": plain.reset_index().to_csv(index=False, float_format="%.6f"),
        "html": ("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                 f"<p>{html.escape(summary)}</p>{wide.reset_index().to_html(index=False, border=0)}</body></html>\n"),
    }


def _summary(long: pd.DataFrame) -> str:
    both = long.dropna(subset=["ours", "published"])
    if both.empty:
        return "No cell in common with the write-up."
    worst = both.loc[both["delta"].abs().idxmax()]
    return (f"{len(both)} cells in common, largest |Δ| {abs(worst['delta']):.4f} at {worst['method']} "
            f"d{worst['dim']} {worst['metric']}.")


def recall_figure(scores: pd.DataFrame, published: pd.DataFrame, config: dict, title: str,
                  paths: dict[str, str]) -> None:
    """recall@10 against dim (log2), a line per method; the write-up's cells as crosses."""
    import seaborn as sns

    from trimbench.figures import plt, save

    long = comparison(scores, published, config)
    long = long[long["metric"] == "recall@10"]
    figure, ax = plt.subplots(figsize=(5.5, 3.6))
    ours = long.dropna(subset=["ours"])
    methods = sorted(set(long["method"]))
    sns.lineplot(data=ours, x="dim", y="ours", hue="method", hue_order=methods, marker="o", ax=ax)
    pub = long.dropna(subset=["published"])
    if len(pub):
        sns.scatterplot(data=pub, x="dim", y="published", hue="method", hue_order=methods, marker="X", s=70,
                        ax=ax, legend=False)
    dims = sorted(set(long["dim"]))
    ax.set_xscale("log", base=2)
    ax.set_xticks(dims, [str(d) for d in dims])
    ax.minorticks_off()
    ax.set_xlabel("dim")
    ax.set_ylabel("recall@10 (crosses: published)")
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=9)
    save(figure, paths)
