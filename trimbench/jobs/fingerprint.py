"""What a job that resumes its partial work depends on, and the folder that holds that work: a run
with other settings or inputs never continues from it (training checkpoints, a half-built index)."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

FINGERPRINT_FILE = "fingerprint.sha256"


def run_fingerprint(settings: dict, inputs: list[str | Path]) -> str:
    """What a training run depends on: its settings and every input file's path, size and mtime.

    Checkpoints are only resumed by a run with the same fingerprint, so a changed config or a
    rebuilt input never continues from a stale checkpoint.
    """
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for root in map(Path, inputs):
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for file in files:
            stat = file.stat()
            digest.update(f"{file}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def stamped_work_dir(work_dir: Path, fingerprint: str) -> Path:
    """``work_dir`` as a run with ``fingerprint`` left it, or empty when other settings or inputs
    left it (a changed config never continues from their partial work)."""
    stamp = work_dir / FINGERPRINT_FILE
    if work_dir.exists() and (not stamp.is_file() or stamp.read_text() != fingerprint):
        log.info("discarding %s: left by a run with other settings or inputs", work_dir)
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint)
    return work_dir
