"""Errors about cached artifacts name the file and the rule that makes it (trimbench.jobs.artifacts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trimbench.errors import ArtifactError
from trimbench.jobs.artifacts import describe, producer, reading


def test_artifacts_name_the_rule_that_makes_them(tmp_path):
    assert producer("results/2dmse-sts/tiny-sts/embeddings/full/lee-sim.npy") == (
        "encode_texts", Path("results/2dmse-sts/tiny-sts/embeddings/full"))
    assert producer("results/homedepot/hd/embeddings/full")[0] == "encode_corpus"
    model_file = tmp_path / "results" / "2dmse-sts" / "x" / "models" / "full" / "model.safetensors"
    assert producer(model_file)[0] == "train_model"
    assert producer("results/2dmse-retrieval/x/models/full")[0] == "train_retriever"
    assert producer("results/splade/x/models/splade-max")[0] == "train_splade"
    assert producer("results/2dmse-retrieval/x/runs/full")[0] == "retrieval_scores"
    assert producer("results/negatives/scifact/train/bm25.jsonl")[0] == "mine_negatives"
    fine_tuning = "results/electra/electra-toy/fine-tunings/lee-sim-split/minilm/scores.parquet"
    assert producer(fine_tuning)[0] == "train_electra"
    assert producer("results/models/tiny")[0] == "fetch_model"
    # a smoke run's outputs, under results-smoke/
    assert producer("results-smoke/2dmse-sts/x/embeddings/full/a.npy") == (
        "encode_texts", Path("results-smoke/2dmse-sts/x/embeddings/full"))
    assert producer("results-smoke/models/tiny")[0] == "fetch_model"
    assert producer("results/data/lee-sim/test.parquet")[0] == "prepare_data"
    assert producer("/opt/models/mine") is None
    assert "no rule" in describe("/opt/models/mine")
    with pytest.raises(ArtifactError, match=r"cannot read 'results/2dmse-sts/x/scores/full.parquet' \(made by rule "
                                            r"evaluate_sts; delete 'results/2dmse-sts/x/scores/full.parquet'"):
        with reading("results/2dmse-sts/x/scores/full.parquet"):
            raise OSError("truncated")
