"""trimbench.cost.gpus: the GPU table, a user's own GPUs and the errors naming what is known."""

from __future__ import annotations

import pytest

from trimbench.cost.gpus import DTYPES, GPUS, find_gpu, gpu_table
from trimbench.errors import ConfigError


def test_every_gpu_has_its_source_and_dense_figures():
    assert set(GPUS) == {"a100-40gb", "a100-80gb", "h100-80gb", "l40s-48gb", "v100-32gb", "a10-24gb", "rtx4090-24gb"}
    for gpu in GPUS.values():
        assert gpu.source and set(gpu.peak_tflops) <= set(DTYPES) and "fp32" in gpu.peak_tflops
        # a tensor-core dtype is never slower than fp32 on the CUDA cores
        assert all(value >= gpu.peak_tflops["fp32"] for value in gpu.peak_tflops.values())


def test_an_unknown_gpu_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown GPU 'a100'; known: a10-24gb, a100-40gb, a100-80gb, h100-80gb"):
        find_gpu("a100")


def test_a_dtype_without_a_datasheet_figure_is_an_error():
    with pytest.raises(ConfigError, match="GPU 'v100-32gb' has no bf16 peak"):
        find_gpu("v100-32gb").peak("bf16")
    assert find_gpu("h100-80gb").peak("bf16") == 989.5


def test_a_users_gpu_joins_the_table():
    table = gpu_table({"mi250x": {"memory_gib": 64, "peak_tflops": {"fp32": 47.9, "bf16": 191.5}, "source": "AMD"}})
    assert find_gpu("mi250x", table).peak("bf16") == 191.5
    assert "a100-80gb" in table and "mi250x" not in GPUS


@pytest.mark.parametrize("spec, named", [
    ({"peak_tflops": {"fp32": 1}}, "GPU 'mine' needs memory_gib and peak_tflops"),
    ({"memory_gib": 8, "peak_tflops": {"fp64": 1}}, "unknown key.*fp64"),
    ({"memory_gib": 8, "peak_tflops": {"fp32": 1}, "tdp": 300}, "unknown key.*tdp"),
    # the probe's C7: a zero peak divided the plan's GPU time by zero (a traceback)
    ({"memory_gib": 0, "peak_tflops": {"fp32": 10}}, r"GPU 'mine': memory_gib 0 is not a positive number"),
    ({"memory_gib": 8, "peak_tflops": {"fp32": 10, "bf16": 0}}, r"GPU 'mine': peak_tflops.bf16 0 is not a positive"),
    ({"memory_gib": 8, "peak_tflops": {"fp32": -1.5}}, r"peak_tflops.fp32 -1.5 is not a positive"),
    ({"memory_gib": "80", "peak_tflops": {"fp32": 10}}, r"memory_gib '80' is not a positive number"),
])
def test_a_malformed_users_gpu_is_named(spec, named):
    with pytest.raises(ConfigError, match=named):
        gpu_table({"mine": spec})


#: each GPU's nominal memory and dense peaks, read from the datasheet its source names (the sparse figures
#: halved): written out here, not derived from the table, so a figure typed wrong there fails
DATASHEETS = {
    "a100-40gb": (40, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312}),
    "a100-80gb": (80, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312}),
    "h100-80gb": (80, {"fp32": 67, "tf32": 989 / 2, "bf16": 1979 / 2, "fp16": 1979 / 2}),
    "l40s-48gb": (48, {"fp32": 91.6, "tf32": 366 / 2, "bf16": 362.05, "fp16": 362.05}),
    "v100-32gb": (32, {"fp32": 15.7, "fp16": 125}),
    "a10-24gb": (24, {"fp32": 31.2, "tf32": 125 / 2, "bf16": 250 / 2, "fp16": 250 / 2}),
    "rtx4090-24gb": (24, {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2}),
}


@pytest.mark.parametrize("name", sorted(DATASHEETS))
def test_each_gpus_memory_and_dense_peaks_are_its_datasheets(name):
    """Every figure of the table, not one: a GPU listed with another's memory (A100-80GB at 40) or a
    sparse figure taken for a dense one (L40S bf16 at 733) fails here. The L40S datasheet prints its
    dense bf16 / fp16 itself: 362.05."""
    memory, peaks = DATASHEETS[name]
    assert GPUS[name].memory_gib == memory
    assert GPUS[name].peak_tflops == pytest.approx(peaks)
