"""The quality of every cut: each (layer, dim, precision) cell of one model on one dataset, in MTEB's terms.

The embeddings come from one pass per text set (:func:`trimbench.encoding.encode_layers`: every layer
pooled and normalised by the model's own modules, every dim a prefix). A quantised cell is what
sentence-transformers' ``encode(truncate_dim=d, normalize_embeddings=True, precision=p)`` gives: the
prefix of ``d`` dims, normalised, then quantised by ``quantize_embeddings``.

- STS: Spearman of cosine (MTEB's ``cosine_spearman``). Quantised cells as sentence-transformers'
  ``EmbeddingSimilarityEvaluator(precision=...)`` scores them: int8 calibrated on both sides' texts
  together, the cosine of the codes; binary as the cosine of the unpacked 0/1 bits (computed in float64,
  so pairs at equal Hamming distance stay tied, where the evaluator's float32 rounding breaks some ties).
- Retrieval: nDCG@10 of an exact faiss search (cosine of the prefix for float32; sentence-transformers'
  ``semantic_search_faiss`` for the quantised corpus: ``IndexFlatIP`` over 8-bit codes, ``IndexBinaryFlat``
  over packed bits, by Hamming distance), the query's own id dropped when the dataset asks (BEIR's
  self-hit removal). int8 ranges are calibrated on the corpus embeddings, as its documentation
  advises. With a ``rescore_multiplier``, the quantised rows come twice: as searched, and rescored
  (``precision`` ``int8+rescore`` / ``binary+rescore``: the top k·multiplier re-ranked by the float
  query · the dequantised int8 document / the document's 0/1 bits, as ``semantic_search_faiss(rescore=True)``
  does; 0/1 bits rank as ±1 bits would, the query's sum being the same for every document).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trimbench.metrics import sts_grid
from trimbench.profile.cost import PRECISIONS
from trimbench.runs import evaluate_run, run_frame, top_k_run

#: the precisions a cell is measured at: sentence-transformers' names; int8's faiss search reads its
#: unsigned twin uint8, the same 256 bins shifted by 128, which is what ``semantic_search_faiss`` indexes
#: the faiss-side precision of each quantised one (``semantic_search_faiss``'s ``corpus_precision``)
FAISS_PRECISION = {"int8": "uint8", "binary": "ubinary"}
RESCORED = "+rescore"


def check_precisions(precisions: list[str]) -> None:
    unknown = [p for p in precisions if p not in PRECISIONS]
    if unknown:
        raise ValueError(f"unknown precision {unknown[0]!r}; known: {list(PRECISIONS)}")


def quantised(embeddings: np.ndarray, precision: str) -> np.ndarray:
    """``embeddings`` [n, d] normalised and quantised as sentence-transformers' ``EmbeddingSimilarityEvaluator``
    compares them: float32 as is, int8 codes (ranges from these embeddings), binary as 0/1 bits (unpacked)."""
    from sentence_transformers.util.quantization import quantize_embeddings

    embeddings = _unit(embeddings)
    if precision == "float32":
        return embeddings
    if precision == "int8":
        return quantize_embeddings(embeddings, "int8", calibration_embeddings=embeddings).astype(np.float32)
    if precision == "binary":
        bits = np.unpackbits(quantize_embeddings(embeddings, "ubinary"), axis=-1)[:, :embeddings.shape[1]]
        return bits.astype(np.float32)
    check_precisions([precision])
    raise AssertionError(precision)


def sts_cells(embeddings: np.ndarray, layers: list[int], first: np.ndarray, second: np.ndarray, gold: np.ndarray,
              dims: list[int], precisions: list[str]) -> pd.DataFrame:
    """Spearman of cosine for every (layer, dim, precision): ``embeddings`` [len(layers), n_texts, >= max(dims)],
    ``first`` / ``second`` the two texts of each pair, ``gold`` their judgements."""
    check_precisions(precisions)
    rows = []
    for precision in precisions:
        for slot, layer in enumerate(layers):
            for dim in sorted(dims):
                codes = quantised(np.asarray(embeddings[slot, :, :dim], dtype=np.float32), precision)
                for row in sts_grid(codes[None], [layer], first, second, gold, [dim], ["spearman_cosine"]):
                    rows.append({**row, "precision": precision})
    return pd.DataFrame(rows)[["layer", "dim", "precision", "metric", "value"]]


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def search_cell(docs: np.ndarray, queries: np.ndarray, precision: str, k: int, rescore_multiplier: int = 0):
    """Top-``k`` (scores, ids) [n_queries, k] of one cell, higher scores first: ``docs`` and ``queries``
    the cell's float32 prefixes. float32: cosine (an ``IndexFlatIP`` of unit rows); int8 / binary:
    ``semantic_search_faiss`` over the quantised corpus, rescored when ``rescore_multiplier`` > 0; a
    Hamming distance comes back negated, so that higher is better in every cell."""
    from sentence_transformers.util.quantization import quantize_embeddings, semantic_search_faiss

    from trimbench.search import search

    k = min(k, len(docs))
    if precision == "float32":
        return search(_unit(docs), _unit(queries), k, "dot")
    faiss_precision = FAISS_PRECISION[precision]
    docs, queries = _unit(docs), _unit(queries)
    calibration = docs if precision == "int8" else None
    corpus = quantize_embeddings(docs, faiss_precision, calibration_embeddings=calibration)
    hits, _ = semantic_search_faiss(np.ascontiguousarray(queries, dtype=np.float32), corpus_embeddings=corpus,
                                    corpus_precision=faiss_precision, top_k=k, calibration_embeddings=calibration,
                                    rescore=rescore_multiplier > 0, rescore_multiplier=max(1, rescore_multiplier),
                                    exact=True)
    scores = np.full((len(queries), k), -np.inf)
    ids = np.full((len(queries), k), -1, dtype=np.int64)
    hamming = precision == "binary" and not rescore_multiplier
    for row, query_hits in enumerate(hits):
        for column, hit in enumerate(query_hits[:k]):
            ids[row, column] = hit["corpus_id"]
            scores[row, column] = -hit["score"] if hamming else hit["score"]
    return scores, ids


def retrieval_cells(docs: np.ndarray, queries: np.ndarray, layers: list[int], doc_ids: list[str],
                    query_ids: list[str], qrels: pd.DataFrame, dims: list[int], precisions: list[str],
                    ignore_identical_ids: bool, rescore_multiplier: int = 0, metric: str = "ndcg@10",
                    depth: int = 10) -> pd.DataFrame:
    """``metric`` for every (layer, dim, precision) of one retrieval dataset: ``docs`` [len(layers),
    n_docs, >= max(dims)], ``queries`` likewise; ``depth`` hits a query (the metric's cut-off)."""
    check_precisions(precisions)
    labels = [(p, 0) for p in precisions]
    if rescore_multiplier:
        labels += [(p + RESCORED, rescore_multiplier) for p in precisions if p != "float32"]
    rows = []
    for slot, layer in enumerate(layers):
        for dim in sorted(dims):
            doc_prefix = np.asarray(docs[slot, :, :dim], dtype=np.float32)
            query_prefix = np.asarray(queries[slot, :, :dim], dtype=np.float32)
            for label, multiplier in labels:
                precision = label.removesuffix(RESCORED)

                def searched(k, docs=doc_prefix, queries=query_prefix, precision=precision, multiplier=multiplier):
                    return run_frame(query_ids, doc_ids, *search_cell(docs, queries, precision, k, multiplier))

                run = top_k_run(searched, depth, ignore_identical_ids)
                value = evaluate_run(run, qrels, [metric])[metric]
                rows.append({"layer": int(layer), "dim": int(dim), "precision": label, "metric": metric,
                             "value": value})
    return pd.DataFrame(rows)
