"""Datasets: hub (or its smoke-mode stand-in, trimbench.hub), local folders, gensim's shipped test data.

Every source is normalised to one table per split with the columns of its kind
(:data:`KIND_COLUMNS`); STS scores are rescaled to 0..1 from the source's ``score_range``.
"""

from __future__ import annotations

import csv
import importlib.util
import logging
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench.columns import KIND_COLUMNS, NUMERIC_COLUMNS, WORD_SET_READS, WORD_SIMILARITY_FILES

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


# --- local folders and the hub -------------------------------------------------------------------


def local_split_file(folder: Path, split: str) -> Path:
    for suffix in LOCAL_SUFFIXES:
        candidate = folder / f"{split}{suffix}"
        if candidate.is_file():
            return candidate
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
            raise DataError(f"{whose}file '{path}' is not UTF-8 text (byte 0x{data[error.start]:02x} on line {line}); "
                            "save it as UTF-8") from None
    except (ValueError, pyarrow.ArrowException) as error:  # pandas' ParserError is a ValueError
        raise DataError(f"{whose}cannot read '{path}' as a {suffix[1:]} table: {error}") from None


def _local_file(entry: dict, split: str, workdir: Path) -> Path:
    folder = Path(entry["path"]).expanduser()
    return local_split_file(folder if folder.is_absolute() else workdir / folder, split)


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


def _url(entry: dict, split: str, name: str, workdir: Path) -> pd.DataFrame:
    """One file per split, by URL (or local path): ``urls[split]``, read by its suffix."""
    if split not in entry["urls"]:
        raise DataError(f"dataset '{name}': no file for split '{split}' in datasets.{name}.urls "
                        f"(it has {sorted(entry['urls'])})")
    location = entry["urls"][split]
    suffix = Path(location.split("?")[0]).suffix
    return read_table(fetched(location, workdir), name, entry["quoting"], suffix)


# --- the ELECTRA paper's word-similarity set (preprocess_word_sim_data.py) ----------------------

WORD_SIMILARITY_SPLITS = ("train", "validation", "test")


def _word_set(name: str, location: str, workdir: Path) -> pd.DataFrame:
    """One set as (word1, word2, similarity on 0..1), read in its published format as the paper
    reads it (:data:`WORD_SET_READS`)."""
    read = WORD_SET_READS[name]
    path = fetched(location, workdir, extract=location.endswith(".zip"))
    if path.is_dir():
        path = next(path.rglob(read["member"]), path / read["member"])
    frame = pd.read_csv(path, sep="\t" if read["format"] == "tsv" else ",", header=None if "names" in read else "infer",
                        names=read.get("names"), index_col=0 if read.get("index") else None)
    frame = frame.rename(columns={read["score"]: "similarity"})
    missing = {"word1", "word2", "similarity"} - set(frame.columns)
    if missing:
        raise DataError(f"word-similarity set '{name}' ({location}): columns {sorted(missing)} not found")
    return frame.assign(similarity=frame["similarity"] / read["scale"])[["word1", "word2", "similarity"]]


def word_similarity_files(entry: dict) -> dict[str, str]:
    """Each set's file (URL or local path): ``files`` over the paper's URLs."""
    return {name: entry["files"].get(name, WORD_SIMILARITY_FILES[name]) for name in entry["sets"]}


def word_similarity_split(entry: dict, split: str, name: str, workdir: Path) -> pd.DataFrame:
    """The paper's word-similarity set: the sets concatenated in its order, each scaled to 0..1,
    pairs de-duplicated regardless of word order (the first kept), split 70/15/15 with sklearn's
    ``train_test_split`` drawing from one random state seeded ``entry["seed"]`` (the paper: its
    global ``np.random.seed(0)``, ``preprocess_word_sim_data.py:6-39``)."""
    from sklearn.model_selection import train_test_split

    if split not in WORD_SIMILARITY_SPLITS:
        raise DataError(f"dataset '{name}': splits are {list(WORD_SIMILARITY_SPLITS)}, not '{split}'")
    files = word_similarity_files(entry)
    frame = pd.concat([_word_set(s, files[s], workdir) for s in entry["sets"]])
    pairs = frame[["word1", "word2"]].apply(lambda row: tuple(sorted(row)), axis=1)
    frame = frame[~pairs.duplicated(keep="first")].reset_index(drop=True)
    state = np.random.RandomState(entry["seed"])
    train, rest = train_test_split(frame, train_size=0.7, test_size=0.3, random_state=state)
    validation, test = train_test_split(rest, train_size=0.5, test_size=0.5, random_state=state)
    part = {"train": train, "validation": validation, "test": test}[split]
    return part.rename(columns={"word1": "sentence1", "word2": "sentence2", "similarity": "score"})


def _hub(entry: dict, split: str) -> pd.DataFrame:
    from trimbench import hub

    with hub.opened(entry) as source:
        return source.dataset(entry["id"], entry.get("config"), split, entry.get("revision")).to_pandas()


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
    text_columns = [c for c in wanted if c not in NUMERIC_COLUMNS]
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
        if entry.get("label_values"):
            frame["label"] = _mapped_labels(frame["label"], entry["label_values"], name)
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


def _mapped_labels(labels: pd.Series, values: dict, name: str) -> pd.Series:
    """The source's label values (e.g. SICK's ``A_entails_B``) as our integers."""
    unknown = sorted(set(labels.astype(str)) - set(values))
    if unknown:
        raise DataError(f"dataset '{name}': labels {unknown} are not in datasets.{name}.label_values "
                        f"({sorted(values)})")
    return labels.astype(str).map(values)


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
    if source == "local":
        try:
            path = _local_file(entry, source_split, Path(workdir))
        except DataError as error:
            raise DataError(f"dataset '{name}': {error}") from None
        return normalise(read_table(path, name, entry.get("quoting", "minimal")), entry, name, f"file '{path}'")
    if source in ("url", "word_similarity"):
        from trimbench import hub

        # In smoke mode each URL is a stand-in file written from its contract, read by the same code.
        if source == "url":
            with hub.files_opened(entry, entry["urls"]) as urls:
                frame = _url({**entry, "urls": urls}, source_split, name, Path(workdir))
            return normalise(frame, entry, name, f"file '{entry['urls'][source_split]}'")
        with hub.files_opened(entry, word_similarity_files(entry)) as files:
            frame = word_similarity_split({**entry, "files": files}, source_split, name, Path(workdir))
        return normalise(frame, entry, name, f"the word-similarity sets {entry['sets']}")
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
