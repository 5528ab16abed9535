"""The mutation score of the last `make mutate` (mutmut's results in mutants/): per module and in
all, and every mutant the tests let live, with the command that shows its diff.

Score = mutants caught (a test failed, or the mutant ran past its time limit) / mutants run. A
mutant no selected test calls ("no tests") counts as a survivor: no test would catch that bug.
Mutants not run yet (a run limited with MUTANTS=, or stopped) are counted apart, not in the score.

A survivor read and found equivalent to the code (no input the code receives tells them apart) is
listed with its reason in benchmarks/mutation_equivalents.toml; the score counts it as a survivor
all the same, and a second figure sets the listed ones aside: caught / (run - equivalent), the
mutation score as the literature defines it (an equivalent mutant is no fault a test could catch).
A listed mutant that a test now kills, or that no longer exists (its function changed, so mutmut
numbered its mutants anew), is named as stale: the list must be read again.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import tomllib
from collections import Counter
from pathlib import Path

EQUIVALENTS = Path(__file__).with_name("mutation_equivalents.toml")

CAUGHT = ("killed", "timeout", "caught by type check")
LIVE = ("survived", "no tests", "suspicious", "segfault")


def results(mutants: Path) -> dict[str, str]:
    """Mutant name -> mutmut's status, over every module mutmut has mutated."""
    from mutmut.stats import status_by_exit_code

    found = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            found[name] = status_by_exit_code[code]
    return found


def equivalents(path: Path = EQUIVALENTS) -> dict[str, str]:
    """Mutant name -> why it is equivalent to the code (the file's [equivalent] table)."""
    if not path.is_file():
        return {}
    reasons = tomllib.loads(path.read_text())["equivalent"]
    blank = [name for name, reason in reasons.items() if not str(reason).strip()]
    if blank:
        raise SystemExit(f"{path}: an equivalent mutant needs its reason: {', '.join(blank)}")
    return reasons


def module_of(name: str) -> str:
    return name.rsplit(".", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=Path, default=Path("mutants"), help="mutmut's folder (default: mutants)")
    parser.add_argument("patterns", nargs="*", help="only mutants whose names match these globs, as given to "
                                                    "`mutmut run` (default: all)")
    args = parser.parse_args()
    statuses = {name: status for name, status in results(args.mutants).items()
                if not args.patterns or any(fnmatch.fnmatch(name, p) for p in args.patterns)}
    if not statuses:
        raise SystemExit(f"no mutmut results in '{args.mutants}': run `make mutate` first")
    by_module: dict[str, Counter] = {}
    for name, status in statuses.items():
        by_module.setdefault(module_of(name), Counter())[status] += 1
    print(f"{'module':40} {'run':>6} {'caught':>7} {'live':>5} {'score':>7} {'not run':>8}")
    total = Counter()
    for module, counts in sorted(by_module.items()):
        total += counts
        print(_line(module, counts))
    print(_line("all", total))
    live = sorted(name for name, status in statuses.items() if status in LIVE)
    reasons = equivalents()
    listed = [name for name in live if name in reasons]
    run = sum(total[s] for s in CAUGHT + LIVE)
    if listed:
        print(f"{'all, equivalents set aside (the score)':40} {run - len(listed):6d} {run - len(live):7d} "
              f"{len(live) - len(listed):5d} {(run - len(live)) / max(run - len(listed), 1):7.1%}")
    if live:
        print(f"\n{len(live)} mutants the tests let live (`mutmut show NAME` prints the diff; "
              f"{len(listed)} equivalent, with the reason from {EQUIVALENTS.name}):")
        for name in live:
            print(f"  {name}: {statuses[name]}" + (f" (equivalent: {reasons[name]})" if name in reasons else ""))
    measured = {module_of(name) for name in statuses}
    stale = sorted(name for name in reasons if module_of(name) in measured and statuses.get(name) not in LIVE)
    if stale:
        print(f"\n{len(stale)} listed equivalents that no longer live (killed, or renumbered: read them again):")
        for name in stale:
            print(f"  {name}: {statuses.get(name, 'no such mutant')}")


def _line(label: str, counts: Counter) -> str:
    caught, live = sum(counts[s] for s in CAUGHT), sum(counts[s] for s in LIVE)
    run = caught + live
    score = f"{caught / run:.1%}" if run else "-"
    return f"{label:40} {run:6d} {caught:7d} {live:5d} {score:>7} {counts['not checked']:8d}"


if __name__ == "__main__":
    main()
