"""Errors about cached artifacts name the file and the rule that makes it (trimbench.jobs.artifacts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trimbench.jobs.artifacts import ArtifactError, describe, producer, reading


def test_artifacts_name_the_rule_that_makes_them(tmp_path):
    assert producer("results/tiny-sts/embeddings/full/lee-sim.npy") == (
        "encode_texts (encode_corpus for a retrieval experiment)", Path("results/tiny-sts/embeddings/full"))
    assert producer(tmp_path / "results" / "x" / "models" / "full" / "model.safetensors")[0].startswith("train_model")
    assert producer("results/negatives/scifact/train/bm25.jsonl")[0] == "mine_negatives"
    assert producer("results/electra-toy/runs/lee-sim-split/minilm/scores.parquet")[0] == "train_electra"
    assert producer("results/models/tiny")[0] == "fetch_model"
    assert producer("results/data/lee-sim/test.parquet")[0] == "prepare_data"
    assert producer("/opt/models/mine") is None
    assert "no rule" in describe("/opt/models/mine")
    with pytest.raises(ArtifactError, match=r"cannot read 'results/x/scores/full.parquet' \(made by rule "
                                            r"evaluate_sts \(retrieval_scores for a retrieval experiment, "
                                            r"splade_scores / splade_ensemble for SPLADE\); "
                                            r"delete 'results/x/scores/full.parquet'"):
        with reading("results/x/scores/full.parquet"):
            raise OSError("truncated")
