"""The columns each dataset kind is normalised to, and the columns our readers take from sources
(the Home Depot table's hub columns, the ELECTRA paper's word-similarity files).

Kept apart from :mod:`trimbench.data` (pandas) so that the config checks, which run while
Snakemake parses the workflow, can name them without importing pandas; for the same checks, a
local split's file and the column names its header gives (:func:`header_columns`).
"""

import csv
import json
from pathlib import Path

KIND_COLUMNS = {
    "sts": ("sentence1", "sentence2", "score"),
    "pairs": ("anchor", "positive"),
    "triplets": ("anchor", "positive", "negative"),
    "pair-class": ("sentence1", "sentence2", "label"),
}
#: a retrieval split's two kinds of text, as the cost plan's lengths name them: its judged queries and
#: its documents (``title text``, as trimbench.data.io.doc_texts feeds them to every encoder)
QUERY, DOCUMENT = "query", "document"
#: columns a kind uses as numbers (the rest are text)
NUMERIC_COLUMNS = ("score", "label")


def text_columns(kind: str) -> tuple[str, ...]:
    """The text columns of a dataset kind's table (:data:`KIND_COLUMNS` less the numbers)."""
    return tuple(column for column in KIND_COLUMNS[kind] if column not in NUMERIC_COLUMNS)

#: the columns each gensim builder makes (trimbench.data.lee; kind triplets adds lee_ict's ``negative``)
GENSIM_COLUMNS = {"lee_ict": ("anchor", "positive", "article_id"),
                  "lee_similarity": ("sentence1", "sentence2", "score"),
                  "lee_similarity_split": ("sentence1", "sentence2", "score"),
                  "simlex999": ("sentence1", "sentence2", "score"), "wordsim353": ("sentence1", "sentence2", "score")}
#: the splits the word-similarity builder cuts (70/15/15: trimbench.data.tables.word_similarity_split)
WORD_SIMILARITY_SPLITS = ("train", "validation", "test")
#: the columns the word-similarity sets are read into (trimbench.data.tables.word_similarity_split)
WORD_SIMILARITY_COLUMNS = ("sentence1", "sentence2", "score")
#: a local split's file, the first of these that exists: ``<split><suffix>``
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv", ".tsv")


def split_file(folder: Path, split: str) -> Path | None:
    """A local folder's file of ``split`` (:data:`LOCAL_SUFFIXES` in order); None where it has none."""
    return next((folder / f"{split}{suffix}" for suffix in LOCAL_SUFFIXES if (folder / f"{split}{suffix}").is_file()),
                None)


def header_columns(path: Path, quoting: str = "minimal", suffix: str | None = None) -> list[str] | None:
    """The column names a table file starts with, read cheaply: a csv/tsv's header line (read as
    :func:`trimbench.data.io.read_table` reads it), a JSON-lines file's first record, a parquet
    file's schema. None where they cannot be read so (a .json document, an unreadable file): the
    job's reader names the problem then."""
    suffix = suffix or path.suffix
    try:
        if suffix in (".csv", ".tsv"):
            with path.open(encoding="utf-8", newline="") as handle:
                return next(csv.reader(handle, delimiter="\t" if suffix == ".tsv" else ",",
                                       quoting=csv.QUOTE_NONE if quoting == "none" else csv.QUOTE_MINIMAL), None)
        if suffix == ".jsonl":
            with path.open(encoding="utf-8") as handle:
                first = next((line for line in handle if line.strip()), None)
            record = json.loads(first) if first else None
            return list(record) if isinstance(record, dict) else None
        if suffix == ".parquet":
            import pyarrow.parquet  # only where a local parquet split is configured

            return list(pyarrow.parquet.read_schema(path).names)
    except (OSError, ValueError, csv.Error):  # UnicodeDecodeError and pyarrow's ArrowInvalid are ValueErrors
        return None
    return None

#: the Home Depot study's columns (ours -> bstds/home_depot's), as the seed's src/data.py reads them:
#: products keyed by entity_id, queries by the row id
HOMEDEPOT_COLUMNS = {"query": "query", "document": "description", "product": "entity_id", "query_id": "id",
                     "relevance": "relevance"}
#: Home Depot columns that are keys: text or numbers alike
HOMEDEPOT_KEYS = ("product", "query_id")

#: each word-similarity set's file as the ELECTRA paper's scripts/get_data.sh downloads it, pinned
#: to the commit its contract (reference/files) was read at; fh295.github.io's SimLex-999.zip is the
#: same file as the page's (reference/files/fh295--fh295.github.io.yaml)
WORD_SIMILARITY_FILES = {
    "rg65": "https://raw.githubusercontent.com/vecto-ai/word-benchmarks/9b61d0e067e2e68af22160d09450f82d9544cd70/"
            "word-similarity/monolingual/en/rg-65.csv",
    "simlex999": "https://raw.githubusercontent.com/fh295/fh295.github.io/3146fc8c8ac9c2ffa30da6ed81830e96ae1761eb/"
                 "SimLex-999.zip",
    "simverb3500": "https://raw.githubusercontent.com/benathi/word2gm/56bda7d964b2eede9b0280e7b9a3b9cdbb06fa38/"
                   "evaluation_data/simverb/data/SimVerb-3500.txt",
    "wordsim353-sim": "https://raw.githubusercontent.com/vecto-ai/word-benchmarks/"
                      "9b61d0e067e2e68af22160d09450f82d9544cd70/word-similarity/monolingual/en/wordsim353-sim.csv",
}
#: how preprocess_word_sim_data.py:9-27 reads each set with pandas, in the paper's order (the first
#: of duplicate pairs is kept): the separator (``format``), the column names it gives a file without
#: a header (``names``), ``index`` (read with ``index_col=0``), the score column and the scale it
#: divides by; ``member``: the file get_data.sh takes out of the zip
WORD_SET_READS = {
    "rg65": {"format": "csv", "score": "similarity", "scale": 4.0},
    "simlex999": {"format": "tsv", "score": "SimLex999", "scale": 10.0, "member": "SimLex-999.txt"},
    "simverb3500": {"format": "tsv", "names": ["word1", "word2", "type", "similarity", "word_type"],
                    "score": "similarity", "scale": 10.0},
    "wordsim353-sim": {"format": "csv", "index": True, "score": "similarity", "scale": 10.0},
}
WORD_COLUMNS = ("word1", "word2")
