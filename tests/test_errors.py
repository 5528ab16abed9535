"""The errors that explain themselves (trimbench/errors.py): the job runner ends a job on one of them
with its message alone, on any other error with a pointer to the traceback in the job's log."""

from __future__ import annotations

import sys

import pytest

from trimbench.errors import ArtifactError, ConfigError, DataError, ExplainedError
from trimbench.jobs.run import run_here


def ended(error: Exception, tmp_path, monkeypatch, capsys) -> tuple[str, str]:
    """The message a job raising ``error`` ends with, and its log (pytest's capture off: the job
    sends its stderr, where it logs, into the log file)."""
    log = tmp_path / "job.log"
    monkeypatch.setattr(sys, "argv", ["step", "--log", str(log)])

    def main(job):
        raise error

    with capsys.disabled(), pytest.raises(SystemExit) as stop:
        run_here(main)
    return str(stop.value), log.read_text()


@pytest.mark.parametrize("error", [ConfigError("config key models.m.path: 'x' is not a model directory"),
                                   DataError("dataset 'd', file 'train.csv': row 3 has no score"),
                                   ArtifactError("cannot read 'docs.npy' (made by rule encode_corpus)")],
                         ids=lambda error: type(error).__name__)
def test_an_explained_error_ends_the_job_with_its_message_alone(error, tmp_path, monkeypatch, capsys):
    message, log = ended(error, tmp_path, monkeypatch, capsys)
    assert message == f"rule test_errors: {error}"
    assert str(error) in log and "Traceback" not in log


def test_any_other_error_ends_the_job_pointing_at_its_traceback(tmp_path, monkeypatch, capsys):
    message, log = ended(ValueError("deep inside numpy"), tmp_path, monkeypatch, capsys)
    assert message == f"rule test_errors: ValueError: deep inside numpy (traceback in {tmp_path / 'job.log'})"
    assert "Traceback" in log


def test_each_explained_error_is_still_caught_as_the_builtin_error_it_was():
    """Callers catch a bad config or data file as a ValueError, a damaged cache as a RuntimeError."""
    for error, builtin in ((ConfigError, ValueError), (DataError, ValueError), (ArtifactError, RuntimeError)):
        assert issubclass(error, ExplainedError) and issubclass(error, builtin)
