"""The warm interpreter (trimbench.jobs.warm): jobs forked from one server that imported the heavy
modules once, with each job's directory, environment, streams and exit status; and the fallbacks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import REPO, warm_server_at

from trimbench.jobs import warm


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
