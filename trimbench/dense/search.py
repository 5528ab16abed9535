"""Dense retrieval over a (layer, dim) grid: one-pass corpus encoding, faiss search (:mod:`trimbench.search`),
scored as TREC runs (:mod:`trimbench.runs`).

The corpus is encoded once per model: each chunk of documents goes through the transformer once
with all hidden states kept, and only the grid's layers, cut to the widest grid dim, are written
to an fp16 ``.npy`` memory map ``[layers, docs, max_dim]``. Every (layer, dim) cell is then a slice
of it, searched exactly with a faiss ``IndexFlatIP`` (on the GPU when faiss has one).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench import distributed
from trimbench.data.io import doc_texts
from trimbench.encoding import encode_layers, rank_rows
from trimbench.jobs import launch
from trimbench.runs import evaluate_run, run_frame, top_k_run, write_trec_run
from trimbench.search import search

log = logging.getLogger(__name__)


def encode_to_memmap(model, texts: list[str], layers: list[int], max_dim: int, path: Path,
                     batch_size: int = 64, chunk_size: int = 50_000, precision: str = "fp32") -> None:
    """Encode ``texts`` into an fp16 ``.npy`` memory map ``[len(layers), len(texts), max_dim]``.

    Chunks bound the host memory a huge corpus needs: one chunk's float32 rows at a time, the rest
    on disk; every text still goes through the transformer exactly once. The map is opened for
    each chunk and closed after it: pages written through a mapping stay in the process's resident
    memory until it is unmapped, so one map kept open would grow with the corpus.

    Under several ranks (``encode_devices``, :mod:`trimbench.jobs.launch`; all on one node, so they
    share the file's pages), rank 0 creates the map and each rank writes the rows of its batches of
    every chunk (:func:`~trimbench.encoding.rank_rows`): the array of a single device. ``precision``:
    the forward pass's autocast (:func:`~trimbench.encoding.encode_layers`).
    """
    shape = (len(layers), len(texts), max_dim)
    if launch.is_main_process():
        np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=shape).flush()
    distributed.barrier()
    for start in range(0, len(texts), chunk_size):
        stop = min(start + chunk_size, len(texts))
        rows = rank_rows(texts[start:stop], batch_size, launch.rank(), launch.world_size())
        block = encode_layers(model, [texts[start + i] for i in rows], layers, batch_size=batch_size,
                              max_dim=max_dim, precision=precision)
        out = np.lib.format.open_memmap(path, mode="r+")
        out[:, start + rows] = block.astype(np.float16)
        out.flush()
        del out, block
        log.info("encoded %d / %d texts", stop, len(texts))


def search_run(docs: np.ndarray, queries: np.ndarray, doc_ids: list[str], query_ids: list[str], k: int,
               similarity: str, ignore_identical_ids: bool) -> pd.DataFrame:
    """:func:`trimbench.search.search` as a run table of ``k`` hits a query; ``ignore_identical_ids``: see
    :func:`trimbench.runs.top_k_run`."""
    return top_k_run(lambda depth: run_frame(query_ids, doc_ids, *search(docs, queries, depth, similarity)), k,
                     ignore_identical_ids)


# --- one variant over its grid -----------------------------------------------------------------


def encode_retrieval_set(model, split, layers: list[int], max_dim: int, folder: Path, q_max: int | None,
                         p_max: int | None, batch_size: int, chunk_size: int, precision: str = "fp32") -> dict:
    """Queries and documents of one split into ``folder`` (docs.npy fp16 memmap, queries.npy), the forward
    passes at ``precision`` (:func:`~trimbench.encoding.encode_layers`)."""
    folder.mkdir(parents=True, exist_ok=True)
    default = model.max_seq_length
    model.max_seq_length = p_max or default
    encode_to_memmap(model, doc_texts(split.corpus), layers, max_dim, folder / "docs.npy", batch_size, chunk_size,
                     precision)
    model.max_seq_length = default
    return {"docs": len(split.corpus), **encode_queries(model, split.queries, layers, max_dim, folder, q_max,
                                                          batch_size, precision)}


def encode_queries(model, queries: pd.DataFrame, layers: list[int], max_dim: int, folder: Path, q_max: int | None,
                   batch_size: int, precision: str = "fp32") -> dict:
    """A split's queries alone into ``folder/queries.npy`` (its documents are another split's)."""
    folder.mkdir(parents=True, exist_ok=True)
    default = model.max_seq_length
    model.max_seq_length = q_max or default
    encode_to_memmap(model, list(queries["text"]), layers, max_dim, folder / "queries.npy", batch_size,
                     chunk_size=max(1, len(queries)), precision=precision)
    model.max_seq_length = default
    return {"queries": len(queries)}


def write_manifest(folder: Path, layers: list[int], max_dim: int, datasets: dict) -> None:
    (folder / "manifest.json").write_text(json.dumps({"layers": layers, "max_dim": max_dim, "datasets": datasets},
                                                     indent=1, sort_keys=True))


def grid_scores(embedding_dir: Path, dataset: str, split, layers: list[int], dims: list[int], metrics: list[str],
                k: int, similarity: str, runs_dir: Path | None, meta: dict, passage_layer: int | None = None,
                relevance_level: int = 1, ignore_identical_ids: bool = False) -> list[dict]:
    """Search every (layer, dim) cell of one dataset; score rows and (optionally) TREC run files.

    ``passage_layer``: documents always from that layer (the "fixed-doc" model), queries from each;
    ``relevance_level``: see :func:`evaluate_run`; ``ignore_identical_ids``: a query's own id dropped
    from its hits (:func:`trimbench.runs.top_k_run`). Datasets over one corpus (MS MARCO dev, DL19,
    DL20) share its encoding: the manifest names the dataset whose folder holds it (``docs_of``).
    """
    manifest = json.loads((embedding_dir / "manifest.json").read_text())
    held = manifest["layers"]
    docs_of = manifest["datasets"].get(dataset, {}).get("docs_of", dataset)
    docs = np.load(embedding_dir / docs_of / "docs.npy", mmap_mode="r")
    queries = np.load(embedding_dir / dataset / "queries.npy")
    missing = sorted(set(layers + ([passage_layer] if passage_layer else [])) - set(held))
    if missing or docs.shape[1] != len(split.corpus) or queries.shape[1] != len(split.queries):
        raise RuntimeError(f"'{embedding_dir / dataset}' (made by rule encode_corpus) does not match the data or "
                           f"lacks layers {missing}: delete it and re-run")
    doc_ids, query_ids = list(split.corpus["doc_id"]), list(split.queries["query_id"])
    rows = []
    for layer in layers:
        doc_slot = held.index(passage_layer or layer)
        for dim in dims:
            run = search_run(docs[doc_slot, :, :dim], queries[held.index(layer), :, :dim], doc_ids, query_ids, k,
                             similarity, ignore_identical_ids)
            if runs_dir is not None:
                runs_dir.mkdir(parents=True, exist_ok=True)
                write_trec_run(run, runs_dir / f"{dataset}.L{layer}.d{dim}.trec", f"L{layer}-d{dim}")
            for metric, value in evaluate_run(run, split.qrels, metrics, relevance_level).items():
                rows.append({**meta, "layer": layer, "dim": dim, "dataset": dataset, "metric": metric,
                             "value": value})
            log.info("%s L%d d%d: %s", dataset, layer, dim,
                     ", ".join(f"{r['metric']} {r['value']:.4f}" for r in rows[-len(metrics):]))
    return rows
