"""Continuing a run after snakemake was killed, in one command::

    python -m trimbench.resume snakemake --configfile configs/electra.yaml --profile slurm
    python -m trimbench.resume make demo

The interrupted command, ``python -m trimbench.resume`` in front. A killed snakemake (a closed
terminal, ``kill -9``, a lost login session, the OOM killer) leaves its lock in
``.snakemake/locks``, and every later run stops on it ("Directory cannot be locked") until
``snakemake --unlock``. Unlocking while a snakemake still works in the directory would let two runs
write the same outputs, and Snakemake's lock files do not say who holds them (they list the
locked files, no process). So this first looks for a live process of this working directory on
this machine: a snakemake or ``python -m trimbench.jobs.warm`` run (its ``--directory``, else its
working directory), or a job of one (Snakemake's copy of a step's script, or a warm interpreter's
child, working in the directory). If there is one, it names it and changes nothing. Else it
removes the lock with the command's own snakemake arguments (``--unlock``) and runs the command
again: finished outputs stay, an output its job did not finish is made again (``rerun-incomplete``
in profiles/default; outputs are renamed into place only when complete, trimbench.jobs.atomic).

Processes on other machines are not seen: on a cluster, a snakemake on another login node, or
SLURM jobs of the killed run still queued or running (``squeue --me``), must be stopped first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: module names whose ``python -m`` runs a workflow on a directory (the warm launcher runs snakemake)
RUNNERS = ("snakemake", "trimbench.jobs.warm")
#: what marks a process as one of a run's jobs: Snakemake's copies of step scripts, the warm
#: interpreter (whose children take their job's working directory)
JOB_MARKERS = (".snakemake/scripts/", "trimbench.jobs.warm")


#: the make targets that run this workflow (the Makefile's demo, mini and report): a resumed ``make``
#: runs one of them (``make clean`` after an unlock would delete the run it was meant to continue)
MAKE_RUNS = ("demo", "mini", "report")


class NotARun(ValueError):
    """A command that is not a run of this workflow: resume unlocks nothing and runs nothing."""


def resumable(command: list[str]) -> list[str]:
    """The command to run again after the unlock: ``command`` if it runs this workflow (snakemake,
    ``python -m snakemake``, ``python -m trimbench.jobs.warm``, or ``make`` of :data:`MAKE_RUNS`), a
    leading ``--`` dropped; a bare ``snakemake`` not on ``PATH`` (the venv not activated) becomes this
    interpreter's ``python -m snakemake``, the one that unlocks. Else :class:`NotARun` naming it."""
    command = command[1:] if command[:1] == ["--"] else command
    if command and command[0] == "snakemake" and shutil.which("snakemake") is None:
        return [sys.executable, "-m", "snakemake", *command[1:]]
    if command and Path(command[0]).name == "make":
        targets = [word for word in command[1:] if not word.startswith("-") and "=" not in word]
        if targets and set(targets) <= set(MAKE_RUNS):
            return command
        raise NotARun(f"'{' '.join(command)}' is not a run of this workflow: make runs it with the targets "
                      f"{', '.join(MAKE_RUNS)} (give the interrupted one, e.g. make demo)")
    if command and _is_run(command):
        if shutil.which(command[0]) is None:
            raise NotARun(f"'{command[0]}' of '{' '.join(command)}' is no program here (not on PATH, no such "
                          "file): give it as the interrupted run gave it, e.g. .venv/bin/python -m ...")
        return command
    raise NotARun(f"'{' '.join(command)}' is not a run of this workflow: give the interrupted command, "
                  "snakemake ..., python -m snakemake ..., python -m trimbench.jobs.warm ... or make "
                  f"{'|'.join(MAKE_RUNS)}, with its arguments")


def snakemake_arguments(command: list[str]) -> list[str]:
    """The snakemake arguments of ``command``: after ``snakemake`` or ``python -m snakemake`` or
    ``python -m trimbench.jobs.warm``; none for another command (``make demo``: the checkout's config)."""
    for index, word in enumerate(command):
        if Path(word).name == "snakemake" and (index == 0 or command[index - 1] != "-m"):
            return command[index + 1:]
        if word == "-m" and index + 1 < len(command) and command[index + 1] in RUNNERS:
            return command[index + 2:]
    return []


def run_directory(arguments: list[str], cwd: Path) -> Path:
    """The working directory snakemake ``arguments`` run in: ``--directory`` / ``-d``, else ``cwd``."""
    for index, word in enumerate(arguments):
        if word in ("--directory", "-d") and index + 1 < len(arguments):
            return (cwd / arguments[index + 1]).resolve()
        if word.startswith("--directory="):
            return (cwd / word.partition("=")[2]).resolve()
    return cwd.resolve()


def _is_run(command: list[str]) -> bool:
    return any(Path(word).name == "snakemake" for word in command[:2]) or any(
        word == "-m" and index + 1 < len(command) and command[index + 1] in RUNNERS
        for index, word in enumerate(command))


def _ancestors() -> set[int]:
    """This process and its parents (a `make resume`, a shell): never taken as the run."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rpartition(")")[2].split()[1])
    return pids


def live_processes(directory: Path, proc: Path = Path("/proc")) -> list[tuple[int, str]]:
    """(pid, command line) of each live process of a run on ``directory`` (see the module's docstring)."""
    found, skip = [], _ancestors()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            command = [word for word in (entry / "cmdline").read_bytes().decode(errors="replace").split("\0") if word]
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:  # ended meanwhile, or another user's
            continue
        if not command:
            continue
        if _is_run(command):
            works_in = run_directory(snakemake_arguments(command), cwd)
        elif any(marker in word for word in command for marker in JOB_MARKERS):
            works_in = cwd.resolve()
        else:
            continue
        if works_in == directory:
            found.append((int(entry.name), " ".join(command)))
    return sorted(found)


def main(command: list[str]) -> int:
    if not command:
        print("usage: python -m trimbench.resume COMMAND...  (the interrupted command, e.g. "
              "python -m trimbench.resume snakemake --configfile configs/electra.yaml)", file=sys.stderr)
        return 2
    try:
        command = resumable(command)
    except NotARun as error:
        print(f"trimbench.resume: {error}; nothing unlocked, nothing run", file=sys.stderr)
        return 2
    arguments = snakemake_arguments(command)
    directory = run_directory(arguments, Path.cwd())
    live = live_processes(directory)
    if live:
        lines = "\n".join(f"  pid {pid}: {line[:200]}" for pid, line in live)
        print(f"trimbench.resume: a run is still working in {directory}; nothing unlocked. Wait for it to "
              f"end, or stop it (kill PID), then run this again:\n{lines}", file=sys.stderr)
        return 1
    locks = directory / ".snakemake" / "locks"
    if locks.is_dir() and any(locks.iterdir()):
        print(f"trimbench.resume: no run works in {directory}; removing the lock the interrupted one left",
              file=sys.stderr)
        unlocked = subprocess.run([sys.executable, "-m", "snakemake", *arguments, "--unlock"])
        if unlocked.returncode != 0:
            return unlocked.returncode
    print(f"trimbench.resume: continuing: {' '.join(command)}", file=sys.stderr)
    return subprocess.call(command)
