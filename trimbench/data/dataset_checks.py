"""Hub dataset entries against their contracts (reference/hub): the revision, the config, the splits
the experiments read, the files of a BEIR or Tevatron repository, and their columns
(:mod:`trimbench.data.column_checks`). Entries without a contract, or pinned to a revision it does
not describe, pass.
"""

from __future__ import annotations

from trimbench.data.column_checks import check_columns
from trimbench.data.contracts import BEIR_FILES, Mismatch, load, source_split, split_key
from trimbench.data.file_checks import check_urls, check_word_sets


def check_dataset(name: str, entry: dict, used_splits: dict[str, str]) -> None:
    """Raise :class:`Mismatch` where a hub dataset entry contradicts its contract.

    ``used_splits`` maps each of our split names the experiments read to the key that reads it.
    Entries without a contract, or pinned to a revision the contract does not describe, pass.
    """
    where = f"datasets.{name}"
    if entry.get("source") == "url":
        check_urls(where, entry, used_splits)
    elif entry.get("source") == "word_similarity":
        check_word_sets(where, entry)
    if entry.get("source") != "hub":
        return
    if entry["kind"] == "retrieval" and entry.get("builder") != "homedepot":
        if entry.get("format", "beir") == "beir":
            _check_beir(where, entry, used_splits)
        else:
            _check_tevatron(where, entry, used_splits)
        return
    contract = load(entry["id"])
    revision = entry.get("revision")
    if contract is None or not contract.describes(revision):
        return
    script = contract.script(revision)
    if script:
        export = contract.export and f"; load its parquet export instead: revision: {contract.export['revision']}"
        raise Mismatch(f"{where}.revision", f"{contract.label(revision)} holds a loading script ({script}), which "
                                            f"datasets 4 and later refuse to run{export or ''}")
    configs = contract.configs(revision)
    config_name = entry.get("config") or ("default" if "default" in configs or len(configs) > 1
                                          else next(iter(configs)))
    if config_name not in configs:
        problem = f"has no config '{config_name}'" if entry.get("config") else "needs a config"
        raise Mismatch(f"{where}.config", f"{contract.label(revision)} {problem}; its configs: {', '.join(configs)}")
    spec = configs[config_name]
    described = f"{contract.label(revision)}, config '{config_name}'"
    check_columns(where, entry, spec["features"], described)
    if entry.get("builder") == "homedepot":  # the builder cuts its own splits out of the hub's train split
        used_splits = {"train": f"{where}.builder"}
    for ours, used_by in used_splits.items():
        split = source_split(entry, ours)
        if split not in spec["splits"]:
            raise Mismatch(split_key(where, entry, ours),
                           f"split '{split}' (our '{ours}', read by {used_by}) is not a split of {described}; "
                           f"its splits: {', '.join(spec['splits'])}")


def _check_beir(where: str, entry: dict, used_splits: dict[str, str]) -> None:
    corpus = load(entry["id"])
    if corpus is not None and corpus.describes(entry.get("revision")):
        missing = [name for name in BEIR_FILES if name not in corpus.files(entry.get("revision"))]
        if missing:
            raise Mismatch(f"{where}.id", f"{corpus.label(entry.get('revision'))} lacks {', '.join(missing)} (the "
                                          f"BEIR layout); its files: {', '.join(sorted(corpus.files()))}")
    qrels = load(f"{entry['id']}-qrels")
    if qrels is None or not qrels.describes(entry.get("qrels_revision")):
        return
    files = qrels.files(entry.get("qrels_revision"))
    for ours, used_by in used_splits.items():
        split = source_split(entry, ours)
        if f"{split}.tsv" not in files:
            raise Mismatch(split_key(where, entry, ours),
                           f"split '{split}' (our '{ours}', read by {used_by}) has no judgements in "
                           f"{qrels.label(entry.get('qrels_revision'))}: no {split}.tsv; its files: "
                           f"{', '.join(sorted(files))}")


def _check_tevatron(where: str, entry: dict, used_splits: dict[str, str]) -> None:
    """Tevatron's repositories are read as files (trimbench/data/beir.py): ``<split>.jsonl.gz`` of the
    query repository for every split read, ``corpus.jsonl.gz`` of ``<id>-corpus``."""
    reads = [(f"{entry['id']}-corpus", "corpus_revision", "corpus.jsonl.gz", f"{where}.id", "the corpus")]
    if not (entry.get("topics") or entry.get("topics_url")) or not (entry.get("qrels") or entry.get("qrels_url")):
        reads += [(entry["id"], "revision", f"{source_split(entry, ours)}.jsonl.gz", split_key(where, entry, ours),
                   f"our split '{ours}', read by {used_by}") for ours, used_by in used_splits.items()]
    for repo, revision_key, filename, key, role in reads:
        contract = load(repo)
        if contract is not None and contract.describes(entry.get(revision_key)):
            files = contract.files(entry.get(revision_key))
            if filename not in files:
                raise Mismatch(key, f"{contract.label(entry.get(revision_key))} has no {filename} ({role}); its "
                                    f"files: {', '.join(sorted(files))}")


def check_files(key: str, repo_id: str, revision: str | None, filename: str) -> None:
    """A file a config key names must be one of the hub repository's files, per its contract."""
    contract = load(repo_id)
    if contract is not None and contract.describes(revision) and filename not in contract.files(revision):
        raise Mismatch(key, f"'{filename}' is not a file of {contract.label(revision)}; its files: "
                            f"{', '.join(sorted(contract.files(revision)))}")
