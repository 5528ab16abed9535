"""The GPUs a plan can run on: memory and dense peak throughput per dtype, from the vendors' datasheets.

Peak figures are *dense* (NVIDIA's datasheets mark the 2:4-sparsity figures with an asterisk; the dense
one is half of it). A dtype a GPU has no fast path for is absent from its ``peak_tflops`` (the V100
has no TF32 or BF16 tensor cores), so asking for it is an error, not a guess. ``memory_gib`` is the
datasheet's nominal memory; what a job can use is somewhat less (CUDA context, ECC), which the plan's
margin covers. A user adds their own GPUs in the config (``gpu_table(extra)``), with the same fields.
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

    def peak(self, dtype: str) -> float:
        """Dense peak TFLOP/s for ``dtype``; a ConfigError where the datasheet gives none."""
        if dtype not in self.peak_tflops:
            raise ConfigError(f"GPU '{self.name}' has no {dtype} peak in its table (it lists "
                              f"{', '.join(self.peak_tflops) or 'none'}; source: {self.source or 'not given'})")
        return float(self.peak_tflops[dtype])


_A100 = ("NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): "
         "FP32 19.5, TF32 156, BF16 312, FP16 312 TFLOPS dense (sparse figures, marked *, are twice these)")

GPUS: dict[str, Gpu] = {gpu.name: gpu for gpu in (
    Gpu("a100-40gb", 40, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312}, _A100),
    Gpu("a100-80gb", 80, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312}, _A100),
    Gpu("h100-80gb", 80, {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
        "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: FP32 67 TFLOPS; TF32 989, BF16 1,979, "
        "FP16 1,979 TFLOPS shown with sparsity ('specifications 1/2 lower without sparsity')"),
    Gpu("l40s-48gb", 48, {"fp32": 91.6, "tf32": 183, "bf16": 362.05, "fp16": 362.05},
        "NVIDIA L40S datasheet: FP32 91.6, TF32 183 | 366*, BF16 362.05 | 733*, FP16 362.05 | 733* TFLOPS "
        "(* with sparsity)"),
    Gpu("v100-32gb", 32, {"fp32": 15.7, "fp16": 125},
        "NVIDIA Tesla V100 datasheet (volta-v100-datasheet-update-us-1165301-r5.pdf), V100 SXM2: single "
        "precision 15.7, tensor performance 125 TFLOPS; Volta has no TF32 or BF16 tensor cores"),
    Gpu("a10-24gb", 24, {"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125},
        "NVIDIA A10 Tensor Core GPU datasheet: FP32 31.2, TF32 62.5 | 125*, BF16 125 | 250*, FP16 125 | 250* "
        "TFLOPS (* with sparsity)"),
    Gpu("rtx4090-24gb", 24, {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2},
        "NVIDIA Ada GPU architecture whitepaper (nvidia-ada-gpu-architecture.pdf), GeForce RTX 4090 column: "
        "FP32 82.6, TF32 tensor 82.6, BF16 and FP16 tensor with FP32 accumulate (what autocast "
        "uses) 165.2 TFLOPS dense"),
)}

_FIELDS = ("memory_gib", "peak_tflops", "source")


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
        table[name] = Gpu(name, float(spec["memory_gib"]), {k: float(v) for k, v in spec["peak_tflops"].items()},
                          spec.get("source", "the config"))
    return table


def find_gpu(name: str, table: Mapping[str, Gpu] | None = None) -> Gpu:
    """The GPU called ``name``; a ConfigError listing the known names otherwise."""
    table = GPUS if table is None else table
    if name not in table:
        raise ConfigError(f"unknown GPU '{name}'; known: {', '.join(sorted(table))} (add yours to the config)")
    return table[name]
