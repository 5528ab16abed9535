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

__all__ = ["Count", "Phase", "Work", "CostContext", "optimizer_steps", "batches", "one_shape", "saved_weights"]


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
    #: bytes written besides model weights (encodings, indexes, tables)
    disk_bytes: int = 0
    #: copies of the trained model's fp32 weights it writes at most: the model, and each checkpoint
    #: kept (its weights and AdamW's two states: 3 copies)
    saved_weights: float = 0.0
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


#: AdamW checkpoints the trainer keeps (trimbench/training.py: save_total_limit=2), each the weights and
#: the optimiser's two moment estimates
CHECKPOINTS_KEPT = 2
CHECKPOINT_WEIGHT_COPIES = 3


def saved_weights(steps: int, checkpoint_steps: int | None) -> float:
    """Copies of the weights a training writes at most: the model, and its kept checkpoints."""
    kept = min(CHECKPOINTS_KEPT, steps // checkpoint_steps) if checkpoint_steps else 0
    return 1 + kept * CHECKPOINT_WEIGHT_COPIES


def one_shape(inputs: list[tuple[int, float]]) -> tuple[int, int]:
    """One (batch, length) standing for several inputs a step runs through the same encoder before
    its one backward (a pair's two columns, a query batch and its passages): the shape whose tokens
    (sum of batch x length: the linear layers' FLOPs and activations) and attention (sum of batch x
    length^2) equal theirs, so one counted step prices them together and their activations are live
    at once, as in the real step."""
    tokens = sum(batch * length for batch, length in inputs)
    attention = sum(batch * length * length for batch, length in inputs)
    length = attention / tokens
    return max(1, round(tokens / length)), max(1, math.ceil(length))


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
    - ``layers(model) -> int``, ``hidden(model) -> int``: the model's depth and width;
    - ``max_positions(model) -> int``: the longest input the model takes (a length's upper bound where
      a setting leaves it to the model).
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

    def max_positions(self, model: str) -> int:  # pragma: no cover
        raise NotImplementedError
