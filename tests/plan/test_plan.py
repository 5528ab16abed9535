"""The plan (trimbench.plan): every job of the dry run listed, a job's work priced from its counted
steps, what SLURM is asked for, and what the plan and the dry run flag before the queue."""

from __future__ import annotations

import math
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import PLAN_LISTING_ONLY, REPO, SNAKEMAKE, priced_env

from trimbench.config.prepare import prepare
from trimbench.config.schema import load_config
from trimbench.cost.step import Step, step_cost
from trimbench.cost.work import Phase, Work
from trimbench.errors import ConfigError
from trimbench.plan import price
from trimbench.plan.context import PlanContext
from trimbench.plan.dryrun import job_total, parse
from trimbench.plan.plan import plan_run
from trimbench.plan.resources import RulePlanner

#: a hub model whose contract gives every fact the plan needs (2 blocks, 128 wide)
TINY_BERT = "google-bert_uncased_L-2_H-128_A-2"

LISTING = """Building DAG of jobs...
rule train_model:
    input: results/models/m, results/data/d/train.parquet
    output: results/2dmse-sts/x/models/full
    log: results/logs/train_model/2dmse-sts/x/full.log
    jobid: 3
    reason: Missing output files: results/2dmse-sts/x/models/full
    wildcards: track=2dmse-sts, experiment=x, variant=full
    resources: tmpdir=<TBD>, gpu=1, mem_mb=8000

localrule all:
    input: results/report.html
    jobid: 0
    reason: Input files updated by another job: results/report.html
    resources: tmpdir=<TBD>

Job stats:
job            count
-----------  -------
all                1
train_model        1
total              2
"""


def test_the_listing_gives_each_job_its_rule_and_wildcards():
    jobs = parse(LISTING)
    assert [(job.rule, job.wildcards) for job in jobs] == [
        ("train_model", {"track": "2dmse-sts", "experiment": "x", "variant": "full"}), ("all", {})]
    assert jobs[0].outputs == ("results/2dmse-sts/x/models/full",)
    assert job_total(LISTING) == 2


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """The counted steps, shared by the module's tests (each shape counted once)."""
    return tmp_path_factory.mktemp("steps")


@pytest.fixture(scope="module")
def config() -> dict:
    raw = load_config([REPO / "config.yaml"])
    raw["models"][TINY_BERT] = {"source": "hub", "id": "google/bert_uncased_L-2_H-128_A-2",
                                "revision": "19a86adface6b75fb53ddd47bdb1cfd5c09484cf", "layers": 2, "dim": 128}
    return prepare(raw, REPO)


def _settings(config, cache, **keys):
    return replace(price.Settings.of(config, "a100-80gb", cache), **keys)


def _work(**changes) -> Work:
    phase = Phase("train", TINY_BERT, count=100, batch=32, length=64, train=True, precision="bf16", max_length=128)
    return replace(Work((phase,), examples=3200, optimizer_steps=100, devices=2), **changes)


def _planned(monkeypatch, config, cache, work, **keys):
    monkeypatch.setattr(price, "job_work", lambda *args: work)
    return price.plan_job("train_model", {"experiment": "x"}, config, PlanContext(config, REPO, cache),
                          _settings(config, cache, **keys))


def test_a_job_is_its_counted_steps_on_the_gpus_peak_at_the_mfu(monkeypatch, config, cache):
    plan = _planned(monkeypatch, config, cache, _work(), mfu=0.25, margin=2.0, min_runtime=1)
    arch = PlanContext(config, REPO, cache).architecture(TINY_BERT)
    step = step_cost(Step(arch, 32, 64, train=True, dtype="bf16"), cache)
    # every step of each of the two devices
    assert plan.flops == pytest.approx(step.flops * 100 * 2)
    assert plan.tokens == 100 * 32 * 64 * 2
    seconds = plan.flops / (312e12 * 0.25)  # the A100's dense bf16 peak
    assert plan.gpu_hours == pytest.approx(seconds / 3600)
    # the wall time is shared by the devices, then the margin
    assert plan.runtime_minutes == max(1, math.ceil(seconds / 2 / 60 * 2.0))
    # the peak is the longest batch's (max_length 128), not the average's
    longest = step_cost(Step(arch, 32, 128, train=True, dtype="bf16"), cache).peak_bytes
    assert plan.peak_bytes == longest > step.peak_bytes
    assert plan.fits["a100-80gb"] and plan.priced and not plan.problems


def test_a_job_too_big_for_the_gpu_is_flagged_with_what_makes_it_fit(monkeypatch, config, cache):
    arch = PlanContext(config, REPO, cache).architecture(TINY_BERT)
    half = step_cost(Step(arch, 16, 128, train=True, dtype="bf16"), cache).peak_bytes
    full = step_cost(Step(arch, 32, 128, train=True, dtype="bf16"), cache).peak_bytes
    small = price.gpu_table({"small": {"memory_gib": (half + full) / 2 / price.GIB, "peak_tflops": {"bf16": 100}}})
    plan = _planned(monkeypatch, config, cache, _work(), gpu=small["small"], gpus=small)
    assert not plan.fits["small"] and plan.fits["a100-80gb"]
    assert "devices = 2" in plan.advice and "gradient_accumulation = 2" in plan.advice
    assert any("more than the small's memory" in problem for problem in plan.problems)


def test_a_job_over_the_partitions_limit_is_flagged(monkeypatch, config, cache):
    plan = _planned(monkeypatch, config, cache, _work(), max_runtime=1, min_runtime=5)
    assert plan.over_runtime and any("over plan_max_runtime" in problem for problem in plan.problems)


def test_a_job_with_an_unknown_count_is_listed_not_priced(monkeypatch, config, cache):
    plan = _planned(monkeypatch, config, cache, Work(unknown=("no count of x train",)))
    assert not plan.priced and plan.unknown == ("no count of x train",) and plan.flops == 0


def test_a_model_without_its_facts_leaves_the_job_unpriced_naming_them(monkeypatch, config, cache):
    faceless = {**config, "models": {**config["models"], "faceless": {"source": "hub", "id": "nobody/faceless",
                                                                      "layers": 2, "dim": 8}}}
    work = _work(phases=(replace(_work().phases[0], model="faceless"),))
    plan = _planned(monkeypatch, faceless, cache, work)
    assert not plan.priced and "faceless" in plan.unknown[-1] and "num_attention_heads" in plan.unknown[-1]


def test_an_unknown_gpu_lists_the_known(config):
    with pytest.raises(ConfigError, match="a100-80gb.*h100-80gb"):
        price.Settings.of(config, "a100")


@pytest.mark.parametrize("gpus", [["a100-80gbb"], ["a100-80gb", "h100-80bg"], [""]])
def test_an_unknown_gpu_is_named_before_any_dry_run(monkeypatch, gpus):
    """The probe's C1, C2: the names were checked after the dry runs and the step counting (17-159 s)."""
    from trimbench.plan import plan

    def no_dry_run(*args, **kwargs):
        raise AssertionError("a dry run started before the GPU names were checked")

    monkeypatch.setattr(plan, "dry_runs", no_dry_run)
    wrong = next(gpu for gpu in gpus if gpu not in ("a100-80gb",))
    with pytest.raises(ConfigError, match=rf"^unknown GPU '{wrong}'; known: a10-24gb, "):
        plan.plan_many([[str(REPO / "config.yaml")]], gpus, workdir=REPO)


def test_slurm_gets_the_plan_times_the_attempt_and_the_rule_where_it_cannot_be_priced(monkeypatch, config, cache):
    monkeypatch.delenv(PLAN_LISTING_ONLY)  # a cluster's run, not a test's own listing
    reported = []
    planner = RulePlanner(config, REPO, cache, report=reported.append)
    monkeypatch.setattr(price, "job_work", lambda *args: _work())
    runtime = planner.resource("train_model", {"experiment": "x"}, "runtime", 240, 1)
    assert planner.resource("train_model", {"experiment": "x"}, "runtime", 240, 2) == 2 * runtime
    assert runtime == planner.plan("train_model", {"experiment": "x"}).runtime_minutes != 240
    monkeypatch.setattr(price, "job_work", lambda *args: Work(unknown=("no count of y",)))
    assert planner.resource("train_model", {"experiment": "y"}, "mem_mb", 8000, 2) == 16000
    assert any("train_model[experiment=y] keeps its rule's" in line and "no count of y" in line for line in reported)
    # a local run, and the plan's own listing dry run, keep the rule's request without pricing
    assert planner.resource("train_model", {"experiment": "z"}, "runtime", 240, 1, queued=False) == 240
    monkeypatch.setenv(PLAN_LISTING_ONLY, "1")
    assert planner.resource("train_model", {"experiment": "z"}, "runtime", 240, 2) == 480


@pytest.mark.workflow
def test_the_plan_lists_every_job_of_the_dry_run(tmp_path):
    """The embedded default: the plan's jobs are the dry run's (its job stats' total), each GPU job priced."""
    listing = subprocess.run([*SNAKEMAKE, "-n", "--forceall"], cwd=REPO, capture_output=True, text=True, check=True)
    plans = plan_run([str(REPO / "config.yaml")], ["a100-80gb", "h100-80gb"], workdir=REPO, cache_dir=tmp_path)
    for jobs in plans.values():
        assert len(jobs) == job_total(listing.stdout)
        trained = [job for job in jobs if job.rule == "train_model"]
        assert trained and all(job.priced and job.flops > 0 for job in trained)
    # the same work, a faster GPU
    a100 = sum(job.gpu_hours for job in plans["a100-80gb"])
    h100 = sum(job.gpu_hours for job in plans["h100-80gb"])
    assert 0 < h100 < a100


@pytest.mark.workflow
def test_the_dry_run_names_a_job_planned_over_the_partitions_limit():
    result = subprocess.run([*SNAKEMAKE, "-n", "--forceall", "--config", "plan_max_runtime=1"], cwd=REPO,
                            capture_output=True, text=True, check=True, env=priced_env())
    output = result.stdout + result.stderr
    assert "plan: train_model[" in output and "over plan_max_runtime" in output, output[-3000:]
