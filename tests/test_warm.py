"""The warm interpreter (trimbench.warm): jobs forked from one server that imported the heavy
modules once, with each job's directory, environment, streams and exit status; and the fallbacks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
from conftest import REPO, kill_held_job, run_snakemake, snakemake_command, warm_server_at

from trimbench.jobs import warm

SCORES = "results/tiny-sts/scores/full.parquet"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server that preloads only trimbench itself (the jobs here need nothing else)."""
    with warm_server_at(tmp_path_factory.mktemp("warm") / "socket") as path:
        yield path


def client(path: Path, code: str, **env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import sys\nfrom trimbench.jobs import warm\n{code}"],
                            env={**os.environ, warm.WARM: str(path), **env}, cwd=REPO / "tests",
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_child_takes_the_jobs_directory_environment_streams_and_exit_status(server):
    job = client(server, "sys.exit(warm.call_in_server('os.system', 'pwd; echo $GREETING; exit 3') + 10 * "
                         "warm.call_in_server('sys.exit', 4))", GREETING="hello from the job")
    output, _ = job.communicate(timeout=60)
    assert job.returncode == 40, output  # os.system's status is not an exit: 0; sys.exit(4): 4
    assert output.splitlines() == [str(REPO / "tests"), "hello from the job"]


def test_a_killed_client_takes_its_child_along(server):
    job = client(server, "warm.call_in_server('time.sleep', 120)")
    deadline = time.monotonic() + 60
    server_process = next(p for p in psutil.process_iter(["cmdline"])
                          if str(server) in " ".join(p.info["cmdline"] or []))
    while not server_process.children() and time.monotonic() < deadline:
        time.sleep(0.1)
    (child,) = server_process.children()
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=30)
    child.wait(timeout=30)  # killed by the server once the client's connection closed
    assert not server_process.children()


def test_a_signal_to_the_client_reaches_the_child(server):
    job = client(server, "sys.exit(warm.call_in_server('time.sleep', 120))")
    server_process = next(p for p in psutil.process_iter(["cmdline"])
                          if str(server) in " ".join(p.info["cmdline"] or []))
    deadline = time.monotonic() + 60
    while not server_process.children() and time.monotonic() < deadline:
        time.sleep(0.1)
    job.send_signal(signal.SIGTERM)
    job.communicate(timeout=30)
    assert job.returncode == 128 + signal.SIGTERM


def test_jobs_run_here_without_a_server_on_slurm_or_from_another_environment(server, tmp_path, monkeypatch):
    monkeypatch.setenv(warm.WARM, str(tmp_path / "nothing-here"))
    assert warm.call_in_server("sys.exit", 5) is None
    monkeypatch.setenv(warm.WARM, str(server))
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert warm.call_in_server("sys.exit", 5) is None
    monkeypatch.delenv("SLURM_JOB_ID")
    monkeypatch.setattr(warm, "_identity", lambda: {"prefix": "/another/env", "trimbench": "/another/checkout"})
    assert warm.call_in_server("sys.exit", 5) is None


@pytest.mark.workflow
def test_the_launcher_runs_the_workflow_in_forked_children_with_the_same_results(workdir, tmp_path):
    cold = tmp_path / "cold"
    cold.mkdir()
    (cold / "config.yaml").write_bytes((workdir / "config.yaml").read_bytes())
    run_snakemake(cold, SCORES)
    result = subprocess.run(warm_command(workdir, SCORES), cwd=workdir, text=True, capture_output=True,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    logs = sorted((workdir / "results" / "logs").rglob("*.log"))
    assert logs and all("forked by the warm interpreter" in log.read_text() for log in logs), logs
    assert not any("forked by" in log.read_text() for log in (cold / "results" / "logs").rglob("*.log"))
    pd.testing.assert_frame_equal(pd.read_parquet(workdir / SCORES), pd.read_parquet(cold / SCORES))


def warm_command(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "trimbench.warm", *snakemake_command(workdir, *args)[3:]]


@pytest.mark.workflow
def test_a_forked_job_killed_fails_its_job_and_a_rerun_completes_it(workdir):
    """SIGKILL to the PID a job's log names (a forked child), held with its output written under
    the temporary name: Snakemake fails the job, nothing looks finished; the next run makes it."""
    target, embeddings = "results/tiny-sts/scores/pretrained.parquet", "results/tiny-sts/embeddings/pretrained"
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
