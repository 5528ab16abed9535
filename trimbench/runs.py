"""TREC runs, of every track: a run as a table, written and read in TREC's format, and scored with
ir-measures in trec_eval's order; averages over datasets."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench import scores as score_table
from trimbench.data.io import RetrievalSplit
from trimbench.jobs.atomic import atomic_path

log = logging.getLogger("trimbench")

#: our metric names -> (the ir-measures measure pytrec_eval computes, the run depth trec_eval reads:
#: its ``-M``). RR@k is ``trec_eval -M k -m recip_rank`` (the 2DMSE seed's ``-c -M 10 -m
#: recip_rank``): ir-measures' pytrec_eval provider maps any RR to ``recip_rank`` and drops the cutoff
#: (ir_measures 0.4.3 ``providers/pytrec_eval_provider.py``, RR ``cutoff=Choices(NOT_PROVIDED)``), and
#: its default provider breaks score ties in another order than trec_eval, so the run is cut to k
#: here, in trec_eval's order, and pytrec_eval reads the cut run.
MEASURES = {
    "mrr@10": ("RR", 10),
    "ndcg@10": ("nDCG@10", None),
    "recall@10": ("R@10", None),
    "recall@100": ("R@100", None),
    "recall@1000": ("R@1000", None),
}
RETRIEVAL_METRICS = tuple(MEASURES)


def run_frame(query_ids: list[str], doc_ids: list[str], scores: np.ndarray, ids: np.ndarray) -> pd.DataFrame:
    """A TREC run as a table (query_id, doc_id, score, rank); faiss' -1 padding is dropped."""
    doc_ids = np.asarray(doc_ids, dtype=object)
    keep = ids >= 0
    rows, _ = np.nonzero(keep)
    return pd.DataFrame({
        "query_id": np.asarray(query_ids, dtype=object)[rows],
        "doc_id": doc_ids[ids[keep]],
        "score": scores[keep].astype(np.float64),
        "rank": (np.cumsum(keep, axis=1)[keep]).astype(int),
    })


def top_k_run(search: Callable[[int], pd.DataFrame], k: int, ignore_identical_ids: bool) -> pd.DataFrame:
    """The run of ``search(depth)`` (a run table of ``depth`` hits a query) cut to ``k`` hits a query;
    with ``ignore_identical_ids``, ``k + 1`` searched (naver/splade ``splade/beir_eval.py:77``
    retrieves ``top_k + 1``) and a query's own id dropped first (:func:`without_identical_ids`)."""
    if not ignore_identical_ids:
        return search(k)
    return without_identical_ids(search(k + 1), k)


def without_identical_ids(run: pd.DataFrame, depth: int) -> pd.DataFrame:
    """Each query's hits without the document whose id is the query's, the first ``depth`` of the
    rest kept and ranked again: BEIR's ``EvaluateRetrieval.evaluate(ignore_identical_ids=True)``,
    naver/splade ``splade/beir_eval.py:82-88`` ("Removing query id from document list"). The 2DMSE
    seed's ``eval_beir.sh`` ``--remove_query`` and pyserini's ``--remove-query`` drop the same hit
    from a search of ``depth`` (not ``depth + 1``: :func:`top_k_run`), keeping ``depth − 1``."""
    kept = run[run["query_id"].astype(str) != run["doc_id"].astype(str)]
    rank = kept.groupby("query_id", sort=False)["rank"].rank(method="first").astype(int)
    return kept.assign(rank=rank)[rank <= depth].reset_index(drop=True)


def write_trec_run(run: pd.DataFrame, path: Path, tag: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in run.itertuples(index=False):
            handle.write(f"{row.query_id} Q0 {row.doc_id} {row.rank} {row.score:.6f} {tag}\n")


def read_trec_run(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, sep=r"\s+", header=None, names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
                        dtype={"query_id": str, "doc_id": str})
    return frame[["query_id", "doc_id", "score", "rank"]]


def trec_eval_order(run: pd.DataFrame) -> pd.DataFrame:
    """Each query's hits in trec_eval's order: score descending, ties by document id descending
    (trec_eval ``form_res_rels.c`` ``comp_sim_docno``: ``strcmp(docno2, docno1)``; Python's string
    order is UTF-8's byte order). The run's own rank column plays no part, as in trec_eval."""
    return run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")


def cut_run(run: pd.DataFrame, depth: int) -> pd.DataFrame:
    """Each query's first ``depth`` hits in trec_eval's order: what ``trec_eval -M depth`` reads.

    Only hits scoring among a query's ``depth`` best (ties at the boundary included) are sorted:
    an MS MARCO run has 1000 hits a query, of which 10 are kept."""
    contenders = run.groupby("query_id", sort=False)["score"].rank(method="min", ascending=False) <= depth
    ordered = trec_eval_order(run[contenders])
    return ordered[ordered.groupby("query_id", sort=False).cumcount() < depth]


def evaluate_run(run: pd.DataFrame, qrels: pd.DataFrame, metrics: list[str],
                 relevance_level: int = 1) -> dict[str, float]:
    """Mean of each metric over the judged queries, as trec_eval ``-c`` computes it (pytrec_eval
    through ir-measures; a judged query the run lacks counts 0).

    ``relevance_level``: the lowest judgement MRR and recall count relevant (trec_eval ``-l``; TREC
    DL's binary measures use 2); nDCG's gains are the judgements, whatever the level.
    """
    import ir_measures

    unknown = sorted(set(metrics) - set(MEASURES))
    if unknown:
        raise ValueError(f"unknown retrieval metrics {unknown}; known: {list(MEASURES)}")
    by_depth: dict[int | None, dict] = {}
    for metric in metrics:
        measure, depth = MEASURES[metric]
        if relevance_level != 1 and not measure.startswith("nDCG"):
            name, _, cutoff = measure.partition("@")
            measure = f"{name}(rel={relevance_level})" + (f"@{cutoff}" if cutoff else "")
        by_depth.setdefault(depth, {})[ir_measures.parse_measure(measure)] = metric
    qrels_in = qrels[["query_id", "doc_id", "relevance"]]
    scored = run[["query_id", "doc_id", "score"]]
    values = {}
    for depth, measures in by_depth.items():
        part = scored if depth is None else cut_run(scored, depth)
        result = ir_measures.pytrec_eval.calc_aggregate(list(measures), qrels_in, part)
        values.update({name: float(result[measure]) for measure, name in measures.items()})
    return {metric: values[metric] for metric in metrics}


# --- one variant over its grid -----------------------------------------------------------------


def with_average(table: pd.DataFrame, over: list[str] | None, name: str, meta: dict,
                 keys: list[str] = ("layer", "dim", "metric")) -> pd.DataFrame:
    """``table`` plus the mean over the datasets ``over`` as dataset ``name`` (rows per ``keys``)."""
    if not over:
        return table
    part = table[table["dataset"].isin(over)]
    average = part.groupby(list(keys), as_index=False)["value"].mean().assign(dataset=name, **meta)
    return pd.concat([table, average], ignore_index=True)


def write_runs_and_scores(runs: dict[str, pd.DataFrame], extra_rows: list[dict], tag: str, data: dict[str, str],
                          metrics: list[str], relevance_level: dict[str, int], meta: dict, average_over,
                          average_name: str, runs_dir: str | Path, scores_path: str | Path) -> None:
    """The TREC run of each dataset (``data``: dataset -> its retrieval folder) into ``runs_dir``, and
    the score table (each run's metrics, ``extra_rows``, the average) to ``scores_path``, atomically."""
    rows = list(extra_rows)
    with atomic_path(runs_dir) as tmp_runs:
        Path(tmp_runs).mkdir(parents=True, exist_ok=True)
        for dataset, folder in data.items():
            run = runs[dataset]
            write_trec_run(run, Path(tmp_runs) / f"{dataset}.trec", tag)
            qrels = RetrievalSplit.read(folder, "qrels")
            for metric, value in evaluate_run(run, qrels, metrics, relevance_level[dataset]).items():
                rows.append({**meta, "dataset": dataset, "metric": metric, "value": value})
            log.info("%s: %s", dataset, ", ".join(f"{r['metric']} {r['value']:.4f}" for r in rows
                                                  if r["dataset"] == dataset))
    table = with_average(pd.DataFrame(rows), average_over, average_name, meta, ["metric"])
    with atomic_path(scores_path) as tmp:
        score_table.write(score_table.frame(table.to_dict("records")), tmp)
