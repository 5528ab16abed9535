"""The warm interpreter (trimbench.jobs.warm) running the workflow: the same results as cold jobs, and a
forked job killed fails its job and a rerun completes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from conftest import experiment_dir, kill_held_job, run_snakemake, snakemake_command

TINY_STS = experiment_dir("", "tiny-sts")
SCORES = f"{TINY_STS}/scores/full.parquet"


def test_the_launcher_runs_the_workflow_in_forked_children_with_the_same_results(workdir, tmp_path):
    cold = tmp_path / "cold"
    cold.mkdir()
    (cold / "config.yaml").write_bytes((workdir / "config.yaml").read_bytes())
    run_snakemake(cold, SCORES, warm=False)
    result = subprocess.run(warm_command(workdir, SCORES), cwd=workdir, text=True, capture_output=True,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    logs = sorted((workdir / "results" / "logs").rglob("*.log"))
    assert logs and all("forked by the warm interpreter" in log.read_text() for log in logs), logs
    assert not any("forked by" in log.read_text() for log in (cold / "results" / "logs").rglob("*.log"))
    pd.testing.assert_frame_equal(pd.read_parquet(workdir / SCORES), pd.read_parquet(cold / SCORES))


def warm_command(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "trimbench.jobs.warm", *snakemake_command(workdir, *args)[3:]]


def test_a_forked_job_killed_fails_its_job_and_a_rerun_completes_it(workdir):
    """SIGKILL to the PID a job's log names (a forked child), held with its output written under
    the temporary name: Snakemake fails the job, nothing looks finished; the next run makes it."""
    target, embeddings = f"{TINY_STS}/scores/pretrained.parquet", f"{TINY_STS}/embeddings/pretrained"
    env = {**os.environ, "TRIMBENCH_TEST_HOLD": "encode_texts:commit"}
    run = subprocess.Popen(warm_command(workdir, target), cwd=workdir, env=env, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
    output = kill_held_job(run, workdir / "results/logs/encode_texts/tiny-sts/pretrained.log")
    assert "Error in rule encode_texts" in output
    assert not (workdir / embeddings).exists()
    result = subprocess.run(warm_command(workdir, target), cwd=workdir, env=env, text=True, capture_output=True,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (workdir / target).is_file() and (workdir / embeddings).is_dir()
