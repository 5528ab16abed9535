"""How long the cluster profile takes: time to the first job, and a whole DAG on SLURM vs locally.

Runs a config (default: the tests' tiny config) in fresh temporary directories, once through
`snakemake --profile profiles/slurm --profile profiles/local-slurm` and once locally, and prints:
  first job       - from starting snakemake to its first job (a localrule: data preparation);
  first sbatch    - ... to the first job submitted to SLURM;
  first running   - ... to the first SLURM job running (its Start in sacct, 1 s resolution);
  whole DAG       - wall time on the cluster and locally, and the number of SLURM jobs.
Needs a running cluster (cluster/start-local-slurm.sh). Usage:
  python benchmarks/slurm_latency.py [--config tests/configs/tiny.yaml] [--no-local]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+)")
JOB_STARTED = re.compile(r"^(local)?rule \w+:$")


def snakemake(workdir: Path, *profiles: str) -> list[str]:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    for profile in profiles:
        cmd += ["--profile", str(REPO / "profiles" / profile)]
    return cmd


def timed_run(cmd: list[str], workdir: Path) -> tuple[float, dict[str, float], list[str]]:
    """Wall time, seconds to the first line matching each event, SLURM job ids."""
    started = time.time()
    firsts: dict[str, float] = {}
    slurm_ids: list[str] = []
    with subprocess.Popen(cmd, cwd=workdir, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as run:
        for line in run.stdout:
            if JOB_STARTED.match(line.strip()):
                firsts.setdefault("first job", time.time() - started)
            if match := SUBMITTED.search(line):
                firsts.setdefault("first sbatch", time.time() - started)
                slurm_ids.append(match.group(1))
    if run.returncode:
        raise SystemExit(f"snakemake failed ({run.returncode}); see {workdir}/.snakemake/log/")
    return time.time() - started, {**firsts, "_started": started}, slurm_ids


def first_running(slurm_ids: list[str], started: float) -> float:
    starts = subprocess.run(["sacct", "-X", "-n", "-P", "-j", ",".join(slurm_ids), "-o", "Start"],
                            capture_output=True, text=True, check=True).stdout.split()
    return min(datetime.fromisoformat(start).timestamp() for start in starts) - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=REPO / "tests" / "configs" / "tiny.yaml")
    parser.add_argument("--no-local", action="store_true", help="skip the local run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="slurm-latency-") as tmp:
        cluster_dir, local_dir = Path(tmp) / "cluster", Path(tmp) / "local"
        for workdir in (cluster_dir, local_dir):
            workdir.mkdir()
            (workdir / "config.yaml").write_text(args.config.read_text())
        wall, firsts, slurm_ids = timed_run(snakemake(cluster_dir, "slurm", "local-slurm"), cluster_dir)
        print(f"cluster ({len(slurm_ids)} SLURM jobs): first job {firsts['first job']:.1f} s, "
              f"first sbatch {firsts['first sbatch']:.1f} s, "
              f"first running {first_running(slurm_ids, firsts['_started']):.1f} s, whole DAG {wall:.1f} s")
        if not args.no_local:
            wall, firsts, _ = timed_run(snakemake(local_dir), local_dir)
            print(f"local: first job {firsts['first job']:.1f} s, whole DAG {wall:.1f} s")


if __name__ == "__main__":
    main()
