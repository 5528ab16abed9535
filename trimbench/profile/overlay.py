"""``python -m trimbench.profile.overlay MODEL... --out FILE``: the config overlay of ``make profile``, the
models given on the command line as the registry models of configs/profile.yaml's experiment ``profile``.

A MODEL is a local folder (``source: local``), ``package:NAME[/SUBFOLDER]`` (a Python package shipping the
model folder, ``source: package``), or a hub id (``source: hub``). Each gets a registry name from its last
path part; the experiment profiles exactly these models.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import yaml


def registry_entry(model: str) -> tuple[str, dict]:
    """The registry name and entry of one command-line MODEL."""
    if model.startswith("package:"):
        package, _, subfolder = model.removeprefix("package:").partition("/")
        name, entry = package, {"source": "package", "package": package, "subfolder": subfolder}
    elif Path(model).expanduser().is_dir():
        name, entry = Path(model).resolve().name, {"source": "local", "path": str(Path(model).expanduser().resolve())}
    elif re.fullmatch(r"[\w.-]+/[\w.-]+|[\w.-]+", model):
        name, entry = model.rsplit("/", 1)[-1], {"source": "hub", "id": model}
    else:
        raise SystemExit(f"make profile: MODEL '{model}' is neither a folder, package:NAME[/SUBFOLDER], nor a hub id")
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name).lstrip("-._") or "model", entry


def overlay(models: list[str]) -> dict:
    registry = {}
    for model in models:
        name, entry = registry_entry(model)
        if name in registry:
            name = f"{name}-{len(registry) + 1}"
        registry[name] = entry
    return {"models": registry, "experiments": {"profile": {"models": list(registry)}}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m trimbench.profile.overlay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="local folder, package:NAME[/SUBFOLDER] or hub id")
    parser.add_argument("--out", required=True, help="the overlay file to write")
    args = parser.parse_args(argv)
    Path(args.out).write_text(yaml.safe_dump(overlay(args.models), sort_keys=False))


if __name__ == "__main__":
    main()
