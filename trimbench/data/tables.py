"""Datasets as tables: one split of a registry entry (hub or its smoke-mode stand-in, local folders, URLs,
gensim's shipped test data, builders), normalised.

Every source is normalised to one table per split with the columns of its kind
(:data:`KIND_COLUMNS`); STS scores are rescaled to 0..1 from the source's ``score_range``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench.data import hub
from trimbench.data.columns import (
    KIND_COLUMNS,
    NUMERIC_COLUMNS,
    WORD_SET_READS,
    WORD_SIMILARITY_FILES,
    WORD_SIMILARITY_SPLITS,
)
from trimbench.data.homedepot import pairs_table
from trimbench.data.io import fetched, local_split_file, read_table
from trimbench.data.lee import gensim_split
from trimbench.errors import DataError

log = logging.getLogger("trimbench")


# --- local folders and the hub -------------------------------------------------------------------


def _local_file(entry: dict, split: str, workdir: Path) -> Path:
    folder = Path(entry["path"]).expanduser()
    return local_split_file(folder if folder.is_absolute() else workdir / folder, split)


def _url(entry: dict, split: str, name: str, workdir: Path) -> pd.DataFrame:
    """One file per split, by URL (or local path): ``urls[split]``, read by its suffix."""
    if split not in entry["urls"]:
        raise DataError(f"dataset '{name}': no file for split '{split}' in datasets.{name}.urls "
                        f"(it has {sorted(entry['urls'])})")
    location = entry["urls"][split]
    suffix = Path(location.split("?")[0]).suffix
    return read_table(fetched(location, workdir), name, entry["quoting"], suffix)


# --- the ELECTRA paper's word-similarity set (preprocess_word_sim_data.py) ----------------------


def _word_set(name: str, location: str, workdir: Path) -> pd.DataFrame:
    """One set as (word1, word2, similarity on 0..1), read in its published format as the paper
    reads it (:data:`WORD_SET_READS`)."""
    read = WORD_SET_READS[name]
    path = fetched(location, workdir, extract=location.endswith(".zip"))
    if path.is_dir():  # an extracted zip
        members = sorted(path.rglob(read["member"]))
        if not members:
            raise DataError(f"word-similarity set '{name}' ({location}): the archive has no file '{read['member']}'")
        path = members[0]
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
    if entry.get("min_score") is not None:
        raw = _scored_at_least(raw, entry, name, where)
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


def _scored_at_least(raw: pd.DataFrame, entry: dict, name: str, where: str) -> pd.DataFrame:
    """The rows of a kind-pairs source whose score, rescaled from ``score_range`` to 0..1, is at
    least ``min_score`` (STS-B pairs as positives); the count kept is logged."""
    column = entry["columns"].get("score", "score")
    if column not in raw.columns:
        raise DataError(f"{where}: column {column} (for score, read by datasets.{name}.min_score) not found; it has "
                        f"{list(raw.columns)}. Map it with datasets.{name}.columns.score")
    low, high = entry["score_range"]
    scores = _numbers(raw[column], raw, where, "score", (low, high), f"datasets.{name}.score_range")
    scores = (scores - low) / (high - low)
    kept = raw[(scores >= entry["min_score"]).to_numpy()]
    log.info("%s: %d of %d rows scored at least %g (datasets.%s.min_score)", where, len(kept), len(raw),
             entry["min_score"], name)
    if kept.empty:
        raise DataError(f"{where}: no row is scored at least {entry['min_score']} (datasets.{name}.min_score)")
    return kept


def _row_name(index, raw: pd.DataFrame) -> str:
    """A row as a user finds it: a data row, counted from 1 without the header (a file's parse
    errors name file lines instead: :func:`trimbench.data.io.read_table`)."""
    if isinstance(raw.index, pd.RangeIndex) and raw.index.start == 0 and raw.index.step == 1:
        return f"data row {index + 1}"
    return f"the data row labelled {index!r}"


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
        return normalise(pairs_table(entry, source_split), entry, name)
    if source == "gensim":
        return normalise(gensim_split(entry, source_split), entry, name, f"gensim builder '{entry['builder']}'")
    if source == "local":
        try:
            path = _local_file(entry, source_split, Path(workdir))
        except DataError as error:
            raise DataError(f"dataset '{name}': {error}") from None
        return normalise(read_table(path, name, entry.get("quoting", "minimal")), entry, name, f"file '{path}'")
    if source in ("url", "word_similarity"):
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
