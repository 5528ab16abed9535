"""Config entries that read files by URL (``source: url``, ``word_similarity``) against the files'
contracts (reference/files): a file for every split read, each one the table its reader expects.
"""

from __future__ import annotations

from pathlib import Path

from trimbench.data.column_checks import check_columns
from trimbench.data.columns import WORD_COLUMNS, WORD_SET_READS, WORD_SIMILARITY_FILES
from trimbench.data.contracts import (
    Mismatch,
    PublishedFile,
    describe_features,
    dtype,
    is_text,
    published_file,
    source_split,
    value_range,
)


def check_urls(where: str, entry: dict, used_splits: dict[str, str]) -> None:
    """A url entry: a file for every split read, and each file as its contract (reference/files) describes it."""
    for ours, used_by in used_splits.items():
        split = source_split(entry, ours)
        if split not in entry["urls"]:
            raise Mismatch(f"{where}.urls", f"no file for split '{split}' (our '{ours}', read by {used_by}); "
                                            f"its files are for {sorted(entry['urls'])}")
    for split, location in entry["urls"].items():
        published = published_file(location)
        if published is None:
            continue
        spec = published.spec
        if spec.get("member") or not spec.get("header", True) or spec.get("index"):
            raise Mismatch(f"{where}.urls.{split}", f"{published.label} is not one table with a header row and no "
                                                    f"index column, which source url reads")
        quoting = spec.get("quoting", "minimal")
        if quoting != entry["quoting"]:
            why = " (its cells hold quote characters that do not pair up: read them as text)" * (quoting == "none")
            raise Mismatch(f"{where}.quoting", f"{published.label} is read with quoting: {quoting}{why}, not "
                                               f"{entry['quoting']}")
        check_columns(where, entry, published.columns, published.label)


def check_word_sets(where: str, entry: dict) -> None:
    """Each set's file, where its URL has a contract, is the table the paper's script reads
    (:data:`trimbench.data.columns.WORD_SET_READS`): separator, header, member, word and score columns, scale."""
    for name in entry["sets"]:
        published = published_file(entry["files"].get(name, WORD_SIMILARITY_FILES[name]))
        if published is not None:
            problem = _word_set_problem(WORD_SET_READS[name], published)
            if problem:
                key = f"{where}.files.{name}" if name in entry["files"] else f"{where}.sets"
                raise Mismatch(key, f"set '{name}' is read as the paper reads it, but {published.label} {problem}")


def _word_set_problem(read: dict, published: PublishedFile) -> str | None:
    spec, columns = published.spec, published.columns
    header = "names" not in read
    if spec["format"] != read["format"] or spec.get("header", True) != header:
        return (f"is {spec['format']} {'with' if spec.get('header', True) else 'without'} a header, not "
                f"{read['format']} {'with' if header else 'without'} one")
    if read.get("member") and Path(spec.get("member") or "").name != read["member"]:
        return f"holds {spec.get('member') or 'no archive member'}, not {read['member']}"
    if read.get("index") and not spec.get("index"):
        return "has no index column (read with index_col=0)"
    if header:
        named = {column: columns.get(column) for column in (*WORD_COLUMNS, read["score"])}
    elif len(columns) != len(read["names"]):
        return f"has {len(columns)} columns ({', '.join(columns)}), not the {len(read['names'])} the paper names"
    else:
        by_position = dict(zip(read["names"], columns.values(), strict=True))
        named = {column: by_position[column] for column in (*WORD_COLUMNS, read["score"])}
    for column, feature in named.items():
        if feature is None:
            return f"has no column '{column}'; its columns: {describe_features(columns)}"
        if is_text(feature) != (column in WORD_COLUMNS):
            return f"column '{column}' is {dtype(feature)}; its columns: {describe_features(columns)}"
    scale = value_range(named[read["score"]])
    if scale and float(scale[1]) != read["scale"]:
        return f"scores on {scale}, which the paper divides by {read['scale']}"
    return None
