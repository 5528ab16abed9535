"""Hub datasets: read from the hub, or, in smoke mode, from a stand-in built from their contracts.

Every hub read goes through a *source* (:func:`opened`): :class:`Hub` calls ``datasets`` on the hub
repository at the entry's revision; :class:`Standin` first writes a local repository from the
contract (:func:`write_repo`: the contract's configs, split names, features and types, the card's
``configs`` or the repository's file names, its loading script if it has one) filled with real
text from the embedded Lee data, and then calls the same ``datasets`` code on it. So the config,
split and column names a preset asks for meet the hub's real ones in smoke mode too: ``datasets``
raises for an unknown config or split, refuses a loading script, and :func:`trimbench.data.tables.normalise`
applies the preset's mapping to the real column names, exactly as on the cluster.

Files downloaded by URL (``source: url``, ``word_similarity``) are stood in for the same way
(:func:`files_opened`): each URL's file is written in its published format from its contract
(``reference/files``: format, header, index column, quoting, zip member, columns) and handed to
the same reader in place of the URL.
"""

from __future__ import annotations

import gzip
import json
import re
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd

from trimbench.data import contracts
from trimbench.data.columns import WORD_COLUMNS
from trimbench.data.io import is_url
from trimbench.data.lee import lee_ict
from trimbench.errors import DataError

#: what each feature of a BEIR or Tevatron stand-in holds: the corpus, queries and judgements share
#: ids (a Tevatron query's positive passage is the corpus passage of its id, its negatives the next ones)
_SHARED_ID_ROLES = {
    "beir-corpus": {"_id": "id", "title": "empty", "text": "positive"},
    "beir-queries": {"_id": "id", "text": "anchor"},
    "beir-qrels": {"query-id": "id", "corpus-id": "id", "score": "one"},
    "tevatron-corpus": {"docid": "id", "title": "empty", "text": "positive"},
    "tevatron-queries": {"query_id": "id", "query": "anchor", "positive_passages": "positive-passages",
                         "negative_passages": "negative-passages"},
}
#: layouts whose splits share the ids out between them (no query judged in two splits)
_SHARED_OUT = ("beir-qrels", "tevatron-queries")
#: product search (bstds/home_depot): each row searches for a product drawn with repeats, as several
#: rows of the real table search for one entity id; these features are the product's pool row
_PRODUCT_ROLES = {"product-search": {"entity_id": "id", "query": "anchor", "description": "positive"}}
#: Tevatron's sampled BM25 negatives per MS MARCO training query (build_train.py --n_sample 30)
TEVATRON_NEGATIVES = 30
_ID_NAMES = ("_id", "id", "idx", "qid", "pid")


class Hub:
    """The Hugging Face hub itself."""

    cache_dir = None

    def dataset(self, repo_id: str, config: str | None, split: str, revision: str | None):
        import datasets

        return datasets.load_dataset(repo_id, config, split=split, revision=revision)

    def file(self, repo_id: str, revision: str | None, filename: str) -> str:
        """A file of a dataset repository at a revision, as an fsspec URL ``datasets`` reads."""
        return f"hf://datasets/{repo_id}@{quote(revision or 'main', safe='')}/{filename}"

    def download(self, repo_id: str, revision: str | None, filename: str) -> Path:
        """A file of a dataset repository at a revision on local disk, downloaded once into the hub
        cache: for a reader streaming a large file line by line (Tevatron's JSON lines)."""
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo_id=repo_id, filename=filename, repo_type="dataset", revision=revision))


class Standin:
    """Local repositories written from contracts, each once, under ``root``."""

    def __init__(self, root: Path, rows: int, seed: int):
        self.root, self.rows, self.seed = root, rows, seed
        self.cache_dir = str(root / "cache")
        self._repos: dict[tuple[str, str | None], Path] = {}

    def repo(self, repo_id: str, revision: str | None) -> Path:
        key = (repo_id, revision)
        if key not in self._repos:  # one folder a revision; the repository's own name last (datasets looks
            # for a loading script named after it)
            where = self.root / "repos" / str(len(self._repos))
            self._repos[key] = write_repo(repo_id, revision, where, self.rows, self.seed)
        return self._repos[key]

    def dataset(self, repo_id: str, config: str | None, split: str, revision: str | None):
        import datasets

        return datasets.load_dataset(str(self.repo(repo_id, revision)), config, split=split, cache_dir=self.cache_dir)

    def file(self, repo_id: str, revision: str | None, filename: str) -> str:
        return str(self.repo(repo_id, revision) / filename)

    def download(self, repo_id: str, revision: str | None, filename: str) -> Path:
        path = self.repo(repo_id, revision) / filename
        if not path.is_file():  # on the hub: huggingface_hub's EntryNotFoundError
            contract = contracts.load(repo_id)
            raise DataError(f"'{filename}' is not a file of {contract.label(revision)}; its files: "
                            f"{', '.join(sorted(contract.files(revision)))}")
        return path


@contextmanager
def opened(entry: dict) -> Iterator[Hub | Standin]:
    """The source a hub dataset entry reads from: the hub, or its smoke-mode stand-in."""
    if not entry.get("standin"):
        yield Hub()
        return
    with tempfile.TemporaryDirectory(prefix="hub-standin-") as folder:
        yield Standin(Path(folder), entry["standin_rows"], entry["seed"])


@contextmanager
def files_opened(entry: dict, locations: dict[str, str]) -> Iterator[dict[str, str]]:
    """The files a url or word_similarity entry reads (key -> URL or local path): as they are, or,
    for a stand-in entry, each URL replaced by a local file written from its contract."""
    if not entry.get("standin"):
        yield locations
        return
    with tempfile.TemporaryDirectory(prefix="file-standin-") as folder:
        local = {}
        for index, (key, location) in enumerate(locations.items()):
            local[key] = location if not is_url(location) else str(
                write_published_file(location, Path(folder) / str(index), index, entry["standin_rows"], entry["seed"]))
        yield local


def read_table(source: Hub | Standin, repo_id: str, revision: str | None, filename: str,
               dtype: dict | None = None) -> pd.DataFrame:
    """One data file of a repository: JSON lines through ``datasets`` (a corpus may be millions of
    lines), a TSV/CSV file through pandas (``hf://`` paths open through huggingface_hub's fsspec)."""
    location = source.file(repo_id, revision, filename)
    if filename.endswith((".tsv", ".csv")):
        return pd.read_csv(location, sep="\t" if filename.endswith(".tsv") else ",", dtype=dtype)
    import datasets

    loaded = datasets.load_dataset("json", data_files={"train": location}, split="train", cache_dir=source.cache_dir)
    return loaded.to_pandas()


# --- stand-ins -------------------------------------------------------------------------------------


def write_repo(repo_id: str, revision: str | None, root: Path, rows: int, seed: int) -> Path:
    """Write a local stand-in of a hub dataset repository at ``revision`` from its contract.

    At most ``rows`` rows a split, in the repository's own layout: the files the contract names
    (``datasets`` then infers the splits from their names, as on the hub), or one parquet file a
    split declared in the card's ``configs``; the loading script where the revision has one.
    """
    contract = contracts.load(repo_id)
    if contract is None:
        raise DataError(f"smoke mode builds hub stand-ins from contracts, and hub dataset '{repo_id}' has none: "
                        f"write {contracts.contract_path(repo_id)} (reference/hub/README.md)")
    if not contract.describes(revision):
        raise DataError(f"smoke mode: the contract {contract.where} describes revision {contract.pinned_revision} of "
                        f"hub dataset '{repo_id}', not '{revision}'")
    folder = root.joinpath(*repo_id.split("/"))
    folder.mkdir(parents=True, exist_ok=True)
    pool = _text_pool(seed)
    declared = {}
    for config, spec in contract.configs(revision).items():
        for index, split in enumerate(spec["splits"]):
            path = (spec.get("files") or {}).get(split)
            if path is None:
                path = f"{config}/{split}-00000-of-00001.parquet"
                declared.setdefault(config, []).append({"split": split, "path": path})
            _write(folder / path, _rows(spec, split, index, rows, pool, seed), spec["features"])
    if declared:
        card = {"configs": [{"config_name": name, "data_files": files} for name, files in declared.items()]}
        (folder / "README.md").write_text(f"---\n{json.dumps(card, indent=1)}\n---\n", encoding="utf-8")
    script = contract.script(revision)
    if script:
        (folder / script).write_text("# stand-in of the repository's loading script\n", encoding="utf-8")
    return folder


def write_published_file(url: str, folder: Path, index: int, rows: int, seed: int) -> Path:
    """Write a stand-in of the file at ``url`` from its contract (reference/files), in its published
    format, named as the URL names it: at most ``rows`` rows, the ``index``-th slice of the text (so
    the files of one entry hold different rows); in a ``quoting: none`` file a cell of the first row
    opens with a quote character that it never closes, as cells of KorSTS's files do (read with
    quoting, it swallows the rows after it)."""
    published = contracts.published_file(url)
    if published is None:
        raise DataError(f"smoke mode builds stand-ins of downloaded files from contracts, and '{url}' has none: "
                        f"write one in {contracts.FILES_CONTRACT_DIR} (reference/hub/README.md)")
    spec, columns = published.spec, published.columns
    count = min(rows, spec.get("rows") or rows)
    pool = _word_pool(seed) if set(WORD_COLUMNS) <= set(columns) else _text_pool(seed)  # word pairs: words
    table = pd.DataFrame(_columns(columns, range(index * count, (index + 1) * count), {}, pool))
    if spec.get("quoting") == "none":
        last_text = [name for name, feature in columns.items() if contracts.is_text(feature)][-1]
        table.loc[0, last_text] = '"' + table.loc[0, last_text].replace('"', "")
    if spec.get("blank_rows"):
        table = pd.concat([table, pd.DataFrame(index=range(spec["blank_rows"]), columns=table.columns)],
                          ignore_index=True)
    text = _published_text(table, spec)
    path = folder / Path(url.split("?")[0]).name
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.get("member"):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(spec["member"], text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _published_text(table: pd.DataFrame, spec: dict) -> str:
    separator = "\t" if spec["format"] == "tsv" else ","
    header, index = spec.get("header", True), spec.get("index", False)
    if spec.get("quoting") != "none":
        return table.to_csv(sep=separator, header=header, index=index, lineterminator="\n")
    # Cells as they are, quote characters and all (a tab or line break would split the cell).
    cells = table.astype(str).map(lambda cell: re.sub(r"[\t\r\n]", " ", cell))
    lines = [separator.join(table.columns)] if header else []
    lines += [separator.join(row) for row in cells.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _text_pool(seed: int) -> pd.DataFrame:
    """Real text: inverse-cloze pairs of the Lee articles, each with another pair's passage as negative."""
    frame = lee_ict("train", 0.2, 1, seed)
    return frame.assign(negative=np.roll(frame["positive"].to_numpy(), 1)).reset_index(drop=True)


def _word_pool(seed: int) -> pd.DataFrame:
    """Real words: the distinct lower-case words of the Lee sentences, paired off (no pair twice)."""
    words = list(dict.fromkeys(re.findall(r"\b[a-z]{3,}\b", " ".join(_text_pool(seed)["anchor"]).lower())))
    pairs = len(words) // 2
    return pd.DataFrame({"anchor": words[:pairs], "positive": words[pairs:2 * pairs],
                         "negative": np.roll(words[pairs:2 * pairs], 1)})


def _is_id(name: str) -> bool:
    return name in _ID_NAMES or name.endswith(("_id", "-id"))


def _rows(spec: dict, split: str, index: int, rows: int, pool: pd.DataFrame, seed: int) -> dict[str, list]:
    """The columns of one split: row ``g`` of the split takes the pool's row ``g`` (splits take
    consecutive slices); a BEIR or Tevatron corpus and its queries have ``rows`` rows sharing ids
    with the judgements, which the qrels (Tevatron: query) splits share out between them (no query
    judged in two splits); a product-search row's product features take the pool row of a product
    drawn (with the seed) from a third as many products as rows."""
    features, layout = spec["features"], spec.get("layout")
    documents = min(len(pool), rows)
    if layout in _SHARED_ID_ROLES:
        numbers = range(documents)
        if layout in _SHARED_OUT:
            numbers = [g for g in numbers if g % len(spec["splits"]) == index]
        roles = _SHARED_ID_ROLES[layout]
    else:
        count = min(rows, spec["splits"][split] or rows)
        numbers, roles = range(index * count, index * count + count), {}
    if layout in _PRODUCT_ROLES:
        roles = _PRODUCT_ROLES[layout]
        products = np.random.default_rng([seed, index]).integers(0, max(2, len(numbers) // 3), len(numbers))
        texts = _free_texts(features)
        return {name: [_value(name, feature, roles.get(name), texts, int(p) if name in roles else g, pool, documents)
                       for g, p in zip(numbers, products, strict=True)] for name, feature in features.items()}
    return _columns(features, numbers, roles, pool, documents)


def _free_texts(features: dict) -> list[str]:
    """The text features a stand-in fills with the pool's sentences (not ids, not listed values)."""
    return [name for name, feature in features.items()
            if contracts.is_text(feature) and not _is_id(name) and contracts.text_values(feature) is None]


def _columns(features: dict, numbers, roles: dict, pool: pd.DataFrame, documents: int = 0) -> dict[str, list]:
    """Row ``g`` of each column for every ``g`` in ``numbers``: free text from the pool's row ``g``,
    a listed value or a number from ``g``."""
    texts = _free_texts(features)
    return {name: [_value(name, feature, roles.get(name), texts, g, pool, documents) for g in numbers]
            for name, feature in features.items()}


def _value(name: str, feature, role: str | None, texts: list[str], g: int, pool: pd.DataFrame, documents: int):
    fields = contracts.fields(feature)
    if fields is not None:  # a list of structs: passages of the shared corpus, else one item of the row's own
        if role == "positive-passages":
            numbers = [g]
        elif role == "negative-passages":
            numbers = [(g + step) % documents for step in range(1, min(TEVATRON_NEGATIVES, documents - 1) + 1)]
        else:
            numbers, role = [g], None
        corpus_roles = _SHARED_ID_ROLES["tevatron-corpus"] if role else {}
        inner = [field for field, spec in fields.items() if contracts.is_text(spec) and not _is_id(field)]
        return [{field: _value(field, spec, corpus_roles.get(field), inner, d, pool, documents)
                 for field, spec in fields.items()} for d in numbers]
    text = contracts.is_text(feature)
    if role == "id" or (role is None and _is_id(name)):
        return str(g) if text else g
    values = contracts.text_values(feature)
    if values:  # the source's own values (e.g. SICK's entailment_AB), each as often
        return values[g % len(values)]
    if role == "empty":
        return ""
    if role == "one":
        return 1
    row = pool.iloc[g % len(pool)]
    if text:
        return str(row[role or ("anchor", "positive", "negative")[texts.index(name) % 3]])
    names = contracts.class_names(feature)
    if names:
        return g % len(names)
    kind = contracts.dtype(feature)
    low, high = contracts.value_range(feature) or [0, 1]
    if kind == "bool":
        return g % 2 == 0
    if kind.startswith("int"):
        return int(low) + g % (int(high) - int(low) + 1)
    return low + (high - low) * ((g * 7) % 11) / 10


def _feature_type(spec):
    """The ``datasets`` feature type of a contract's feature (a list of structs is ``[{field: type}]``)."""
    import datasets

    fields = contracts.fields(spec)
    if fields is not None:
        return [{field: _feature_type(inner) for field, inner in fields.items()}]
    names = contracts.class_names(spec)
    return datasets.ClassLabel(names=names) if names else datasets.Value(contracts.dtype(spec))


def _write(path: Path, columns: dict[str, list], features: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    name = path.name
    if name.endswith(".parquet"):
        import datasets

        types = {column: _feature_type(spec) for column, spec in features.items()}
        datasets.Dataset.from_dict(columns, features=datasets.Features(types)).to_parquet(str(path))
    elif name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")):
        lines = "".join(json.dumps(dict(zip(columns, values, strict=True))) + "\n" for values in zip(*columns.values(),
                                                                                                   strict=True))
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as handle:
            handle.write(lines)
    elif name.endswith((".tsv", ".csv")):
        pd.DataFrame(columns).to_csv(path, sep="\t" if name.endswith(".tsv") else ",", index=False)
    else:
        raise DataError(f"cannot write a stand-in of '{path.name}': no writer for its format")
