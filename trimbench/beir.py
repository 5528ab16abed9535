"""Retrieval data in the BEIR layout: a corpus, queries and graded qrels per split.

Sources: a local BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``), the
hub (``BeIR/<name>`` + ``BeIR/<name>-qrels``, or Tevatron's MS MARCO; in smoke mode their stand-ins
built from the contracts, trimbench.hub), TREC topic / qrels files that override a split's queries
and judgements (MS MARCO dev-small, TREC DL 2019 / 2020) and the held-out inverse-cloze Lee
articles (the embedded default). Every source becomes three tables: corpus (doc_id, title, text), queries
(query_id, text) and qrels (query_id, doc_id, relevance); only judged queries are kept, as BEIR does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from trimbench.contracts import BEIR_FILES
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
    return _from_beir_columns(corpus, queries, qrels)


def _from_beir_columns(corpus: pd.DataFrame, queries: pd.DataFrame, qrels: pd.DataFrame) -> RetrievalSplit:
    """BEIR's column names (_id; query-id, corpus-id, score) to ours; titles are optional in BEIR."""
    if "title" not in corpus:
        corpus["title"] = ""
    return _tidy(corpus.rename(columns={"_id": "doc_id"}), queries.rename(columns={"_id": "query_id"}),
                 qrels.rename(columns={"query-id": "query_id", "corpus-id": "doc_id", "score": "relevance"}))


def _hub_beir(entry: dict, split: str) -> RetrievalSplit:
    """BeIR/<name> (corpus.jsonl.gz, queries.jsonl.gz) and BeIR/<name>-qrels (<split>.tsv), read as
    files at their pinned revisions: the BeIR repositories hold a loading script, which ``datasets``
    4 and later refuse, and ``datasets`` would name a qrels file dev.tsv split "validation"."""
    from trimbench import hub

    with hub.opened(entry) as source:
        corpus = hub.read_table(source, entry["id"], entry["revision"], BEIR_FILES[0])
        queries = hub.read_table(source, entry["id"], entry["revision"], BEIR_FILES[1])
        qrels = hub.read_table(source, f"{entry['id']}-qrels", entry["qrels_revision"], f"{split}.tsv",
                               dtype={"query-id": str, "corpus-id": str})
    return _from_beir_columns(corpus, queries, qrels)


def _hub_tevatron(entry: dict, split: str) -> RetrievalSplit:
    """Tevatron's MS MARCO: queries with positive passages in ``<id>``, the corpus in ``<id>-corpus``."""
    from trimbench import hub

    with hub.opened(entry) as source:
        corpus = source.dataset(f"{entry['id']}-corpus", None, "train", None).to_pandas()
        rows = source.dataset(entry["id"], entry.get("config"), split, entry["revision"]).to_list()
    queries, qrels = [], []
    for row in rows:
        queries.append({"query_id": row["query_id"], "text": row["query"]})
        qrels += [{"query_id": row["query_id"], "doc_id": p["docid"], "relevance": 1}
                  for p in row["positive_passages"]]
    return _tidy(corpus.rename(columns={"docid": "doc_id"}), pd.DataFrame(queries), pd.DataFrame(qrels))


def _lee(entry: dict, split: str) -> RetrievalSplit:
    """Inverse-cloze retrieval: each query is a sentence, its one relevant document the rest of its
    article; the corpus is every such passage of the split (``heldout`` articles for evaluation)."""
    frame = lee_ict(split, entry["heldout_fraction"], entry["pairs_per_article"], entry["seed"])
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
