"""configs/mini.yaml on the local copies (../shared/data), capped to a few steps by smoke mode: every
experiment on the real data with the real MiniLM, and the substitutions in the status table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, run_snakemake

MINI = REPO / "configs" / "mini.yaml"


@pytest.mark.realdata
def test_mini_presets_run_capped_on_the_local_copies(shared_data: Path, tmp_path):
    experiments = yaml.safe_load(MINI.read_text())["experiments"]
    run_snakemake(tmp_path, "--configfile", str(MINI), "--config", "smoke=true", f"local_copies={shared_data}",
                  timeout=1800)
    results = tmp_path / "results"
    scores = {name: pd.read_parquet(results / name / "scores.parquet") for name in experiments}
    for name, table in scores.items():
        assert len(table) > 0 and table["value"].notna().all(), name

    # Real data and the real model, not stand-ins and tiny random weights: the pretrained MiniLM
    # scores near its published numbers (MTEB: STS-B test 0.820, SciFact nDCG@10 0.645 at 256
    # tokens; smoke mode cuts texts to 32 tokens, which costs SciFact's long abstracts most).
    def pretrained(name, metric, dataset):
        table = scores[name]
        cell = table[(table.variant == "pretrained") & (table.metric == metric) & (table.dataset == dataset)
                     & (table.layer == 6) & (table.dim == 384)]
        assert len(cell) == 1, (name, cell)
        return cell["value"].iloc[0]

    assert pretrained("mini-sts", "spearman_cosine", "stsb") > 0.78
    assert pretrained("mini-retrieval", "ndcg@10", "scifact") > 0.40
    # every SPLADE run was searched on the real corpus (the corpus has 5,183 abstracts)
    splade = scores["mini-splade"]
    assert set(splade[splade.metric == "ndcg@10"]["variant"]) >= {"lambda-low", "lambda-high"}

    status = pd.read_csv(results / "scoreboard" / "status.csv").set_index("experiment")
    records = status["local_copies"]
    for name in experiments:
        assert "model minilm: hub sentence-transformers/all-MiniLM-L6-v2@8b3219a -> minilm-packaged" in records[name]
    assert f"dataset scifact: hub BeIR/scifact -> local copy {shared_data / 'scifact'}" in records["mini-retrieval"]
    assert "model google-electra-small-discriminator: hub google/electra-small-discriminator" in records["mini-electra"]
    assert "run on local copies" in (results / "scoreboard" / "status.md").read_text()
