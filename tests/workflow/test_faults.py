"""Surviving faults: resumable training, outputs that are only ever complete, the lock, corrupt caches.

Jobs are held at a named point (``TRIMBENCH_TEST_HOLD``, see trimbench/jobs/faults.py) and killed there
with SIGKILL, by the PID their log names: what a node crash, the OOM killer or a SLURM time limit
does to a job.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import (
    REPO,
    cold_env,
    experiment_dir,
    held_pid,
    held_run,
    job_counts,
    kill_held_job,
    run_snakemake,
    snakemake_command,
    warm_env,
)

#: the tests share this module's runs (module fixtures): under pytest-xdist, all on one worker
pytestmark = pytest.mark.xdist_group(__name__)

TINY_STS = experiment_dir("", "tiny-sts")
SCORES = f"{TINY_STS}/scores/full.parquet"
MODEL = f"{TINY_STS}/models/full"
TRAIN_LOG = "results/logs/train_model/2dmse-sts/tiny-sts/full.log"


def tiny_config(workdir: Path, **train) -> Path:
    """The tiny test config with ``train`` settings of experiment tiny-sts changed."""
    config = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    config["experiments"]["tiny-sts"]["train"].update(train)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    return workdir


def tree_state(workdir: Path) -> dict[str, int]:
    """Every file under ``workdir`` with its mtime."""
    return {str(p.relative_to(workdir)): p.stat().st_mtime_ns for p in workdir.rglob("*") if p.is_file()}


# --- the workflow, killed ---------------------------------------------------------------------


PRETRAINED_SCORES = f"{TINY_STS}/scores/pretrained.parquet"


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    """Training with a checkpoint every step, run to the end without faults (and the pretrained
    model's scores, which the killed runs below make again)."""
    workdir = tiny_config(tmp_path_factory.mktemp("uninterrupted"), checkpoint_steps=1)
    run_snakemake(workdir, SCORES, PRETRAINED_SCORES)
    return workdir


def test_training_killed_after_a_checkpoint_resumes_to_the_same_scores(tmp_path, uninterrupted):
    workdir = tiny_config(tmp_path / "killed", checkpoint_steps=1)
    run = held_run(workdir, "train_model:checkpoint", SCORES)
    kill_held_job(run, workdir / TRAIN_LOG)
    assert not (workdir / MODEL).exists()
    assert (workdir / f"{MODEL}.tmp" / "trainer" / "checkpoint-1" / "trainer_state.json").is_file()

    run_snakemake(workdir, SCORES)
    log = (workdir / TRAIN_LOG).read_text()
    assert re.search(r"resuming from checkpoint \S+/full\.tmp/trainer/checkpoint-1 \(step 1\)", log), log
    assert not (workdir / f"{MODEL}.tmp").exists()
    pd.testing.assert_frame_equal(pd.read_parquet(workdir / SCORES), pd.read_parquet(uninterrupted / SCORES))
    weights = "model.safetensors"
    assert (workdir / MODEL / weights).read_bytes() == (uninterrupted / MODEL / weights).read_bytes()


def test_checkpoints_of_other_settings_are_never_resumed(tmp_path):
    workdir = tiny_config(tmp_path / "changed", checkpoint_steps=1)
    kill_held_job(held_run(workdir, "train_model:checkpoint", MODEL), workdir / TRAIN_LOG)
    tiny_config(workdir, checkpoint_steps=1, lr=1e-4)
    run_snakemake(workdir, MODEL)
    log = (workdir / TRAIN_LOG).read_text()
    assert "left by a run with other settings or inputs" in log and "resuming" not in log


@pytest.fixture(scope="module")
def killed_encoding(tmp_path_factory) -> dict:
    """Encoding held with its output fully written under the temporary name, not yet renamed; a
    second snakemake started on the directory meanwhile; then the job killed, then a re-run."""
    workdir = tiny_config(tmp_path_factory.mktemp("killed-encoding"))
    target = f"{TINY_STS}/scores/pretrained.parquet"
    log = workdir / "results/logs/encode_texts/tiny-sts/pretrained.log"
    run = held_run(workdir, "encode_texts:commit", target)
    held_pid(run, log)
    seen = {"workdir": workdir, "before_second": tree_state(workdir)}
    seen["second"] = run_snakemake(workdir, target, check=False)
    seen["after_second"] = tree_state(workdir)
    seen["killed_output"] = kill_held_job(run, log)
    seen["leftovers"] = sorted(p.name for p in (workdir / f"{TINY_STS}/embeddings").iterdir())
    seen["dry_run"] = run_snakemake(workdir, "-n", target).stdout
    seen["rerun"] = run_snakemake(workdir, target)
    return seen


def test_second_snakemake_on_the_directory_fails_on_the_lock_and_touches_nothing(killed_encoding):
    second = killed_encoding["second"]
    assert second.returncode != 0
    assert "Directory cannot be locked" in second.stdout + second.stderr
    before, after = killed_encoding["before_second"], killed_encoding["after_second"]
    # Nothing changed; the one new file is snakemake's record of the refused run.
    assert {name: after[name] for name in before} == before
    assert all(re.fullmatch(r"\.snakemake/log/[^/]+\.snakemake\.log", name) for name in set(after) - set(before))


def test_killed_encoding_leaves_nothing_a_later_stage_takes_as_done(killed_encoding):
    # Only the temporary sibling, fully written but never renamed into place, is left...
    assert len(killed_encoding["leftovers"]) == 1
    assert re.fullmatch(r"\.pretrained\.tmp-\d+", killed_encoding["leftovers"][0])
    # ... so snakemake runs the encoding again, and the evaluation after it.
    counts = job_counts(killed_encoding["dry_run"])
    assert counts["encode_texts"] == 1 and counts["evaluate_sts"] == 1
    embeddings = killed_encoding["workdir"] / f"{TINY_STS}/embeddings"
    assert [p.name for p in embeddings.iterdir()] == ["pretrained"]  # the leftover is cleared
    assert (embeddings / "pretrained" / "manifest.json").is_file()


def run_on_corrupt_copy(finished: Path, destination: Path, relative: str, target: str):
    """Cut the file ``relative`` of a copy of a finished working directory to a third; force ``target``."""
    shutil.copytree(finished, destination, symlinks=True)
    damaged = destination / relative
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 3])
    # mtime only: prepare_data's params hold the working directory, which the copy changed.
    result = run_snakemake(destination, "--rerun-triggers", "mtime", "-f", target, check=False)
    assert result.returncode != 0
    return result.stdout + result.stderr


def test_truncated_embeddings_name_the_file_and_the_rule(uninterrupted, tmp_path):
    npy = f"{TINY_STS}/embeddings/full/lee-sim.npy"
    output = run_on_corrupt_copy(uninterrupted, tmp_path / "corrupt", npy, SCORES)
    assert f"cannot read '{npy}' (made by rule encode_texts; " \
           f"delete '{TINY_STS}/embeddings/full' and " \
           "re-run snakemake to rebuild it): ValueError" in output
    assert "Traceback" not in output


def test_unreadable_model_names_the_folder_and_the_rule(uninterrupted, tmp_path):
    output = run_on_corrupt_copy(uninterrupted, tmp_path / "corrupt", f"{MODEL}/model.safetensors",
                                 f"{TINY_STS}/embeddings/full")
    assert f"cannot read '{MODEL}' (made by rule train_model; " \
           f"delete '{MODEL}' and re-run snakemake to rebuild it)" in output
    assert "Traceback" not in output


# --- a failed job explains itself in its own log (Snakemake prints it; a cluster keeps it) -------


def local_sts_config(workdir: Path, csv: str) -> Path:
    """The tiny config with a local STS dataset (``csv`` as its test split) evaluated by tiny-sts."""
    config = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    (workdir / "local-sts").mkdir(parents=True)
    (workdir / "local-sts" / "test.csv").write_text(csv)
    config["datasets"]["local-sts"] = {"source": "local", "path": "local-sts", "kind": "sts", "score_range": [0, 5]}
    config["experiments"]["tiny-sts"]["evaluation"]["datasets"] = ["lee-sim", "local-sts"]
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    return workdir


@pytest.mark.parametrize("interpreter", ["cold", "warm"])
def test_a_failed_jobs_log_holds_its_traceback(tmp_path, interpreter):
    env = {**(warm_env() if interpreter == "warm" else cold_env()), "TRIMBENCH_TEST_FAIL_ONCE": "prepare_data"}
    workdir = tiny_config(tmp_path)
    result = subprocess.run(snakemake_command(workdir, "results/data/lee-sim/test.parquet"), cwd=workdir, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode != 0
    log = (workdir / "results/logs/prepare_data/lee-sim/test.log").read_text()
    assert ("forked by the warm interpreter" in log) == (interpreter == "warm"), log
    fault = "InjectedFault: TRIMBENCH_TEST_FAIL_ONCE: rule prepare_data fails on its first attempt"
    assert "Traceback (most recent call last):" in log and log.rstrip().endswith(fault), log
    console = result.stdout + result.stderr
    assert f"rule prepare_data: {fault} (traceback in results/logs/prepare_data/lee-sim/test.log)" in console
    assert "Traceback (most recent call last):" in console  # Snakemake prints the failed job's log


@pytest.mark.parametrize("interpreter", ["cold", "warm"])
def test_bad_rows_in_a_local_file_fail_data_preparation_naming_dataset_file_and_row(tmp_path, interpreter):
    """The probe's A17: three empty scores of 40 went through as an all-NaN score table."""
    env = warm_env() if interpreter == "warm" else cold_env()
    rows = [f"text {i},other {i},{'' if i in (6, 19, 32) else i % 6}" for i in range(40)]
    workdir = local_sts_config(tmp_path, "sentence1,sentence2,score\n" + "\n".join(rows) + "\n")
    result = subprocess.run(snakemake_command(workdir, f"{TINY_STS}/scores/pretrained.parquet"), cwd=workdir,
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode != 0
    message = (f"dataset 'local-sts' (file '{workdir}/local-sts/test.csv'): 3 of 40 rows have a missing, "
               "non-numeric or out-of-range score (each must be a number in [0, 5]; datasets.local-sts.score_range); "
               "the first is data row 7: score missing")
    log = (workdir / "results/logs/prepare_data/local-sts/test.log").read_text()
    assert message in log and "Traceback" not in log, log
    assert f"rule prepare_data: {message}" in result.stdout + result.stderr
    assert not (workdir / "results/data/local-sts").exists() and not (workdir / f"{TINY_STS}/scores").exists()


# --- recovering from a killed snakemake: the one command README "When a run is interrupted" gives ---


def test_after_snakemake_is_killed_one_command_completes_the_run(tmp_path, uninterrupted):
    """SIGKILL to snakemake and its job (a login session lost) just after the job renamed its
    complete output into place: the lock is left, and Snakemake's marker calls the output
    incomplete. The README's one command, `python -m trimbench.resume` in front of the interrupted
    one, must refuse while the run lives and finish it once it is gone (the probe: two commands,
    documented on the cluster page only)."""
    workdir = tiny_config(tmp_path)
    command = snakemake_command(workdir, PRETRAINED_SCORES)
    resume = [sys.executable, "-m", "trimbench.resume", *command]
    run = held_run(workdir, "encode_texts:committed", PRETRAINED_SCORES, warm=False)  # a lost login: no warm server
    job = held_pid(run, workdir / "results/logs/encode_texts/tiny-sts/pretrained.log")
    refused = subprocess.run(resume, cwd=workdir, env=cold_env(), capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "a run is still working in" in refused.stderr, refused.stderr
    assert f"pid {run.pid}: " in refused.stderr and f"pid {job}: " in refused.stderr
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate(timeout=60)
    assert list((workdir / ".snakemake" / "locks").iterdir()), "the kill left no lock"
    assert any((workdir / ".snakemake" / "incomplete").rglob("*")), "the kill left no incomplete marker"
    locked = run_snakemake(workdir, PRETRAINED_SCORES, check=False)
    assert locked.returncode != 0 and "Directory cannot be locked" in locked.stdout + locked.stderr
    result = subprocess.run(resume, cwd=workdir, env=cold_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "removing the lock the interrupted one left" in result.stderr
    assert [p.name for p in (workdir / f"{TINY_STS}/embeddings").iterdir()] == ["pretrained"]
    pd.testing.assert_frame_equal(pd.read_parquet(workdir / PRETRAINED_SCORES),
                                  pd.read_parquet(uninterrupted / PRETRAINED_SCORES))
