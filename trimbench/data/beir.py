"""Retrieval data in the BEIR layout: a corpus, queries and graded qrels per split.

Sources: a local BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``), the
hub (``BeIR/<name>`` + ``BeIR/<name>-qrels``), Tevatron's layout (``format: tevatron``: the hub's
``Tevatron/msmarco-passage`` + ``-corpus`` files or a local folder of them), TREC topic / qrels
files that override a split's queries and judgements (MS MARCO dev-small, TREC DL 2019 / 2020;
downloaded from ``topics_url`` / ``qrels_url`` where the file is absent) and the held-out
inverse-cloze Lee articles (the embedded default); in smoke mode the hub repositories are their
stand-ins built from the contracts (:mod:`trimbench.data.hub`). Every source becomes three tables:
corpus (doc_id, title, text), queries (query_id, text) and qrels (query_id, doc_id, relevance);
only judged queries are kept, as BEIR does. A source with its own negatives per query (Tevatron's
``negative_passages``) adds a fourth, negatives (query_id, doc_id), in the source's order.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from trimbench.data import hub
from trimbench.data.contracts import BEIR_FILES
from trimbench.data.homedepot import retrieval_split
from trimbench.data.io import RetrievalSplit, fetched
from trimbench.data.lee import lee_ict
from trimbench.errors import DataError


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

    try:  # the same cached download as every file given by URL (data.io.fetched)
        return fetched(url, workdir).read_text(encoding="utf-8")
    except OSError as exc:  # requests' connection errors are OSErrors too
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
    with hub.opened(entry) as source:
        corpus = hub.read_table(source, entry["id"], entry["revision"], BEIR_FILES[0])
        queries = hub.read_table(source, entry["id"], entry["revision"], BEIR_FILES[1])
        qrels = hub.read_table(source, f"{entry['id']}-qrels", entry["qrels_revision"], f"{split}.tsv",
                               dtype={"query-id": str, "corpus-id": str})
    return _from_beir_columns(corpus, queries, qrels)


@contextmanager
def _tevatron_files(entry: dict, workdir: Path) -> Iterator[Callable[[str, bool], Path]]:
    """Where each Tevatron data file is (``name``, whether it is the corpus repo's): in the local
    folder, or in the hub repos read through :func:`trimbench.data.hub.opened` (the query repo ``id`` at
    ``revision``, the corpus repo ``<id>-corpus`` at ``corpus_revision``; in smoke mode their
    stand-ins written from the contracts). The repos' loading scripts cannot run under datasets 4+,
    so their data files are read directly."""
    if entry["source"] == "local":
        folder = Path(entry["path"]).expanduser()
        folder = folder if folder.is_absolute() else workdir / folder

        def local(name: str, corpus: bool) -> Path:
            for candidate in (folder / name, folder / name.removesuffix(".gz")):
                if candidate.is_file():
                    return candidate
            raise DataError(f"Tevatron folder '{folder}' lacks {name}")

        yield local
        return
    with hub.opened(entry) as source:
        yield lambda name, corpus: (source.download(f"{entry['id']}-corpus", entry.get("corpus_revision"), name)
                                    if corpus else source.download(entry["id"], entry.get("revision"), name))


def json_lines(path: Path) -> Iterator[dict]:
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
    queries, qrels, negatives = [], [], []
    with _tevatron_files(entry, workdir) as path_of:
        for doc in json_lines(path_of("corpus.jsonl.gz", True)):
            rows["doc_id"].append(str(doc["docid"]))
            rows["title"].append((doc.get("title") or "").strip())
            rows["text"].append((doc.get("text") or "").strip())
            if len(rows["doc_id"]) == 500_000:  # MS MARCO's 8.8M passages: Python strings a chunk at a time
                chunks.append(pd.DataFrame(rows))
                rows = {key: [] for key in rows}
        if not trec_queries:
            for group in json_lines(path_of(f"{split}.jsonl.gz", False)):
                query_id = str(group["query_id"])
                queries.append((query_id, group["query"].strip()))
                qrels += [(query_id, str(p["docid"]), 1) for p in group.get("positive_passages") or []]
                negatives += [(query_id, str(n["docid"])) for n in group.get("negative_passages") or []]
    corpus = pd.concat([*chunks, pd.DataFrame(rows)], ignore_index=True)
    return RetrievalSplit(corpus, pd.DataFrame(queries, columns=["query_id", "text"]),
                          pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
                          pd.DataFrame(negatives, columns=["query_id", "doc_id"]))


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
    workdir = Path(workdir)
    trec = {key for key in ("topics", "qrels") if entry.get(key) or entry.get(f"{key}_url")}
    if entry.get("builder") == "homedepot":
        return retrieval_split(entry, source_split)
    if source == "gensim":
        loaded = _lee(entry, source_split)
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
