"""Jobs started cold against jobs forked by the warm interpreter (``trimbench.jobs.warm``).

Runs the same workflow twice, one run after the other, in empty directories: ``snakemake`` (each
job a new Python that imports what it needs) and ``python -m trimbench.jobs.warm`` (each job forked
from one server that imported torch, transformers, sentence-transformers & co. once). Prints
wall and CPU time (user + system, jobs included) of each and their ratio, and checks that both
wrote the same scores.

    python benchmarks/warm_start.py                        # the tiny test config's first experiment
    python benchmarks/warm_start.py --config config.yaml --target all   # the embedded default
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(launcher: list[str], workdir: Path, config: Path, targets: list[str]) -> tuple[float, float, int]:
    """Wall and CPU seconds of one run; the number of jobs it ran."""
    shutil.copy(config, workdir / "config.yaml")
    start, cpu = time.perf_counter(), children_cpu()
    result = subprocess.run([*launcher, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
                             "--cores", "2", "--profile", str(REPO / "profiles" / "default"), *targets],
                            cwd=workdir, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(launcher)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return wall, cpu, len(list((workdir / "results" / "logs").rglob("*.log")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=REPO / "tests" / "configs" / "tiny.yaml")
    parser.add_argument("--target", nargs="*", default=["results/2dmse-sts/tiny-sts/scores.parquet"])
    args = parser.parse_args()

    runs = {"cold": [sys.executable, "-m", "snakemake"], "warm": [sys.executable, "-m", "trimbench.jobs.warm"]}
    figures = {}
    with tempfile.TemporaryDirectory(prefix="trimbench-warm-bench-") as scratch:
        for name, launcher in runs.items():
            workdir = Path(scratch) / name
            workdir.mkdir()
            figures[name] = timed_run(launcher, workdir, args.config.resolve(), args.target)
        score_files = sorted((Path(scratch) / "cold" / "results").glob("*/scores.parquet"))
        for cold_scores in score_files:
            warm_scores = Path(scratch) / "warm" / cold_scores.relative_to(Path(scratch) / "cold")
            pd.testing.assert_frame_equal(pd.read_parquet(cold_scores), pd.read_parquet(warm_scores))
    print(f"{'run':<6} {'jobs':>5} {'wall s':>8} {'CPU s':>8} {'CPU s/job':>10}")
    for name, (wall, cpu, jobs) in figures.items():
        print(f"{name:<6} {jobs:>5} {wall:8.1f} {cpu:8.1f} {cpu / max(jobs, 1):10.2f}")
    (cold_wall, cold_cpu, _), (warm_wall, warm_cpu, _) = figures["cold"], figures["warm"]
    print(f"warm / cold: wall {warm_wall / cold_wall:.2f}, CPU {warm_cpu / cold_cpu:.2f}; "
          f"{len(score_files)} score tables identical")


if __name__ == "__main__":
    main()
