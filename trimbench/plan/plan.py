"""A run's plan: the dry run's jobs priced on each GPU asked for, written as tables (results/plan/)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from trimbench.config.prepare import prepare
from trimbench.config.schema import load_config
from trimbench.cost.gpus import GPUS, find_gpu, gpu_table, usable_gib
from trimbench.cost.step import count_all
from trimbench.plan.context import PlanContext
from trimbench.plan.dryrun import dry_run
from trimbench.plan.price import GIB, JobPlan, Settings, plan_job, steps_to_count

GB = 10**9
#: the plan's table, a row per job and GPU
COLUMNS = ["run", "gpu", "rule", "job", "examples", "optimizer_steps", "tokens", "tflops", "peak_gib",
           "fits", "fits_on", "advice", "gpu_hours", "gpu_hours_low", "gpu_hours_high", "at_max_length",
           "runtime_min", "mem_mb", "disk_gb", "unknown", "lengths"]


def default_cache() -> Path:
    """Where counted steps are kept between plans and dry runs (a step is the same in any run)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trimbench" / "steps"


def run_config(configfiles: list[str], overrides: list[str] = (), workdir: Path = Path(".")) -> dict:
    """The prepared config of a run, as the workflow reads it."""
    from snakemake.cli import parse_config

    return prepare(load_config(configfiles, parse_config(list(overrides))), workdir)


def plan_run(configfiles: list[str], gpus: list[str] | None, overrides: list[str] = (), workdir: Path = Path("."),
             remaining: bool = False, cache_dir: Path | None = None) -> dict[str, list[JobPlan]]:
    """Each GPU -> every job of the run's dry run, priced."""
    ((_, plans, _),) = plan_many([configfiles], gpus, overrides, workdir, remaining, cache_dir)
    return plans


def plan_many(runs: list[list[str]], gpus: list[str] | None, overrides: list[str] = (), workdir: Path = Path("."),
              remaining: bool = False, cache_dir: Path | None = None) -> list[tuple[str, dict, dict]]:
    """Each run's name, its plans (each GPU -> every job of its dry run, priced) and where each (dataset,
    split, column)'s lengths came from. The dry runs run side by side, then every step not yet counted
    is counted on every core, then each job is priced."""
    cache_dir = cache_dir or default_cache()
    # each run's config and every GPU name checked first: a typo is named in seconds, not after the
    # dry runs and the step counting (minutes)
    configs = [run_config(configfiles, overrides, workdir) for configfiles in runs]
    for config in configs:
        table = gpu_table(config["plan_gpus"])
        for gpu in gpus or []:
            find_gpu(gpu, table)
    listed = dry_runs(runs, list(overrides), workdir, remaining)
    prepared = []
    for configfiles, config, jobs in zip(runs, configs, listed, strict=True):
        prepared.append((configfiles, config, PlanContext(config, workdir, cache_dir), jobs))
    count_all([step for _, config, context, jobs in prepared for step in steps_to_count(jobs, config, context)],
              cache_dir, workers=os.cpu_count() or 1)
    out = []
    for configfiles, config, context, jobs in prepared:
        plans = {}
        for gpu in gpus or [config["plan_gpu"]]:
            settings = Settings.of(config, gpu, cache_dir)
            plans[gpu] = [plan_job(job.rule, job.wildcards, config, context, settings) for job in jobs]
        out.append(("+".join(Path(path).stem for path in configfiles), plans, dict(context.length_sources)))
    return out


def dry_runs(runs: list[list[str]], overrides: list[str], workdir: Path, remaining: bool = False) -> list[list]:
    """The jobs of each run's dry run, the dry runs side by side (each a Snakemake process)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(lambda files: dry_run(files, overrides, workdir, remaining=remaining)[0], runs))


def rows(run: str, plans: dict[str, list[JobPlan]]) -> pd.DataFrame:
    out = []
    for gpu, jobs in plans.items():
        for job in jobs:
            work = job.work
            out.append({
                "run": run, "gpu": gpu, "rule": job.rule, "job": job.label,
                "examples": work.examples if work else None,
                "optimizer_steps": work.optimizer_steps if work else None,
                "tokens": job.tokens or None, "tflops": job.flops / 1e12 if job.priced else None,
                "peak_gib": job.peak_bytes / GIB if job.priced else None,
                "fits": job.fits.get(gpu) if job.priced else None,
                "fits_on": " ".join(name for name, fits in job.fits.items() if fits) if job.priced else "",
                "advice": job.advice, "gpu_hours": job.gpu_hours if job.priced else None,
                "gpu_hours_low": job.gpu_hours_low if job.priced else None,
                "gpu_hours_high": job.gpu_hours_high if job.priced else None,
                "at_max_length": job.bounded if job.priced else None,
                "runtime_min": job.runtime_minutes or None, "mem_mb": job.mem_mb or None,
                # a job writing what no count gives has an unknown disk, not its counted part's
                "disk_gb": (job.disk_bytes / GB) if work and not job.disk_unknown else None,
                "unknown": "; ".join(job.unknown),
                "lengths": "; ".join(dict.fromkeys(p.lengths_source for p in work.phases)) if work else "",
            })
    return pd.DataFrame(out, columns=COLUMNS)


def totals(table: pd.DataFrame) -> pd.DataFrame:
    """Per run and GPU: jobs, GPU jobs priced and not (and the rules of those not), GPU-hours (the
    estimate and its range's low and high ends), the priced jobs with texts at their maximum length
    (no recorded lengths), tokens, FLOPs, the widest job, the jobs that fit no 40 GB / 80 GB device
    (less the fit test's headroom), disk."""
    out = []
    for (run, gpu), jobs in table.groupby(["run", "gpu"], sort=False):
        priced = jobs[jobs["tflops"].notna()]
        out.append({
            "run": run, "gpu": gpu, "jobs": len(jobs), "gpu_jobs": len(priced),
            "unpriced": int((jobs["unknown"] != "").sum()),
            "unpriced_jobs": "; ".join(sorted(jobs.loc[jobs["unknown"] != "", "job"])),
            "gpu_hours": priced["gpu_hours"].sum(), "gpu_hours_low": priced["gpu_hours_low"].sum(),
            "gpu_hours_high": priced["gpu_hours_high"].sum(),
            "at_max_length": int(priced["at_max_length"].astype(bool).sum()), "tokens": priced["tokens"].sum(),
            "pflops": priced["tflops"].sum() / 1e3, "widest_gib": priced["peak_gib"].max() if len(priced) else 0.0,
            "over_40gb": int((priced["peak_gib"] > usable_gib(GPUS["a100-40gb"])).sum()),
            "over_80gb": int((priced["peak_gib"] > usable_gib(GPUS["a100-80gb"])).sum()),
            "not_fitting": int((priced["fits"] == False).sum()),  # noqa: E712 (a column of booleans)
            "disk_gb": jobs["disk_gb"].sum(),
            # jobs whose disk the plan cannot count, left out of disk_gb
            "disk_unknown": int((jobs["disk_gb"].isna() & jobs["examples"].notna()).sum()),
        })
    return pd.DataFrame(out)


def plan_runs(runs: list[list[str]], gpus: list[str] | None, overrides: list[str], out: Path,
              remaining: bool = False, cache_dir: Path | None = None) -> str:
    """Plan each run on each GPU; write the tables; return the totals as markdown."""
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    for name, plans, lengths in plan_many(runs, gpus, overrides, Path("."), remaining, cache_dir):
        table = rows(name, plans)
        table.to_csv(out / f"{name}.csv", index=False)
        summary = totals(table)
        (out / f"{name}.md").write_text(_markdown(name, table, summary, plans, lengths))
        summaries.append(summary)
    summary = pd.concat(summaries, ignore_index=True)
    summary.to_csv(out / "summary.csv", index=False)
    text = summary.to_markdown(index=False, floatfmt=".3g")
    (out / "summary.md").write_text(f"# Plan totals\n\n{text}\n")
    return text


def _markdown(name: str, table: pd.DataFrame, summary: pd.DataFrame, plans: dict, lengths: dict) -> str:
    lines = [f"# Plan of {name}", "", summary.to_markdown(index=False, floatfmt=".3g"), ""]
    problems = [line for jobs in plans.values() for job in jobs for line in job.problems]
    if problems:
        lines += ["## Flagged", "", *[f"- {line}" for line in problems], ""]
    first = next(iter(plans.values()), [])
    unknown_disk = [f"- {job.label}: {'; '.join(job.disk_unknown)}" for job in first if job.disk_unknown]
    if unknown_disk:
        lines += ["## Disk not counted", "", "Left out of disk_gb (the jobs' disk_gb is empty):", "",
                  *unknown_disk, ""]
    shown = ["gpu", "job", "examples", "optimizer_steps", "tokens", "tflops", "peak_gib", "fits", "gpu_hours",
             "gpu_hours_low", "gpu_hours_high", "at_max_length", "runtime_min", "mem_mb", "disk_gb", "unknown"]
    lines += ["## Jobs", "", table[table["examples"].notna() | (table["unknown"] != "")][shown]
              .to_markdown(index=False, floatfmt=".3g"), ""]
    if lengths:
        used = pd.DataFrame([{"dataset": dataset, "split": split, "column": column, "lengths": source}
                             for (dataset, split, column), source in sorted(lengths.items())])
        lines += ["## Where each dataset's lengths come from", "",
                  "Measured on a copy here, recorded in its contract, or the job's maximum length (an upper bound):",
                  "", used.to_markdown(index=False), ""]
    return "\n".join(lines)
