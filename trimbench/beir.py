"""Retrieval data in the BEIR layout: a corpus, queries and graded qrels per split.

Sources: a local BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``), the
hub (``BeIR/<name>`` + ``BeIR/<name>-qrels``, or Tevatron's MS MARCO), TREC topic / qrels files
that override a split's queries and judgements (MS MARCO dev-small, TREC DL 2019 / 2020), the
held-out inverse-cloze Lee articles (the embedded default) and, in smoke mode, a stand-in made of
the same Lee text. Every source becomes three tables: corpus (doc_id, title, text), queries
(query_id, text) and qrels (query_id, doc_id, relevance); only judged queries are kept, as BEIR does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from trimbench.data import DataError, lee_ict

FILES = ("corpus.parquet", "queries.parquet", "qrels.parquet")


@dataclass
class RetrievalSplit:
    corpus: pd.DataFrame
    queries: pd.DataFrame
    qrels: pd.DataFrame

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, table in zip(FILES, (self.corpus, self.queries, self.qrels), strict=True):
            table.to_parquet(folder / name, index=False)

    @classmethod
    def load(cls, folder: str | Path) -> RetrievalSplit:
        folder = Path(folder)
        return cls(*(pd.read_parquet(folder / name) for name in FILES))

    @staticmethod
    def read(folder: str | Path, table: str, columns: list[str] | None = None) -> pd.DataFrame:
        """One table of a saved split ("corpus", "queries" or "qrels"), alone: a step that needs
        MS MARCO's queries or judgements need not read its 8.8M passages."""
        return pd.read_parquet(Path(folder) / f"{table}.parquet", columns=columns)

    def relevant(self) -> dict[str, set[str]]:
        """Query id -> ids of its documents judged relevant (relevance > 0)."""
        positive = self.qrels[self.qrels["relevance"] > 0]
        return positive.groupby("query_id")["doc_id"].agg(set).to_dict()


def doc_texts(corpus: pd.DataFrame) -> list[str]:
    """Documents as BEIR / MTEB feed them to a dense model: ``title + " " + text``, stripped."""
    return [f"{title} {text}".strip() for title, text in zip(corpus["title"], corpus["text"], strict=True)]


def _tidy(corpus: pd.DataFrame, queries: pd.DataFrame, qrels: pd.DataFrame) -> RetrievalSplit:
    corpus = corpus.assign(doc_id=corpus["doc_id"].astype(str), title=corpus["title"].fillna("").astype(str),
                           text=corpus["text"].fillna("").astype(str))[["doc_id", "title", "text"]]
    qrels = qrels.assign(query_id=qrels["query_id"].astype(str), doc_id=qrels["doc_id"].astype(str),
                         relevance=qrels["relevance"].astype(int))[["query_id", "doc_id", "relevance"]]
    queries = queries.assign(query_id=queries["query_id"].astype(str), text=queries["text"].astype(str))
    queries = queries[queries["query_id"].isin(set(qrels["query_id"]))][["query_id", "text"]]
    if queries.empty:
        raise DataError("no judged query is left after joining queries with qrels")
    return RetrievalSplit(corpus.reset_index(drop=True), queries.reset_index(drop=True),
                          qrels.reset_index(drop=True))


def read_trec_topics(path: Path) -> pd.DataFrame:
    """``qid<TAB>text`` lines (the MS MARCO / TREC DL topic files)."""
    rows = [line.rstrip("\n").split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return pd.DataFrame(rows, columns=["query_id", "text"])


def read_trec_qrels(path: Path) -> pd.DataFrame:
    """``qid 0 docid relevance`` lines, whitespace separated."""
    frame = pd.read_csv(path, sep=r"\s+", header=None, names=["query_id", "iter", "doc_id", "relevance"],
                        dtype={"query_id": str, "doc_id": str})
    return frame[["query_id", "doc_id", "relevance"]]


def read_beir_folder(folder: Path, split: str) -> RetrievalSplit:
    qrels_file = folder / "qrels" / f"{split}.tsv"
    for path in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_file):
        if not path.is_file():
            raise DataError(f"BEIR folder '{folder}' lacks {path.relative_to(folder)}")
    corpus = pd.read_json(folder / "corpus.jsonl", lines=True, dtype={"_id": str})
    queries = pd.read_json(folder / "queries.jsonl", lines=True, dtype={"_id": str})
    qrels = pd.read_csv(qrels_file, sep="\t", dtype={"query-id": str, "corpus-id": str})
    if "title" not in corpus:
        corpus["title"] = ""
    return _tidy(corpus.rename(columns={"_id": "doc_id"}), queries.rename(columns={"_id": "query_id"}),
                 qrels.rename(columns={"query-id": "query_id", "corpus-id": "doc_id", "score": "relevance"}))


def _hub_beir(entry: dict, split: str) -> RetrievalSplit:
    import datasets

    corpus = datasets.load_dataset(entry["id"], "corpus", split="corpus", revision=entry["revision"]).to_pandas()
    queries = datasets.load_dataset(entry["id"], "queries", split="queries", revision=entry["revision"]).to_pandas()
    qrels = datasets.load_dataset(f"{entry['id']}-qrels", split=split).to_pandas()
    return _tidy(corpus.rename(columns={"_id": "doc_id"}), queries.rename(columns={"_id": "query_id"}),
                 qrels.rename(columns={"query-id": "query_id", "corpus-id": "doc_id", "score": "relevance"}))


def _hub_tevatron(entry: dict, split: str) -> RetrievalSplit:
    """Tevatron's MS MARCO: queries with positive passages in ``<id>``, the corpus in ``<id>-corpus``."""
    import datasets

    corpus = datasets.load_dataset(f"{entry['id']}-corpus", split="train").to_pandas()
    rows = datasets.load_dataset(entry["id"], split=split, revision=entry["revision"])
    queries, qrels = [], []
    for row in rows:
        queries.append({"query_id": row["query_id"], "text": row["query"]})
        qrels += [{"query_id": row["query_id"], "doc_id": p["docid"], "relevance": 1}
                  for p in row["positive_passages"]]
    return _tidy(corpus.rename(columns={"docid": "doc_id"}), pd.DataFrame(queries), pd.DataFrame(qrels))


def _lee(entry: dict, split: str, rows: int | None = None) -> RetrievalSplit:
    """Inverse-cloze retrieval: each query is a sentence, its one relevant document the rest of its
    article; the corpus is every such passage of the split (``heldout`` articles for evaluation)."""
    frame = lee_ict(split, entry["heldout_fraction"], entry["pairs_per_article"], entry["seed"])
    if rows is not None:
        frame = frame.head(rows)
    ids = [f"lee{article}-{i}" for i, article in enumerate(frame["article_id"])]
    corpus = pd.DataFrame({"doc_id": ids, "title": "", "text": frame["positive"]})
    queries = pd.DataFrame({"query_id": [f"q{i}" for i in range(len(frame))], "text": frame["anchor"]})
    qrels = pd.DataFrame({"query_id": queries["query_id"], "doc_id": ids, "relevance": 1})
    return _tidy(corpus, queries, qrels)


def load_retrieval(name: str, entry: dict, split: str, workdir: Path | str = ".") -> RetrievalSplit:
    """One split of a registry dataset of kind ``retrieval``."""
    source_split = entry["splits"].get(split, split)
    source = entry["source"]
    if entry.get("builder") == "homedepot":
        from trimbench.homedepot import retrieval_split

        return retrieval_split(entry, source_split)
    if source == "gensim":
        loaded = _lee(entry, source_split)
    elif source == "standin":
        # Smoke mode: Lee passages in place of the hub corpus, same layout and split names.
        loaded = _lee({**entry, "heldout_fraction": 0.2, "pairs_per_article": 1},
                      "heldout" if source_split != "train" else "train", entry["standin_rows"])
    elif source == "local":
        folder = Path(entry["path"]).expanduser()
        folder = folder if folder.is_absolute() else Path(workdir) / folder
        loaded = read_beir_folder(folder, source_split)
    elif entry.get("format", "beir") == "tevatron":
        loaded = _hub_tevatron(entry, source_split)
    else:
        loaded = _hub_beir(entry, source_split)
    if entry.get("topics") or entry.get("qrels"):
        loaded = _with_trec_files(loaded, entry, Path(workdir))
    if loaded.corpus.empty:
        raise DataError(f"dataset '{name}' split '{split}' has an empty corpus")
    return loaded


def _with_trec_files(loaded: RetrievalSplit, entry: dict, workdir: Path) -> RetrievalSplit:
    def path(key):
        p = Path(entry[key]).expanduser()
        return p if p.is_absolute() else workdir / p

    queries = read_trec_topics(path("topics")) if entry.get("topics") else loaded.queries
    qrels = read_trec_qrels(path("qrels")) if entry.get("qrels") else loaded.qrels
    return _tidy(loaded.corpus, queries, qrels)


def write_jsonl(rows, path: Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True) + "\n")
