"""The plan (trimbench.plan.price) on a job of a preset's size: a bert-base training of thousands of
steps, so that a runtime is minutes of work above the one-minute floor, the parameters are a real
model's, and what SLURM is asked for (runtime, mem_mb) and the fit are read from a priced job.

The expected figures are hand counts (the bert-base step's FLOPs and parameters), or the formula the
plan documents written out once (runtime = GPU time / devices x margin; mem_mb; the fit in GiB).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from conftest import PLAN_LISTING_ONLY, REPO

from trimbench.config.prepare import prepare
from trimbench.config.schema import load_config
from trimbench.cost.step import Step, step_cost
from trimbench.cost.work import Phase, Work
from trimbench.errors import ConfigError
from trimbench.plan import price
from trimbench.plan.context import PlanContext
from trimbench.plan.resources import RulePlanner

BERT = "bert-base-uncased"
#: bert-base's shape by hand (12 blocks x 768, feed-forward 3,072, vocabulary 30,522, 512 positions)
L, D, FF = 12, 768, 3072
#: BertModel's parameters: embeddings (30,522 + 512 + 2) x 768 + their LayerNorm, 12 blocks of
#: 4 (768^2 + 768) + 2 x 768 x 3,072 + 3,072 + 768 + 2 LayerNorms, the pooler 768^2 + 768
PARAMETERS = 109_482_240
BATCH, LENGTH, STEPS, DEVICES = 32, 128, 5000, 2


def train_step_flops(batch: int, length: int) -> int:
    """One fp32 training step by hand: the forward (per token and block 2 (4 d^2 + 2 d FF) for the
    projections and 4 s d for attention; the pooler 2 d^2 a sequence), three times for forward and
    backward except the pooler the loss does not use (mean pooling: no gradient reaches it), and the
    flash attention backward's recomputation of QK^T, 2 L d b s^2."""
    tokens = batch * length
    blocks = 2 * tokens * L * (4 * D * D + 2 * D * FF) + 4 * tokens * L * length * D
    pooler = 2 * batch * D * D
    return 3 * blocks + pooler + 2 * L * D * batch * length * length


def test_the_hand_counts_are_bert_bases():
    assert PARAMETERS == ((30522 + 512 + 2) * D + 2 * D + L * (4 * (D * D + D) + 2 * D * FF + FF + D + 4 * D)
                          + D * D + D)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("steps")


@pytest.fixture(scope="module")
def config() -> dict:
    raw = load_config([REPO / "config.yaml"])
    raw["models"][BERT] = {"source": "hub", "id": "google-bert/bert-base-uncased",
                           "revision": "86b5e0934494bd15c9632b12f734a8a67f723594", "layers": L, "dim": D}
    return prepare(raw, REPO)


def _work(**changes) -> Work:
    phase = Phase("train", BERT, count=STEPS, batch=BATCH, length=LENGTH, train=True, max_length=LENGTH)
    return replace(Work((phase,), examples=BATCH * DEVICES * STEPS, optimizer_steps=STEPS, devices=DEVICES),
                   **changes)


def _planned(monkeypatch, config, cache, work, **keys):
    monkeypatch.setattr(price, "job_work", lambda *args: work)
    settings = replace(price.Settings.of(config, "a100-80gb", cache), **keys)
    return price.plan_job("train_retriever", {"experiment": "x"}, config, PlanContext(config, REPO, cache), settings)


def test_a_bert_base_job_is_its_hand_counted_steps(monkeypatch, config, cache):
    plan = _planned(monkeypatch, config, cache, _work())
    assert plan.parameter_bytes == 4 * PARAMETERS
    assert plan.flops == STEPS * DEVICES * train_step_flops(BATCH, LENGTH)  # 2.155 TFLOP a step


def test_the_runtime_is_the_gpu_time_shared_by_the_devices_times_the_margin(monkeypatch, config, cache):
    """The runtime SLURM is asked for: the job's GPU time over its devices (each runs its share at
    once), times plan_margin; minutes of work here, far above the one-minute floor. A runtime without
    the margin, or not shared by the devices, differs."""
    plan = _planned(monkeypatch, config, cache, _work(), margin=2.0, min_runtime=1)
    wall_minutes = plan.gpu_hours * 60 / DEVICES
    assert wall_minutes > 10
    assert plan.runtime_minutes == math.ceil(wall_minutes * 2.0)
    once = _planned(monkeypatch, config, cache, _work(), margin=1.0, min_runtime=1)
    assert once.gpu_hours == plan.gpu_hours and once.runtime_minutes == math.ceil(wall_minutes)
    # the floor only lifts a shorter job
    assert _planned(monkeypatch, config, cache, _work(), margin=1.0, min_runtime=10_000).runtime_minutes == 10_000


def test_the_fit_is_the_peak_against_the_gpus_memory_in_gib(monkeypatch, config, cache):
    """A GPU whose usable memory (its GiB less the stated headroom: the CUDA context and fragmentation)
    is 1 % more than the peak fits it, 1 % fewer does not: memory_gib is GiB (2^30 bytes), as the
    datasheets' "80 GB" HBM is (a GB of 10^9 bytes would fail the first)."""
    from trimbench.cost.gpus import FIT_FRAGMENTATION, FIT_RESERVED_GIB

    peak = _planned(monkeypatch, config, cache, _work()).peak_bytes
    assert peak > 2**30  # a bert-base's fp32 step: GiB, not MiB
    for factor, fits in ((1.01, True), (0.99, False)):
        memory_gib = (factor * peak / 2**30 + FIT_RESERVED_GIB) / (1 - FIT_FRAGMENTATION)
        table = price.gpu_table({"mine": {"memory_gib": memory_gib, "peak_tflops": {"fp32": 19.5}}})
        plan = _planned(monkeypatch, config, cache, _work(), gpu=table["mine"], gpus=table)
        assert plan.fits["mine"] is fits
        assert bool(plan.problems) is not fits


def test_mem_mb_is_the_base_three_copies_of_the_parameters_and_the_texts_held(monkeypatch, config, cache):
    """The host memory SLURM is asked for: plan_host_base_mb, the parameters three times (the state
    dict loaded, the model, a checkpoint being written), each example's text (64 bytes a string and
    4 characters a token, at the phase's mean length), and the corpus the job holds beside them
    (train_retriever's 8.84 M MS MARCO passages at 80 tokens), times the margin."""
    corpus = (8_841_823, 80)
    plan = _planned(monkeypatch, config, cache, _work(held_texts=(corpus,)), margin=1.0, host_base_mb=100)
    texts = BATCH * DEVICES * STEPS
    expected = (100 * 2**20 + 3 * 4 * PARAMETERS + texts * (64 + 4 * LENGTH) + corpus[0] * (64 + 4 * corpus[1]))
    assert plan.mem_mb == math.ceil(expected / 2**20)
    without = _planned(monkeypatch, config, cache, _work(), margin=1.0, host_base_mb=100)
    assert plan.mem_mb - without.mem_mb == pytest.approx(corpus[0] * (64 + 4 * 80) / 2**20, abs=1)
    doubled = _planned(monkeypatch, config, cache, _work(held_texts=(corpus,)), margin=2.0, host_base_mb=100)
    assert doubled.mem_mb == math.ceil(2 * expected / 2**20)


def test_slurm_is_asked_for_the_priced_jobs_mem_mb_and_runtime_per_attempt(monkeypatch, config, cache):
    monkeypatch.delenv(PLAN_LISTING_ONLY)
    monkeypatch.setattr(price, "job_work", lambda *args: _work())
    planner = RulePlanner(config, REPO, cache, report=lambda line: None)
    plan = planner.plan("train_retriever", {"experiment": "x"})
    assert plan.mem_mb > 4 * PARAMETERS * 3 / 2**20 and plan.runtime_minutes > 1
    for attempt in (1, 2, 3):
        assert planner.resource("train_retriever", {"experiment": "x"}, "mem_mb", 8000, attempt) == (
            attempt * plan.mem_mb)
        assert planner.resource("train_retriever", {"experiment": "x"}, "runtime", 240, attempt) == (
            attempt * plan.runtime_minutes)


def test_gradient_checkpointing_is_priced_as_a_second_forward_and_less_memory(monkeypatch, config, cache):
    plain = _planned(monkeypatch, config, cache, _work())
    phase = replace(_work().phases[0], gradient_checkpointing=True)
    checkpointed = _planned(monkeypatch, config, cache, _work(phases=(phase,)))
    arch = PlanContext(config, REPO, cache).architecture(BERT)
    step = step_cost(Step(arch, BATCH, LENGTH, train=True, gradient_checkpointing=True), cache)
    assert checkpointed.flops == STEPS * DEVICES * step.flops > plain.flops
    assert checkpointed.peak_bytes < plain.peak_bytes


def test_a_resident_model_adds_its_bytes_to_the_peak(monkeypatch, config, cache):
    plain = _planned(monkeypatch, config, cache, _work())
    resident = _planned(monkeypatch, config, cache, _work(resident_bytes=10**9))
    assert resident.peak_bytes == plain.peak_bytes + 10**9


def test_a_queued_run_submits_no_job_over_the_partitions_limit_unless_told(monkeypatch, config, cache):
    """plan_max_runtime below the job's plan: the dry run names the job, its minutes and the limit;
    refuse_over_limit (the workflow's onstart, before any job starts) stops a queued run naming them,
    unless plan_submit_over_limit."""
    monkeypatch.delenv(PLAN_LISTING_ONLY)
    monkeypatch.setattr(price, "job_work", lambda *args: _work())
    limited = {**config, "plan_max_runtime": 20}
    reported = []
    planner = RulePlanner(limited, REPO, cache, report=reported.append)
    runtime = planner.resource("train_retriever", {"experiment": "x"}, "runtime", 240, 1)
    assert runtime > 20
    assert reported == [f"plan: train_retriever[experiment=x]: planned {runtime} min, over plan_max_runtime 20 min; "
                        "a queued run submits it only with plan_submit_over_limit: true; raise the devices or "
                        "split the job (see docs/plan.md)"]
    planner.resource("train_retriever", {"experiment": "w"}, "runtime", 240, 1)
    with pytest.raises(ConfigError) as refused:
        planner.refuse_over_limit()
    assert str(refused.value) == (  # each job on a line of its own, by name
        "2 job(s) planned over plan_max_runtime (20 min, the partition's limit), so none is submitted:\n"
        f"  train_retriever[experiment=w]: planned {runtime} min\n"
        f"  train_retriever[experiment=x]: planned {runtime} min\n"
        "raise their devices or split them (docs/plan.md), or set plan_submit_over_limit: true to queue them anyway")
    allowed = RulePlanner({**limited, "plan_submit_over_limit": True}, REPO, cache, report=reported.append)
    allowed.resource("train_retriever", {"experiment": "x"}, "runtime", 240, 1)
    allowed.refuse_over_limit()
    # within the limit, or without one, nothing is refused
    for within in ({**config, "plan_max_runtime": 10 * runtime}, config):
        planner = RulePlanner(within, REPO, cache, report=reported.append)
        planner.resource("train_retriever", {"experiment": "x"}, "runtime", 240, 1)
        planner.refuse_over_limit()


def test_a_job_writing_what_no_count_gives_has_its_disk_unknown_not_zero(monkeypatch, config, cache):
    """SPLADE's encodings without max_terms: the job's disk is empty (unknown) in the plan's table and
    counted apart in the totals, not a 0 that the preset's "GB written" would add."""
    from trimbench.plan.plan import rows, totals

    counted = _planned(monkeypatch, config, cache, _work(disk_bytes=5 * 10**9))
    unbounded = _planned(monkeypatch, config, cache, _work(disk_unknown=("dev corpus: every term kept",)))
    assert unbounded.disk_unknown == ("dev corpus: every term kept",)
    table = rows("run", {"a100-80gb": [counted, unbounded]})
    assert table["disk_gb"].iloc[0] == pytest.approx(5.0) and table["disk_gb"].isna().tolist() == [False, True]
    (total,) = totals(table).to_dict("records")
    assert total["disk_gb"] == pytest.approx(5.0) and total["disk_unknown"] == 1 and total["unpriced"] == 0
