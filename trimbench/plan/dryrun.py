"""The jobs of a Snakemake dry run: rule and wildcards of each, read from ``snakemake -n``'s listing
(the same jobs the workflow would run; tests/plan checks the count against its job stats)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from trimbench.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
#: set in the environment of the plan's own dry run, which only lists the jobs: the plan prices them
#: itself, once (trimbench.plan.resources)
LISTING_ONLY = "TRIMBENCH_PLAN_LISTING_ONLY"
_BLOCK = re.compile(r"\n(?=(?:local)?rule \w+:\n)")
_RULE = re.compile(r"(?:local)?rule (\w+):\n")


@dataclass(frozen=True)
class PlannedJob:
    rule: str
    wildcards: dict
    inputs: tuple
    outputs: tuple


def parse(listing: str) -> list[PlannedJob]:
    """Every job block of a dry run's listing."""
    jobs = []
    for block in _BLOCK.split(listing):
        rule = _RULE.match(block)
        if rule:
            jobs.append(PlannedJob(rule.group(1), _wildcards(_field(block, "wildcards")),
                                   tuple(_listed(block, "input")), tuple(_listed(block, "output"))))
    return jobs


def job_total(listing: str) -> int | None:
    """The dry run's own count of its jobs (the 'total' line of its job stats)."""
    total = re.search(r"^total\s+(\d+)$", listing, flags=re.MULTILINE)
    return int(total.group(1)) if total else None


def _field(block: str, name: str) -> str | None:
    found = re.search(rf"^    {name}: (.*)$", block, flags=re.MULTILINE)
    return found.group(1) if found else None


def _listed(block: str, name: str) -> list[str]:
    value = _field(block, name)
    return value.split(", ") if value else []


def _wildcards(value: str | None) -> dict:
    return dict(item.split("=", 1) for item in value.split(", ")) if value else {}


def dry_run(configfiles: list[Path], config: list[str] = (), workdir: Path = Path("."), remaining: bool = False,
            snakemake: list[str] | None = None) -> tuple[list[PlannedJob], str]:
    """The jobs of the dry run of ``configfiles`` (with ``--config`` entries ``config``) in ``workdir``:
    every job of the run (``--forceall``: what is done is planned too), or only those still to run."""
    snakemake = snakemake or [str(Path(sys.executable).with_name("snakemake"))]
    command = [*snakemake, "--snakefile", str(REPO / "Snakefile"), "-n", *([] if remaining else ["--forceall"]),
               "--configfile", *(str(Path(path).resolve()) for path in configfiles)]
    if config:
        command += ["--config", *config]
    # the plan prices the jobs itself: the dry run only lists them (rules/common.smk planned)
    env = {**os.environ, LISTING_ONLY: "1"}
    result = subprocess.run(command, capture_output=True, text=True, cwd=workdir, env=env)
    if result.returncode != 0:
        raise ConfigError(f"the dry run of {' '.join(map(str, configfiles))} failed:\n"
                          + (result.stdout.strip() + "\n" + result.stderr.strip())[-4000:])
    jobs = parse(result.stdout)
    total = job_total(result.stdout)
    if total is not None and total != len(jobs):
        raise RuntimeError(f"read {len(jobs)} jobs of the dry run's {total}: the listing changed format")
    return jobs, result.stdout
