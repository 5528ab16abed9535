"""One job of the dry run priced: its track's work (trimbench.cost.work) counted step by step
(trimbench.cost.step) on the planned GPU: FLOPs, peak device memory, whether it fits each listed GPU
(and what would make it fit), GPU-hours, the runtime and host memory SLURM is asked for, disk written.

GPU time is FLOPs / (the GPU's dense peak for the job's dtype x MFU), three times: the estimate (the
texts' recorded lengths, the dtype's central MFU), the low end (the same lengths, the dtype's high MFU)
and the high end (every batch padded to the longest text recorded, or the truncation length where none
is, at the dtype's low MFU): trimbench.cost.gpus.MFU gives each figure's source; ``plan_mfu`` replaces
the three with one figure (a calibration of yours).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from trimbench.cost.gpus import MFU, Efficiency, Gpu, find_gpu, gpu_table, usable_gib
from trimbench.cost.step import Step, counted_steps, step_cost
from trimbench.cost.work import Forward, Phase, Work, with_forwards
from trimbench.errors import ConfigError
from trimbench.plan.context import PlanContext
from trimbench.tracks import track_of

GIB = 2**30
MB = 2**20
#: host bytes a text held in memory takes beside its tokens (a Python str in a pandas column)
TEXT_OVERHEAD_BYTES = 64
#: characters per token of a WordPiece / BPE encoder on English text, for the texts' host memory
CHARS_PER_TOKEN = 4
#: bytes fused AdamW moves per parameter and optimiser step, memory-bound: the fp32 parameter, its
#: gradient and two moments read (16), the parameter and the moments written (12)
ADAMW_BYTES_PER_PARAMETER = 28
#: bytes an MLM head's vocabulary-wide elementwise work moves per token and vocabulary term, which no
#: FLOP counter sees: about five passes of fp32 elements forward (SPLADE's pooling: ReLU, log1p, which
#: CUDA autocast runs in fp32, the max over the tokens; the masked-LM loss: log-softmax and its pick) and
#: twelve with the backward
VOCABULARY_BYTES = {False: 5 * 4, True: 12 * 4}


@dataclass(frozen=True)
class Settings:
    """The plan's keys (config: plan_*; schemas/config.schema.yaml)."""

    gpu: Gpu
    gpus: dict
    #: one MFU for every dtype (config plan_mfu), or None: the per-dtype range of trimbench.cost.gpus.MFU
    mfu: float | None
    margin: float
    min_runtime: int
    max_runtime: int | None
    host_base_mb: int
    cache_dir: Path | None

    @classmethod
    def of(cls, config: dict, gpu: str | None = None, cache_dir: Path | None = None) -> Settings:
        table = gpu_table(config.get("plan_gpus"))
        return cls(find_gpu(gpu or config["plan_gpu"], table), table, config.get("plan_mfu"), config["plan_margin"],
                   config["plan_min_runtime"], config.get("plan_max_runtime"), config["plan_host_base_mb"],
                   cache_dir)

    def efficiency(self, dtype: str) -> Efficiency:
        """The MFU range of ``dtype``: the table's, or ``plan_mfu`` at all three ends."""
        if self.mfu is not None:
            return Efficiency(self.mfu, self.mfu, self.mfu, f"plan_mfu {self.mfu} (the config)")
        return MFU[dtype]

    def rate(self, dtype: str) -> tuple[float, Efficiency]:
        """The GPU's dense peak FLOP/s for a phase of ``dtype`` and its MFU range: TF32 falls back to
        fp32 on a GPU without TF32 tensor cores (the trainer turns TF32 on only where it exists)."""
        if dtype == "tf32" and "tf32" not in self.gpu.peak_tflops:
            dtype = "fp32"
        return self.gpu.peak(dtype) * 1e12, self.efficiency(dtype)


@dataclass
class JobPlan:
    rule: str
    wildcards: dict
    work: Work | None
    gpu: str
    flops: float = 0.0
    tokens: int = 0
    #: peak device memory of one device, its largest phase
    peak_bytes: int = 0
    parameter_bytes: int = 0
    #: the estimate: recorded lengths, the central MFU
    gpu_hours: float = 0.0
    #: the range's ends: recorded lengths at the high MFU; the longest recorded text (else the
    #: truncation length) in every batch at the low MFU
    gpu_hours_low: float = 0.0
    gpu_hours_high: float = 0.0
    #: whether some phase's texts have no recorded lengths (their maximum length is in the estimate)
    bounded: bool = False
    runtime_minutes: int = 0
    mem_mb: int = 0
    disk_bytes: int = 0
    #: each listed GPU -> whether the job's peak fits its memory
    fits: dict = field(default_factory=dict)
    #: what would make it fit the planned GPU, where it does not
    advice: str = ""
    #: what keeps the job from being priced (unknown counts)
    unknown: tuple = ()
    #: what the job writes beyond ``disk_bytes`` that no count gives (its work's disk_unknown)
    disk_unknown: tuple = ()
    #: over the partition's limit (plan_max_runtime)
    over_runtime: bool = False
    #: the partition's limit it was planned against (plan_max_runtime), None: no limit
    max_runtime: int | None = None

    @property
    def priced(self) -> bool:
        return self.work is not None and self.work.on_gpu and not self.unknown

    @property
    def label(self) -> str:
        return job_label(self.rule, self.wildcards)

    @property
    def problems(self) -> list[str]:
        """What the plan flags before the queue: a GPU it does not fit, a runtime over the limit."""
        out = []
        if self.priced and not self.fits.get(self.gpu, True):
            out.append(f"{self.label}: needs {self.peak_bytes / GIB:.1f} GiB a device, more than the "
                       f"{self.gpu}'s memory; {self.advice}")
        if self.over_runtime:
            out.append(f"{self.label}: planned {self.runtime_minutes} min, over plan_max_runtime "
                       f"{self.max_runtime} min; a queued run submits it only with plan_submit_over_limit: true; "
                       f"raise the devices or split the job (see docs/plan.md)")
        return out


def job_label(rule: str, wildcards: dict) -> str:
    """A job as the plan names it: ``rule[key=value, ...]``."""
    shown = ", ".join(f"{key}={value}" for key, value in wildcards.items())
    return f"{rule}[{shown}]" if shown else rule


def job_work(rule: str, wildcards: dict, config: dict, context: PlanContext) -> Work | None:
    """The work of a job: its experiment's track answers (None: a job that runs no model on a GPU),
    once a run (the counting pass and each GPU's pricing ask again)."""
    name = wildcards.get("experiment")
    if name is None or name not in config["experiments"]:
        return None
    key = (rule, tuple(sorted(wildcards.items())))
    if key not in context.works:
        exp = config["experiments"][name]
        context.works[key] = track_of(exp).cost(rule, wildcards, exp, context)
    return context.works[key]


def steps_to_count(jobs, config: dict, context: PlanContext) -> list[Step]:
    """Every step pricing ``jobs`` counts (what makes a job fit aside), so that they can be counted side
    by side first (trimbench.cost.step.count_all)."""
    steps = []
    for job in jobs:
        try:
            work = job_work(job.rule, job.wildcards, config, context)
            if work is None or work.unknown:
                continue
            longest = peak_phases(work.phases, getattr(context, "longest", None))
            high = [at_longest(phase, getattr(context, "longest", None)) for phase in work.phases]
            for phase in (*work.phases, *longest, *high):
                steps += counted_steps(_step(phase, context))
        except ConfigError:  # priced as unknown by plan_job
            continue
    return steps


def longest_length(phase: Phase, recorded: dict | None = None, forward: Forward | None = None) -> int:
    """The longest batch a phase (or one ``forward`` of its step) meets: its truncation length
    (``max_length``), or the longest text its lengths record where shorter (``recorded``: each lengths
    source -> its longest text, trimbench.plan.context.PlanContext.longest; a forward's own source,
    where it names one: a query column is not padded to its passages' longest); a phase with a text of
    unrecorded lengths keeps its truncation length."""
    length, bound = (phase.length, phase.max_length) if forward is None else (forward.length, forward.max_length)
    bound = bound or length
    sources = forward.source if forward is not None and forward.source else phase.lengths_source
    found = [longest for source, longest in (recorded or {}).items() if source in sources]
    if not found or "upper bound" in sources:
        return bound
    return max(length, min(bound, max(found)))


def at_longest(phase: Phase, recorded: dict | None = None) -> Phase:
    """``phase`` with its batches (each forward of its step) at their longest (:func:`longest_length`)."""
    return with_forwards(phase, [forward._replace(length=longest_length(phase, recorded, forward))
                                 for forward in phase.step_forwards])


def peak_phases(phases: tuple[Phase, ...], recorded: dict | None = None) -> list[Phase]:
    """The steps whose memory bounds a job's peak: each phase at its longest batch
    (:func:`longest_length`: a long run meets one), and a training's phases of one model as one step
    (their forwards are live together until the one backward)."""
    longest = [at_longest(phase, recorded) for phase in phases]
    trained = [phase for phase in longest if phase.train]
    if len(trained) > 1 and len({(p.model, p.layers, p.head, p.precision) for p in trained}) == 1:
        together = with_forwards(trained[0], [forward for phase in trained for forward in phase.step_forwards])
        longest = [phase for phase in longest if not phase.train] + [together]
    return longest


def _step(phase: Phase, context: PlanContext, split: int = 1, checkpointing: bool | None = None) -> Step:
    """The counted step of ``phase``: each forward's batch divided by ``split`` (what a "does not fit"
    tries), gradient checkpointing as the phase has it unless ``checkpointing`` says."""
    # TF32 changes the matmuls' speed, not what they hold: its memory is fp32's
    dtype = "fp32" if phase.precision == "tf32" else phase.precision
    (batch, length), *more = [(forward.batch // split, forward.length) for forward in phase.step_forwards]
    return Step(context.architecture(phase.model), batch, length, phase.train, layers=phase.layers, head=phase.head,
                dtype=dtype, more_forwards=tuple(more),
                gradient_checkpointing=phase.gradient_checkpointing if checkpointing is None else checkpointing)


def plan_job(rule: str, wildcards: dict, config: dict, context: PlanContext, settings: Settings) -> JobPlan:
    plan = JobPlan(rule, dict(wildcards), None, settings.gpu.name)
    try:
        plan.work = job_work(rule, wildcards, config, context)
        if plan.work is None:
            return plan
        return _priced(plan, plan.work, context, settings)
    except ConfigError as error:  # a model fact no source gives: the job is listed, not priced by a guess
        plan.work = plan.work or Work()
        plan.unknown = (*plan.work.unknown, str(error))
        return plan


def _priced(plan: JobPlan, work: Work, context: PlanContext, settings: Settings) -> JobPlan:
    plan.unknown = work.unknown
    if not work.on_gpu or work.unknown:
        return plan
    recorded = getattr(context, "longest", None)
    seconds = low = high = 0.0
    for phase in work.phases:
        cost = step_cost(_step(phase, context), settings.cache_dir)
        flops = cost.flops * phase.count * work.devices
        longest = at_longest(phase, recorded)
        flops_longest = step_cost(_step(longest, context), settings.cache_dir).flops * phase.count * work.devices
        plan.flops += flops
        plan.tokens += phase.tokens * work.devices
        peak, mfu = settings.rate(phase.precision)
        seconds += flops / (peak * mfu.central)
        low += flops / (peak * mfu.high)
        high += flops_longest / (peak * mfu.low)
        plan.parameter_bytes = max(plan.parameter_bytes, cost.parameter_bytes)
        plan.bounded = plan.bounded or "upper bound" in phase.lengths_source
    elementwise = _elementwise_seconds(work, plan.parameter_bytes, context, settings.gpu)
    seconds, low, high = seconds + elementwise, low + elementwise, high + elementwise
    widest = None
    for phase in peak_phases(work.phases, recorded):
        peak = step_cost(_step(phase, context), settings.cache_dir).peak_bytes + work.resident_bytes
        if peak > plan.peak_bytes:
            plan.peak_bytes, widest = peak, phase
    plan.gpu_hours, plan.gpu_hours_low, plan.gpu_hours_high = seconds / 3600, low / 3600, high / 3600
    wall_minutes = seconds / work.devices / 60
    plan.runtime_minutes = max(settings.min_runtime, math.ceil(wall_minutes * settings.margin))
    plan.max_runtime = settings.max_runtime
    plan.over_runtime = settings.max_runtime is not None and plan.runtime_minutes > settings.max_runtime
    texts = work.examples or 0
    mean_length = sum(p.tokens for p in work.phases) / max(1, sum(p.sequences for p in work.phases))
    host = settings.host_base_mb * MB + 3 * plan.parameter_bytes + texts * (
        TEXT_OVERHEAD_BYTES + CHARS_PER_TOKEN * mean_length) + sum(
        held * (TEXT_OVERHEAD_BYTES + CHARS_PER_TOKEN * tokens) for held, tokens in work.held_texts)
    plan.mem_mb = math.ceil(host * settings.margin / MB)
    plan.disk_bytes, plan.disk_unknown = work.disk_bytes, work.disk_unknown
    plan.fits = {name: plan.peak_bytes <= usable_gib(gpu) * GIB for name, gpu in settings.gpus.items()}
    if not plan.fits.get(settings.gpu.name, True):
        plan.advice = _advice(widest, work, context, settings)
    return plan


def _elementwise_seconds(work: Work, parameter_bytes: int, context: PlanContext, gpu: Gpu) -> float:
    """GPU-seconds of the memory-bound work the FLOP count leaves out, at the GPU's bandwidth: AdamW's
    update each optimiser step on each device, and each MLM-head phase's elementwise work over the
    vocabulary (:data:`VOCABULARY_BYTES`). Zero on a GPU without a stated bandwidth."""
    if gpu.memory_gbps is None:
        return 0.0
    moved = work.optimizer_steps * work.devices * parameter_bytes / 4 * ADAMW_BYTES_PER_PARAMETER
    for phase in work.phases:
        if phase.head == "mlm":
            vocabulary = context.architecture(phase.model).vocab_size
            moved += phase.tokens * work.devices * vocabulary * VOCABULARY_BYTES[phase.train]
    return moved / (gpu.memory_gbps * 1e9)


def _advice(phase: Phase, work: Work, context: PlanContext, settings: Settings) -> str:
    """What makes the widest phase fit the planned GPU, naming only settings the job's track has
    (the work's ``split_keys``, ``batch_key``, ``checkpointing_key``): a training's batch split by a
    setting that keeps the method (devices that gather in-batch negatives; gradient accumulation only
    where the loss has none), an encoding's smaller batch, else gradient checkpointing."""
    memory = usable_gib(settings.gpu) * GIB - work.resident_bytes
    keys = work.split_keys if phase.train else ((work.batch_key,) if work.batch_key else ())
    for split in (2, 4, 8, 16):
        if not keys or min(forward.batch for forward in phase.step_forwards) // split < 1:
            break
        step = _step(phase, context, split=split)
        cost = step_cost(step, settings.cache_dir)
        if cost.peak_bytes <= memory:
            if phase.train:
                return (f"fits with {' or '.join(_split_setting(key, split) for key in keys)}: "
                        f"{sum(batch for batch, _ in step.forwards)} sequences a step, "
                        f"{cost.peak_bytes / GIB:.1f} GiB")
            return f"fits with {keys[0]} = {step.batch} ({cost.peak_bytes / GIB:.1f} GiB)"
    if phase.train and not phase.gradient_checkpointing and work.checkpointing_key:
        cost = step_cost(_step(phase, context, checkpointing=True), settings.cache_dir)
        if cost.peak_bytes <= memory:
            return f"fits with {work.checkpointing_key}: true ({cost.peak_bytes / GIB:.1f} GiB)"
    tried = ", ".join(keys + ((work.checkpointing_key,) if phase.train and work.checkpointing_key else ()))
    return (f"does not fit with {tried} (its track's settings that keep the method): a GPU with more memory"
            if tried else "its track has no setting that splits this step without changing the method: a GPU "
                          "with more memory")


def _split_setting(key: str, split: int) -> str:
    """A split key's change, in words: devices multiplied, or the batch divided into accumulated parts."""
    if key.endswith("gradient_accumulation"):
        section = key.rsplit(".", 1)[0]
        return f"{section}.batch_size / {split} and {key} x {split}"
    return f"{key} = {split} x the current"
