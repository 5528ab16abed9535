"""The work one job of the workflow does, as its track describes it (a face's ``cost``): the kinds of
model step it repeats and how often, the rows it reads, the optimiser steps, the devices it spans and
what it writes. The plan (trimbench.plan) prices each step (trimbench.cost.step) and adds them up.

A track answers for its own rules only; the plan asks each track of the job's experiment, then the
shared rules' costs. ``context`` is what a cost may ask of the config and the data: a
:class:`CostContext`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trimbench.data.sizes import Count

__all__ = ["Count", "Phase", "Work", "CostContext", "optimizer_steps", "batches"]


@dataclass(frozen=True)
class Phase:
    """One kind of model step a job repeats: ``count`` steps on each device, each over ``batch``
    sequences of ``length`` tokens (the padded length of a batch), forward only or trained."""

    label: str
    model: str
    count: int
    batch: int
    length: int
    train: bool
    layers: int | None = None
    head: str = "encoder"
    precision: str = "fp32"
    gradient_checkpointing: bool = False
    #: where ``length`` comes from (trimbench.cost.lengths.Lengths.source)
    lengths_source: str = ""

    @property
    def sequences(self) -> int:
        return self.count * self.batch

    @property
    def tokens(self) -> int:
        return self.count * self.batch * self.length


@dataclass(frozen=True)
class Work:
    """What one job does: its phases (on each of ``devices`` devices), the rows it reads, its
    optimiser steps and the bytes it writes. ``unknown`` names what the plan lacks to price it
    (a row count no contract records, ...): such a job is listed, never priced by a guess."""

    phases: tuple[Phase, ...] = ()
    examples: int | None = None
    optimizer_steps: int = 0
    devices: int = 1
    disk_bytes: int = 0
    notes: tuple[str, ...] = ()
    unknown: tuple[str, ...] = field(default=())

    @property
    def on_gpu(self) -> bool:
        return bool(self.phases)


def optimizer_steps(rows: int, batch: int, epochs: float, max_steps: int = -1, accumulation: int = 1) -> int:
    """Optimiser steps of a training over ``rows`` examples: sentence-transformers' (the HF
    trainer's) count, ceil(rows / batch) batches an epoch (the last one partial, not dropped),
    ``accumulation`` batches a step, ``epochs`` of them (a fraction allowed), or ``max_steps`` when
    positive."""
    if max_steps and max_steps > 0:
        return max_steps
    batches_per_epoch = math.ceil(rows / batch)
    return max(1, math.ceil(batches_per_epoch / accumulation * epochs))


def batches(rows: int, batch: int) -> int:
    """Forward batches of an encoding over ``rows`` texts."""
    return math.ceil(rows / batch) if rows else 0


class CostContext:
    """What a track's cost may ask of the config and the data (the plan implements it).

    - ``datasets``, ``models``: the config's registries;
    - ``rows(dataset, split) -> Count``: rows of one of our splits (after ``max_samples``-like caps
      the experiment applies itself);
    - ``corpus(dataset) -> Count``: documents of a retrieval dataset's corpus;
    - ``queries(dataset, split) -> Count``: queries of a retrieval split;
    - ``padded_length(dataset, split, column, model, max_length, batch) -> (tokens, source)``: the
      length a batch of ``batch`` texts of that column is padded to;
    - ``layers(model) -> int``, ``hidden(model) -> int``: the model's depth and width.
    """

    datasets: dict
    models: dict

    def rows(self, dataset: str, split: str) -> Count:  # pragma: no cover - the plan's
        raise NotImplementedError

    def corpus(self, dataset: str) -> Count:  # pragma: no cover
        raise NotImplementedError

    def queries(self, dataset: str, split: str) -> Count:  # pragma: no cover
        raise NotImplementedError

    def padded_length(self, dataset: str, split: str, column: str, model: str, max_length: int,
                      batch: int) -> tuple[int, str]:  # pragma: no cover
        raise NotImplementedError

    def layers(self, model: str) -> int:  # pragma: no cover
        raise NotImplementedError

    def hidden(self, model: str) -> int:  # pragma: no cover
        raise NotImplementedError
