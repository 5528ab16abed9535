"""Resumable training (trimbench.training): which checkpoint a run resumes from, and the fingerprint
that keeps checkpoints of other settings from being resumed."""

from __future__ import annotations

import json
import os
from pathlib import Path

from trimbench.jobs.fingerprint import FINGERPRINT_FILE, run_fingerprint
from trimbench.training import CHECKPOINT_FILES, SENTENCE_MODEL_FILE, resumable_checkpoint


def fake_checkpoint(trainer_dir: Path, step: int, complete: bool = True) -> Path:
    path = trainer_dir / f"checkpoint-{step}"
    path.mkdir(parents=True)
    for name in (SENTENCE_MODEL_FILE, *CHECKPOINT_FILES[:-1]):
        (path / name).write_text("x")
    state = json.dumps({"global_step": step})
    # A kill while writing the state leaves it cut short.
    (path / "trainer_state.json").write_text(state if complete else state[:7])
    return path


def test_resume_takes_newest_complete_checkpoint_and_drops_half_written_ones(tmp_path):
    work = tmp_path / "full.tmp"
    (work).mkdir()
    (work / FINGERPRINT_FILE).write_text("abc")
    older = fake_checkpoint(work / "trainer", 2)
    newer = fake_checkpoint(work / "trainer", 4)
    half = fake_checkpoint(work / "trainer", 6, complete=False)
    assert resumable_checkpoint(work, "abc") == newer
    assert not half.exists() and older.exists()


def test_resume_discards_work_dir_of_other_settings(tmp_path):
    work = tmp_path / "full.tmp"
    (work).mkdir()
    (work / FINGERPRINT_FILE).write_text("settings A")
    fake_checkpoint(work / "trainer", 2)
    assert resumable_checkpoint(work, "settings B") is None
    assert not (work / "trainer").exists() and (work / FINGERPRINT_FILE).read_text() == "settings B"


def test_fingerprint_changes_with_settings_and_rebuilt_inputs(tmp_path):
    data = tmp_path / "train.parquet"
    data.write_bytes(b"rows")
    base = run_fingerprint({"lr": 1e-5}, [data])
    assert run_fingerprint({"lr": 1e-5}, [data]) == base
    assert run_fingerprint({"lr": 2e-5}, [data]) != base
    os.utime(data, ns=(1, 1))
    assert run_fingerprint({"lr": 1e-5}, [data]) != base


def test_a_checkpoint_of_several_ranks_is_complete_with_every_ranks_random_state(tmp_path, monkeypatch):
    """Under DDP the trainer writes rng_state_<rank>.pth per rank; a checkpoint missing one rank's
    (a kill between two ranks' saves) is not resumed from."""
    from trimbench.training import checkpoint_complete

    monkeypatch.setenv("WORLD_SIZE", "2")
    work = tmp_path / "full.tmp"
    work.mkdir()
    (work / FINGERPRINT_FILE).write_text("abc")
    both, one = fake_checkpoint(work / "trainer", 2), fake_checkpoint(work / "trainer", 4)
    for checkpoint, ranks in ((both, 2), (one, 1)):
        (checkpoint / "rng_state.pth").unlink()
        for rank in range(ranks):
            (checkpoint / f"rng_state_{rank}.pth").write_text("x")
    assert checkpoint_complete(both, ranks=2) and not checkpoint_complete(both, ranks=1)
    assert resumable_checkpoint(work, "abc") == both
    assert not one.exists()
