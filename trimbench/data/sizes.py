"""How many rows a dataset's split holds, before any job reads it: from a local file (counted), else
from the dataset's hub contract (reference/hub; its source said there), else unknown, saying what
would give it. The cost plan (trimbench.plan) reads these; it never guesses a count.

Counts are of the source's rows: a builder's filter (``min_score``, a holdout) keeps fewer, so they
bound the job's rows from above, and say so.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from trimbench.data.columns import split_file
from trimbench.data.contracts import load, published_file, source_split
from trimbench.errors import DataError


@dataclass(frozen=True)
class Count:
    """A number of rows (or texts), with where it comes from; ``n`` None: unknown (``source`` says
    what would give it)."""

    n: int | None
    source: str

    def capped(self, most: int | None, key: str) -> Count:
        """At most ``most`` rows (a ``max_samples``-like key), saying so."""
        if most is None or (self.n is not None and self.n <= most):
            return self
        return Count(most, f"{key} = {most}" + (f" (of {self.n}: {self.source})" if self.n is not None else ""))



#: queries judged in the TREC Deep Learning passage topics a ``qrels_url`` names: the tracks'
#: overviews (Craswell et al. 2020, arXiv:2003.07820, 43 queries; 2021, arXiv:2102.07662, 54)
JUDGED_TOPICS = {
    "qrels.dl19-passage.txt": (43, "TREC DL 2019 overview (arXiv:2003.07820): 43 judged passage queries"),
    "qrels.dl20-passage.txt": (54, "TREC DL 2020 overview (arXiv:2102.07662): 54 judged passage queries"),
    # MS MARCO passage dev-small: 6,980 queries (the BEIR README's table; Tevatron's dev split)
    "qrels.msmarco-passage.dev-subset.txt": (6980, "MS MARCO passage dev-small: 6,980 judged queries (BEIR README)"),
}
#: entry keys that make a builder keep fewer rows than its source split holds
FILTER_KEYS = ("min_score", "max_score", "holdout", "max_rows", "builder")


def _homedepot(entry: dict, part: str) -> Count:
    """The Home Depot builder's parts, bounded by its settings (trimbench/data/homedepot.py): ``rows``
    kept, ``test_fraction`` of them the test part (its queries), the rest the training pairs, the
    corpus the test part's products and ``distractors`` more; relevance filters keep fewer."""
    settings = entry["homedepot"]
    test = math.ceil(settings["test_fraction"] * settings["rows"])
    n = {"train": settings["rows"] - test, "queries": test, "corpus": test + settings["distractors"]}[part]
    return Count(n, f"datasets.homedepot settings (rows {settings['rows']}, test_fraction "
                    f"{settings['test_fraction']}, distractors {settings['distractors']}): an upper bound")


def split_rows(name: str, entry: dict, split: str, workdir: Path) -> Count:
    """Rows of our ``split`` of a pairs / scored / labelled dataset (a table per split)."""
    if entry.get("source") == "gensim":
        return _embedded(lambda key: len(_embedded_split(name, key, split)), entry)
    if entry.get("builder") == "homedepot":
        return _homedepot(entry, "train")
    local = _local_folder(entry, workdir)
    if local is not None:
        path = split_file(local, source_split(entry, split)) or split_file(local, split)
        if path is None:
            return Count(None, f"no file for split '{split}' in {local}")
        if any(entry.get(key) is not None for key in FILTER_KEYS):
            # a local copy is here: its rows counted after the builder's filter, as the job keeps them
            kept = _built_rows(name, json.dumps(entry, sort_keys=True), split, str(workdir))
            return Count(kept, f"rows of {path} the builder keeps ({_filters(entry)})")
        return Count(_lines(path), f"rows of {path}")
    if entry.get("source") == "url":
        return _url_rows(name, entry, split)
    if entry.get("source") == "word_similarity":
        return _word_similarity_rows(name, entry, split)
    if entry.get("source") != "hub":
        return Count(None, f"datasets.{name}: a {entry.get('source')} source; its rows are counted when it is built")
    contract = load(entry["id"])
    if contract is None or not contract.describes(entry.get("revision")):
        return Count(None, f"datasets.{name}: no contract of {entry['id']} at its revision (reference/hub) "
                           "records rows")
    configs = contract.configs(entry.get("revision"))
    config = entry.get("config") or ("default" if "default" in configs else next(iter(configs), None))
    ours = source_split(entry, split)
    n = (configs.get(config) or {}).get("splits", {}).get(ours)
    if n is None:
        return Count(None, f"{contract.where} records no row count of split '{ours}'")
    return _bounded(Count(int(n), f"{contract.where}, split '{ours}'"), entry)


def corpus_rows(name: str, entry: dict, workdir: Path, split: str) -> Count:
    """Documents of the corpus a retrieval dataset's ``split`` searches: the split's own where the
    embedded builder makes one per split (its held-out articles are a corpus of their own), else the
    one every split searches."""
    if entry.get("source") == "gensim":
        return _embedded(lambda key: len(_embedded_retrieval(name, key, split).corpus), entry)
    if entry.get("builder") == "homedepot":
        return _homedepot(entry, "corpus")
    local = _local_folder(entry, workdir)
    if local is not None:
        path = _first(local, "corpus")
        return Count(_lines(path), f"lines of {path}") if path else Count(None, f"no corpus file in {local}")
    if entry.get("source") != "hub":
        return Count(None, f"datasets.{name}: a {entry.get('source')} source; its corpus is counted when it is built")
    repo = f"{entry['id']}-corpus" if entry.get("format") == "tevatron" else entry["id"]
    revision = entry.get("corpus_revision") if entry.get("format") == "tevatron" else entry.get("revision")
    contract = load(repo)
    if contract is None or not contract.describes(revision):
        return Count(None, f"datasets.{name}: no contract of {repo} at its revision (reference/hub) records the corpus")
    for spec in contract.configs(revision).values():
        for split, n in (spec.get("splits") or {}).items():
            if split in ("corpus", "train") and n is not None:
                return Count(int(n), f"{contract.where}, {split}")
    return Count(None, f"{contract.where} records no corpus row count")


def query_rows(name: str, entry: dict, split: str, workdir: Path) -> Count:
    """Queries of a retrieval split: the judged ones (those a BEIR split scores), or a Tevatron
    split's rows."""
    if entry.get("source") == "gensim":
        return _embedded(lambda key: int(_embedded_retrieval(name, key, split).qrels["query_id"].nunique()), entry)
    if entry.get("builder") == "homedepot":
        return _homedepot(entry, "queries")
    local = _local_folder(entry, workdir)
    ours = source_split(entry, split)
    if local is not None:
        qrels = local / "qrels" / f"{ours}.tsv"
        if qrels.is_file():
            return Count(_judged_queries(qrels), f"judged queries of {qrels}")
        path = split_file(local, ours)
        if path is None:
            return Count(None, f"no qrels or file of '{ours}' in {local}")
        return Count(_lines(path), f"rows of {path}")
    if entry.get("qrels_url"):
        name_of_file = entry["qrels_url"].rsplit("/", 1)[-1]
        if name_of_file in JUDGED_TOPICS:
            n, source = JUDGED_TOPICS[name_of_file]
            return Count(n, source)
        return Count(None, f"datasets.{name}.qrels_url: how many queries {name_of_file} judges is not recorded")
    if entry.get("source") == "hub":
        tevatron = entry.get("format") == "tevatron"
        repo = entry["id"] if tevatron else f"{entry['id']}-qrels"
        revision = entry.get("revision") if tevatron else entry.get("qrels_revision")
        contract = load(repo)
        if contract is not None and contract.describes(revision):
            for spec in contract.configs(revision).values():
                # a BEIR qrels split is named by its file (dev.tsv: the contract's 'validation')
                files = spec.get("files") or {}
                named = next((split for split, file in files.items() if file == f"{ours}.tsv"), ours)
                n = (spec.get("splits") if tevatron else spec.get("judged_queries") or {}).get(named)
                if n is not None:
                    return Count(int(n), f"{contract.where}, split '{ours}'")
            return Count(None, f"{contract.where} records no count of the queries of split '{ours}'")
    return Count(None, f"datasets.{name}: no contract records how many queries split '{ours}' judges")


def _url_rows(name: str, entry: dict, split: str) -> Count:
    """A url dataset's split: the rows its file's contract records (reference/files)."""
    url = (entry.get("urls") or {}).get(split)
    published = published_file(url) if url else None
    rows = published.spec.get("rows") if published else None
    if rows is None:
        return Count(None, f"datasets.{name}.urls.{split}: no file contract (reference/files) records its rows")
    return _bounded(Count(int(rows), f"{published.contract.where}, {published.name}"), entry)


#: the word-similarity set's split (trimbench.data.tables.word_similarity_split: 70 %, then half each)
WORD_SIMILARITY_FRACTIONS = {"train": 0.7, "validation": 0.15, "test": 0.15}


def _word_similarity_rows(name: str, entry: dict, split: str) -> Count:
    """The word-similarity set's split: its fraction of the sets' rows their file contracts record,
    an upper bound (pairs found in two sets are kept once)."""
    from trimbench.data.tables import word_similarity_files

    files = word_similarity_files(entry)
    rows = {}
    for word_set, url in files.items():
        published = published_file(url)
        if published is None or published.spec.get("rows") is None:
            return Count(None, f"datasets.{name}: no file contract (reference/files) records the rows of {word_set}")
        rows[word_set] = int(published.spec["rows"])
    if split not in WORD_SIMILARITY_FRACTIONS:
        return Count(None, f"datasets.{name}: no split '{split}' (its splits: {', '.join(WORD_SIMILARITY_FRACTIONS)})")
    total = sum(rows.values())
    return Count(math.ceil(WORD_SIMILARITY_FRACTIONS[split] * total),
                 f"{WORD_SIMILARITY_FRACTIONS[split]:.0%} of the sets' {total} rows (reference/files: "
                 f"{', '.join(f'{k} {v}' for k, v in rows.items())}), before de-duplication: an upper bound")


_EMBEDDED = "built in memory from the data gensim's wheel embeds (as the job builds it)"


def _embedded(count, entry: dict) -> Count:
    try:
        return Count(count(json.dumps(entry, sort_keys=True)), _EMBEDDED)
    except DataError as error:  # a split the builder does not make
        return Count(None, str(error))


@lru_cache(maxsize=64)
def _embedded_split(name: str, entry: str, split: str):
    """An embedded (gensim) dataset's split, built as its job builds it: small and local, so counted
    exactly before any job."""
    from trimbench.data.tables import load_split

    return load_split(name, json.loads(entry), split)


@lru_cache(maxsize=64)
def _embedded_retrieval(name: str, entry: str, split: str):
    """An embedded retrieval split, built as its job builds it: each split has a corpus of its own (its
    articles' passages)."""
    from trimbench.data.beir import load_retrieval

    return load_retrieval(name, json.loads(entry), split)


def _filters(entry: dict) -> str:
    return ", ".join(key for key in FILTER_KEYS if entry.get(key) is not None)


def _bounded(count: Count, entry: dict) -> Count:
    if not _filters(entry) or count.n is None:
        return count
    return Count(count.n, f"{count.source}; before {_filters(entry)}: an upper bound")


@lru_cache(maxsize=64)
def _built_rows(name: str, entry: str, split: str, workdir: str) -> int:
    from trimbench.data.tables import load_split

    return len(load_split(name, json.loads(entry), split, workdir))


def _local_folder(entry: dict, workdir: Path) -> Path | None:
    if entry.get("source") != "local" or not entry.get("path"):
        return None
    folder = Path(entry["path"]).expanduser()  # as the builders read it (trimbench.data.tables)
    folder = folder if folder.is_absolute() else Path(workdir) / folder
    return folder if folder.is_dir() else None


def _first(folder: Path, stem: str) -> Path | None:
    return next((path for path in sorted(folder.glob(f"{stem}.*")) if path.is_file()), None)


@lru_cache(maxsize=256)
def _lines(path: Path) -> int:
    """Rows of a table file: a parquet's metadata, else its non-blank lines (less a csv/tsv header)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet

        return pyarrow.parquet.ParquetFile(path).metadata.num_rows
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        lines = sum(1 for line in handle if line.strip())
    header = path.suffix in (".csv", ".tsv") or path.name.endswith((".csv.gz", ".tsv.gz"))
    return max(0, lines - header)


@lru_cache(maxsize=256)
def _judged_queries(qrels: Path) -> int:
    with open(qrels, encoding="utf-8") as handle:
        ids = {line.split("\t", 1)[0] for line in list(handle)[1:] if line.strip()}
    return len(ids)
