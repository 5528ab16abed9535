"""The work one job of the workflow does, as its track describes it (a face's ``cost``): the kinds of
model step it repeats and how often, the rows it reads, the optimiser steps, the devices it spans and
what it writes. The plan (trimbench.plan) prices each step (trimbench.cost.step) and adds them up.

A track answers for its own rules only; the plan asks each track of the job's experiment, then the
shared rules' costs. ``context`` is what a cost may ask of the config and the data: a
:class:`CostContext`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from trimbench.data.columns import text_columns
from trimbench.data.sizes import Count
from trimbench.training import SPEED_DEFAULTS


class Forward(NamedTuple):
    """One forward pass of a step: ``batch`` texts padded to ``length`` tokens, the longest such a batch
    can be is ``max_length`` (its truncation length; None: not stated); ``source``: where its texts'
    lengths come from (trimbench.cost.lengths.Lengths.source: the longest text it records bounds the
    forward's longest batch)."""

    batch: int
    length: int
    max_length: int | None = None
    source: str = ""


def merged(forwards: list[Forward]) -> Forward:
    """Columns sentence-transformers embeds in one forward pass (``embed_columns``:
    ``merge_feature_batches`` pads every column to the longest and concatenates them):
    their batches summed at the longest length."""
    bounds = [forward.max_length for forward in forwards if forward.max_length is not None]
    sources = dict.fromkeys(forward.source for forward in forwards if forward.source)
    return Forward(sum(forward.batch for forward in forwards), max(forward.length for forward in forwards),
                   max(bounds) if bounds else None, "; ".join(sources))


@dataclass(frozen=True)
class Phase:
    """One kind of model step a job repeats: ``count`` steps on each device, each over ``batch``
    sequences of ``length`` tokens (the padded length of a batch), forward only or trained.

    A step that forwards several inputs before its one backward (a pair's two texts, a query batch
    and its passage columns) lists them in ``forwards`` (:func:`training_phase` builds it; ``batch``
    and ``length`` are then their texts and mean padded length): each is counted as a forward of its
    own, as the loss runs it, which matters under gradient checkpointing (a block is recomputed for
    one forward's texts at a time, not all of the step's)."""

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
    #: the job's truncation length: the longest a batch of this phase can be padded to (a long run
    #: meets such a batch: the peak memory's length); None: not stated
    max_length: int | None = None
    #: the step's forward passes, where it runs more than one (see above); empty: one of batch x length
    forwards: tuple[Forward, ...] = ()

    @property
    def sequences(self) -> int:
        return self.count * self.batch

    @property
    def tokens(self) -> int:
        if self.forwards:
            return self.count * sum(forward.batch * forward.length for forward in self.forwards)
        return self.count * self.batch * self.length

    @property
    def step_forwards(self) -> tuple[Forward, ...]:
        """The forward passes of one step: ``forwards``, or the one of batch x length."""
        return self.forwards or (Forward(self.batch, self.length, self.max_length),)


def with_forwards(phase: Phase, forwards: list[Forward]) -> Phase:
    """``phase`` running ``forwards`` each step: ``batch`` their texts, ``length`` their mean padded
    length, ``max_length`` the longest of their bounds."""
    batch = sum(forward.batch for forward in forwards)
    tokens = sum(forward.batch * forward.length for forward in forwards)
    bounds = [forward.max_length for forward in forwards if forward.max_length is not None]
    return replace(phase, batch=batch, length=math.ceil(tokens / batch), max_length=max(bounds) if bounds else None,
                   forwards=tuple(forwards))


def training_phase(label: str, model: str, count: int, forwards: list[Forward], **fields) -> Phase:
    """A trained Phase whose step runs ``forwards`` (:class:`Forward`) before its one backward."""
    return with_forwards(Phase(label, model, count, 1, 1, train=True, **fields), forwards)


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
    #: device memory the job holds beside its phases' steps (on each device): another model kept
    #: loaded (ELECTRA's start model beside the copy it fine-tunes)
    resident_bytes: int = 0
    #: the settings, as the track names them, that split a trained batch over devices or micro-batches
    #: *without changing the method* (what a "does not fit" may offer; gradient accumulation is never
    #: one for a loss with in-batch negatives: each micro-batch would see fewer negatives)
    split_keys: tuple[str, ...] = ()
    #: the track's setting that turns on gradient checkpointing (None: the track has none)
    checkpointing_key: str | None = None
    #: the setting of an encoding's batch (a smaller one changes no result)
    batch_key: str | None = None
    #: what it writes that ``disk_bytes`` cannot count, each named with why (SPLADE vectors of every
    #: term they activate: no bound before the run); the plan shows such a job's disk as unknown
    disk_unknown: tuple[str, ...] = ()
    #: texts the job holds in host memory beside its ``examples``, as (texts, tokens a text): a corpus
    #: it loads whole (train_retriever's passages); the plan's ``mem_mb`` counts them
    held_texts: tuple[tuple[int, int], ...] = ()

    @property
    def on_gpu(self) -> bool:
        return bool(self.phases)


def matmul_precision(section: dict) -> str:
    """The dtype a training section's matrix products run in: its ``precision`` (bf16 / fp16
    autocast), or for fp32 ``tf32`` where the section's ``tf32`` is on (trimbench.training's default
    when unset: TF32 matmuls on Ampere and newer GPUs; the plan falls back to fp32 on a GPU without)."""
    precision = section.get("precision", "fp32")
    if precision == "fp32" and section.get("tf32", SPEED_DEFAULTS["tf32"]):
        return "tf32"
    return precision


def _epoch_batches(rows: int, batch: int, drop_last: bool) -> int:
    """Batches of an epoch's loader: the last one partial, or dropped with ``drop_last``."""
    return rows // batch if drop_last else math.ceil(rows / batch)


def _updates_per_epoch(epoch_batches: int, accumulation: int) -> int:
    # transformers' Trainer (set_initial_training_values, 5.x): ceil(batches / accumulation), at least 1;
    # an epoch's last update takes the batches left over
    return max(math.ceil(epoch_batches / accumulation), 1)


def optimizer_steps(rows: int, batch: int, epochs: float, max_steps: int = -1, accumulation: int = 1,
                    drop_last: bool = False) -> int:
    """Optimiser steps of a training over ``rows`` examples: sentence-transformers' (the HF
    trainer's) count, ceil(rows / batch) batches an epoch (the last one partial; dropped with
    ``drop_last``), ceil(batches / ``accumulation``) steps an epoch (the last one takes the batches
    left), ``epochs`` of them (a fraction allowed: ceil(epochs x steps an epoch)), or ``max_steps``
    when positive."""
    if max_steps and max_steps > 0:
        return max_steps
    return max(1, math.ceil(epochs * _updates_per_epoch(_epoch_batches(rows, batch, drop_last), accumulation)))


def training_batches(rows: int, batch: int, epochs: float, max_steps: int = -1, accumulation: int = 1,
                     drop_last: bool = False) -> int:
    """Forward-backward batches of that training (what each device runs, with its share of every
    batch): every batch of each whole epoch, then ``accumulation`` a step until the steps are done."""
    epoch_batches = _epoch_batches(rows, batch, drop_last)
    whole_epochs, steps_left = divmod(optimizer_steps(rows, batch, epochs, max_steps, accumulation, drop_last),
                                      _updates_per_epoch(epoch_batches, accumulation))
    return whole_epochs * epoch_batches + min(steps_left * accumulation, epoch_batches)


#: bytes of a parameter in a saved fp32 model, and of AdamW's two fp32 moments in a checkpoint's optimizer.pt
FP32_BYTES, ADAMW_STATE_BYTES = 4, 8


def training_disk(parameters: int, steps: int, checkpoint_steps: int, kept: int) -> tuple[int, str]:
    """Peak bytes a training job writes, and how: the trained model (fp32) and, while it runs, the
    checkpoints it keeps (every ``checkpoint_steps`` steps, at most ``kept`` at once: the trainer's
    save_total_limit), each the model and AdamW's two moments, removed when the model is saved."""
    model = parameters * FP32_BYTES
    checkpoints = min(kept, steps // checkpoint_steps) if checkpoint_steps > 0 else 0
    checkpoint = parameters * (FP32_BYTES + ADAMW_STATE_BYTES)
    return model + checkpoints * checkpoint, (
        f"disk: the model, {parameters} parameters x {FP32_BYTES} bytes"
        + (f", and while it trains {checkpoints} checkpoint(s) of {parameters} x {FP32_BYTES + ADAMW_STATE_BYTES} "
           "bytes (the model and AdamW's moments), removed at its end" if checkpoints else ""))


def rank_batches(texts: int, batch: int, chunk: int, ranks: int) -> int:
    """Batches the busiest of ``ranks`` encodes: each chunk's batches are dealt round robin
    (trimbench.encoding.rank_rows: trimbench.dense.search's and trimbench.splade.vectors' encodings)."""
    full, rest = divmod(texts, chunk)
    per_chunk = [math.ceil(chunk / batch)] * full + ([math.ceil(rest / batch)] if rest else [])
    return sum(math.ceil(n / ranks) for n in per_chunk)


def batches(rows: int, batch: int) -> int:
    """Forward batches of an encoding over ``rows`` texts."""
    return math.ceil(rows / batch) if rows else 0


class CostContext:
    """What a track's cost may ask of the config and the data (the plan implements it).

    - ``datasets``, ``models``: the config's registries;
    - ``rows(dataset, split) -> Count``: rows of one of our splits (after ``max_samples``-like caps
      the experiment applies itself);
    - ``corpus(dataset, split) -> Count``: documents of the corpus a retrieval split searches;
    - ``queries(dataset, split) -> Count``: queries of a retrieval split;
    - ``padded_length(dataset, split, column, model, max_length, batch) -> (tokens, source)``: the
      length a batch of ``batch`` texts of that column is padded to;
    - ``layers(model) -> int``, ``hidden(model) -> int``: the model's depth and width;
    - ``max_length(model) -> int``: the tokens a text is cut at where a job sets no maximum;
    - ``parameters(model, layers, head) -> int``: the parameters of the model as a job saves it;
    - ``unique_texts(dataset, splits) -> Count``: distinct texts of splits' text columns.
    """

    datasets: dict
    models: dict

    def rows(self, dataset: str, split: str) -> Count:  # pragma: no cover - the plan's
        raise NotImplementedError

    def corpus(self, dataset: str, split: str) -> Count:  # pragma: no cover
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

    def max_length(self, model: str) -> int:  # pragma: no cover
        """The tokens a text of ``model`` is cut at where a job sets no ``max_seq_length``: the model's
        own limit, as sentence-transformers and the tokenizer take it (``max_position_embeddings``,
        less RoBERTa's padding offset: trimbench.models.position_limit; the tokenizer's
        ``model_max_length`` where smaller)."""
        raise NotImplementedError

    def parameters(self, model: str, layers: int | None = None, head: str = "encoder") -> int:  # pragma: no cover
        """Parameters of ``model`` as a job saves it (4 bytes each in fp32): cut to ``layers`` blocks
        (None: all), with ``head`` (trimbench.cost.step's: "mlm" adds the masked-LM head's transform and
        output bias, its decoder tied to the word embeddings)."""
        raise NotImplementedError

    def unique_texts(self, dataset: str, splits: list[str]) -> Count:
        """Distinct texts of the text columns of ``dataset``'s ``splits`` (ELECTRA's domain adaptation
        reads each once). This default is an upper bound, duplicates counted: rows x text columns of
        each split; a plan that can count them on a copy overrides it."""
        columns = text_columns(self.datasets[dataset]["kind"])
        counts = [self.rows(dataset, split) for split in splits]
        unknown = [count.source for count in counts if count.n is None]
        if unknown:
            return Count(None, "; ".join(unknown))
        total = sum(count.n for count in counts) * len(columns)
        return Count(total, f"at most {len(columns)} texts a row ({', '.join(columns)}) of "
                            + " + ".join(f"{split} {count.n} ({count.source})" for split, count in
                                         zip(splits, counts, strict=True)))
