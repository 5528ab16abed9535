"""The warm interpreter (trimbench.jobs.warm): jobs forked from one server that imported the heavy
modules once, with each job's directory, environment, streams and exit status; and the fallbacks."""

from __future__ import annotations

import ast
import logging
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


@pytest.fixture
def script(tmp_path):
    """A job's script at a path, with its code."""

    def written(code: str) -> Path:
        path = tmp_path / f"job{len(list(tmp_path.glob('job*.py')))}.py"
        path.write_text(code)
        return path

    return written


def test_child_runs_the_script_in_the_jobs_directory_environment_streams_and_exit_status(server, script):
    job = script("import os, sys\nprint(os.getcwd())\nprint(os.environ['GREETING'])\n"
                 "print(__name__, snakemake)\nsys.exit(3)\n")
    run = client(server, f"sys.exit(warm.run_in_server({str(job)!r}, 'the snakemake object'))",
                 GREETING="hello from the job")
    output, _ = run.communicate(timeout=60)
    assert run.returncode == 3, output
    assert output.splitlines() == [str(REPO / "tests"), "hello from the job", "__main__ the snakemake object"]


def test_a_child_finds_the_servers_imports_frozen_out_of_the_collectors_reach(server, script):
    """gc.freeze() after the imports: a child's full collection walks only its own objects, not the
    server's heap (each walk copied it on write: about 0.4 CPU-s a job at the demo's imports)."""
    job = script("import gc, sys\nimport trimbench.config.prepare\nprint(gc.get_freeze_count())\n"
                 "print(sum(len(gc.get_objects(generation)) for generation in range(3)))\n")
    run = client(server, f"sys.exit(warm.run_in_server({str(job)!r}, None))")
    output, _ = run.communicate(timeout=60)
    assert run.returncode == 0, output
    frozen, collected = map(int, output.split())
    # trimbench and its imports (jsonschema, yaml, numpy ...) frozen; the child's own few left
    assert frozen > 10_000 and collected < frozen / 2, output


def test_the_server_runs_a_script_by_its_path_and_nothing_named_otherwise(server):
    """No ``module.function`` string is resolved in the server: a name that is no script runs nothing."""
    run = client(server, "sys.exit(warm.run_in_server('os.system', 'echo from os.system'))")
    output, _ = run.communicate(timeout=60)
    assert run.returncode == 1 and "from os.system" not in output and "No such file" in output, output


def children_of_server(server, poll: float = 0.1) -> psutil.Process:
    """The server's process, once it has a child (looked for every ``poll`` seconds, for up to a minute)."""
    server_process = next(p for p in psutil.process_iter(["cmdline"])
                          if str(server) in " ".join(p.info["cmdline"] or []))
    deadline = time.monotonic() + 60
    while not server_process.children() and time.monotonic() < deadline:
        time.sleep(poll)
    return server_process


def test_a_killed_client_takes_its_child_along(server, script):
    job = client(server, f"warm.run_in_server({str(script('import time; time.sleep(120)'))!r}, None)")
    server_process = children_of_server(server)
    (child,) = server_process.children()
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=30)
    child.wait(timeout=30)  # killed by the server once the client's connection closed
    assert not server_process.children()


def test_a_signal_to_the_client_reaches_the_child(server, script):
    job = client(server, f"sys.exit(warm.run_in_server({str(script('import time; time.sleep(120)'))!r}, None))")
    children_of_server(server)
    job.send_signal(signal.SIGTERM)
    job.communicate(timeout=30)
    assert job.returncode == 128 + signal.SIGTERM


def test_a_signal_forwarded_the_moment_the_child_exists_ends_it(server, script):
    """The race make test once lost: the client forwards SIGTERM as soon as it has the child's PID,
    before the child has reset the server's handlers. Ten times, signalled the moment the server has
    a child (before the fix, 31 of 40 such jobs ran on or exited 1)."""
    job_script = str(script("import time; time.sleep(120)"))
    for _ in range(10):
        job = client(server, f"sys.exit(warm.run_in_server({job_script!r}, None))")
        server_process = children_of_server(server, poll=0.0005)
        job.send_signal(signal.SIGTERM)
        output, _ = job.communicate(timeout=30)
        assert job.returncode == 128 + signal.SIGTERM, output
        deadline = time.monotonic() + 60
        while server_process.children() and time.monotonic() < deadline:  # reaped before the next job
            time.sleep(0.01)


def test_jobs_run_here_without_a_server_on_slurm_or_from_another_environment_and_say_so(
        server, script, tmp_path, monkeypatch, caplog):
    """Where TRIMBENCH_WARM is set but the job runs in its own interpreter, a warning says why (a
    run meant to be warm that is not would otherwise only be slower); none where it is unset."""
    job = script("import sys; sys.exit(5)")
    caplog.set_level(logging.DEBUG, logger="trimbench")
    monkeypatch.delenv(warm.WARM, raising=False)
    assert warm.run_in_server(str(job), None) is None and not caplog.records
    monkeypatch.setenv(warm.WARM, str(tmp_path / "nothing-here"))
    assert warm.run_in_server(str(job), None) is None
    monkeypatch.setenv(warm.WARM, str(server))
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert warm.run_in_server(str(job), None) is None
    monkeypatch.delenv("SLURM_JOB_ID")
    monkeypatch.setattr(warm, "_identity", lambda: {"prefix": "/another/env", "trimbench": "/another/checkout"})
    assert warm.run_in_server(str(job), None) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING] * 3
    why = [r.getMessage() for r in caplog.records]
    assert all("is set, but this job runs in its own interpreter" in line for line in why), why
    assert "could not be handed to a warm interpreter" in why[0] and "SLURM" in why[1] and "/another/env" in why[2], why


def test_the_preloaded_modules_start_no_jvm_and_no_thread_a_fork_would_lose():
    """The server forks every job after PRELOAD: a module there that starts a JVM (pyserini) or a
    thread at import (onnxruntime does) would leave the children a lock or a VM they cannot use.
    Each module is imported in turn, in a fresh interpreter, counting the process's threads."""
    code = """
import importlib, sys
import matplotlib
matplotlib.use("Agg")
from trimbench.jobs.warm import PRELOAD
def threads():
    return int(next(line for line in open("/proc/self/status") if line.startswith("Threads")).split()[1])
counts = []
for module in PRELOAD:
    importlib.import_module(module)
    counts.append((module, threads()))
print(counts)
print("jnius" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    counts, jvm = out.strip().splitlines()
    counts = ast.literal_eval(counts)
    assert jvm == "False"
    # torch's own pool threads come with torch; no module after it adds one
    after_torch = [count for module, count in counts[[m for m, _ in counts].index("torch"):]]
    assert len(set(after_torch)) == 1, counts
