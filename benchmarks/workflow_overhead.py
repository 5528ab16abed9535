"""Workflow overhead: a dry run of every paper preset together, and a no-op re-run (figure 4).

1. ``snakemake -n`` with every ``configs/*.yaml`` as ``--configfile`` (in an empty temporary
   directory: nothing exists, so every job of every preset is planned), and the same with ``-q``
   (no per-job printout);
2. ``snakemake`` on a directory where the embedded default has already run (``--workdir``,
   default the repository): nothing to do, so the time is parsing, config validation and the DAG.
   Only timed where ``snakemake -n`` finds nothing pending (else the run would do the work).

Each command runs ``--repeats`` times; the best wall time counts, printed with its CPU time (user +
system: on a shared machine, wall time grows with the others' load, CPU time much less). Also
prints how long the parse-time work of ``rules/common.smk`` (imports and
``trimbench.config.prepare``) takes for the presets.

    python benchmarks/workflow_overhead.py
    python benchmarks/workflow_overhead.py --workdir /path/to/a/finished/run
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", "2"]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args: list[str], workdir: Path, repeats: int) -> tuple[float, float, str]:
    """Best wall time, and the CPU time of that run (what a shared machine does not inflate)."""
    best, cpu, output = float("inf"), 0.0, ""
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), children_cpu()
        result = subprocess.run([*SNAKEMAKE, "--directory", str(workdir), *args], capture_output=True, text=True,
                                cwd=workdir)
        if time.perf_counter() - start < best:
            best, cpu = time.perf_counter() - start, children_cpu() - cpu_start
        output = result.stdout + result.stderr
        if result.returncode != 0:
            raise SystemExit(f"snakemake {' '.join(args)} failed:\n{output[-3000:]}")
    return best, cpu, output


def total_jobs(output: str) -> int:
    """The total of snakemake's job stats table (0 when there is nothing to do)."""
    match = re.search(r"^total\s+(\d+)", output, flags=re.MULTILINE)
    return int(match.group(1)) if match else 0


def parse_time_work(presets: list[Path], workdir: Path, repeats: int) -> float:
    """Seconds of what common.smk does before Snakemake builds the DAG, in a fresh interpreter."""
    code = f"""
import time, yaml
start = time.perf_counter()
from trimbench.config import prepare as config
from trimbench.electra import checks as truncation
from trimbench.dense.ablations import ablation_groups
merged = {{}}
for path in {[str(p) for p in presets]!r}:
    for key, value in yaml.safe_load(open(path)).items():
        merged[key] = {{**merged.get(key, {{}}), **value}} if isinstance(value, dict) else value
config.prepare(merged, {str(workdir)!r})
print(time.perf_counter() - start)
"""
    return min(float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                    cwd=REPO).stdout.split()[-1]) for _ in range(repeats))


def touch_trec_files(presets: list[Path], workdir: Path) -> None:
    """The TREC topic / qrels files presets name (SPLADE's DL19 / DL20) must exist at config time;
    empty ones stand in for them (a dry run reads nothing)."""
    import yaml

    for preset in presets:
        for entry in yaml.safe_load(preset.read_text())["datasets"].values():
            for key in ("topics", "qrels"):
                if key in entry and not Path(entry[key]).is_absolute():
                    (workdir / entry[key]).parent.mkdir(parents=True, exist_ok=True)
                    (workdir / entry[key]).touch()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=REPO, help="a directory where the embedded default ran")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--budget", type=float, default=3.0, help="seconds each should take at most")
    args = parser.parse_args()

    presets = sorted((REPO / "configs").glob("*.yaml"))

    def report(what: str, jobs: int, seconds: float, cpu: float) -> None:
        print(f"{what:<48} {jobs:>6} {seconds:8.2f} {cpu:8.2f} {'ok' if seconds <= args.budget else 'OVER':>7}",
              flush=True)

    print(f"{'what':<48} {'jobs':>6} {'wall s':>8} {'CPU s':>8} {'budget':>7}", flush=True)
    with tempfile.TemporaryDirectory(prefix="trimbench-dry-") as empty:
        touch_trec_files(presets, Path(empty))
        configs = ["--configfile", *map(str, presets)]
        seconds, cpu, output = run(["-n", *configs], Path(empty), args.repeats)
        jobs = total_jobs(output)
        report(f"snakemake -n, {len(presets)} presets together", jobs, seconds, cpu)
        seconds, cpu, _ = run(["-n", "-q", *configs], Path(empty), args.repeats)
        report("snakemake -n -q (no job list printed), the same", jobs, seconds, cpu)
        parse_seconds = parse_time_work(presets, Path(empty), args.repeats)
    seconds, cpu, output = run(["-n"], args.workdir, args.repeats)
    pending = total_jobs(output)
    report(f"snakemake -n, embedded default in {args.workdir.name}", pending, seconds, cpu)
    if pending:  # a real run would do that work: no no-op to time
        print(f"no no-op re-run timed: {pending} jobs pending in {args.workdir} (run snakemake there first)")
    else:
        seconds, cpu, output = run([], args.workdir, args.repeats)
        report("no-op re-run of the embedded default", total_jobs(output), seconds, cpu)
    print(f"of which common.smk's imports and config.prepare for the {len(presets)} presets: "
          f"{parse_seconds:.2f} s")


if __name__ == "__main__":
    main()
