"""Outputs that are only ever complete: write to a temporary sibling, then rename."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
from pathlib import Path

from trimbench.jobs import faults


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path next to ``path``; move it into place only if the block succeeds.

    A killed job leaves at most a ``.tmp`` sibling, never a file or folder that a later stage
    would take as finished; the next attempt removes such leftovers (Snakemake runs one job per
    output at a time).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.tmp-*"):
        _remove(leftover)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
    except BaseException:
        _remove(tmp)
        raise
    faults.hold("commit")
    if path.exists() and path.is_dir():
        shutil.rmtree(path)
    os.replace(tmp, path)
    faults.hold("committed")
