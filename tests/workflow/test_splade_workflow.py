"""The SPLADE rules end to end on a tiny config, through snakemake itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, experiment_dir, job_counts, run_snakemake

from trimbench import scores as score_table
from trimbench.data.io import RetrievalSplit
from trimbench.runs import evaluate_run, read_trec_run
from trimbench.splade import vectors as sparse

#: the tests share this module's runs (module fixtures): under pytest-xdist, all on one worker
pytestmark = pytest.mark.xdist_group(__name__)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, str]:
    workdir = tmp_path_factory.mktemp("splade-workflow")
    shutil.copy(REPO / "tests" / "configs" / "tiny_splade.yaml", workdir / "config.yaml")
    result = run_snakemake(workdir)
    return workdir, result.stdout + result.stderr


def test_every_splade_rule_runs_once_per_output(finished):
    _, output = finished
    counts = job_counts(output)
    assert counts["splade_triplets"] == 2 and counts["train_splade"] == 2
    assert counts["encode_sparse"] == 2 and counts["index_sparse"] == 2 and counts["splade_scores"] == 2
    assert counts["splade_ensemble"] == 1 and counts["splade_table"] == 1 and counts["scoreboard"] == 1


def test_scores_hold_run_metrics_and_the_vectors_flops(finished):
    workdir, _ = finished
    base = experiment_dir(workdir, "splade-tiny")
    table = score_table.read(base / "scores.parquet")
    assert set(table["variant"]) == {"A", "D", "AD"}
    for run in ("A", "D"):
        mine = table[table["variant"] == run].set_index("metric")["value"]
        assert set(mine.index) == {"mrr@10", "ndcg@10", "recall@100", "flops", "q_terms", "d_terms"}
        vectors = base / "vectors" / run / "lee-ict-retrieval"
        docs, queries = sparse.load_docs(vectors), sparse.load_queries(vectors)
        assert mine["flops"] == pytest.approx(sparse.flops(queries, docs))
        assert mine["q_terms"] <= 8 and mine["d_terms"] <= 24  # q_max_terms, d_max_terms
    vocab = json.loads((base / "vectors" / "A" / sparse.VOCAB_FILE).read_text())
    assert len(vocab) == docs.shape[1]


def test_ensemble_is_the_normalised_sum_of_its_runs(finished):
    workdir, _ = finished
    base = experiment_dir(workdir, "splade-tiny")
    members = [read_trec_run(base / "runs" / run / "lee-ict-retrieval.trec") for run in ("A", "D")]
    qrels = RetrievalSplit.load(workdir / "results" / "data" / "lee-ict-retrieval" / "beir-heldout").qrels
    expected = evaluate_run(sparse.ensemble_runs(members, 20), qrels, ["mrr@10", "ndcg@10"])
    table = score_table.read(base / "scores.parquet")
    ours = table[table["variant"] == "AD"].set_index("metric")["value"]
    assert ours["mrr@10"] == pytest.approx(expected["mrr@10"], abs=1e-6)
    assert ours["ndcg@10"] == pytest.approx(expected["ndcg@10"], abs=1e-6)
    # its FLOPS: the sum of its runs' (the seed's ensemble rows)
    flops = table[table["metric"] == "flops"].set_index("variant")["value"]
    assert flops["AD"] == pytest.approx(flops["A"] + flops["D"])


def test_distil_pools_carry_ce_scores_and_the_table_and_status_row(finished):
    workdir, _ = finished
    base = experiment_dir(workdir, "splade-tiny")
    # each query's pool, rotated one pair a step by train_splade; distil_splade's with the CE scores
    distil = pd.read_parquet(base / "triplets" / "distil_splade.parquet")
    assert list(distil.columns) == ["row", "query", "positives", "negatives", "positive_scores", "negative_scores"]
    assert all(len(s) == len(n) and not np.isnan(s).any() for s, n in zip(distil["negative_scores"],
                                                                           distil["negatives"], strict=True))
    pools = pd.read_parquet(base / "triplets" / "splade_max.parquet")
    assert list(pools.columns) == ["row", "query", "positives", "negatives"] and pools["negatives"].map(len).min() >= 1
    markdown = (base / "tables" / "splade.md").read_text()
    assert "| AD " in markdown and "ensemble B E F" in markdown and "flops" in markdown
    status = pd.read_csv(workdir / "results" / "scoreboard" / "status.csv")
    row = status[status["experiment"] == "splade-tiny"].iloc[0]
    assert row["work"] == "SPLADE" and row["scale"] == "toy"
    first_run = score_table.read(base / "scores.parquet").query("variant == 'A' and metric == 'mrr@10'")
    assert row["headline_ours"] == pytest.approx(first_run["value"].iloc[0], abs=1e-6)  # the CSV has 6 decimals
