"""Exact dense search with faiss: the top documents of each query by inner product (cosine: of unit
vectors), on the GPU when faiss has one. The dense track's grid search (:mod:`trimbench.dense.search`) and
the dense negatives miner (:mod:`trimbench.negatives`, for dense and SPLADE training) both search here.
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)


def _prepared(vectors: np.ndarray, similarity: str) -> np.ndarray:
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if similarity == "cosine":
        faiss.normalize_L2(vectors)
    return vectors


def flat_index(dim: int):
    """An exact inner-product index, moved to the GPU when faiss was built with one and sees a GPU
    (``faiss-gpu``, pyproject's extra ``gpu``: ``make env FAISS=gpu``; docs/cluster.md)."""
    try:
        import faiss
    except ImportError as error:
        raise ImportError("faiss is not installed: `make env` installs faiss-cpu, `make env FAISS=gpu` "
                          "faiss-gpu (pyproject.toml's extras cpu / gpu)") from error

    index = faiss.IndexFlatIP(dim)
    if hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
        index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
        log.info("exact search on the GPU (faiss sees %d)", faiss.get_num_gpus())
    return index


def search(docs: np.ndarray, queries: np.ndarray, k: int, similarity: str = "dot",
           add_chunk: int = 500_000) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` documents per query by inner product (cosine: of unit vectors). ``docs`` may be
    an fp16 memory map slice; it is converted to float32 a chunk at a time while being added."""
    index = flat_index(docs.shape[1])
    for start in range(0, docs.shape[0], add_chunk):
        index.add(_prepared(docs[start:start + add_chunk], similarity))
    scores, ids = index.search(_prepared(queries, similarity), min(k, docs.shape[0]))
    return scores, ids
