"""Retrieval data in the BEIR layout: a corpus, queries and graded qrels per split.

Sources: a local BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``), the
hub (``BeIR/<name>`` + ``BeIR/<name>-qrels``), Tevatron's layout (``format: tevatron``: the hub's
``Tevatron/msmarco-passage`` + ``-corpus`` files or a local folder of them), TREC topic / qrels
files that override a split's queries and judgements (MS MARCO dev-small, TREC DL 2019 / 2020;
downloaded from ``topics_url`` / ``qrels_url`` where the file is absent), the held-out
inverse-cloze Lee articles (the embedded default) and, in smoke mode, a stand-in made of the same
Lee text. Every source becomes three tables: corpus (doc_id, title, text), queries (query_id,
text) and qrels (query_id, doc_id, relevance); only judged queries are kept, as BEIR does. A
source with its own negatives per query (Tevatron's ``negative_passages``) adds a fourth,
negatives (query_id, doc_id), in the source's order.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from trimbench.data import DataError, lee_ict

FILES = ("corpus.parquet", "queries.parquet", "qrels.parquet")
NEGATIVES_FILE = "negatives.parquet"


@dataclass
class RetrievalSplit:
    corpus: pd.DataFrame
    queries: pd.DataFrame
    qrels: pd.DataFrame
    #: (query_id, doc_id): negatives the source gives per query, in its order (None: it gives none)
    negatives: pd.DataFrame | None = None

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, table in zip(FILES, (self.corpus, self.queries, self.qrels), strict=True):
            table.to_parquet(folder / name, index=False)
        if self.negatives is not None:
            self.negatives.to_parquet(folder / NEGATIVES_FILE, index=False)

    @classmethod
    def load(cls, folder: str | Path) -> RetrievalSplit:
        folder = Path(folder)
        negatives = pd.read_parquet(folder / NEGATIVES_FILE) if (folder / NEGATIVES_FILE).is_file() else None
        return cls(*(pd.read_parquet(folder / name) for name in FILES), negatives)

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


def _tidy(corpus: pd.DataFrame, queries: pd.DataFrame, qrels: pd.DataFrame,
          negatives: pd.DataFrame | None = None) -> RetrievalSplit:
    corpus = corpus.assign(doc_id=corpus["doc_id"].astype(str), title=corpus["title"].fillna("").astype(str),
                           text=corpus["text"].fillna("").astype(str))[["doc_id", "title", "text"]]
    qrels = qrels.assign(query_id=qrels["query_id"].astype(str), doc_id=qrels["doc_id"].astype(str),
                         relevance=qrels["relevance"].astype(int))[["query_id", "doc_id", "relevance"]]
    queries = queries.assign(query_id=queries["query_id"].astype(str), text=queries["text"].astype(str))
    queries = queries[queries["query_id"].isin(set(qrels["query_id"]))][["query_id", "text"]]
    if queries.empty:
        raise DataError("no judged query is left after joining queries with qrels")
    if negatives is not None:
        negatives = negatives.assign(query_id=negatives["query_id"].astype(str), doc_id=negatives["doc_id"].astype(str))
        negatives = negatives[negatives["query_id"].isin(set(queries["query_id"]))][["query_id", "doc_id"]]
        negatives = negatives.reset_index(drop=True)
    return RetrievalSplit(corpus.reset_index(drop=True), queries.reset_index(drop=True),
                          qrels.reset_index(drop=True), negatives)


def parse_trec_topics(text: str) -> pd.DataFrame:
    """``qid<TAB>text`` lines (the MS MARCO / TREC DL topic files)."""
    rows = [line.split("\t", 1) for line in text.splitlines() if line.strip()]
    return pd.DataFrame(rows, columns=["query_id", "text"])


def parse_trec_qrels(text: str) -> pd.DataFrame:
    """``qid 0 docid relevance`` lines, whitespace separated."""
    rows = [line.split() for line in text.splitlines() if line.strip()]
    frame = pd.DataFrame([(q, d, int(r)) for q, _, d, r in rows], columns=["query_id", "doc_id", "relevance"])
    return frame


def trec_file_text(entry: dict, key: str, workdir: Path) -> str:
    """The text of a dataset's TREC ``topics`` / ``qrels`` file: the local file where it exists,
    else downloaded from ``<key>_url`` (the file's official copy), so a preset runs on first
    contact and offline alike."""
    path, url = entry.get(key), entry.get(f"{key}_url")
    if path:
        local = Path(path).expanduser()
        local = local if local.is_absolute() else workdir / local
        if local.is_file():
            return local.read_text(encoding="utf-8")
    if not url:
        raise DataError(f"TREC {key} file '{path}' does not exist (and the dataset names no {key}_url)")
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.read().decode("utf-8")
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(f"cannot download TREC {key} file {url} ({exc}); without a network, put it at "
                        f"'{path or 'the path of ' + key}' beside the run") from exc


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


def _tevatron_file(entry: dict, name: str, corpus: bool, workdir: Path) -> Path:
    """A Tevatron data file: from the local folder, or downloaded from the hub repo (the query repo
    ``id`` at ``revision``, the corpus repo ``<id>-corpus`` at ``corpus_revision``). The repos'
    loading scripts cannot run under datasets 4+, so their data files are read directly."""
    if entry["source"] == "local":
        folder = Path(entry["path"]).expanduser()
        folder = folder if folder.is_absolute() else workdir / folder
        for candidate in (folder / name, folder / name.removesuffix(".gz")):
            if candidate.is_file():
                return candidate
        raise DataError(f"Tevatron folder '{folder}' lacks {name}")
    from huggingface_hub import hf_hub_download

    repo = f"{entry['id']}-corpus" if corpus else entry["id"]
    revision = entry.get("corpus_revision") if corpus else entry.get("revision")
    return Path(hf_hub_download(repo_id=repo, filename=name, repo_type="dataset", revision=revision))


def _json_lines(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _tevatron(entry: dict, split: str, workdir: Path, trec_queries: bool) -> RetrievalSplit:
    """Tevatron's layout: ``corpus.jsonl.gz`` (docid, title, text) and ``<split>.jsonl.gz`` (query_id,
    query, positive_passages, negative_passages). Titles and texts are stripped, as Tevatron's
    ``format_passage`` does before joining them (``retriever/dataset.py:17-18``); a split whose
    queries and judgements both come from TREC files is not read."""
    chunks, rows = [], {"doc_id": [], "title": [], "text": []}
    for doc in _json_lines(_tevatron_file(entry, "corpus.jsonl.gz", True, workdir)):
        rows["doc_id"].append(str(doc["docid"]))
        rows["title"].append((doc.get("title") or "").strip())
        rows["text"].append((doc.get("text") or "").strip())
        if len(rows["doc_id"]) == 500_000:  # MS MARCO's 8.8M passages: Python strings a chunk at a time
            chunks.append(pd.DataFrame(rows))
            rows = {key: [] for key in rows}
    corpus = pd.concat([*chunks, pd.DataFrame(rows)], ignore_index=True)
    queries, qrels, negatives = [], [], []
    if not trec_queries:
        for group in _json_lines(_tevatron_file(entry, f"{split}.jsonl.gz", False, workdir)):
            query_id = str(group["query_id"])
            queries.append((query_id, group["query"].strip()))
            qrels += [(query_id, str(p["docid"]), 1) for p in group.get("positive_passages") or []]
            negatives += [(query_id, str(n["docid"])) for n in group.get("negative_passages") or []]
    return RetrievalSplit(corpus, pd.DataFrame(queries, columns=["query_id", "text"]),
                          pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
                          pd.DataFrame(negatives, columns=["query_id", "doc_id"]))


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


def _standin(entry: dict, split: str) -> RetrievalSplit:
    """Smoke mode: Lee passages in place of the hub corpus, same layout and split names; a
    Tevatron stand-in gives each query up to 30 negatives (the next passages of the corpus)."""
    loaded = _lee({**entry, "heldout_fraction": 0.2, "pairs_per_article": 1},
                  "heldout" if split != "train" else "train", entry["standin_rows"])
    if entry.get("format") != "tevatron":
        return loaded
    ids = list(loaded.corpus["doc_id"])
    positive = dict(zip(loaded.qrels["query_id"], loaded.qrels["doc_id"], strict=True))
    rows = [(query_id, ids[(i + step) % len(ids)]) for i, query_id in enumerate(loaded.queries["query_id"])
            for step in range(1, min(30, len(ids) - 1) + 1) if ids[(i + step) % len(ids)] != positive[query_id]]
    negatives = pd.DataFrame(rows, columns=["query_id", "doc_id"])
    return RetrievalSplit(loaded.corpus, loaded.queries, loaded.qrels, negatives)


def load_retrieval(name: str, entry: dict, split: str, workdir: Path | str = ".") -> RetrievalSplit:
    """One split of a registry dataset of kind ``retrieval``."""
    source_split = entry["splits"].get(split, split)
    source = entry["source"]
    workdir = Path(workdir)
    trec = {key for key in ("topics", "qrels") if entry.get(key) or entry.get(f"{key}_url")}
    if entry.get("builder") == "homedepot":
        from trimbench.homedepot import retrieval_split

        return retrieval_split(entry, source_split)
    if source == "gensim":
        loaded = _lee(entry, source_split)
    elif source == "standin":
        loaded = _standin(entry, source_split)
    elif entry.get("format", "beir") == "tevatron":
        loaded = _tevatron(entry, source_split, workdir, trec_queries=trec == {"topics", "qrels"})
    elif source == "local":
        folder = Path(entry["path"]).expanduser()
        folder = folder if folder.is_absolute() else workdir / folder
        loaded = read_beir_folder(folder, source_split)
    else:
        loaded = _hub_beir(entry, source_split)
    queries = parse_trec_topics(trec_file_text(entry, "topics", workdir)) if "topics" in trec else loaded.queries
    qrels = parse_trec_qrels(trec_file_text(entry, "qrels", workdir)) if "qrels" in trec else loaded.qrels
    try:
        loaded = _tidy(loaded.corpus, queries, qrels, loaded.negatives)
    except DataError as exc:
        raise DataError(f"dataset '{name}' split '{split}': {exc}") from exc
    if loaded.corpus.empty:
        raise DataError(f"dataset '{name}' split '{split}' has an empty corpus")
    return loaded


def write_jsonl(rows, path: Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True) + "\n")
