"""One command after a kill (trimbench.jobs.resume): which process holds a directory, on hand-made processes.

The whole recovery (kill -9, then the one command) runs in tests/workflow/test_faults.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from trimbench.jobs.resume import live_processes, main, run_directory, snakemake_arguments


def test_the_snakemake_arguments_and_directory_of_a_command(tmp_path):
    assert snakemake_arguments(["snakemake", "--configfile", "c.yaml"]) == ["--configfile", "c.yaml"]
    assert snakemake_arguments(["/v/bin/python", "/v/bin/snakemake", "-n"]) == ["-n"]
    assert snakemake_arguments(["python", "-m", "snakemake", "-d", "run"]) == ["-d", "run"]
    assert snakemake_arguments(["python", "-m", "trimbench.jobs.warm", "--cores", "2"]) == ["--cores", "2"]
    assert snakemake_arguments(["make", "demo"]) == []
    assert run_directory(["--directory", "run"], tmp_path) == tmp_path / "run"
    assert run_directory(["-d", str(tmp_path / "x")], Path("/")) == tmp_path / "x"
    assert run_directory(["--directory=run"], tmp_path) == tmp_path / "run"
    assert run_directory(["--cores", "2"], tmp_path) == tmp_path


@pytest.fixture
def fake_snakemake(tmp_path):
    """A process run as `python .../bin/snakemake ARGS` (as a console script is), sleeping, in a folder."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "snakemake").write_text("import time\ntime.sleep(60)\n")
    started = []

    def start(cwd: Path, *args: str) -> subprocess.Popen:
        cwd.mkdir(exist_ok=True)
        process = subprocess.Popen([sys.executable, str(tmp_path / "bin" / "snakemake"), *args], cwd=cwd)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_a_snakemake_working_in_the_directory_is_found_and_nothing_is_unlocked(tmp_path, fake_snakemake, capsys,
                                                                               monkeypatch):
    run, other = tmp_path / "run", tmp_path / "other"
    held = fake_snakemake(run)
    fake_snakemake(other)  # another directory's run does not count
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", ".snakemake/scripts/tmp.x.py"],
                           cwd=run)
    try:
        time.sleep(0.3)  # the processes have their command lines
        found = live_processes(run.resolve())
        assert [pid for pid, _ in found] == sorted([held.pid, job.pid])
        (run / ".snakemake" / "locks").mkdir(parents=True)
        (run / ".snakemake" / "locks" / "0.output.lock").write_text("x")
        monkeypatch.chdir(run)
        assert main(["snakemake", "--cores", "2"]) == 1
        message = capsys.readouterr().err
        assert f"a run is still working in {run.resolve()}; nothing unlocked" in message
        assert f"pid {held.pid}: {sys.executable} {tmp_path}/bin/snakemake\n" in message
        assert (run / ".snakemake" / "locks" / "0.output.lock").is_file()
        # A run in another directory named by --directory, seen from elsewhere.
        elsewhere = fake_snakemake(other, "--directory", str(run))
        time.sleep(0.3)
        assert elsewhere.pid in [pid for pid, _ in live_processes(run.resolve())]
    finally:
        job.kill()
        job.wait()
    held.kill()
    held.wait()
    elsewhere.kill()
    elsewhere.wait()
    assert live_processes(run.resolve()) == []


@pytest.mark.parametrize(("command", "named"), [
    (["ls", "-d", "."], "'ls -d .' is not a run of this workflow"),  # the probe's C19: it ran ls
    (["snakemak", "-n"], "'snakemak -n' is not a run of this workflow"),  # C16: a traceback after "continuing"
    (["make", "clean"], "'make clean' is not a run of this workflow: make runs it with the targets demo, mini, report"),
    (["make"], "'make' is not a run of this workflow"),
    (["/no/such/python", "-m", "snakemake", "-n"], "'/no/such/python' of '/no/such/python -m snakemake -n' is no "
                                                   "program here"),
])
def test_a_command_that_is_no_run_of_the_workflow_is_refused_before_any_unlock(tmp_path, monkeypatch, capsys,
                                                                               command, named):
    (tmp_path / ".snakemake" / "locks").mkdir(parents=True)
    (tmp_path / ".snakemake" / "locks" / "0.output.lock").write_text("x")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
    monkeypatch.setattr(subprocess, "call", lambda *a, **k: pytest.fail(f"ran {a}"))
    assert main(command) == 2
    assert f"trimbench.resume: {named}" in capsys.readouterr().err
    assert (tmp_path / ".snakemake" / "locks" / "0.output.lock").is_file()


def test_a_run_of_the_workflow_is_run_again_as_given(monkeypatch):
    """C17: a leading -- is dropped; C18: a bare snakemake off PATH (the venv not activated) becomes
    the python -m snakemake that unlocked, not a FileNotFoundError after the unlock."""
    from trimbench.jobs.resume import resumable

    assert resumable(["make", "demo"]) == ["make", "demo"]
    assert resumable(["make", "mini", "LOCAL=x"]) == ["make", "mini", "LOCAL=x"]
    assert resumable(["--", sys.executable, "-m", "trimbench.jobs.warm", "-n"]) == [
        sys.executable, "-m", "trimbench.jobs.warm", "-n"]
    monkeypatch.setenv("PATH", "/nonexistent")
    assert resumable(["snakemake", "--cores", "1"]) == [sys.executable, "-m", "snakemake", "--cores", "1"]
