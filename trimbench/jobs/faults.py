"""Fault injection for the test suite: a rule's first attempt fails, or a job holds at a named point
so that a test can kill it there. Only the tests set these variables; unset, nothing here acts.

``TRIMBENCH_TEST_FAIL_ONCE=rule[,rule...]``
    Each job of the rule fails on its first attempt, before any work; a marker beside the job's log
    remembers that it did, so the retry (or a re-run) goes through.
``TRIMBENCH_TEST_HOLD=rule:point[,rule:point...]``
    A job of the rule that reaches ``point`` logs ``test hold at <point>`` and sleeps until killed,
    once: a marker beside its log lets the next attempt (a requeued SLURM job keeps its
    environment) go through. Points: ``commit`` (an output fully written under its temporary name,
    not yet renamed into place: :mod:`trimbench.jobs.atomic`), ``committed`` (renamed into place, the job
    not yet ended: Snakemake still counts the output as incomplete), ``checkpoint`` (a training
    checkpoint saved: :mod:`trimbench.training`) and ``fine_tuning`` (one (k, seed) of an ELECTRA job kept:
    :func:`trimbench.electra.train.fine_tune_cuts`).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

FAIL_ONCE = "TRIMBENCH_TEST_FAIL_ONCE"
HOLD = "TRIMBENCH_TEST_HOLD"

log = logging.getLogger("trimbench")
_current_rule: str | None = None
_current_log: str | None = None


class InjectedFault(RuntimeError):
    """The failure ``TRIMBENCH_TEST_FAIL_ONCE`` asked for."""


def _listed(variable: str) -> set[str]:
    return {item.strip() for item in os.environ.get(variable, "").split(",") if item.strip()}


def start_job(rule: str, log_path: str | None) -> None:
    """Called by :func:`trimbench.jobs.run.run` before the step: remember the rule; fail if asked to."""
    global _current_rule, _current_log
    _current_rule, _current_log = rule, log_path
    if rule in _listed(FAIL_ONCE) and _first_time("failed-once"):
        raise InjectedFault(f"{FAIL_ONCE}: rule {rule} fails on its first attempt")


def _first_time(what: str) -> bool:
    """True the first time a job of this rule and log gets here; a marker beside the log remembers."""
    if not _current_log:
        raise InjectedFault(f"fault injection in rule {_current_rule}, which has no log to keep its marker beside")
    marker = Path(f"{_current_log}.{what}")
    if marker.exists():
        return False
    marker.touch()
    return True


def hold(point: str) -> None:
    """Sleep until killed if ``TRIMBENCH_TEST_HOLD`` names this rule and point (once per job)."""
    if f"{_current_rule}:{point}" not in _listed(HOLD) or not _first_time(f"held-at-{point}"):
        return
    log.warning("test hold at %s (pid %d)", point, os.getpid())
    for handler in logging.getLogger().handlers:
        handler.flush()
    while True:
        time.sleep(3600)
