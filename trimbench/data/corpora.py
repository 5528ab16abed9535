"""Which evaluation datasets share one corpus: MS MARCO dev, DL19 and DL20 encode (or index) and
search one corpus, once."""

from __future__ import annotations


def corpus_key(entry: dict) -> tuple | None:
    """What a dataset's corpus is read from, where it does not depend on the split (BEIR and
    Tevatron corpora: hub or local folder; in smoke mode the hub's stand-in, written from the
    contract with the entry's rows and seed); None where it does (builders)."""
    if entry.get("builder"):
        return None
    if entry["source"] == "hub":
        standin = (entry.get("standin_rows"), entry.get("seed")) if entry.get("standin") else None
        return ("hub", entry["id"], entry.get("revision"), entry.get("format") or "beir", entry.get("config"),
                entry.get("corpus_revision"), standin)
    if entry["source"] == "local":
        return ("local", entry["path"], entry.get("format") or "beir")
    return None


def shared_corpora(exp: dict, datasets: dict) -> dict[str, str]:
    """Each evaluation dataset -> the first one with the same corpus (itself where none): MS MARCO
    dev, DL19 and DL20 encode (or index) and search one corpus."""
    first: dict = {}
    out = {}
    for ds in exp["evaluation"]["datasets"]:
        key = corpus_key(datasets[ds])
        out[ds] = ds if key is None else first.setdefault(key, ds)
    return out
