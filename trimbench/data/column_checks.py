"""Config entries against the columns of their sources: a hub dataset's features (its contract), a
file's header, the rows a builder makes. Each problem is a :class:`~trimbench.data.contracts.Mismatch`
naming the config key.
"""

from __future__ import annotations

from pathlib import Path

from trimbench.data.columns import (
    GENSIM_COLUMNS,
    HOMEDEPOT_COLUMNS,
    HOMEDEPOT_KEYS,
    KIND_COLUMNS,
    LOCAL_SUFFIXES,
    NUMERIC_COLUMNS,
    WORD_SIMILARITY_COLUMNS,
    header_columns,
    split_file,
)
from trimbench.data.contracts import (
    Mismatch,
    class_names,
    describe_features,
    dtype,
    is_text,
    source_split,
    split_key,
    text_values,
    value_range,
)


def check_source_columns(name: str, entry: dict, used_splits: dict[str, str], workdir: Path) -> None:
    """Raise :class:`Mismatch` where a gensim, local or word-similarity source, or a url entry's local
    file, lacks a column the entry maps (or a local folder a split the experiments read): the
    columns its builder makes, or its files' headers, read now, as hub sources are checked against
    their contracts, so that the job never fails on it after Snakemake removed its outputs."""
    where = f"datasets.{name}"
    if entry["kind"] == "retrieval" and entry.get("builder") != "homedepot":
        return  # corpus, queries and qrels: their own layouts (trimbench/data/beir.py)
    if entry["source"] == "gensim" and entry.get("builder") in GENSIM_COLUMNS:
        extra = ("negative",) if entry["kind"] == "triplets" and entry["builder"] == "lee_ict" else ()
        _check_named_columns(where, entry, [*GENSIM_COLUMNS[entry["builder"]], *extra],
                             f"the rows gensim builder '{entry['builder']}' makes")
    elif entry["source"] == "word_similarity":
        _check_named_columns(where, entry, list(WORD_SIMILARITY_COLUMNS), "the word-similarity sets' rows")
    elif entry["source"] in ("local", "url"):
        if entry["source"] == "local" and not (workdir / Path(entry["path"]).expanduser()).is_dir():
            return  # named by trimbench.checks.check_dataset
        splits = {"train": f"{where}.builder"} if entry.get("builder") == "homedepot" else used_splits
        for ours, used_by in splits.items():
            split = source_split(entry, ours)
            path, suffix = _local_table(entry, split, workdir)
            if path is None:
                if entry["source"] == "local":
                    raise Mismatch(split_key(where, entry, ours) if split != ours else f"{where}.path",
                                   f"local folder '{entry['path']}' has no file for split '{split}' (our '{ours}', "
                                   f"read by {used_by}): none of {split}{{{','.join(LOCAL_SUFFIXES)}}}")
                continue
            header = header_columns(path, entry.get("quoting", "minimal"), suffix)
            if header is not None:
                _check_named_columns(where, entry, header, f"file '{path}' (split '{split}')")


def _local_table(entry: dict, split: str, workdir: Path) -> tuple[Path | None, str | None]:
    """The local file a split is read from (None: none, or one downloaded by URL) and its suffix."""
    if entry["source"] == "local":
        folder = Path(entry["path"]).expanduser()
        return split_file(folder if folder.is_absolute() else workdir / folder, split), None
    location = entry["urls"].get(split, "")
    if not location or location.startswith(("http://", "https://", "file://")):
        return None, None
    path = Path(location).expanduser()
    return (path if path.is_absolute() else workdir / path), Path(location).suffix


def _check_named_columns(where: str, entry: dict, columns: list[str], described: str) -> None:
    for ours, theirs in column_mapping(entry).items():
        if theirs not in columns:
            read = f"maps '{ours}' to '{theirs}'" if ours in entry["columns"] else \
                f"not given: '{ours}' is read from column '{theirs}'"
            raise Mismatch(f"{where}.columns.{ours}", f"{read}, which is not a column of {described}; its columns: "
                                                      f"{', '.join(columns)}")


def column_mapping(entry: dict) -> dict[str, str]:
    """Our column -> the source's column a dataset entry reads (its ``columns`` over the defaults;
    ``score`` too where ``min_score`` keeps a kind-pairs source's rows by it)."""
    if entry.get("builder") == "homedepot":
        return {ours: entry["columns"].get(ours, theirs) for ours, theirs in HOMEDEPOT_COLUMNS.items()}
    mapping = {ours: entry["columns"].get(ours, ours) for ours in KIND_COLUMNS[entry["kind"]]}
    if entry.get("min_score") is not None and entry["kind"] != "sts":
        mapping["score"] = entry["columns"].get("score", "score")
    return mapping


def check_columns(where: str, entry: dict, features: dict, described: str) -> None:
    mapping = column_mapping(entry)
    numeric, keys = (("relevance",), HOMEDEPOT_KEYS) if entry.get("builder") == "homedepot" else (NUMERIC_COLUMNS, ())
    for ours, theirs in mapping.items():
        if ours == "score" and ours not in KIND_COLUMNS[entry["kind"]]:
            continue  # min_score's column: checked below
        if theirs not in features:
            raise Mismatch(f"{where}.columns.{ours}", f"'{theirs}' is not a feature of {described}; its features: "
                                                      f"{describe_features(features)}")
        text = is_text(features[theirs])
        if ours == "label" and entry["kind"] == "pair-class":  # integers or mapped values: checked below
            continue
        if ours not in keys and text == (ours in numeric):
            wanted = "a number" if ours in numeric else "text"
            raise Mismatch(f"{where}.columns.{ours}", f"feature '{theirs}' of {described} is "
                                                      f"{dtype(features[theirs])}; '{ours}' needs {wanted}; its "
                                                      f"features: {describe_features(features)}")
    if entry["kind"] == "pair-class":
        label = features[mapping["label"]]
        integers = class_names(label) or dtype(label).startswith("int")
        if not (integers or (is_text(label) and entry.get("label_values"))):
            raise Mismatch(f"{where}.columns.label", f"feature '{mapping['label']}' of {described} is {dtype(label)}; "
                                                     f"'label' needs class labels (integers), or {where}.label_values "
                                                     f"mapping its values to ours; its features: "
                                                     f"{describe_features(features)}")
        if entry.get("label_values"):
            _check_label_values(where, entry, mapping["label"], label, described)
        names = class_names(label)
        if names and len(names) != entry["num_labels"]:
            raise Mismatch(f"{where}.num_labels", f"feature '{mapping['label']}' of {described} has "
                                                  f"{len(names)} classes {names}, not {entry['num_labels']}")
    if entry.get("min_score") is not None and entry["kind"] != "sts":  # pairs kept by their score
        score = features.get(mapping["score"])
        if score is None or is_text(score):
            raise Mismatch(f"{where}.columns.score", f"min_score reads '{mapping['score']}', which is "
                                                     f"{'not a feature' if score is None else 'text'} of "
                                                     f"{described}; its features: {describe_features(features)}")
    if "score" in mapping:
        scale = value_range(features[mapping["score"]])
        if scale and [float(v) for v in entry["score_range"]] != [float(v) for v in scale]:
            raise Mismatch(f"{where}.score_range", f"feature '{mapping['score']}' of {described} ranges over "
                                                   f"{scale}, not {list(entry['score_range'])}")


def _check_label_values(where: str, entry: dict, theirs: str, label, described: str) -> None:
    """``label_values`` maps exactly the values the source's label feature takes, where the contract
    knows them: a text feature's listed ``values``, a class label's integers (what ``datasets`` gives)."""
    names = class_names(label)
    known = text_values(label) or ([str(index) for index in range(len(names))] if names else None)
    if known is None:
        return  # values not recorded: a value label_values lacks is named when the data is read
    mapped = set(entry["label_values"])
    if mapped != set(known):
        shown = f"{known} (the class labels {names})" if names else known
        problems = []
        if set(known) - mapped:
            problems.append(f"lacks {[value for value in known if value not in mapped]}")
        if mapped - set(known):
            problems.append(f"maps {sorted(mapped - set(known))}, which it never takes")
        raise Mismatch(f"{where}.label_values", f"feature '{theirs}' of {described} takes the values {shown}; "
                                                f"label_values {'; '.join(problems)}")
