"""Atomic outputs (trimbench/jobs/atomic.py): an output exists only complete, whether a file or a folder;
a failed block leaves nothing, and an earlier attempt's leftovers go. Killed jobs: tests/workflow/test_faults.py."""

from __future__ import annotations

import os

import pytest

from trimbench.jobs.atomic import atomic_path


def test_a_file_appears_only_when_the_block_ends(tmp_path):
    target = tmp_path / "sub" / "scores.parquet"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and tmp.name == f".scores.parquet.tmp-{os.getpid()}"
        tmp.write_text("complete")
        assert not target.exists()
    assert target.read_text() == "complete"
    assert sorted(p.name for p in target.parent.iterdir()) == ["scores.parquet"]


def test_a_failed_block_leaves_neither_output_nor_temporary_and_keeps_the_old_output(tmp_path):
    target = tmp_path / "run.trec"
    with pytest.raises(RuntimeError, match="half-way"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("half-way")
    assert list(tmp_path.iterdir()) == []
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "part").write_text("half")
        raise KeyboardInterrupt
    assert [p.name for p in tmp_path.iterdir()] == ["run.trec"] and target.read_text() == "old"


def test_a_folder_replaces_the_old_folder_whole(tmp_path):
    target = tmp_path / "runs"
    target.mkdir()
    (target / "stale.trec").write_text("old")
    with atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "a.trec").write_text("new")
        assert (target / "stale.trec").exists()
    assert [p.name for p in target.iterdir()] == ["a.trec"]


def test_an_earlier_attempts_leftovers_go_and_other_outputs_stay(tmp_path):
    """A killed attempt (another pid) left a file and a folder; a sibling output whose name the glob
    would match unescaped (``[ab]`` matches ``a``) keeps its own."""
    target = tmp_path / "x[ab].npy"
    (tmp_path / ".x[ab].npy.tmp-1").write_text("killed")
    (tmp_path / ".x[ab].npy.tmp-2").mkdir()
    (tmp_path / ".xa.npy.tmp-3").write_text("another output's attempt")
    with atomic_path(target) as tmp:
        tmp.write_text("done")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".xa.npy.tmp-3", "x[ab].npy"]
