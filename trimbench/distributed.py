"""Training jobs that span the devices of one node (``train.devices``): launching, ranks, gathering.

A job with ``devices: N > 1`` is launched by its own script as ``N`` processes under torchrun
(:func:`launched`): the script's process (a plain one, or a child of the warm interpreter) only
starts ``python -m torch.distributed.run --standalone --nproc_per_node N`` on the same script with
the job as command-line arguments and waits. Each rank then runs the step as usual; the
sentence-transformers trainer (transformers' ``Trainer``) takes the process group from torchrun's
environment. torchrun rather than accelerate's launcher: the trainer needs nothing of accelerate's
config files, torchrun ships with torch (no further pin) and ``--standalone`` picks a free port, so
several jobs can share a node.

Every batch of ``train.batch_size`` texts is split over the ranks (``split_batches``: the
sampler draws the very batches of a single-device run), and the losses gather their embeddings
across ranks (:func:`gathered`) so that in-batch negatives and batch statistics (FLOPS) are those
of the whole batch. Gradients stay right: ``all_gather``'s backward sums the gradient every rank
sends to a rank's embeddings, and DDP averages the ranks' parameter gradients.

Corpus encoding (``retrieval.encode_devices``, ``splade.encode_devices``) launches its ranks the same
way, on an output that is already the temporary path (:func:`written_by_ranks`): the ranks fill it,
and the launching process moves it into place once every rank has succeeded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import subprocess
import sys
from pathlib import Path

log = logging.getLogger(__name__)

#: set by torchrun in each rank's environment
RANK_VARIABLE = "LOCAL_RANK"


def in_launched_rank() -> bool:
    return RANK_VARIABLE in os.environ


def rank() -> int:
    return int(os.environ.get("RANK", 0))


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", 1))


def is_main_process() -> bool:
    """Rank 0, or a run on one device: the process that writes a job's outputs."""
    return rank() == 0


def gathered(tensor):
    """``tensor`` of every rank, concatenated in rank order, with gradients flowing back to each rank's
    own part (sentence-transformers' ``all_gather_with_grad``); itself on one device."""
    import torch.distributed as dist
    from sentence_transformers.util import all_gather_with_grad

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor
    return all_gather_with_grad(tensor)


def from_main_process(tensor):
    """Rank 0's ``tensor`` on every rank, for a value that all ranks must share but draw at random
    (ESE's PCA target: ``svd_lowrank``'s projection); itself on one device. No gradient."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor
    tensor = tensor.detach().contiguous()
    dist.broadcast(tensor, src=0)
    return tensor


def barrier() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def init_process_group() -> None:
    """The process group of torchrun's ranks (NCCL on GPUs, gloo on CPUs), before the trainer's
    accelerate state looks for one; each rank on its own GPU."""
    import torch
    import torch.distributed as dist

    if not in_launched_rank() or dist.is_initialized():
        return
    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ[RANK_VARIABLE]))
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")


def check_devices_available(devices: int, key: str) -> None:
    """A job asking for ``devices`` GPUs must see as many; on CPU (no CUDA, outside SLURM) the
    ranks are CPU processes (gloo), which is what the tests run. Under SLURM a job without the GPUs
    it asked for is a config or profile error, not a silent CPU run."""
    import torch

    from trimbench.errors import ConfigError

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if visible and visible < devices:
        raise ConfigError(f"config key {key}: {devices} devices, but this job sees {visible} GPUs "
                          f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")
    if not visible and "SLURM_JOB_ID" in os.environ:
        raise ConfigError(f"config key {key}: {devices} devices, but SLURM job {os.environ['SLURM_JOB_ID']} has no "
                          "GPU: the rule asks for gpu=devices; check that the profile's partition has GPU nodes and "
                          "does not override gpu (set-resources)")


def job_arguments(job, devices: int, outputs: dict | None = None) -> list[str]:
    """The job as :func:`trimbench.jobs.run.job_from_cli` reads it back, with ``outputs`` in place of
    those outputs; the ranks append to the job's log as its launching process does (fault injection
    keeps its markers beside it)."""
    import json

    from trimbench.jobs.run import named_argument

    def pairs(values: dict) -> list[str]:
        return [named_argument(name, value) for name, value in values.items()]

    return ["--input", *pairs(job.named("input")), "--output", *pairs({**job.named("output"), **(outputs or {})}),
            "--wildcards", *pairs(job.named("wildcards")),
            "--params", json.dumps(job.named("params"), default=str),
            "--threads", str(max(1, int(job.threads) // devices)), *(["--job-log", str(job.log[0])] if job.log else [])]


def launched(job, script: str, devices: int, setting: str = "train.devices", outputs: dict | None = None) -> bool:
    """Run the job as ``devices`` ranks under torchrun and return True (the caller returns); False
    when there is nothing to launch: one device, or this process is a rank already. ``setting``: the
    experiment's config key of ``devices``; ``outputs``: paths the ranks write in place of the job's."""
    if devices <= 1 or in_launched_rank():
        return False
    check_devices_available(devices, f"experiments.{job.named('wildcards').get('experiment', '?')}.{setting}")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={devices}",
               script, *job_arguments(job, devices, outputs)]
    log.info("launching %d ranks: %s", devices, shlex.join(command))
    sys.stdout.flush()
    sys.stderr.flush()
    completed = subprocess.run(command, stdin=subprocess.DEVNULL, check=False)
    if completed.returncode:
        raise RuntimeError(f"torchrun ended with exit code {completed.returncode} (each rank's error is in this log)")
    return True


@contextlib.contextmanager
def written_by_ranks(job, script: str, name: str, devices: int, setting: str):
    """The job's output ``name``, written by ``devices`` ranks. In the job's process: a temporary
    path (:func:`~trimbench.jobs.atomic.atomic_path`), which one device fills here (yielded), or
    ``devices`` ranks launched on it (yields None: nothing left to do here); it is moved into place
    when the block ends without error, i.e. when every rank has succeeded. In a rank: that path,
    with the process group up (before the model is loaded: each rank on its own GPU)."""
    from trimbench.jobs.atomic import atomic_path

    if in_launched_rank():
        init_process_group()
        yield Path(getattr(job.output, name))
        return
    with atomic_path(getattr(job.output, name)) as tmp:
        yield None if launched(job, script, devices, setting, {name: tmp}) else tmp


def rank_log_format(fmt: str) -> str:
    """The log format with the rank after the time, in the ranks of a multi-device job."""
    if not in_launched_rank():
        return fmt
    return fmt.replace("%(asctime)s ", f"%(asctime)s rank {rank()}/{world_size()} ", 1)
