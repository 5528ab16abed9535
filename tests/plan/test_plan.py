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
