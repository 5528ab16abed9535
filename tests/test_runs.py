"""TREC runs (trimbench/runs.py): what a run's file keeps, the score table a job writes from its runs, the
average over datasets. The metrics themselves against trec_eval: tests/dense/test_retrieval.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trimbench import scores as score_table
from trimbench.data.io import RetrievalSplit
from trimbench.runs import (
    cut_run,
    evaluate_run,
    read_trec_run,
    run_frame,
    top_k_run,
    with_average,
    write_runs_and_scores,
    write_trec_run,
)


def _graded_split(folder) -> str:
    """One query: document a judged 1, document b judged 2 (TREC DL's grades)."""
    RetrievalSplit(pd.DataFrame({"doc_id": ["a", "b"], "title": "", "text": ["x", "y"]}),
                   pd.DataFrame({"query_id": ["q"], "text": ["q"]}),
                   pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 2]})).save(folder)
    return str(folder)


def test_runs_and_scores_count_each_datasets_relevance_level(tmp_path):
    """a ranked above b: MRR@10 1 where grade 1 counts, 0.5 where only grade 2 does (TREC DL). The
    same run for two datasets, each with its own level."""
    folder = _graded_split(tmp_path / "split")
    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [2.0, 1.0], "rank": [1, 2]})
    write_runs_and_scores({"dl19": run, "dev": run}, [], "tag", {"dl19": folder, "dev": folder}, ["mrr@10"],
                          {"dl19": 2, "dev": 1}, {"variant": "v"}, None, "avg", tmp_path / "runs",
                          tmp_path / "scores.parquet")
    table = score_table.read(tmp_path / "scores.parquet")
    assert dict(zip(table["dataset"], table["value"], strict=True)) == {"dev": 1.0, "dl19": 0.5}
    assert set(table["variant"]) == {"v"}
    assert read_trec_run(tmp_path / "runs" / "dl19.trec")["doc_id"].tolist() == ["a", "b"]
    assert (tmp_path / "runs" / "dev.trec").read_text().split("\n")[0].split() == ["q", "Q0", "a", "1", "2.000000",
                                                                                 "tag"]


def test_runs_and_scores_add_the_average_over_the_datasets_named(tmp_path):
    folder = _graded_split(tmp_path / "split")
    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [2.0, 1.0], "rank": [1, 2]})
    write_runs_and_scores({"dl19": run, "dev": run}, [{"dataset": "dev", "metric": "flops", "value": 3.0}], "tag",
                          {"dl19": folder, "dev": folder}, ["mrr@10", "recall@10"], {"dl19": 2, "dev": 1},
                          {"variant": "v"}, ["dl19", "dev"], "both", tmp_path / "runs", tmp_path / "scores.parquet")
    table = score_table.read(tmp_path / "scores.parquet")
    average = table[table["dataset"] == "both"].set_index("metric")
    assert average["value"].to_dict() == pytest.approx({"mrr@10": 0.75, "recall@10": 1.0, "flops": 3.0})
    assert set(average["variant"]) == {"v"}


def test_average_is_over_the_datasets_named_only():
    """BEIR's average over its datasets, not MS MARCO beside them: (0.2 + 0.4) / 2, per metric."""
    table = pd.DataFrame({"dataset": ["a", "b", "msmarco"] * 2, "metric": ["ndcg@10"] * 3 + ["recall@100"] * 3,
                          "value": [0.2, 0.4, 0.9, 0.5, 0.7, 0.1]})
    out = with_average(table, ["a", "b"], "beir-avg", {"variant": "v"}, ["metric"])
    average = out[out["dataset"] == "beir-avg"].set_index("metric")
    assert average["value"].to_dict() == pytest.approx({"ndcg@10": 0.3, "recall@100": 0.6})
    assert set(average["variant"]) == {"v"} and list(out.index) == list(range(8))
    assert with_average(table, None, "beir-avg", {}) is table


def test_trec_run_keeps_scores_to_a_millionth(tmp_path):
    """Two scores 7e-6 apart stay apart in the file: trec_eval ranks by the written score."""
    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [0.123456, 0.123449], "rank": [1, 2]})
    write_trec_run(run, tmp_path / "run.trec", "tag")
    back = read_trec_run(tmp_path / "run.trec")
    assert back["score"].tolist() == pytest.approx([0.123456, 0.123449], abs=1e-9)
    assert back[["query_id", "doc_id", "rank"]].values.tolist() == [["q", "a", 1], ["q", "b", 2]]


def test_trec_run_ids_stay_text(tmp_path):
    """Ids that look like numbers (MS MARCO's, BEIR's) read back as written, to join the qrels' text ids."""
    run = pd.DataFrame({"query_id": ["007", "007"], "doc_id": ["0012", "1e3"], "score": [2.0, 1.0], "rank": [1, 2]})
    write_trec_run(run, tmp_path / "run.trec", "tag")
    back = read_trec_run(tmp_path / "run.trec")
    assert back["query_id"].tolist() == ["007", "007"] and back["doc_id"].tolist() == ["0012", "1e3"]


def test_cut_keeps_depth_hits_with_ties_at_the_cut_in_trec_evals_order():
    """Depth 2 over scores 3, 2, 2, 1: the top hit and, of the two tied at the cut, the larger id."""
    run = pd.DataFrame({"query_id": ["q"] * 4 + ["r"], "doc_id": ["a", "b", "c", "d", "a"],
                        "score": [3.0, 2.0, 2.0, 1.0, 5.0]})
    assert cut_run(run, 2)[["query_id", "doc_id"]].values.tolist() == [["q", "a"], ["q", "c"], ["r", "a"]]


def test_run_frame_ranks_are_integers_as_trec_files_write_them(tmp_path):
    run = run_frame(["q"], ["a", "b"], np.array([[2.0, 1.0]], dtype=np.float32), np.array([[1, 0]]))
    write_trec_run(run, tmp_path / "run.trec", "tag")
    assert (tmp_path / "run.trec").read_text().splitlines() == ["q Q0 b 1 2.000000 tag", "q Q0 a 2 1.000000 tag"]


def test_unknown_metric_is_named_with_the_known_ones():
    run = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0]})
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    with pytest.raises(ValueError, match=r"unknown retrieval metrics \['map'\]; known: \['mrr@10', 'ndcg@10'"):
        evaluate_run(run, qrels, ["ndcg@10", "map"])


def test_concat_sorts_the_tables_rows_into_one_order():
    first = score_table.frame([{"experiment": "e", "variant": "b", "dataset": "d", "metric": "m", "value": 2.0},
                               {"experiment": "e", "variant": "a", "dataset": "d", "metric": "m", "value": 1.0}])
    second = score_table.frame([{"experiment": "e", "variant": "a", "dataset": "c", "metric": "m", "value": 3.0}])
    table = score_table.concat([first, second])
    assert list(zip(table["variant"], table["dataset"], table["value"], strict=True)) == [
        ("a", "c", 3.0), ("a", "d", 1.0), ("b", "d", 2.0)]
    assert list(table.index) == [0, 1, 2]
    empty = score_table.concat([])
    assert empty.empty and list(empty.columns) == score_table.COLUMNS and str(empty["layer"].dtype) == "Int64"


def test_baseline_of_reads_the_views_one_bm25_table_or_none(tmp_path):
    from types import SimpleNamespace

    path = tmp_path / "bm25.parquet"
    score_table.write(score_table.frame([{"variant": "bm25", "dataset": "d", "metric": "ndcg@10", "value": 0.25}]),
                      path)
    # a rule's named input: one file (Snakemake, the command line), a list of one, or none (bm25 off)
    for given in (str(path), [str(path)], (str(path),)):
        table = score_table.baseline_of(SimpleNamespace(baseline=given, scores=[str(tmp_path / "other")]))
        assert score_table.baseline_value(table, "d", "ndcg@10") == 0.25 and len(table) == 1
    assert score_table.baseline_of(SimpleNamespace(baseline=[])) is None
    assert score_table.baseline_of(SimpleNamespace(scores=[str(path)])) is None


def test_top_k_run_searches_one_hit_more_and_drops_each_querys_own_id(tmp_path):
    """naver/splade searches top_k + 1 and drops the query's own id (BEIR's ignore_identical_ids):
    the rest keep their order, ranked again from 1, whole numbers in the run's file."""
    asked = []

    def search(depth):
        asked.append(depth)
        hits = {"q1": ["d1", "q1", "d2", "d3"], "q2": ["d4", "d5", "d6", "d7"]}
        return pd.DataFrame([{"query_id": query, "doc_id": doc, "score": 9.0 - rank, "rank": rank}
                             for query, docs in hits.items() for rank, doc in enumerate(docs[:depth], start=1)])

    run = top_k_run(search, 2, ignore_identical_ids=True)
    assert asked == [3]
    assert list(run.columns) == ["query_id", "doc_id", "score", "rank"] and list(run.index) == [0, 1, 2, 3]
    assert run[["query_id", "doc_id", "rank"]].values.tolist() == [["q1", "d1", 1], ["q1", "d2", 2],
                                                                   ["q2", "d4", 1], ["q2", "d5", 2]]
    write_trec_run(run, tmp_path / "run.trec", "t")
    assert (tmp_path / "run.trec").read_text().splitlines()[1] == "q1 Q0 d2 2 6.000000 t"
    asked.clear()
    assert top_k_run(search, 2, ignore_identical_ids=False)["doc_id"].tolist() == ["d1", "q1", "d4", "d5"]
    assert asked == [2]


def test_read_trec_run_splits_columns_on_any_whitespace(tmp_path):
    """trec_eval reads a run's columns between any run of blanks: tabs and padded columns too (another
    tool's run, an ensemble member written elsewhere)."""
    (tmp_path / "run.trec").write_text("q1\tQ0\td1\t1\t2.5\ttag\nq1  Q0 d2   2 1.25 tag\n")
    back = read_trec_run(tmp_path / "run.trec")
    assert back.values.tolist() == [["q1", "d1", 2.5, 1], ["q1", "d2", 1.25, 2]]


def test_score_table_types_hold_whatever_columns_the_rows_give():
    """Text columns are pandas' nullable text (pd.NA for a missing one) even when no row gives them, the
    grid's columns nullable integers, the value a float: tables built from other rows concat and compare."""
    table = score_table.frame([{"dataset": "d", "metric": "m", "layer": 2, "value": 1}])
    assert table.dtypes.astype(str).to_dict() == {
        "experiment": "string", "track": "string", "variant": "string", "model": "string", "layer": "Int64",
        "dim": "Int64", "dataset": "string", "split": "string", "metric": "string", "value": "float64",
        "seed": "Int64"}
    assert table.loc[0, "split"] is pd.NA and table.loc[0, "dim"] is pd.NA


def test_score_table_sorts_a_missing_key_first(tmp_path):
    """The baseline's row (no layer) before the grid's; the file holds the table's columns only, no
    index column for another reader (duckdb, polars) to find."""
    import pyarrow.parquet as pq

    rows = [{"variant": "v", "layer": layer, "dataset": "d", "metric": "m", "value": value}
            for layer, value in ((2, 0.2), (None, 0.5), (1, 0.1))]
    score_table.write(score_table.frame(rows), tmp_path / "scores.parquet")
    assert pq.read_schema(tmp_path / "scores.parquet").names == score_table.COLUMNS
    assert score_table.read(tmp_path / "scores.parquet")["value"].tolist() == [0.5, 0.1, 0.2]


def test_a_damaged_score_file_is_one_error_naming_it_and_its_rule(tmp_path):
    from trimbench.errors import ArtifactError

    path = tmp_path / "results" / "2dmse-retrieval" / "e" / "scores" / "msmarco.parquet"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not parquet")
    with pytest.raises(ArtifactError, match=rf"cannot read '{path}' \(made by rule retrieval_scores; delete"):
        score_table.read(path)


def test_baseline_value_is_the_one_row_of_that_dataset_and_metric():
    baseline = score_table.frame([{"variant": "bm25", "dataset": d, "metric": m, "value": v}
                                  for d, m, v in (("a", "ndcg@10", 0.1), ("b", "ndcg@10", 0.2),
                                                  ("a", "recall@100", 0.3))])
    assert score_table.baseline_value(baseline, "b", "ndcg@10") == 0.2
    assert score_table.baseline_value(baseline, "a", "recall@100") == 0.3
    assert score_table.baseline_value(baseline, "b", "recall@100") is None
    assert score_table.baseline_value(None, "a", "ndcg@10") is None
