"""The SLURM ``runtime`` and ``mem_mb`` of a GPU job, from its plan (rules/common.smk ``planned``).

Where a job is queued (a cluster executor) or listed (a dry run), its runtime and host memory are its
plan's (trimbench.plan.price: counted FLOPs on ``plan_gpu`` x ``plan_margin``), and a job the plan
flags (it fits no ``plan_gpu``, or outlives ``plan_max_runtime``) is named on the terminal with what to
change, before anything is queued. A queued run submits no job planned over ``plan_max_runtime``
unless ``plan_submit_over_limit`` (:meth:`RulePlanner.refuse_over_limit`, from the workflow's
``onstart``: before any job starts). A job the plan cannot price (a row count or a model fact no
source gives) keeps the rule's own request, and the dry run says which and why. A local run queues
nothing: it keeps the rule's request too (it only bounds ``--resources mem_mb``), and counts nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from trimbench.errors import ConfigError
from trimbench.plan.context import PlanContext
from trimbench.plan.dryrun import LISTING_ONLY
from trimbench.plan.price import JobPlan, Settings, job_label, plan_job

RESOURCES = ("runtime", "mem_mb")



class RulePlanner:
    """One run's plans, job by job as Snakemake asks for their resources (each job priced once)."""

    def __init__(self, config: dict, workdir: Path, cache_dir: Path | None = None, report=None):
        self.config = config
        self.workdir = Path(workdir)
        self.cache_dir = cache_dir
        self.report = report or (lambda line: print(line, file=sys.stderr))
        self._plans: dict[tuple, JobPlan | None] = {}
        self._context = None
        #: the jobs priced over plan_max_runtime, by label
        self.over_limit: dict[str, JobPlan] = {}

    def resource(self, rule: str, wildcards: dict, kind: str, fallback: int, attempt: int,
                 queued: bool = True) -> int:
        """``kind`` (runtime, mem_mb) of the job, scaled by the attempt as its retries ask; the rule's
        ``fallback`` where the job is not ``queued`` (a local run), in the plan's own listing dry run
        (:data:`LISTING_ONLY`) and where the plan cannot price it."""
        if kind not in RESOURCES:
            raise ValueError(f"planned resource '{kind}': one of {', '.join(RESOURCES)}")
        if not queued or os.environ.get(LISTING_ONLY):
            return fallback * attempt
        plan = self.plan(rule, wildcards)
        if plan is None or not plan.priced:
            return fallback * attempt
        return (plan.runtime_minutes if kind == "runtime" else plan.mem_mb) * attempt

    def plan(self, rule: str, wildcards: dict) -> JobPlan | None:
        key = (rule, tuple(sorted(wildcards.items())))
        if key not in self._plans:
            self._plans[key] = self._price(rule, dict(wildcards))
        return self._plans[key]

    def _price(self, rule: str, wildcards: dict) -> JobPlan | None:
        from trimbench.plan.plan import default_cache

        label = job_label(rule, wildcards)
        try:
            if self._context is None:
                self._context = PlanContext(self.config, self.workdir, self.cache_dir or default_cache())
            settings = Settings.of(self.config, cache_dir=self._context.cache_dir)
            plan = plan_job(rule, wildcards, self.config, self._context, settings)
        except ConfigError as error:
            self.report(f"plan: {label} keeps its rule's runtime and mem_mb: {error}")
            return None
        if plan.work is not None and plan.unknown:
            self.report(f"plan: {label} keeps its rule's runtime and mem_mb: it cannot be priced: "
                        + "; ".join(plan.unknown))
        for problem in plan.problems:
            self.report(f"plan: {problem}")
        if plan.over_runtime:
            self.over_limit[label] = plan
        return plan

    def refuse_over_limit(self) -> None:
        """Before a queued run starts (its jobs' resources asked for first: rules/common.smk
        ``onstart``): a ConfigError naming every job priced over ``plan_max_runtime``, so that none is
        submitted, unless ``plan_submit_over_limit``. SLURM would reject such a job at ``sbatch``, or
        leave it pending for ever, and each retry would ask for more time again."""
        if not self.over_limit or self.config.get("plan_submit_over_limit"):
            return
        limit = next(iter(self.over_limit.values())).max_runtime
        jobs = "\n".join(f"  {label}: planned {plan.runtime_minutes} min"
                         for label, plan in sorted(self.over_limit.items()))
        raise ConfigError(f"{len(self.over_limit)} job(s) planned over plan_max_runtime ({limit} min, the "
                          f"partition's limit), so none is submitted:\n{jobs}\nraise their devices or split "
                          "them (docs/plan.md), or set plan_submit_over_limit: true to queue them anyway")
