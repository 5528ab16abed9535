"""Datasets: hub, local folders, gensim's shipped test data, and smoke-mode stand-ins.

Every source is normalised to one table per split with the columns of its kind
(:data:`KIND_COLUMNS`); STS scores are rescaled to 0..1 from the source's ``score_range``.
"""

from __future__ import annotations

import importlib.util
import logging
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd

KIND_COLUMNS = {
    "sts": ("sentence1", "sentence2", "score"),
    "pairs": ("anchor", "positive"),
    "triplets": ("anchor", "positive", "negative"),
    "pair-class": ("sentence1", "sentence2", "label"),
}
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv", ".tsv")
GENSIM_SPLITS = {"lee_ict": ("train", "heldout"), "lee_similarity": ("test",),
                 "lee_similarity_split": ("train", "validation", "test"), "simlex999": ("train",),
                 "wordsim353": ("train",)}
#: lee_similarity_split: documents per split (of 50), so no document is in two splits
LEE_DOCUMENT_SPLITS = {"train": 30, "validation": 10, "test": 10}


log = logging.getLogger("trimbench")


class DataError(ValueError):
    """A dataset that cannot be read as its registry entry says."""


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


def lee_ict(split: str, heldout_fraction: float, pairs_per_article: int, seed: int) -> pd.DataFrame:
    """Inverse-cloze pairs from ``lee_background.cor``: one sentence as anchor, the rest of its
    article as positive. Articles are split, by seed, into ``train`` and a ``heldout`` share kept
    apart for retrieval. Columns: anchor, positive, article_id (the line number in the file)."""
    articles = read_lines(gensim_test_data("lee_background.cor"))
    rng = random.Random(seed)
    order = list(range(len(articles)))
    rng.shuffle(order)
    n_heldout = max(1, round(len(articles) * heldout_fraction))
    chosen = sorted(order[:n_heldout]) if split == "heldout" else sorted(order[n_heldout:])
    rows = []
    for article_id in chosen:
        sentences = split_sentences(articles[article_id])
        if len(sentences) < 2:
            continue
        picks = rng.sample(range(len(sentences)), min(pairs_per_article, len(sentences)))
        for i in picks:
            rest = " ".join(s for j, s in enumerate(sentences) if j != i)
            rows.append({"anchor": sentences[i], "positive": rest, "article_id": article_id})
    # Interleave articles so one batch rarely holds two pairs of the same article.
    rng.shuffle(rows)
    return pd.DataFrame(rows, columns=["anchor", "positive", "article_id"])


def lee_similarity() -> pd.DataFrame:
    """The Lee et al. (2005) document-similarity judgements: 50 documents, 1225 pairs, 0..1."""
    documents = read_lines(gensim_test_data("lee.cor"))
    matrix = np.loadtxt(gensim_test_data("similarities0-1.txt"))
    n = len(documents)
    if matrix.shape != (n, n):
        raise DataError(f"similarities0-1.txt is {matrix.shape}, expected ({n}, {n})")
    i, j = np.triu_indices(n, k=1)
    return pd.DataFrame({"sentence1": [documents[a] for a in i], "sentence2": [documents[b] for b in j],
                         "score": matrix[i, j].astype(float)})


def lee_similarity_split(split: str, seed: int) -> pd.DataFrame:
    """The Lee pairs among one share of the 50 documents, shuffled into splits by ``seed``."""
    pairs = lee_similarity()
    documents = pd.factorize(pd.concat([pairs["sentence1"], pairs["sentence2"]]))[1]
    order = list(range(len(documents)))
    random.Random(seed).shuffle(order)
    start = 0
    for name, count in LEE_DOCUMENT_SPLITS.items():
        if name == split:
            break
        start += count
    chosen = set(documents[sorted(order[start:start + LEE_DOCUMENT_SPLITS[split]])])
    inside = pairs["sentence1"].isin(chosen) & pairs["sentence2"].isin(chosen)
    return pairs[inside].reset_index(drop=True)


def word_pairs(file_name: str) -> pd.DataFrame:
    """A word-similarity set shipped with gensim (``# ``-comment header, tab-separated word1, word2,
    score on 0..10) as sentence1, sentence2, score on 0..1."""
    frame = pd.read_csv(gensim_test_data(file_name), sep="\t", comment="#", header=None,
                        names=["sentence1", "sentence2", "score"])
    return frame.assign(score=frame["score"] / 10.0)


def _gensim(entry: dict, split: str) -> pd.DataFrame:
    builder = entry["builder"]
    if split not in GENSIM_SPLITS[builder]:
        raise DataError(f"gensim builder '{builder}' has splits {list(GENSIM_SPLITS[builder])}, not '{split}'")
    if builder == "lee_ict":
        frame = lee_ict(split, entry["heldout_fraction"], entry["pairs_per_article"], entry["seed"])
        return with_other_article_negatives(frame, entry["seed"]) if entry["kind"] == "triplets" else frame
    if builder == "lee_similarity_split":
        return lee_similarity_split(split, entry["seed"])
    if builder in ("simlex999", "wordsim353"):
        return word_pairs({"simlex999": "simlex999.txt", "wordsim353": "wordsim353.tsv"}[builder])
    return lee_similarity()


def with_other_article_negatives(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Triplets from ICT pairs: each anchor's negative is the positive of a row drawn, by seed,
    from another article (a random negative; mined hard negatives are the retrieval track's)."""
    rng = np.random.default_rng(seed)
    articles = frame["article_id"].to_numpy()
    negatives = []
    for i in range(len(frame)):
        others = np.flatnonzero(articles != articles[i])
        if len(others) == 0:
            raise DataError("ICT triplets need at least two articles")
        negatives.append(frame["positive"].iat[int(rng.choice(others))])
    return frame.assign(negative=negatives)


# --- smoke-mode stand-ins ------------------------------------------------------------------------


def standin_rows(kind: str, split: str, rows: int, seed: int) -> pd.DataFrame:
    """Real text from the embedded data, shaped like ``kind``, in our column names."""
    rng = random.Random(f"{seed}-{split}")
    if kind == "sts":
        pairs = lee_similarity()
        picked = sorted(rng.sample(range(len(pairs)), min(rows, len(pairs))))
        return pairs.iloc[picked].reset_index(drop=True)
    ict = lee_ict("train", 0.2, 1, seed)
    picked = sorted(rng.sample(range(len(ict)), min(rows, len(ict))))
    frame = ict.iloc[picked].reset_index(drop=True)[["anchor", "positive"]]
    if kind == "triplets":
        frame["negative"] = np.roll(frame["positive"].to_numpy(), 1)
    return frame


def _standin(entry: dict, split: str) -> pd.DataFrame:
    """Rows written in the *source's* column names and score scale, so the normal mapping runs."""
    if entry["kind"] == "pair-class":
        # Scores binned by rank into balanced classes, so every class occurs in a small stand-in.
        frame = standin_rows("sts", split, entry["standin_rows"], entry["seed"])
        ranks = frame.pop("score").rank(method="first")
        frame["label"] = pd.qcut(ranks, entry["num_labels"], labels=False).astype(int)
        return frame.rename(columns=dict(entry["columns"]))
    frame = standin_rows(entry["kind"], split, entry["standin_rows"], entry["seed"])
    if entry["kind"] == "sts":
        low, high = entry["score_range"]
        frame["score"] = low + frame["score"] * (high - low)
    return frame.rename(columns=dict(entry["columns"]))


# --- local folders and the hub -------------------------------------------------------------------


def local_split_file(folder: Path, split: str) -> Path:
    for suffix in LOCAL_SUFFIXES:
        candidate = folder / f"{split}{suffix}"
        if candidate.is_file():
            return candidate
    found = sorted(p.name for p in folder.iterdir() if p.suffix in LOCAL_SUFFIXES) if folder.is_dir() else []
    raise DataError(f"no file for split '{split}' in '{folder}' (looked for {split}{{{','.join(LOCAL_SUFFIXES)}}}); "
                    f"found: {', '.join(found) or 'nothing'}")


def read_table(path: Path, dataset: str | None = None) -> pd.DataFrame:
    """A local data file as a table; a file that cannot be read is one :class:`DataError` naming it
    (and the dataset), never a bare pandas or codec error."""
    import pyarrow

    whose = f"dataset '{dataset}': " if dataset else ""
    try:
        if path.suffix in (".jsonl", ".json"):
            return pd.read_json(path, lines=path.suffix == ".jsonl")
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",")
    except pd.errors.EmptyDataError:
        raise DataError(f"{whose}file '{path}' is empty") from None
    except UnicodeDecodeError:
        data = path.read_bytes()
        try:
            data.decode("utf-8")
            raise
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            raise DataError(f"{whose}file '{path}' is not UTF-8 text (byte 0x{data[error.start]:02x} on line {line}); "
                            "save it as UTF-8") from None
    except (ValueError, pyarrow.ArrowException) as error:  # pandas' ParserError is a ValueError
        raise DataError(f"{whose}cannot read '{path}' as a {path.suffix[1:]} table: {error}") from None


def _local_file(entry: dict, split: str, workdir: Path) -> Path:
    folder = Path(entry["path"]).expanduser()
    return local_split_file(folder if folder.is_absolute() else workdir / folder, split)


def _hub(entry: dict, split: str) -> pd.DataFrame:
    import datasets

    loaded = datasets.load_dataset(entry["id"], entry.get("config"), split=split, revision=entry.get("revision"))
    return loaded.to_pandas()


# --- normalisation -------------------------------------------------------------------------------


def normalise(raw: pd.DataFrame, entry: dict, name: str, origin: str = "") -> pd.DataFrame:
    """Map source columns to ours, check scores and labels, rescale STS scores to 0..1, drop rows
    without text (counted in the log).

    A missing or non-numeric score or label, a score outside ``score_range`` or a label outside
    ``0..num_labels-1`` is a :class:`DataError` naming the dataset, ``origin`` (the file, or the hub
    split) and the first bad row: such a row would otherwise become NaN scores taken as results.
    """
    where = f"dataset '{name}'" + (f" ({origin})" if origin else "")
    if raw.empty:
        raise DataError(f"{where}: no rows")
    wanted = KIND_COLUMNS[entry["kind"]]
    mapping = {ours: entry["columns"].get(ours, ours) for ours in wanted}
    missing = [f"{theirs} (for {ours})" for ours, theirs in mapping.items() if theirs not in raw.columns]
    if missing:
        raise DataError(f"{where}: columns {', '.join(missing)} not found; it has {list(raw.columns)}. "
                        f"Map them with datasets.{name}.columns")
    extra = [c for c in raw.columns if c not in mapping.values() and c in ("article_id",)]
    frame = raw[list(mapping.values()) + extra].rename(columns={v: k for k, v in mapping.items()})
    text_columns = [c for c in wanted if c not in ("score", "label")]
    without_text = frame[text_columns].isna().any(axis=1)
    if without_text.all():
        raise DataError(f"{where}: no row has text in every one of {text_columns}")
    if without_text.any():
        log.warning("%s: %d of %d rows without text in %s dropped (the first: %s)", where, without_text.sum(),
                    len(frame), text_columns, _row_name(frame.index[without_text.to_numpy()][0], raw))
        frame = frame[~without_text.to_numpy()]
    frame = frame.copy()
    for column in text_columns:
        frame[column] = frame[column].astype(str)
    if entry["kind"] == "sts":
        low, high = entry["score_range"]
        scores = _numbers(frame["score"], raw, where, "score", (low, high), f"datasets.{name}.score_range")
        frame["score"] = (scores - low) / (high - low)
    if entry["kind"] == "pair-class":
        frame["label"] = _numbers(frame["label"], raw, where, "label", (0, entry["num_labels"] - 1),
                                  f"datasets.{name}.num_labels is {entry['num_labels']}; unlabelled rows are "
                                  "often -1", integers=True).astype(int)
    return frame.reset_index(drop=True)


def _row_name(index, raw: pd.DataFrame) -> str:
    """A row as a user finds it: data rows counted from 1 (a file's header not counted)."""
    if isinstance(raw.index, pd.RangeIndex) and raw.index.start == 0 and raw.index.step == 1:
        return f"row {index + 1}"
    return f"row {index!r}"


def _numbers(values: pd.Series, raw: pd.DataFrame, where: str, what: str, bounds: tuple, key: str,
             integers: bool = False) -> pd.Series:
    """``values`` as numbers; the first missing, non-numeric or out-of-bounds one a DataError."""
    blank = values.isna() | (values.astype(str).str.strip() == "")
    numbers = pd.to_numeric(values.mask(blank), errors="coerce").astype(float)
    low, high = bounds
    bad = numbers.isna() | (numbers < low) | (numbers > high)
    if integers:
        bad |= numbers != numbers.round()
    if bad.any():
        first = int(bad.to_numpy().nonzero()[0][0])
        value = values.iloc[first]
        shown = "missing" if blank.iloc[first] else repr(value.item() if isinstance(value, np.generic) else value)
        allowed = f"{'an integer' if integers else 'a number'} in [{low:g}, {high:g}]"
        raise DataError(f"{where}: {int(bad.sum())} of {len(values)} rows have a missing, non-numeric or "
                        f"out-of-range {what} (each must be {allowed}; {key}); the first is "
                        f"{_row_name(values.index[first], raw)}: {what} {shown}")
    return numbers


def load_split(name: str, entry: dict, split: str, workdir: Path | str = ".") -> pd.DataFrame:
    """One split of a registry dataset, normalised."""
    holdout = entry.get("holdout")
    if holdout and split in (holdout["split"], holdout["from"]):
        whole = load_split(name, {**entry, "holdout": None}, holdout["from"], workdir)
        return carve(whole, holdout, keep_heldout=split == holdout["split"], name=name)
    source_split = entry["splits"].get(split, split)
    source = entry["source"]
    if entry.get("builder") == "homedepot":
        from trimbench.homedepot import pairs_table

        return normalise(pairs_table(entry, source_split), entry, name)
    if source == "gensim":
        return normalise(_gensim(entry, source_split), entry, name, f"gensim builder '{entry['builder']}'")
    if source == "standin":
        return normalise(_standin(entry, source_split), entry, name, "the smoke-mode stand-in")
    if source == "local":
        try:
            path = _local_file(entry, source_split, Path(workdir))
        except DataError as error:
            raise DataError(f"dataset '{name}': {error}") from None
        return normalise(read_table(path, name), entry, name, f"file '{path}'")
    return normalise(_hub(entry, source_split), entry, name, f"hub dataset '{entry['id']}' split '{source_split}'")


def carve(frame: pd.DataFrame, holdout: dict, keep_heldout: bool, name: str) -> pd.DataFrame:
    """The held-out rows of ``frame`` (``holdout['size']`` rows, a fraction if below 1, by seed),
    or the rest."""
    size = holdout["size"]
    count = round(size * len(frame)) if size < 1 else int(size)
    if not 0 < count < len(frame):
        raise DataError(f"dataset '{name}': holdout of {size} leaves no rows on one side of "
                        f"{len(frame)} rows of split '{holdout['from']}' (datasets.{name}.holdout.size)")
    held = frame.sample(n=count, random_state=holdout["seed"]).index
    part = frame.loc[held] if keep_heldout else frame.drop(index=held)
    return part.sort_index().reset_index(drop=True)


def sts_texts(frame: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Unique texts of an STS table (first-appearance order) and each pair's two indices into them.

    Encoding unique texts once is what makes an STS evaluation one forward pass per text.
    """
    codes, texts = pd.factorize(pd.concat([frame["sentence1"], frame["sentence2"]], ignore_index=True))
    n = len(frame)
    return list(texts), codes[:n], codes[n:]
