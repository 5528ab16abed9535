"""Inside the ranks of a job that spans the devices of one node (``train.devices``, launched by
:mod:`trimbench.jobs.launch`): the process group, gathering, barriers.

Every batch of ``train.batch_size`` texts is split over the ranks (``split_batches``: the
sampler draws the very batches of a single-device run), and the losses gather their embeddings
across ranks (:func:`gathered`) so that in-batch negatives and batch statistics (FLOPS) are those
of the whole batch. Gradients stay right: ``all_gather``'s backward sums the gradient every rank
sends to a rank's embeddings, and DDP averages the ranks' parameter gradients. Which rank a
process is (:func:`~trimbench.jobs.launch.rank`, :func:`~trimbench.jobs.launch.is_main_process`)
is torchrun's environment, read where the ranks are launched.
"""

from __future__ import annotations

import os

from trimbench.jobs.launch import RANK_VARIABLE, in_launched_rank


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
