"""The GPUs a plan can run on: memory and dense peak throughput per dtype, from the vendors' datasheets.

Peak figures are *dense* (NVIDIA's datasheets mark the 2:4-sparsity figures with an asterisk; the dense
one is half of it). A dtype a GPU has no fast path for is absent from its ``peak_tflops`` (the V100
has no TF32 or BF16 tensor cores), so asking for it is an error, not a guess. ``memory_gib`` is the
datasheet's nominal memory; what a job can use is less (CUDA context, fragmentation): :func:`usable_gib`,
what the fit test compares a job's peak with. A user adds their own GPUs in the config
(``gpu_table(extra)``), with the same fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from trimbench.errors import ConfigError

DTYPES = ("fp32", "tf32", "bf16", "fp16")


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_gib: float
    #: dtype -> dense peak TFLOP/s (tensor cores where the dtype has them)
    peak_tflops: Mapping[str, float] = field(default_factory=dict)
    #: where the figures were read
    source: str = ""
    #: memory bandwidth, GB/s (the datasheet's): what the elementwise work no FLOP counter sees costs
    #: (the optimiser's update, an MLM head's work over the vocabulary); None: that work is not priced
    memory_gbps: float | None = None

    def peak(self, dtype: str) -> float:
        """Dense peak TFLOP/s for ``dtype``; a ConfigError where the datasheet gives none."""
        if dtype not in self.peak_tflops:
            raise ConfigError(f"GPU '{self.name}' has no {dtype} peak in its table (it lists "
                              f"{', '.join(self.peak_tflops) or 'none'}; source: {self.source or 'not given'})")
        return float(self.peak_tflops[dtype])


_A100 = ("NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): "
         "FP32 19.5, TF32 156, BF16 312, FP16 312 TFLOPS dense (sparse figures, marked *, are twice these)")

GPUS: dict[str, Gpu] = {gpu.name: gpu for gpu in (
    Gpu("a100-40gb", 40, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
        _A100 + "; 1,555 GB/s (40GB SXM)", 1555),
    Gpu("a100-80gb", 80, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
        _A100 + "; 2,039 GB/s (80GB SXM)", 2039),
    Gpu("h100-80gb", 80, {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
        "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: FP32 67 TFLOPS; TF32 989, BF16 1,979, "
        "FP16 1,979 TFLOPS shown with sparsity ('specifications 1/2 lower without sparsity'); 3.35 TB/s", 3350),
    Gpu("l40s-48gb", 48, {"fp32": 91.6, "tf32": 183, "bf16": 362.05, "fp16": 362.05},
        "NVIDIA L40S datasheet: FP32 91.6, TF32 183 | 366*, BF16 362.05 | 733*, FP16 362.05 | 733* TFLOPS "
        "(* with sparsity); 864 GB/s", 864),
    Gpu("v100-32gb", 32, {"fp32": 15.7, "fp16": 125},
        "NVIDIA Tesla V100 datasheet (volta-v100-datasheet-update-us-1165301-r5.pdf), V100 SXM2: single "
        "precision 15.7, tensor performance 125 TFLOPS; Volta has no TF32 or BF16 tensor cores; 900 GB/s", 900),
    Gpu("a10-24gb", 24, {"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125},
        "NVIDIA A10 Tensor Core GPU datasheet: FP32 31.2, TF32 62.5 | 125*, BF16 125 | 250*, FP16 125 | 250* "
        "TFLOPS (* with sparsity); 600 GB/s", 600),
    Gpu("rtx4090-24gb", 24, {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2},
        "NVIDIA Ada GPU architecture whitepaper (nvidia-ada-gpu-architecture.pdf), GeForce RTX 4090 column: "
        "FP32 82.6, TF32 tensor 82.6, BF16 and FP16 tensor with FP32 accumulate (what autocast "
        "uses) 165.2 TFLOPS dense; 1,008 GB/s", 1008),
)}

_FIELDS = ("memory_gib", "peak_tflops", "source", "memory_gbps")


@dataclass(frozen=True)
class Efficiency:
    """The model FLOPs utilisation (MFU: counted FLOPs / (time x the dtype's dense peak)) a job of one
    dtype reaches: a low and a high end and a central figure, with where each comes from. None is a
    GPU measurement of this project's jobs (no GPU here): they are public figures, stated."""

    low: float
    central: float
    high: float
    source: str


#: dtype -> MFU (the plan's range; config ``plan_mfu`` replaces it with one figure)
MFU: dict[str, Efficiency] = {
    # tensor-core dtypes: PaLM's Table 3 (Chowdhery et al. 2022) reports 21-46 % MFU for large bf16
    # trainings; pyserini's TCT-ColBERT encoding got 1.25x from fp16 over fp32
    # (castorini/pyserini#697), which puts a BERT-size fp16 encoding near 0.1 of the fp16 peak
    **dict.fromkeys(("bf16", "fp16", "tf32"), Efficiency(
        0.1, 0.3, 0.46, "low 0.1: pyserini's fp16 BERT-base encoding, 1.25x its fp32 rate (castorini/pyserini#697); "
                        "central 0.3 and high 0.46: the middle and top of the 21-46 % MFU of PaLM's Table 3 "
                        "(Chowdhery et al. 2022); TF32 runs on the same tensor cores")),
    # fp32 without tensor cores: cuBLAS SGEMM reaches 18.88 of the A100's 19.49 TFLOP/s
    # (Yinghan-Li/YHs_Sample#4); a bert-base encoding of MS MARCO on a 1080 Ti in about 12 h
    # (jingtaozhan/RepBERT-Index#2) is 0.3-0.5 of that card's fp32 peak
    "fp32": Efficiency(
        0.3, 0.5, 0.8, "low 0.3 and central 0.5: the ends of a bert-base MS MARCO encoding's rate on a "
                       "1080 Ti (jingtaozhan/RepBERT-Index#2: about 12 h); high 0.8: below cuBLAS SGEMM's "
                       "0.97 of the A100's fp32 peak (Yinghan-Li/YHs_Sample#4), less the non-matmul work"),
}

#: what the fit test keeps free of a GPU's nominal memory: the CUDA context and cuBLAS / cuDNN
#: workspaces (about 0.5-1 GiB with recent torch), and the caching allocator's fragmentation (blocks
#: reserved but not allocated), taken as a share of the memory
FIT_RESERVED_GIB, FIT_FRAGMENTATION = 1.0, 0.05


def usable_gib(gpu: Gpu) -> float:
    """The memory a job's tensors can take on ``gpu``: its nominal memory less the CUDA context
    and fragmentation (:data:`FIT_RESERVED_GIB`, :data:`FIT_FRAGMENTATION`)."""
    return gpu.memory_gib * (1 - FIT_FRAGMENTATION) - FIT_RESERVED_GIB


def gpu_table(extra: Mapping | None = None) -> dict[str, Gpu]:
    """The known GPUs and a user's own (``extra``: name -> {memory_gib, peak_tflops, source}, from
    the config); a user's GPU of a known name replaces it."""
    table = dict(GPUS)
    for name, spec in (extra or {}).items():
        if not isinstance(spec, Mapping) or "memory_gib" not in spec or not spec.get("peak_tflops"):
            raise ConfigError(f"GPU '{name}' needs memory_gib and peak_tflops (dtype -> dense TFLOP/s, dtypes "
                              f"{', '.join(DTYPES)}); it gives {dict(spec) if isinstance(spec, Mapping) else spec!r}")
        unknown = sorted(set(spec) - set(_FIELDS)) + sorted(set(spec["peak_tflops"]) - set(DTYPES))
        if unknown:
            raise ConfigError(f"GPU '{name}': unknown key(s) {', '.join(unknown)} (fields: {', '.join(_FIELDS)}; "
                              f"dtypes: {', '.join(DTYPES)})")
        sizes = {"memory_gib": spec["memory_gib"], **{f"peak_tflops.{dtype}": value
                                                      for dtype, value in spec["peak_tflops"].items()}}
        for key, value in sizes.items():
            # a zero peak would divide the plan's GPU time by zero; zero memory fits no job
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigError(f"GPU '{name}': {key} {value!r} is not a positive number (a datasheet's "
                                  "memory and dense TFLOP/s are)")
        bandwidth = spec.get("memory_gbps")
        table[name] = Gpu(name, float(spec["memory_gib"]), {k: float(v) for k, v in spec["peak_tflops"].items()},
                          spec.get("source", "the config"), float(bandwidth) if bandwidth is not None else None)
    return table


def find_gpu(name: str, table: Mapping[str, Gpu] | None = None) -> Gpu:
    """The GPU called ``name``; a ConfigError listing the known names otherwise."""
    table = GPUS if table is None else table
    if name not in table:
        raise ConfigError(f"unknown GPU '{name}'; known: {', '.join(sorted(table))} (add yours to the config)")
    return table[name]
