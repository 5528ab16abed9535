"""What an ELECTRA-track job costs (the track face's ``cost``, trimbench.cost.work).

- ``train_electra``: every (k, seed) fine-tuning of one task and model (trimbench.electra.checks.
  model_fine_tunings), each the model cut to k blocks trained on the task's pairs, evaluated on dev
  every epoch, then scored on dev and test (ir2718/similarity-embedding-quality
  ``src/scripts/training.py:107-154``: each step forwards both texts of a pair, :108-116; dev after
  each epoch, :126; dev and test with the kept model, :151-154);
- ``adapt_domain``: masked-LM training of the whole model on the distinct texts of a dataset
  (``src/scripts/dapt.py:110-147``: batches of texts, a fresh MLM head over every token, an optimiser
  step every ``grad_accumulation_steps`` batches);
- ``pretune_word_similarity``: the model cut to k, trained on word pairs as a fine-tuning is, dev
  every epoch (``src/scripts/training_wordsim.py:84-98``).

The tables and figures run on CPU: None.
"""

from __future__ import annotations

import math
from collections import Counter

from trimbench.cost import work
from trimbench.cost.work import FP32_BYTES, CostContext, Count, Phase, Work
from trimbench.data.columns import text_columns
from trimbench.electra.checks import model_fine_tunings, objective
from trimbench.training import CHECKPOINTS_KEPT

#: the two texts of a pair, each forwarded through the model every step (as their columns are named
#: for kinds sts and pair-class, and the word-similarity sets)
PAIR = ("sentence1", "sentence2")


def job_cost(rule: str, wildcards: dict, exp: dict, context: CostContext) -> Work | None:
    if rule == "train_electra":
        return fine_tuning_work(exp, wildcards["task"], wildcards["model"], context)
    if rule == "adapt_domain":
        return adaptation_work(exp, wildcards["model"], context)
    if rule == "pretune_word_similarity":
        return pretuning_work(exp, wildcards["model"], int(wildcards["k"]), context)
    return None


def _unknown(counts: dict[str, Count]) -> tuple[str, ...]:
    return tuple(f"{label}: {count.source}" for label, count in counts.items() if count.n is None)


def _column_lengths(context: CostContext, datasets: list[str], split: str, model: str, max_length: int,
                    batch: int) -> tuple[list[int], str]:
    """Tokens each text of a pair is padded to (each column's batch padded on its own), the longer of
    the ``datasets`` where several are read together."""
    lengths, sources = [0] * len(PAIR), []
    for dataset in datasets:
        for at, column in enumerate(PAIR):
            tokens, source = context.padded_length(dataset, split, column, model, max_length, batch)
            lengths[at] = max(lengths[at], tokens)
            sources.append(f"{dataset} {column}: {source}")
    return lengths, "; ".join(sources)


def _pair_training(label: str, model: str, layers: int | None, rows: int, settings: dict, count_of: int,
                   datasets: list[str], max_length: int, context: CostContext, head: str = "encoder") -> tuple:
    """(optimiser steps of one training, its Phase repeated ``count_of`` times): both texts of each
    pair are forwarded, a forward each, and held until the one backward."""
    batch = settings["batch_size"]
    schedule = (rows, batch, settings["epochs"])
    lengths, source = _column_lengths(context, datasets, "train", model, max_length, batch)
    # the two texts, a forward each (src/scripts/training.py:108-116, hf_model.py:69-70 forward_once per text)
    phase = work.training_phase(label, model, work.training_batches(*schedule) * count_of,
                                [work.Forward(batch, tokens, max_length) for tokens in lengths], layers=layers,
                                head=head, precision=work.matmul_precision(settings), lengths_source=source)
    return work.optimizer_steps(*schedule), phase


def _pair_encoding(label: str, model: str, layers: int | None, rows: int, passes: int, batch: int,
                   datasets: list[str], split: str, max_length: int, context: CostContext) -> Phase:
    """``passes`` encodings of ``rows`` pairs' texts (both texts of each pair: an upper bound where an
    evaluator encodes a repeated text once), in length-sorted batches (sentence-transformers' encode),
    each padded to about its own texts' length: the mean, the padded length of a batch of one."""
    lengths, source = _column_lengths(context, datasets, split, model, max_length, 1)
    mean = math.ceil(sum(lengths) / len(PAIR))
    return Phase(label, model, passes * len(PAIR) * work.batches(rows, batch), batch, mean, train=False, layers=layers,
                 lengths_source=source, max_length=max_length)


def evaluation_passes(objective_name: str, epochs: float, select: str) -> tuple[int, int]:
    """(dev, test) encodings of one fine-tuning (trimbench.electra.train): the dev evaluator after
    each epoch; the scoring of dev and test (binary objective: dev once more for the F1 threshold);
    with ``select: best`` at most one scoring more, of the last epoch's weights when another epoch
    was kept (counted: the plan bounds the job)."""
    scorings = 2 if select == "best" else 1
    threshold = 1 if objective_name == "cosine_bce" else 0
    return math.ceil(epochs) + scorings * (1 + threshold), scorings


def fine_tuning_work(exp: dict, task: str, model: str, context: CostContext) -> Work:
    train = exp["train"]
    counts = {f"{task} train": context.rows(task, "train").capped(train["max_samples"], "train.max_samples"),
              f"{task} validation": context.rows(task, "validation"), f"{task} test": context.rows(task, "test")}
    if _unknown(counts):
        return Work(unknown=_unknown(counts))
    rows, dev, test = (count.n for count in counts.values())
    goal = objective(context.datasets[task])
    # SoftmaxLoss' classifier on [u; v; |u - v|] (SICK); the cosine objectives have no head
    head = "classifier" if goal == "softmax" else "encoder"
    max_length = train["max_seq_length"] or context.max_length(model)
    eval_batch = exp["evaluation"]["batch_size"]
    dev_passes, test_passes = evaluation_passes(goal, train["epochs"], train["select"])
    fine_tunings = model_fine_tunings(exp, model)
    seeds_at = Counter(k for k, _ in fine_tunings)
    phases, steps = [], 0
    for k, seeds in seeds_at.items():
        per_run, phase = _pair_training(f"fine-tune L{k} x {seeds} seeds", model, k, rows, train, seeds, [task],
                                        max_length, context, head)
        steps += per_run * seeds
        phases += [phase,
                   _pair_encoding(f"dev L{k}", model, k, dev, dev_passes * seeds, eval_batch, [task], "validation",
                                  max_length, context),
                   _pair_encoding(f"test L{k}", model, k, test, test_passes * seeds, eval_batch, [task], "test",
                                  max_length, context)]
    # Each fine-tuning trains a copy of the start model, which stays loaded on the device beside it
    # (scripts/train_electra.py, load_model): the start model of the deepest cut where each k has its own.
    start_layers = max(seeds_at) if exp["word_similarity"] else None
    notes = tuple(f"{label}: {count.n} rows ({count.source})" for label, count in counts.items()) + (
        f"{len(fine_tunings)} fine-tunings (k, seed), {train['epochs']} epochs of batch {train['batch_size']} each; "
        f"dev encoded {dev_passes} times and test {test_passes} times a fine-tuning (at most)",
        "disk: score tables and histories only",
    )
    return Work(phases=tuple(phases), examples=rows, optimizer_steps=steps, notes=notes,
                resident_bytes=context.parameters(model, layers=start_layers) * FP32_BYTES)


def adaptation_work(exp: dict, model: str, context: CostContext) -> Work:
    stage = exp["domain_adaptation"]
    dataset, splits = stage["dataset"], list(stage["splits"])
    texts = context.unique_texts(dataset, splits).capped(stage["max_samples"], "domain_adaptation.max_samples")
    if texts.n is None:
        return Work(unknown=(f"texts of {dataset} {'+'.join(splits)}: {texts.source}",))
    batch = stage["batch_size"]
    schedule = (texts.n, batch, stage["epochs"], -1, stage["gradient_accumulation"])
    steps = work.optimizer_steps(*schedule)
    max_length = stage["max_seq_length"] or context.max_length(model)
    # a batch of distinct texts of any text column, padded to its longest (the masking collator):
    # the longest column's padded length
    columns = text_columns(context.datasets[dataset]["kind"])
    tokens, source = max(context.padded_length(dataset, split, column, model, max_length, batch)
                         for split in splits for column in columns)
    phase = Phase("masked-LM training", model, work.training_batches(*schedule), batch, tokens, train=True, head="mlm",
                  precision=work.matmul_precision(stage), lengths_source=source, max_length=max_length)
    disk, disk_note = work.training_disk(context.parameters(model, head="mlm"), steps, stage["checkpoint_steps"],
                                    CHECKPOINTS_KEPT)
    notes = (f"texts: {texts.source}",
             f"{steps} optimiser steps: {texts.n} texts, batch {batch}, {stage['gradient_accumulation']} batches a "
             f"step, {stage['epochs']} epochs",
             "the MLM head's transform is frozen (domain_adaptation.head: frozen) but priced as trained"
             if stage["head"] == "frozen" else "the MLM head is trained",
             disk_note + " (the adapted encoder is saved without its head)")
    # masked-LM's loss is per token: micro-batches accumulated make the same step
    return Work(phases=(phase,), examples=texts.n, optimizer_steps=steps, disk_bytes=disk, notes=notes,
                split_keys=("domain_adaptation.gradient_accumulation",))


def pretuning_work(exp: dict, model: str, k: int, context: CostContext) -> Work:
    stage = exp["word_similarity"]
    datasets = list(stage["datasets"])
    train = {f"{ds} train": context.rows(ds, "train") for ds in datasets}
    dev = {f"{ds} validation": context.rows(ds, "validation") for ds in datasets}
    if _unknown({**train, **dev}):
        return Work(unknown=_unknown({**train, **dev}))
    rows = Count(sum(count.n for count in train.values()), " + ".join(c.source for c in train.values()))
    rows = rows.capped(stage["max_samples"], "word_similarity.max_samples")
    max_length = stage["max_seq_length"] or context.max_length(model)
    steps, phase = _pair_training(f"pre-tune L{k}", model, k, rows.n, stage, 1, datasets, max_length, context)
    dev_rows = sum(count.n for count in dev.values())
    evaluation = _pair_encoding(f"dev L{k}", model, k, dev_rows, math.ceil(stage["epochs"]),
                                exp["evaluation"]["batch_size"], datasets, "validation", max_length, context)
    notes = (f"word pairs: {rows.n} ({rows.source}); dev {dev_rows}",
             f"{steps} optimiser steps: batch {stage['batch_size']}, {stage['epochs']} epochs",
             f"disk: the model cut to {k} layers, its parameters x {FP32_BYTES} bytes")
    return Work(phases=(phase, evaluation), examples=rows.n, optimizer_steps=steps, notes=notes,
                disk_bytes=context.parameters(model, layers=k) * FP32_BYTES)
