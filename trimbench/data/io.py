"""What every data source shares: reading local tables and files by URL, sentence
splitting, gensim's test data folder, and :class:`RetrievalSplit` (a corpus, queries and qrels) with
its file layout."""

from __future__ import annotations

import csv
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from trimbench.data.columns import LOCAL_SUFFIXES, split_file
from trimbench.errors import DataError

# --- gensim's test data: the embedded default ---------------------------------------------------


def gensim_test_data(name: str) -> Path:
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise DataError("package 'gensim' is not installed; it ships the embedded default's data")
    path = Path(next(iter(spec.submodule_search_locations))) / "test" / "test_data" / name
    if not path.is_file():
        raise DataError(f"gensim test data file '{path}' is missing")
    return path


def read_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"']?\s+(?=[\"'A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if len(s.strip()) > 20]


# --- local folders and the hub -------------------------------------------------------------------


def local_split_file(folder: Path, split: str) -> Path:
    found_file = split_file(folder, split)
    if found_file is not None:
        return found_file
    found = sorted(p.name for p in folder.iterdir() if p.suffix in LOCAL_SUFFIXES) if folder.is_dir() else []
    raise DataError(f"no file for split '{split}' in '{folder}' (looked for {split}{{{','.join(LOCAL_SUFFIXES)}}}); "
                    f"found: {', '.join(found) or 'nothing'}")


def read_table(path: Path, dataset: str | None = None, quoting: str = "minimal", suffix: str | None = None
               ) -> pd.DataFrame:
    """A data file as a table, by its suffix (``suffix`` where the file's name has none: a download);
    ``quoting``: ``none`` reads quote characters in csv/tsv cells as text (``csv.QUOTE_NONE``). A
    file that cannot be read is one :class:`DataError` naming it (and the dataset), never a bare
    pandas or codec error."""
    import pyarrow

    whose = f"dataset '{dataset}': " if dataset else ""
    suffix = suffix or path.suffix
    try:
        if suffix in (".jsonl", ".json"):
            return pd.read_json(path, lines=suffix == ".jsonl")
        if suffix == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",",
                           quoting=csv.QUOTE_NONE if quoting == "none" else csv.QUOTE_MINIMAL)
    except pd.errors.EmptyDataError:
        raise DataError(f"{whose}file '{path}' is empty") from None
    except UnicodeDecodeError:
        data = path.read_bytes()
        try:
            data.decode("utf-8")
            raise
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            raise DataError(f"{whose}file '{path}' is not UTF-8 text (byte 0x{data[error.start]:02x} on file line "
                            f"{line}); save it as UTF-8") from None
    except (ValueError, pyarrow.ArrowException) as error:  # pandas' ParserError is a ValueError
        # pandas counts the file's lines (the header's included), where row errors count data rows
        problem = re.sub(r"\b[Ll]ine (\d+)", r"file line \1", str(error))
        raise DataError(f"{whose}cannot read '{path}' as a {suffix[1:]} table: {problem}") from None


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://", "file://"))


def fetched(location: str, workdir: Path, extract: bool = False) -> Path:
    """A file by URL, downloaded once into the datasets cache (``HF_DATASETS_CACHE``; offline,
    ``HF_DATASETS_OFFLINE=1``, the cached copy), or a local path; ``extract``: a zip's folder."""
    from datasets import DownloadManager

    if not is_url(location):
        path = Path(location).expanduser()
        location = str(path if path.is_absolute() else workdir / path)
        if not Path(location).is_file():
            raise DataError(f"file '{location}' does not exist")
    manager = DownloadManager()
    return Path(manager.download_and_extract(location) if extract else manager.download(location))


# --- retrieval splits on disk ------------------------------------------------------------------


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
