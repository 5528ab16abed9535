"""Sparse (SPLADE) retrieval: encoding, integer quantisation, pyserini impact index and search,
the FLOPS metric and score-normalised ensembles.

Vectors are vocabulary-sized and mostly zero, so they are kept as ``scipy.sparse`` CSR matrices
``[texts, vocab]`` of integer impacts: ``round(weight × quantization)`` (100 in the SPLADE code),
zeros dropped. That is what the index holds, so every number reported (scores, FLOPS, active
terms) is computed from the same integers. Documents are written as pyserini's
``JsonVectorCollection`` (``{"id", "contents", "vector": {term: impact}}``) and indexed with
``--impact --pretokenized``; a query is a ``{term: impact}`` map searched with the impact searcher,
whose score is the dot product of the two integer vectors.
"""

from __future__ import annotations

import collections
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from trimbench import distributed
from trimbench.encoding import rank_rows
from trimbench.java import setup_java
from trimbench.jobs import launch
from trimbench.jobs.artifacts import reading

log = logging.getLogger(__name__)

DOCS_FILE, QUERIES_FILE, VOCAB_FILE = "docs.npz", "queries.npz", "vocab.json"


def quantize(weights: np.ndarray | sp.spmatrix, factor: float) -> sp.csr_matrix:
    """Integer impacts ``round(weight × factor)``, zeros dropped (int32 CSR)."""
    matrix = sp.csr_matrix(weights, dtype=np.float64)
    matrix.data = np.rint(matrix.data * factor)
    matrix = matrix.astype(np.int32)
    matrix.eliminate_zeros()
    return matrix


def keep_top_terms(matrix: sp.csr_matrix, k: int | None) -> sp.csr_matrix:
    """Each row's ``k`` largest weights (ties: lower term id first); None keeps every term."""
    matrix = sp.csr_matrix(matrix)
    if k is None:
        return matrix
    rows = []
    for i in range(matrix.shape[0]):
        start, stop = matrix.indptr[i], matrix.indptr[i + 1]
        cols, vals = matrix.indices[start:stop], matrix.data[start:stop]
        keep = np.lexsort((cols, -vals))[:k]
        rows.append(sp.csr_matrix((vals[keep], (np.zeros(len(keep), dtype=int), cols[keep])),
                                  shape=(1, matrix.shape[1])))
    return sp.vstack(rows, format="csr") if rows else matrix


def encode_sparse(model, texts: list[str], max_length: int | None, batch_size: int, factor: float,
                  chunk_size: int = 10_000, max_terms: int | None = None,
                  parts: Path | None = None) -> sp.csr_matrix | None:
    """Quantised SPLADE vectors of ``texts`` (each cut to its ``max_terms`` largest weights when
    given); chunks bound the dense float rows held at once.

    Each batch is one call of the encoder on longest-first texts (:func:`~trimbench.encoding.rank_rows`),
    so the batches do not depend on how many ranks share them. Under several ranks
    (``splade.encode_devices``, :mod:`trimbench.jobs.launch`) each encodes every ranks-th batch of each
    chunk and leaves its rows in the folder ``parts``; rank 0 returns the whole matrix, the others None.
    """
    rank, ranks = launch.rank(), launch.world_size()
    default = model.max_seq_length
    model.max_seq_length = max_length or default
    positions, blocks = [], []
    try:
        for start in range(0, len(texts), chunk_size):
            chunk = texts[start:start + chunk_size]
            rows = rank_rows(chunk, batch_size, rank, ranks)
            # no bar per batch in the job's log: the line below says how far it is
            dense = [_to_scipy(model.encode([chunk[i] for i in rows[b:b + batch_size]], batch_size=batch_size,
                                            convert_to_tensor=True, convert_to_sparse_tensor=True,
                                            show_progress_bar=False))
                     for b in range(0, len(rows), batch_size)]
            if dense:
                blocks.append(quantize(keep_top_terms(sp.vstack(dense, format="csr"), max_terms), factor))
                positions.append(start + rows)
            log.info("encoded %d / %d texts", min(start + chunk_size, len(texts)), len(texts))
    finally:
        model.max_seq_length = default
    width = model.get_embedding_dimension()
    mine = (np.concatenate(positions) if positions else np.empty(0, dtype=np.int64),
            sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, width), dtype=np.int32))
    every = _from_every_rank(mine, parts) if ranks > 1 else [mine]
    if every is None:
        return None
    order = np.argsort(np.concatenate([rows for rows, _ in every]))
    return sp.vstack([matrix for _, matrix in every], format="csr")[order]


def _from_every_rank(mine: tuple[np.ndarray, sp.csr_matrix], parts: Path) -> list | None:
    """Every rank's (positions, rows) for rank 0, through files in ``parts`` (removed after): a
    corpus's vectors do not fit a collective's buffers, and the ranks share the node's disk. None
    on the other ranks."""
    parts.mkdir(parents=True, exist_ok=True)
    rank = launch.rank()
    # uncompressed: read once right after, and zlib over a corpus's vectors costs minutes
    sp.save_npz(parts / f".rank{rank}.npz", mine[1], compressed=False)
    np.save(parts / f".rank{rank}.positions.npy", mine[0])
    distributed.barrier()
    every = None
    if launch.is_main_process():
        every = [(np.load(parts / f".rank{r}.positions.npy"), sp.load_npz(parts / f".rank{r}.npz").tocsr())
                 for r in range(launch.world_size())]
        for r in range(launch.world_size()):
            (parts / f".rank{r}.npz").unlink()
            (parts / f".rank{r}.positions.npy").unlink()
    distributed.barrier()  # the next text set's parts take the same names
    return every


def _to_scipy(tensor) -> sp.csr_matrix:
    tensor = tensor.coalesce().cpu() if tensor.is_sparse else tensor.to_sparse().coalesce().cpu()
    rows, cols = tensor.indices().numpy()
    return sp.csr_matrix((tensor.values().float().numpy(), (rows, cols)), shape=tuple(tensor.shape))


def vocabulary(tokenizer) -> list[str]:
    """Term of each vocabulary id (the index's terms are the tokenizer's word pieces)."""
    by_id = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    return [token for token, _ in by_id]


def read_vocabulary(folder: Path) -> list[str]:
    """The vocabulary an encode_sparse output folder was written with."""
    with reading(folder):
        return json.loads((folder / VOCAB_FILE).read_text())


def save_vectors(folder: Path, docs: sp.csr_matrix | None, queries: sp.csr_matrix) -> None:
    """``docs`` None: the folder holds them already (a corpus shared with another dataset)."""
    folder.mkdir(parents=True, exist_ok=True)
    if docs is not None:
        sp.save_npz(folder / DOCS_FILE, docs)
    sp.save_npz(folder / QUERIES_FILE, queries)


def load_docs(folder: Path) -> sp.csr_matrix:
    return sp.load_npz(folder / DOCS_FILE).tocsr()


def load_queries(folder: Path) -> sp.csr_matrix:
    return sp.load_npz(folder / QUERIES_FILE).tocsr()


def iter_term_maps(matrix: sp.csr_matrix, vocab: list[str]) -> Iterator[dict[str, int]]:
    """One ``{term: impact}`` dict per row, made as they are used (a corpus's dicts at once would
    take far more memory than its sparse matrix)."""
    for i in range(matrix.shape[0]):
        start, stop = matrix.indptr[i], matrix.indptr[i + 1]
        yield {vocab[j]: int(w) for j, w in zip(matrix.indices[start:stop], matrix.data[start:stop], strict=True)}


def term_maps(matrix: sp.csr_matrix, vocab: list[str]) -> list[dict[str, int]]:
    return list(iter_term_maps(matrix, vocab))


def write_vector_collection(doc_ids: list[str], docs: sp.csr_matrix, vocab: list[str], folder: Path) -> None:
    """pyserini's ``JsonVectorCollection``: one JSON line per document. An empty vector is written as
    is: Anserini counts it as an empty document and skips it (it can never be retrieved anyway)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as handle:
        for doc_id, vector in zip(doc_ids, iter_term_maps(docs, vocab), strict=True):
            handle.write(json.dumps({"id": doc_id, "contents": "", "vector": vector}) + "\n")


def build_impact_index(collection: Path, index: Path, threads: int = 1) -> None:
    """Lucene impact index of a ``JsonVectorCollection`` folder (pyserini's indexer, in its own JVM)."""
    setup_java()  # the child process inherits the Java 21 settings
    command = [sys.executable, "-m", "pyserini.index.lucene", "--collection", "JsonVectorCollection",
               "--input", str(collection), "--index", str(index), "--generator", "DefaultLuceneDocumentGenerator",
               "--threads", str(threads), "--impact", "--pretokenized", "--optimize"]
    code, tail = run_logged(command, "indexer")
    if code != 0 or not any(index.glob("segments_*")):
        raise RuntimeError(f"pyserini's impact indexer failed on '{collection}' (exit {code}); "
                           f"its last output:\n{tail}")


def run_logged(command: list[str], name: str, keep: int = 40) -> tuple[int, str]:
    """Run ``command`` with each line of its output logged as it comes (a paper-size index takes
    hours: its progress belongs in the job's log then, not at the end); its exit code and last
    ``keep`` lines."""
    last = collections.deque(maxlen=keep)
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                          errors="replace") as process:
        for line in process.stdout:
            log.info("%s: %s", name, line.rstrip())
            last.append(line)
    return process.returncode, "".join(last)


class _GivenWeights:
    """A query 'encoder' for pyserini's impact searcher: queries arrive already as {term: impact}."""

    def encode(self, query: dict[str, int]) -> dict[str, int]:
        return query


def impact_search(index: Path, query_ids: list[str], queries: list[dict[str, int]], k: int,
                  threads: int = 1, block: int = 10_000) -> pd.DataFrame:
    """Top-``k`` documents per query by the integer dot product (pyserini's impact searcher), as a
    run table (query_id, doc_id, score, rank). A query with no term the index knows gets no hits."""
    setup_java()
    from jnius import autoclass
    from pyserini.search.lucene import LuceneImpactSearcher

    # A query is one Lucene clause per term; Lucene's default cap (1024) would fail the batch of a
    # query with more terms (an unsparse model's) without saying why.
    longest = max((len(q) for q in queries), default=0)
    autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(max(1024, longest))

    # min_idf -1: pyserini drops query terms with idf <= min_idf, and a term in every document has
    # idf 0; the SPLADE score counts it.
    searcher = LuceneImpactSearcher(str(index), _GivenWeights(), min_idf=-1)
    known = searcher.idf
    rows = []
    for start in range(0, len(query_ids), block):
        ids = query_ids[start:start + block]
        batch = [{t: w for t, w in q.items() if t in known} for q in queries[start:start + block]]
        searchable = [(qid, q) for qid, q in zip(ids, batch, strict=True) if q]
        if searchable:
            found = searcher.batch_search([q for _, q in searchable], [qid for qid, _ in searchable], k=k,
                                          threads=threads)
            for qid, _ in searchable:
                for rank, hit in enumerate(found.get(qid, []), start=1):
                    rows.append((qid, hit.docid, float(hit.score), rank))
        log.info("searched %d / %d queries", min(start + block, len(query_ids)), len(query_ids))
    searcher.close()
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])


def term_shares(matrix: sp.csr_matrix) -> np.ndarray:
    """Per vocabulary term, the share of rows in which it is active."""
    return np.asarray((matrix != 0).mean(axis=0)).ravel()


def flops(queries: sp.csr_matrix, docs: sp.csr_matrix) -> float:
    """Expected number of multiplications of a query-document dot product:
    ``Σ_j p_q(j) · p_d(j)``, p the share of queries / documents in which term j is active."""
    return float(term_shares(queries) @ term_shares(docs))


def active_terms(matrix: sp.csr_matrix) -> float:
    """Average number of non-zero terms per row."""
    return float(matrix.getnnz(axis=1).mean()) if matrix.shape[0] else 0.0


@dataclass(frozen=True)
class CorpusSparsity:
    """What FLOPS and d_terms need of a corpus's vectors: computed once for the evaluation sets
    that share the corpus (MS MARCO dev, DL19, DL20), the matrix not kept."""

    term_shares: np.ndarray
    d_terms: float

    @classmethod
    def of(cls, docs: sp.csr_matrix) -> CorpusSparsity:
        return cls(term_shares(docs), active_terms(docs))


def sparsity_scores(queries: sp.csr_matrix, corpus: CorpusSparsity) -> dict[str, float]:
    return {"flops": float(term_shares(queries) @ corpus.term_shares), "q_terms": active_terms(queries),
            "d_terms": corpus.d_terms}


# --- ensembles -----------------------------------------------------------------------------------


def normalise_run(run: pd.DataFrame) -> pd.DataFrame:
    """Per query, ``(s − (min + max)/2) / (max − min)``: scores to [-0.5, 0.5] around the midrange
    (the SPLADE ensembles); a query whose hits all score the same gets 0."""
    grouped = run.groupby("query_id")["score"]
    low, high = grouped.transform("min"), grouped.transform("max")
    spread = (high - low).where(high > low)
    return run.assign(score=((run["score"] - (low + high) / 2) / spread).fillna(0.0))


def ensemble_runs(runs: list[pd.DataFrame], k: int) -> pd.DataFrame:
    """Sum of each model's normalised scores per (query, document) over every document any model
    retrieved, top ``k`` re-ranked.

    A document missing from one model's run gets that run's lowest score for the query, as
    pyserini's ``--normalization`` fusion that the seed README links does
    (``pyserini/hsearch/_hybrid.py`` ``_hybrid_results``; ``search/hybrid/_searcher.py`` in pyserini
    1.x): normalised, -0.5, or 0 where all the run's hits for the query score the same; a query the
    run has no hit for at all counts its minimum as 0 and maximum as 1 there, so also -0.5.
    """
    normalised = [normalise_run(run)[["query_id", "doc_id", "score"]] for run in runs]
    # fill[m][q]: what model m gives query q's documents it did not retrieve (its normalised min).
    # Every fill is -0.5 or 0, so the sums below are exact: the total over all models' fills, minus
    # the fills of the models that did retrieve the document, plus their scores.
    queries = pd.Index(sorted(set().union(*(set(run["query_id"]) for run in normalised))), name="query_id")
    fills = [run.groupby("query_id")["score"].min().reindex(queries, fill_value=-0.5) for run in normalised]
    parts = [run.assign(score=run["score"] - run["query_id"].map(fill)) for run, fill in zip(normalised, fills,
                                                                                               strict=True)]
    total = pd.concat(parts, ignore_index=True).groupby(["query_id", "doc_id"], as_index=False)["score"].sum()
    total["score"] += total["query_id"].map(sum(fills))
    total = total.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, True], kind="stable")
    total["rank"] = total.groupby("query_id").cumcount() + 1
    return total[total["rank"] <= k].reset_index(drop=True)


def ensemble_flops(member_scores: list[pd.DataFrame]) -> list[dict]:
    """An ensemble's FLOPS per dataset: the sum of its members' (the seed README's ensemble rows,
    e.g. B+E+F 11.40 = 1.48 + 4.57 + 5.35): every member's query meets every member's index."""
    flops = [table[table["metric"] == "flops"].set_index("dataset")["value"] for table in member_scores]
    common = sorted(set.intersection(*(set(f.index) for f in flops)))
    return [{"dataset": dataset, "metric": "flops", "value": float(sum(f[dataset] for f in flops))}
            for dataset in common]
