"""One step of a job, counted on the real transformers architecture under torch's fake tensors.

A :class:`Step` is what a job repeats on ONE device: ``batch`` sequences of ``length`` tokens through
the model (a forward; for training also the backward and the optimiser's step), and where a step
forwards several inputs before its one backward (a pair's two texts, a query batch and its passage
columns), each of them as a forward of its own (``more_forwards``), as the losses run them. :func:`measure` builds
the transformers model from the :class:`~trimbench.cost.architecture.Architecture` inside
``FakeTensorMode`` (tensors with shapes and dtypes but no data: no weights, no memory, a bert-base
step in about a second) and runs the step there:

- **FLOPs**: ``torch.utils.flop_counter.FlopCounterMode`` over the forward and backward (torch counts
  the matrix products and attention; the optimiser's and the norms' elementwise work is left out, a
  fraction of a percent of an encoder's).
- **Peak memory**: ``torch.distributed._tools.mem_tracker.MemTracker``, which follows every tensor
  storage alive (parameters, gradients, optimiser states, activations, temporaries) and keeps the
  peak. Training runs two iterations and keeps the second's peak: AdamW creates its two fp32 states
  in the first step, and they are alive through every later one (``reset_mod_stats`` between them,
  as MemTracker asks). :class:`_PeakTracker` keeps only the whole model's peak (MemTracker's
  per-module peaks cost 4/5 of its time: 5 s -> 1 s an iteration for bert-base at 128 x 64).
  It counts what the caching allocator is asked for, not what it reserves (fragmentation adds
  some; the plan's margin covers it).

Mixed precision (``bf16``/``fp16``) runs the step under ``torch.autocast`` as the trainer does
(parameters, gradients and optimiser states fp32, matrix products and their saved inputs in half
precision). Here it is CPU autocast (no CUDA in FakeTensorMode without a CUDA build). Its op lists
differ from CUDA's: CPU autocast keeps ``log1p``, ``layer_norm`` and ``softmax`` in the input's half
precision, CUDA runs them in fp32. The count runs :data:`CUDA_AUTOCAST_FP32_OPS` in fp32 as on a GPU
(under :data:`CUDA_AUTOCAST_FP32_DTYPES`): SPLADE's ``log1p`` over the vocabulary-wide logits in
training, the largest; an eager attention's softmax (DeBERTa's); BERT's layer norms already take the
fp32 residual stream.

The heads: ``encoder`` (the base model, mean-pooled: dense embeddings), ``mlm`` (the model ``*ForMaskedLM``
and SPLADE's pooling over the vocabulary logits of every token), ``classifier`` (a linear layer on the
pooled embedding: ELECTRA's fine-tuning on a cut encoder, negligible beside it).

Results are kept for the process and, with ``cache_dir``, as JSON, keyed by every field of the step
(not where its facts were read) and the torch and transformers versions, so a plan of many jobs of
one shape counts it once.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from trimbench.cost.architecture import Architecture
from trimbench.errors import ConfigError
from trimbench.models import position_limit

HEADS = ("encoder", "mlm", "classifier")
DTYPES = ("fp32", "bf16", "fp16")
OPTIMIZERS = ("adamw",)
ATTENTIONS = ("sdpa", "eager", "flash_attention_2")
#: labels of the classifier head (SICK's three; a regression's one changes nothing measurable)
CLASSIFIER_LABELS = 3


@dataclass(frozen=True)
class Step:
    """``batch`` sequences on one device of ``length`` tokens each (after padding); ``layers`` cuts the
    encoder to its first blocks (ELECTRA's cut, BERT-S; None = all); ``attention`` is the transformer's
    attention kernels (``train.attention``; flash_attention_2 is counted as sdpa)."""

    architecture: Architecture
    batch: int
    length: int
    train: bool
    layers: int | None = None
    head: str = "encoder"
    dtype: str = "fp32"
    gradient_checkpointing: bool = False
    optimizer: str = "adamw"
    attention: str = "sdpa"
    #: the step's other forward passes before its one backward, each (batch, length): a pair's second
    #: text, a query batch's passage columns (trimbench.cost.work.Forward); the first is batch x length
    more_forwards: tuple[tuple[int, int], ...] = ()

    @property
    def forwards(self) -> tuple[tuple[int, int], ...]:
        """Every forward pass of the step, (batch, length) each, in the order they run."""
        return ((self.batch, self.length), *self.more_forwards)


@dataclass(frozen=True)
class StepCost:
    #: floating-point operations of the step (a multiply-add is two)
    flops: float
    #: peak bytes allocated on the device during the step
    peak_bytes: int
    #: bytes of the model's parameters
    parameter_bytes: int


def check(step: Step) -> None:
    """A ConfigError naming the field of ``step`` that cannot be counted."""
    arch = step.architecture
    problems = []
    for name, value, allowed in (("head", step.head, HEADS), ("dtype", step.dtype, DTYPES),
                                 ("optimizer", step.optimizer, OPTIMIZERS), ("attention", step.attention, ATTENTIONS)):
        if value not in allowed:
            problems.append(f"{name} '{value}' (one of {', '.join(allowed)})")
    limit = position_limit({**arch.extra, "model_type": arch.model_type,
                            "max_position_embeddings": arch.max_position_embeddings})
    for batch, length in step.forwards:
        if batch < 1 or length < 1:
            problems.append(f"batch {batch} x length {length} (both at least 1)")
        if limit is not None and length > limit[0]:
            problems.append(f"length {length} beyond the model's {limit[0]} tokens ({limit[1]})")
    if step.layers is not None and not 1 <= step.layers <= arch.num_hidden_layers:
        problems.append(f"layers {step.layers} (1 to the model's {arch.num_hidden_layers})")
    if problems:
        raise ConfigError(f"cannot count a step of {arch.model_type} ({arch.source or 'no source'}): "
                          + "; ".join(problems))


def cache_key(step: Step) -> str:
    """Every field of the step that shapes the count (not where the architecture's facts were read) and the
    library versions the count depends on, as canonical JSON."""
    import torch
    import transformers

    fields = asdict(step)
    del fields["architecture"]["source"]
    key = {"step": fields, "torch": torch.__version__, "transformers": transformers.__version__}
    if step.dtype in CUDA_AUTOCAST_FP32_DTYPES:
        # counted since these run in fp32 (a count of its own, not a cached CPU-autocast one)
        key["cuda_autocast_fp32"] = sorted(CUDA_AUTOCAST_FP32_OPS)
    return json.dumps(key, sort_keys=True, default=str)


#: the dtypes whose autocast CUDA runs :data:`CUDA_AUTOCAST_FP32_OPS` in fp32 (and the fake step)
CUDA_AUTOCAST_FP32_DTYPES = ("bf16", "fp16")
#: the ops of the counted steps on CUDA autocast's fp32 list (PyTorch's AMP docs, "CUDA Ops that can
#: autocast to float32") that CPU autocast leaves in the input's dtype: SPLADE's log1p over the
#: vocabulary-wide logits, an eager attention's softmax over [batch, heads, length, length] scores
#: (DeBERTa's), layer norms fed half precision
CUDA_AUTOCAST_FP32_OPS = ("layer_norm", "softmax", "log_softmax", "log1p")

#: the steps counted in this process, by cache key
_COUNTED: dict[str, StepCost] = {}


def _cache_path(key: str, cache_dir: Path) -> Path:
    """The JSON file a counted step is kept in (named by its key's hash)."""
    return Path(cache_dir) / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def measure(step: Step, cache_dir: Path | None = None) -> StepCost:
    """FLOPs and peak device memory of ``step``: counted once per process, and once for all where
    ``cache_dir`` is given (a JSON file per step)."""
    check(step)
    key = cache_key(step)
    if key in _COUNTED:
        return _COUNTED[key]
    path = None
    if cache_dir is not None:
        path = _cache_path(key, cache_dir)
        if path.is_file():
            cached = json.loads(path.read_text())
            if cached.get("key") == key:
                _COUNTED[key] = StepCost(**cached["cost"])
                return _COUNTED[key]
    # Python's cycle collector would free a tensor held in a reference cycle at a moment that varies from
    # run to run (a BERT-mini step's peak: 452.9 or 456.9 MiB); without it the count is the same every time,
    # the higher one
    collecting = gc.isenabled()
    gc.disable()
    try:
        cost = _COUNTED[key] = _count(step)
    finally:
        if collecting:
            gc.enable()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as handle:
            json.dump({"key": key, "cost": asdict(cost)}, handle)
        os.replace(handle.name, path)  # a plan counting in parallel never reads half a file
    return cost


def step_model(step: Step):
    """The step's model and its loss function: fake tensors inside FakeTensorMode, a real (random) model
    outside it (benchmarks/plan_accuracy.py measures that one on the CPU)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING, MODEL_MAPPING

    config = AutoConfig.for_model(step.architecture.model_type, **step.architecture.config_kwargs(step.layers))
    model_class = (MODEL_FOR_MASKED_LM_MAPPING if step.head == "mlm" else MODEL_MAPPING).get(type(config), None)
    if model_class is None:
        raise ConfigError(f"transformers has no {'masked-LM ' if step.head == 'mlm' else ''}model of type "
                          f"'{step.architecture.model_type}' ({step.architecture.source or 'no source'})")
    if step.attention == "eager" or not model_class._supports_sdpa:
        config._attn_implementation = "eager"
    else:
        # A GPU's fused attention (flash, memory-efficient) drops attention weights inside the kernel and keeps
        # no sequence x sequence tensor; on the CPU, torch's fused kernel takes no dropout and its math fallback
        # keeps them all. Without attention dropout the CPU runs its fused kernel too: the same FLOPs, and the
        # GPU's memory.
        for key in ("attention_probs_dropout_prob", "attention_dropout"):
            if hasattr(config, key):
                setattr(config, key, 0.0)
    if step.head == "mlm":
        model = AutoModelForMaskedLM.from_config(config)

        def loss(output, mask):
            # SPLADE's pooling: max over tokens of log(1 + relu(logit)), padding masked (sentence-transformers'
            # sparse_encoder/modules/splade_pooling.py:107-121: masked product, relu_, log1p in training)
            # in training, log1p runs in fp32 under half precision as CUDA autocast runs it (_cuda_autocast_fp32:
            # a fp32 copy of the vocabulary-wide logits and a fp32 result); inference's in-place log1p_ is not
            # autocast, on a GPU either
            weights = (output.logits * mask.unsqueeze(-1).to(output.logits.dtype)).relu_()
            weights = weights.log1p() if step.train else weights.log1p_()
            return weights.max(dim=1)[0].sum()

        return model, loss
    model = AutoModel.from_config(config)
    classifier = torch.nn.Linear(config.hidden_size, CLASSIFIER_LABELS) if step.head == "classifier" else None

    def loss(output, mask):
        hidden = output.last_hidden_state
        pooled = (hidden * mask.unsqueeze(-1).to(hidden.dtype)).sum(dim=1) / mask.sum(dim=1, keepdim=True)
        return (classifier(pooled) if classifier is not None else pooled).float().sum()

    return (torch.nn.ModuleDict({"encoder": model, "classifier": classifier}) if classifier is not None else model,
            loss)


def _peak_tracker():
    """MemTracker keeping only the whole model's peak (its per-module peaks are what makes it slow), and
    taking a model whose parameters want no gradient (inference)."""
    from torch.distributed._tools.mem_tracker import MemTracker

    class _PeakTracker(MemTracker):
        def _track_module_params_and_buffers(self, module, install_grad_hooks: bool = True):
            # a model run for inference has no parameter that wants a gradient: no gradient hooks
            wanted = install_grad_hooks and all(p.requires_grad for p in module.parameters())
            return super()._track_module_params_and_buffers(module, install_grad_hooks=wanted)

        def _update_peak_stats(self, peak_state) -> None:  # MemTracker's, less the per-module part
            for device, snapshot in self._curr_mem_snap.items():
                if self._peak_mem.get(device, 0) < snapshot["Total"]:
                    self._peak_mem[device] = snapshot["Total"]
                    self._peak_mem_snap[device] = dict(snapshot)

    return _PeakTracker()


def prepared(step: Step, model, loss):
    """The step's optimiser (None for inference) and a function running one iteration of it: the forward
    (under autocast for bf16/fp16), and for training the backward and the optimiser's step."""
    import contextlib

    import torch

    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(step.dtype)
    body = model["encoder"] if isinstance(model, torch.nn.ModuleDict) else model
    model.train(step.train)
    # inference keeps no graph, as under no_grad (which MemTracker's module hooks cannot take where a module
    # is handed a parameter, DeBERTa's relative embeddings)
    model.requires_grad_(step.train)
    if step.gradient_checkpointing:
        body.activation_checkpointing_enable()  # as the trainer does (transformers/trainer.py:1510)
    inputs = [(torch.randint(0, step.architecture.vocab_size, (batch, length)), _padded_mask(batch, length))
              for batch, length in step.forwards]
    optimizer = torch.optim.AdamW(model.parameters()) if step.train else None

    class Forwards(torch.nn.Module):
        """The step's forwards as one module call: MemTracker takes its root module's second call for a
        second iteration, not the model called again for another column."""

        def __init__(self):
            super().__init__()
            self.body = body

        def forward(self):
            # each forward's outputs are held until the one backward (a loss over every column's embeddings);
            # under gradient checkpointing each recomputes its blocks on its own, one forward's texts at a time
            return sum(loss(self.body(input_ids=ids, attention_mask=mask), mask) for ids, mask in inputs)

    forwards = Forwards()

    def iteration():
        with torch.autocast("cpu", dtype=half) if half is not None else contextlib.nullcontext(), \
                _cuda_autocast_fp32() if step.dtype in CUDA_AUTOCAST_FP32_DTYPES else contextlib.nullcontext():
            value = forwards()
        if step.train:
            value.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    return optimizer, iteration


def profiled_peak_bytes(step: Step) -> int:
    """Peak bytes of ``step`` run for real on this CPU, from torch's profiler (what
    benchmarks/plan_accuracy.py and the tests hold :func:`measure`'s count against): the parameters and
    AdamW's states alive before the step plus the highest running sum of its allocations and frees."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model, loss = step_model(step)
    optimizer, iteration = prepared(step, model, loss)
    if optimizer is not None:
        iteration()  # AdamW's states are created in its first step
    alive = sum(p.numel() * p.element_size() for p in model.parameters())
    if optimizer is not None:
        alive += sum(t.numel() * t.element_size() for state in optimizer.state.values() for t in state.values()
                     if torch.is_tensor(t))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        iteration()
    allocations = sorted((event.start_ns(), event.nbytes()) for event in prof.profiler.kineto_results.events()
                         if event.name() == "[memory]")
    running = highest = 0
    for _, nbytes in allocations:
        running += nbytes
        highest = max(highest, running)
    return alive + highest


def _padded_mask(batch: int, length: int):
    """An attention mask with the last token of the last text padded, as a batch padded to its longest
    text has: transformers then builds the attention's mask, where for a mask of all ones it passes
    none (a fake tensor's values are unknown, so its count always builds it)."""
    import torch

    mask = torch.ones(batch, length, dtype=torch.long)
    if length > 1:
        mask[-1, -1] = 0
    return mask


def _cuda_autocast_fp32():
    """A torch function mode running :data:`CUDA_AUTOCAST_FP32_OPS` as CUDA autocast does: floating
    inputs cast to fp32, the op in fp32, an fp32 result (what the next op saves for the backward). As
    autocast, it leaves in-place variants (``log1p_``) and calls with an explicit ``dtype`` alone (the
    AMP docs: neither is eligible)."""
    import torch
    from torch.overrides import TorchFunctionMode

    names = set(CUDA_AUTOCAST_FP32_OPS)
    functions = {function for owner in (torch, torch.nn.functional, torch.Tensor)
                 for function in (getattr(owner, name, None) for name in names) if function is not None}

    def to_fp32(value):
        return value.float() if isinstance(value, torch.Tensor) and value.is_floating_point() else value

    class CudaAutocastFp32(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func not in functions or kwargs.get("dtype") is not None:
                return func(*args, **kwargs)
            with torch.autocast("cpu", enabled=False):
                return func(*map(to_fp32, args), **{key: to_fp32(value) for key, value in kwargs.items()})

    return CudaAutocastFp32()


def _count(step: Step) -> StepCost:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    with FakeTensorMode():
        model, loss = step_model(step)
        parameter_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
        optimizer, iteration = prepared(step, model, loss)
        tracker = _peak_tracker()
        tracker.track_external(*(part for part in (model, optimizer) if part is not None))
        # torch counts the GPU's fused attention kernels but not the CPU's (torch/utils/flop_counter.py registers
        # sdpa_flop for _scaled_dot_product_{efficient,flash,cudnn}_attention): the same formulas for it
        cpu_attention = {
            torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:
                lambda query, key, value, *args, **kwargs: sdpa_flop_count(query, key, value),
            torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward:
                lambda grad, query, key, value, *args, **kwargs: sdpa_backward_flop_count(grad, query, key, value),
        }
        flop_counter = FlopCounterMode(display=False, custom_mapping=cpu_attention)
        with tracker, flop_counter:
            iteration()
        if step.train:  # the optimiser's states exist from the first step on: the second is the steady one
            tracker.reset_mod_stats()
            with tracker:
                iteration()
        peak = tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
    return StepCost(flops=float(flop_counter.get_total_flops()), peak_bytes=int(peak),
                    parameter_bytes=int(parameter_bytes))


def counted_steps(step: Step) -> list[Step]:
    """The steps :func:`step_cost` counts for ``step``: itself, or its one- and two-block models."""
    depth = step.architecture.num_hidden_layers if step.layers is None else step.layers
    return [step] if depth in (1, 2) else [replace(step, layers=1), replace(step, layers=2)]


def count_all(steps: list[Step], cache_dir: Path | None, workers: int = 1) -> int:
    """Count each of ``steps`` not counted yet, ``workers`` processes side by side (a plan's many shapes
    on every core); returns how many were counted. The counts land where :func:`measure` keeps them."""
    todo, seen = [], set()
    for step in steps:
        key = cache_key(step)
        if key in seen or key in _COUNTED:
            continue
        seen.add(key)
        path = _cache_path(key, cache_dir) if cache_dir else None
        if path is None or not path.is_file():
            todo.append(step)
    if workers <= 1 or len(todo) < 2:
        for step in todo:
            measure(step, cache_dir)
        return len(todo)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawned, not forked: each worker imports torch afresh (a forked torch may hold its parent's threads' locks)
    with ProcessPoolExecutor(min(workers, len(todo)), mp_context=multiprocessing.get_context("spawn")) as pool:
        for step, cost in zip(todo, pool.map(measure, todo, [cache_dir] * len(todo), chunksize=4), strict=True):
            _COUNTED[cache_key(step)] = cost
    return len(todo)


def step_cost(step: Step, cache_dir: Path | None) -> StepCost:
    """A step's cost, counted on one- and two-block models and extended to its depth: FLOPs and memory
    of an encoder grow by the same amount with each block (the blocks are alike), so two small counts
    give any depth exactly, whatever the cut (benchmarks/plan_accuracy.py checks it on a full count)."""
    counted = counted_steps(step)
    if len(counted) == 1:
        return measure(step, cache_dir)
    # depth 0 (ELECTRA's cut at the embeddings' output) is the same line taken back one block
    one, two = (measure(each, cache_dir) for each in counted)
    extra = (step.architecture.num_hidden_layers if step.layers is None else step.layers) - 1
    block_parameters = two.parameter_bytes - one.parameter_bytes
    if step.train or extra < 1:
        peak = one.peak_bytes + extra * (two.peak_bytes - one.peak_bytes)  # every block's activations kept
    else:
        # an encoding frees each block's activations once the next has them: past two blocks, a block adds
        # its weights to the peak, not its activations (the line through one and two overestimates it:
        # +15 % on a 4-block model, the plan review's count)
        peak = two.peak_bytes + (extra - 1) * block_parameters
    return StepCost(flops=one.flops + extra * (two.flops - one.flops), peak_bytes=peak,
                    parameter_bytes=one.parameter_bytes + extra * block_parameters)
