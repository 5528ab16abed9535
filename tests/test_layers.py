"""The layers contract that `make lint` checks (lint-imports, pyproject.toml's [tool.importlinter]):
the package keeps it, and a copy of the package with one import planted against it fails, naming
that import. The copy is what lint-imports reads: it puts its working directory first on sys.path."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """lint-imports with the checkout's contracts on the package under ``root``."""
    return subprocess.run([str(LINT_IMPORTS), "--config", str(REPO / "pyproject.toml"), "--no-cache", "--no-logo"],
                          cwd=root, capture_output=True, text=True, timeout=300)


@pytest.fixture
def package_copy(tmp_path) -> Path:
    shutil.copytree(REPO / "trimbench", tmp_path / "trimbench", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def plant(root: Path, module: str, line: str) -> None:
    """``line`` at the end of ``module``'s file (a new module where there is none)."""
    path = root / Path(*module.split(".")).with_suffix(".py")
    text = path.read_text() if path.exists() else '"""planted by tests/test_layers.py"""\n'
    path.write_text(f"{text}\n{line}\n")


def test_the_package_keeps_its_layers(package_copy):
    done = lint_imports(package_copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(("module", "line", "told"), [
    # the job runner reaching up to the report
    ("trimbench.jobs.planted", "from trimbench.report import scoreboard  # noqa",
     ["trimbench.jobs is not allowed to import trimbench.report", "trimbench.jobs.planted -> trimbench.report"]),
    # a track reaching up to the config
    ("trimbench.electra.report", "from trimbench.config import prepare  # noqa",
     ["trimbench.electra is not allowed to import trimbench.config",
      "trimbench.electra.report -> trimbench.config.prepare"]),
    # a track importing another track
    ("trimbench.splade.triplets", "from trimbench.dense import variants  # noqa",
     ["trimbench.splade is not allowed to import trimbench.dense",
      "trimbench.splade.triplets -> trimbench.dense.variants"]),
    # the errors importing anything of trimbench
    ("trimbench.errors", "from trimbench.jobs import faults  # noqa",
     ["trimbench.errors is not allowed to import trimbench.jobs", "trimbench.errors -> trimbench.jobs.faults"]),
    # a cycle between two shared modules (the acyclic contract names it)
    ("trimbench.bm25", "from trimbench import negatives  # noqa",
     ["No cycles are allowed in trimbench", "negatives"]),
    # a basic shared module reaching up to the drawing kit (the shared modules' floors)
    ("trimbench.metrics", "from trimbench.plots import figures  # noqa",
     ["trimbench.metrics is not allowed to import trimbench.plots", "trimbench.metrics -> trimbench.plots.figures"]),
    # a module on no floor
    ("trimbench.unplaced", "import json  # noqa",
     ["trimbench.unplaced"]),
])
def test_an_import_against_the_layers_fails_naming_it(package_copy, module, line, told):
    plant(package_copy, module, line)
    done = lint_imports(package_copy)
    assert done.returncode != 0
    for text in told:
        assert text in done.stdout, done.stdout
