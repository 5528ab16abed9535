"""The presets' cost, from their plans: docs/costs.md (each preset's totals on the README's GPUs, what
does not fit, what is not priced and why) and the cost cells of README.md and configs/README.md.

    python -m trimbench.plan.costs            # prints what --write would write
    python -m trimbench.plan.costs --write    # make plan-presets

tests/plan/test_costs.py holds the READMEs' cells to docs/costs.md, and docs/costs.md to a fresh plan
(marker slow: every preset's dry run).
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import pandas as pd

from trimbench.cost.gpus import find_gpu, usable_gib
from trimbench.plan.dryrun import REPO
from trimbench.plan.plan import plan_many, rows, totals
from trimbench.tracks import TRACKS

#: the GPUs of the cost cells
GPUS = ("a100-80gb", "h100-80gb")
#: each preset (a run: its files): the tracks' own (their faces' ``presets``), then mini (every track)
PRESETS = {**{run: list(files) for track in TRACKS.values() for run, files in track.presets.items()},
           "mini": ["configs/mini.yaml"]}
COSTS_MD = REPO / "docs" / "costs.md"
COSTS_CSV = REPO / "docs" / "costs.csv"
#: a README row's preset link -> its preset; the cost cell is the row's cost column
CONFIGS_README = REPO / "configs" / "README.md"
README = REPO / "README.md"
#: the paper presets of README's tracks table, one row each (its first cell names the preset's file), from
#: the faces: a preset of one file (an overlay's run is on the cost page only)
README_PRESETS = [run for track in TRACKS.values() for run, files in track.presets.items() if len(files) == 1]


def plan_presets(cache_dir: Path | None = None, bounded: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every preset's jobs on :data:`GPUS` (the plan's table) and its totals; ``bounded``, when given,
    gets each preset's texts priced at their maximum length (no measured or recorded lengths)."""
    runs = [[str(REPO / path) for path in files] for files in PRESETS.values()]
    # in an empty working directory: a checkout's own results (tables built by a run) would change the
    # lengths measured, and the figures with them
    with tempfile.TemporaryDirectory(prefix="trimbench-costs-") as empty:
        planned = plan_many(runs, list(GPUS), workdir=Path(empty), cache_dir=cache_dir)
    tables = [rows(name, plans) for name, (_, plans, _) in zip(PRESETS, planned, strict=True)]
    if bounded is not None:
        bounded.update({name: sorted(f"{dataset} {split} {column}" for (dataset, split, column), source in
                                     lengths.items() if source.startswith("upper bound"))
                        for name, (_, _, lengths) in zip(PRESETS, planned, strict=True)})
    table = pd.concat(tables, ignore_index=True)
    return table, totals(table)


def _bounded(table: pd.DataFrame, run: str) -> int:
    """The priced jobs of the run (on one GPU) that took a length's upper bound (no measured or
    recorded lengths): their estimate prices those texts at their maximum length."""
    jobs = table[(table["run"] == run) & table["tflops"].notna() & (table["gpu"] == GPUS[0])]
    return int(jobs["lengths"].str.contains("upper bound", regex=False).sum())


def summary(table: pd.DataFrame, summary_totals: pd.DataFrame) -> pd.DataFrame:
    """One row per preset: the cells' figures."""
    out = []
    for run in PRESETS:
        per_gpu = summary_totals[summary_totals["run"] == run].set_index("gpu")
        first = per_gpu.loc[GPUS[0]]
        out.append({"preset": run, "jobs": int(first["jobs"]), "gpu_jobs": int(first["gpu_jobs"]),
                    "unpriced": int(first["unpriced"]), "unpriced_jobs": first["unpriced_jobs"],
                    "at_max_length": _bounded(table, run),
                    **{f"gpu_hours_{gpu}{end}": float(f"{per_gpu.loc[gpu, f'gpu_hours{end}']:.3g}")
                       for gpu in GPUS for end in ("", "_low", "_high")},
                    "widest_gib": round(float(first["widest_gib"]), 1), "over_40gb": int(first["over_40gb"]),
                    "over_80gb": int(first["over_80gb"]), "disk_gb": round(float(first["disk_gb"]), 1)})
    return pd.DataFrame(out)


def _hours(hours: float) -> str:
    """Three significant figures, as the plan rounds them (117, not 117.0; 1,060, not 1,060.0)."""
    if hours < 1:
        return f"{hours:.2g}"
    hours = float(f"{hours:.3g}")
    return f"{hours:,.{max(0, 2 - math.floor(math.log10(hours)))}f}"


#: a preset whose jobs all run on the CPU (the trim profile): nothing for a GPU budget
NO_GPU_JOB = "no GPU job (CPU minutes: see its page)"


def _estimate(row: dict, gpu: str) -> str:
    """``gpu``'s estimate and range: "est. 54 GPU-h (range 20-310) on A100-80GB"."""
    if not row["gpu_jobs"]:
        return NO_GPU_JOB
    low, high = (_hours(row[f"gpu_hours_{gpu}_{end}"]) for end in ("low", "high"))
    return f"est. {_hours(row[f'gpu_hours_{gpu}'])} GPU-h (range {low}–{high}) on {gpu.upper()}"


def _unpriced(row: dict) -> str:
    """The jobs in no total, named."""
    if not row["unpriced"]:
        return ""
    return f"; {row['unpriced']} job(s) not priced, in no figure: {row['unpriced_jobs']}"


def cell(row: dict, link: str) -> str:
    """A preset's cost cell: the estimate and its range on the README's GPUs, the jobs whose texts
    have no recorded lengths, the widest job, disk, jobs, and the jobs the plan could not price (named)."""
    hours = NO_GPU_JOB if not row["gpu_jobs"] else ", ".join(_estimate(row, gpu) for gpu in GPUS)
    at_max = (f"; {row['at_max_length']} job(s) with texts at their maximum length (none recorded)"
              if row["at_max_length"] else "")
    fit = (f"{row['over_40gb']} job(s) over 40 GB" if row["over_40gb"] else "every job fits 40 GB")
    return (f"{hours}{at_max}; widest job {row['widest_gib']:.1f} GiB ({fit}); {row['disk_gb']:,.1f} GB written; "
            f"{row['jobs']} jobs{_unpriced(row)} ([plan]({link}#{row['preset']}))")


def short_cell(row: dict, link: str) -> str:
    """The README track table's cell: the estimate and range on the first GPU, the jobs not priced,
    and the plan's link."""
    unpriced = f"; {row['unpriced']} job(s) not priced" if row["unpriced"] else ""
    return f"{_estimate(row, GPUS[0])}{unpriced} ([plan]({link}#{row['preset']}))"


def _table_column(lines: list[str], column: str) -> tuple[int, int]:
    """The header line of the first markdown table with ``column``, and that column's index."""
    header = next(i for i, line in enumerate(lines) if line.startswith("|") and f" {column} " in line)
    return header, [c.strip() for c in lines[header].strip("|").split("|")].index(column)


def _rewrite_cells(path: Path, rows_of: dict[str, str], column: str) -> str:
    """``path``'s markdown table with each row's ``column`` cell from ``rows_of`` (row key -> cell)."""
    lines = path.read_text().splitlines()
    header, index = _table_column(lines, column)
    for i in range(header + 2, len(lines)):
        if not lines[i].startswith("|"):
            break
        cells = lines[i].strip().strip("|").split("|")
        key = next((key for key in rows_of if f"`{key}.yaml`" in cells[0] or f"`{key}`" == cells[0].strip()
                    or f"`overlays/{key}.yaml`" in cells[0]), None)
        if key is not None:
            cells[index] = f" {rows_of[key]} "
            lines[i] = "|" + "|".join(cells) + "|"
    return "\n".join(lines) + "\n"


def readme_cells(figures: pd.DataFrame) -> dict[Path, str]:
    """README.md and configs/README.md with their cost cells from ``figures``."""
    by_preset = {row["preset"]: row for row in figures.to_dict("records")}
    configs = _rewrite_cells(CONFIGS_README, {name: cell(row, "../docs/costs.md") for name, row in by_preset.items()},
                             "cost")
    presets = {name: short_cell(by_preset[name], "docs/costs.md") for name in README_PRESETS}
    readme = _rewrite_cells(README, presets, "cost")
    return {CONFIGS_README: configs, README: readme}


def costs_markdown(table: pd.DataFrame, figures: pd.DataFrame, bounded: dict) -> str:
    lines = ["# What each preset costs", "",
             "Generated by `make plan-presets` (`python -m trimbench.plan.costs --write`) from the cost plan of each "
             "preset ([docs/plan.md](plan.md)): every job of its dry run, priced offline on the GPUs below. "
             "`gpu_hours_<gpu>` is the estimate: the texts' measured or recorded lengths (their maximum length "
             "where none is recorded: `at_max_length` counts those jobs) at each dtype's central MFU; `_low`: the "
             "same lengths at the dtype's high MFU; `_high`: every batch padded to the longest text recorded (the "
             "truncation length where none is) at the dtype's low MFU (trimbench/cost/gpus.py `MFU`, each figure "
             "with its source). None is a bound: the MFU is public figures, not a measurement of these jobs on a "
             "GPU. Jobs not priced are in no figure; `unpriced_jobs` names them. tests/plan/test_costs.py keeps "
             "this page, the README's cost column and configs/README.md's in step with the plan.", "",
             figures.to_markdown(index=False), ""]
    for run in PRESETS:
        jobs = table[(table["run"] == run) & (table["gpu"] == GPUS[0])]
        lines += [f"## {run}", "", f"Files: {', '.join(f'`{path}`' for path in PRESETS[run])}.", ""]
        priced = jobs[jobs["tflops"].notna()]
        if len(priced):
            per_rule = priced.groupby("rule").agg(jobs=("job", "count"), gpu_hours=("gpu_hours", "sum"),
                                                  widest_gib=("peak_gib", "max"), disk_gb=("disk_gb", "sum"))
            lines += [f"GPU jobs by rule on {GPUS[0]}:", "", per_rule.to_markdown(floatfmt=".1f"), ""]
        if bounded.get(run):
            lines += ["Texts priced at their maximum length (no measured or recorded lengths: give a contract "
                      "`lengths:`, a url dataset's `datasets.<name>.lengths` or a local copy to price them "
                      "closer): " + ", ".join(bounded[run]) + ".", ""]
        usable = usable_gib(find_gpu("a100-40gb"))
        wide = priced[priced["peak_gib"] > usable]
        if len(wide):
            lines += [f"Jobs over 40 GB (more than the {usable:.0f} GiB a job can use of it):",
                      "", *[f"- {job} ({gib:.1f} GiB)" for job, gib in
                                                zip(wide["job"], wide["peak_gib"], strict=True)], ""]
        unpriced = jobs[jobs["unknown"] != ""]
        if len(unpriced):
            lines += ["Not priced (what the plan lacks):", "",
                      *[f"- {reason} ({count} job(s))" for reason, count in
                        sorted(unpriced["unknown"].value_counts().items(), key=lambda item: (-item[1], item[0]))], ""]
    return "\n".join(lines)


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write docs/costs.{md,csv} and the READMEs' cells")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    bounded: dict = {}
    table, summary_totals = plan_presets(bounded=bounded)
    figures = summary(table, summary_totals)
    if not args.write:
        print(figures.to_markdown(index=False))
        return
    COSTS_CSV.write_text(figures.to_csv(index=False))
    COSTS_MD.write_text(costs_markdown(table, figures, bounded))
    for path, text in readme_cells(figures).items():
        path.write_text(text)
    print(f"wrote {COSTS_MD.relative_to(REPO)}, {COSTS_CSV.relative_to(REPO)} and the READMEs' cost cells")


def cells_of(path: Path, column: str = "cost") -> list[str]:
    """The ``column`` cells of the first table of ``path`` that has one (for the tests)."""
    lines = path.read_text().splitlines()
    header, index = _table_column(lines, column)
    out = []
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        out.append(line.strip().strip("|").split("|")[index].strip())
    return out


if __name__ == "__main__":
    main()
