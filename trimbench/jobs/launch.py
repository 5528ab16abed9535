"""A job that spans the devices of one node (``train.devices``, ``retrieval.encode_devices``,
``splade.encode_devices``): its script launches it as ranks under torchrun.

The devices are the job's resource ``gpu`` (the rule's ``resources: gpu=...``; :attr:`Job.devices
<trimbench.jobs.run.Job.devices>`), which Snakemake's rerun trigger does not compare: a model
trained on four devices is the one-device training, an array encoded by four ranks the one
device's. A job of ``N > 1`` devices is launched by its own script as ``N`` processes under
torchrun (:func:`launched`): the script's process (a plain one, or a child of the warm
interpreter) only starts ``python -m torch.distributed.run --standalone --nproc_per_node N`` on
the same script with the job as command-line arguments (:meth:`Job.to_cli
<trimbench.jobs.run.Job.to_cli>`) and waits. Each rank then runs the step as usual; what it does
across ranks (the process group, gathering) is :mod:`trimbench.distributed`. torchrun rather than
accelerate's launcher: the trainer needs nothing of accelerate's config files, torchrun ships with
torch (no further pin) and ``--standalone`` picks a free port, so several jobs can share a node.

Corpus encoding launches its ranks the same way, on an output that is already the temporary
path (:func:`written_by_ranks`): the ranks fill it, and the launching process moves it into
place once every rank has succeeded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import subprocess
import sys
from pathlib import Path

from trimbench.jobs.atomic import atomic_path

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


def launched(job, script: str, setting: str = "train.devices", outputs: dict | None = None) -> bool:
    """Run the job as :attr:`job.devices <trimbench.jobs.run.Job.devices>` ranks under torchrun and
    return True (the caller returns); False when there is nothing to launch: one device, or this
    process is a rank already. ``setting``: the experiment's config key of the devices;
    ``outputs``: paths the ranks write in place of the job's."""
    devices = job.devices
    if devices <= 1 or in_launched_rank():
        return False
    check_devices_available(devices, f"experiments.{job.named('wildcards').get('experiment', '?')}.{setting}")
    # each rank: its share of the job's CPUs; the ranks append to the job's log
    arguments = job.to_cli(outputs, threads=max(1, int(job.threads) // devices))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={devices}",
               script, *arguments]
    log.info("launching %d ranks: %s", devices, shlex.join(command))
    sys.stdout.flush()
    sys.stderr.flush()
    completed = subprocess.run(command, stdin=subprocess.DEVNULL, check=False)
    if completed.returncode:
        raise RuntimeError(f"torchrun ended with exit code {completed.returncode} (each rank's error is in this log)")
    return True


@contextlib.contextmanager
def written_by_ranks(job, script: str, name: str, setting: str):
    """The job's output ``name``, written by the job's devices. In the job's process: a temporary
    path (:func:`~trimbench.jobs.atomic.atomic_path`), which one device fills here (yielded), or
    the ranks launched on it (yields None: nothing left to do here); it is moved into place when
    the block ends without error, i.e. when every rank has succeeded. In a rank: that path (the
    step brings the process group up, :func:`trimbench.distributed.init_process_group`, before it
    loads the model: each rank on its own GPU)."""
    if in_launched_rank():
        yield Path(getattr(job.output, name))
        return
    with atomic_path(getattr(job.output, name)) as tmp:
        yield None if launched(job, script, setting, {name: tmp}) else tmp


def rank_log_format(fmt: str) -> str:
    """The log format with the rank after the time, in the ranks of a multi-device job."""
    if not in_launched_rank():
        return fmt
    return fmt.replace("%(asctime)s ", f"%(asctime)s rank {rank()}/{world_size()} ", 1)
