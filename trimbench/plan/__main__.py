"""``python -m trimbench.plan``: every job of a run's dry run priced before the queue (``make plan``).

    python -m trimbench.plan configs/splade.yaml --gpu a100-80gb --gpu h100-80gb
    python -m trimbench.plan configs/splade.yaml+configs/overlays/splade-1-epoch.yaml

Each argument is one run (``+`` joins files given together, as several --configfile); each is planned on
every --gpu (default: the config's plan_gpu). Writes results/plan/<run>.{md,csv} (a row per job and
GPU) and results/plan/summary.{md,csv} (the totals), and prints the totals. Offline: no weights, no data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trimbench.errors import ConfigError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trimbench.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="config files of a run, joined by '+' (several runs: several)")
    parser.add_argument("--gpu", action="append", help="a GPU to plan on (several allowed; default: plan_gpu)")
    parser.add_argument("--config", nargs="*", default=[], help="config entries key=value, as snakemake --config")
    parser.add_argument("--out", type=Path, default=Path("results/plan"), help="folder of the plan's files")
    parser.add_argument("--remaining", action="store_true", help="only the jobs still to run here")
    parser.add_argument("--cache", type=Path, default=None, help="the counted steps' cache (default: plan_cache)")
    args = parser.parse_args(argv)
    from trimbench.plan.plan import plan_runs

    try:
        summary = plan_runs([run.split("+") for run in args.runs], args.gpu, args.config, args.out,
                            remaining=args.remaining, cache_dir=args.cache)
    except ConfigError as error:
        print(f"make plan: {error}", file=sys.stderr)
        return 2
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
