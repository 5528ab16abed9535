"""What a SPLADE job costs (the track face's ``cost``, trimbench.cost.work): ``train_splade`` and
``encode_sparse`` run the model, through its masked-LM head over every token (SPLADE's weights are
the max over tokens of log(1 + relu(MLM logits)): naver/splade
``training_with_sentence_transformers/models.py:24-30`` at eb74d1a). The triplets, the CE scores'
conversion, the impact indexes, the search, the ensembles and the table run on CPU: None.
"""

from __future__ import annotations

from trimbench.cost.work import (
    CostContext,
    Count,
    Forward,
    Phase,
    Work,
    matmul_precision,
    merged,
    optimizer_steps,
    rank_batches,
    training_batches,
    training_disk,
    training_phase,
)
from trimbench.data.columns import DOCUMENT, QUERY
from trimbench.splade.checks import drop_last, max_length
from trimbench.training import CHECKPOINTS_KEPT

#: the passages of a training row besides its query: its positive and one negative. The seed's
#: dataset gives (query, positive, negative) per query (train_max.py:186-198, train_distil.py:178-200
#: at eb74d1a) and its losses forward each of the three (losses.py:69 and :113), as
#: sentence-transformers' SparseMultipleNegativesRankingLoss / SparseMarginMSELoss do here.
PASSAGES_PER_ROW = 2
#: bytes of a kept term in docs.npz / queries.npz: an int32 impact and its int32 term id (scipy CSR,
#: trimbench.splade.vectors.quantize), before save_npz's compression; and of a row's int32 pointer
CSR_TERM_BYTES, CSR_ROW_BYTES = 8, 4


def job_cost(rule: str, wildcards: dict, exp: dict, context: CostContext) -> Work | None:
    if rule == "train_splade":
        return training_work(exp, wildcards["variant"], context)
    if rule == "encode_sparse":
        return encoding_work(exp, wildcards["variant"], context)
    return None


def training_split(exp: dict) -> tuple[str, str]:
    train = exp["train"]
    return train["dataset"], train["split"]


def pool_rows(exp: dict, context: CostContext) -> Count:
    """splade_triplets' rows: one per training query with a positive and a negative (the seed's
    train_max.py:168-169), at most the split's queries, then at most ``train.max_samples``. How many
    keep a negative after the CE filter is known only once the pools are built: an upper bound."""
    dataset, split = training_split(exp)
    queries = context.queries(dataset, split)
    if queries.n is None:
        return queries
    bound = Count(queries.n, f"at most the {split} queries of {dataset} ({queries.source}): "
                             "those with a positive and a negative")
    return bound.capped(exp["train"]["max_samples"], "train.max_samples")


def training_forwards(columns: list[Forward]) -> list[Forward]:
    """The forwards of a training step over its (query, positive, negative) ``columns``: SpladeLoss embeds
    the queries alone and the passages merged in one forward (sentence-transformers' ``embed_columns``,
    sparse_encoder/losses/splade.py), all held until the step's one backward."""
    return [columns[0], merged(columns[1:])]


def training_work(exp: dict, variant: str, context: CostContext) -> Work:
    """One variant's training: each step forwards a batch of queries and their positives and negatives
    through the MLM head, then one backward; ``train.devices`` ranks each take their share of every
    batch (trimbench.training: split_batches), so the steps are the single-device ones."""
    spec, train = exp["variants"][variant], exp["train"]
    model, method = spec["model"], spec["method"]
    dataset, split = training_split(exp)
    devices = train["devices"]
    rows = pool_rows(exp, context)
    if rows.n is None:
        return Work(devices=devices, unknown=(f"training rows of {dataset} {split}: {rows.source}",))
    batch, dropped = train["batch_size"], drop_last(train, method)
    schedule = (rows.n, batch, train["epochs"], train["max_steps"], train["gradient_accumulation"], dropped)
    steps = optimizer_steps(*schedule)
    per_device = batch // devices
    length = max_length(exp, method)
    # Each rank collates its own share of a batch's rows (trimbench.training: split_batches over a
    # map-style dataset, accelerate's BatchSamplerShard), so a column is padded to the longest of its
    # ``per_device`` texts (the seed: one max_seq_length for queries and passages, train_max.py:56).
    query_tokens, query_source = context.padded_length(dataset, split, QUERY, model, length, per_device)
    passage_tokens, passage_source = context.padded_length(dataset, split, DOCUMENT, model, length, per_device)
    forwards = training_forwards([Forward(per_device, query_tokens, length, query_source),
                                  *[Forward(per_device, passage_tokens, length, passage_source)] * PASSAGES_PER_ROW])
    phase = training_phase("train", model, training_batches(*schedule), forwards, head="mlm",
                           precision=matmul_precision(train), gradient_checkpointing=train["gradient_checkpointing"],
                           lengths_source=f"queries: {query_source}; passages: {passage_source}")
    disk, disk_note = training_disk(context.parameters(model, head="mlm"), steps, train["checkpoint_steps"],
                                    CHECKPOINTS_KEPT)
    notes = (
        f"rows: {rows.source}",
        f"{steps} optimiser steps: {schedule[0]} rows, batch {batch} ({per_device} queries and "
        f"{PASSAGES_PER_ROW * per_device} passages on each of {devices} device(s)), {train['epochs']} epochs"
        + (", the last partial batch of each dropped" if dropped else ""),
        disk_note,
    )
    # SPLADE's loss takes in-batch negatives: devices (which gather them) keep the method, accumulation would not
    return Work(phases=(phase,), examples=rows.n, optimizer_steps=steps, devices=devices, disk_bytes=disk,
                notes=notes, split_keys=("train.devices",), checkpointing_key="train.gradient_checkpointing")


def encoding_work(exp: dict, variant: str, context: CostContext) -> Work:
    """Sparse vectors of every evaluation corpus (once for the datasets that share it) and of each
    dataset's queries: forward passes through the MLM head, on ``splade.encode_devices`` ranks."""
    spec, settings = exp["variants"][variant], exp["splade"]
    model, trained_length = spec["model"], max_length(exp, spec["method"])
    split, batch, ranks = exp["evaluation"]["split"], settings["batch_size"], settings["encode_devices"]
    texts = []  # (label, dataset, split, column, Count, max length, max terms)
    for dataset in exp["evaluation"]["datasets"]:
        if exp["_corpus_of"][dataset] == dataset:  # a corpus shared with an earlier dataset is encoded once
            texts.append((f"{dataset} corpus", dataset, split, DOCUMENT, context.corpus(dataset, split),
                          settings["p_max_length"] or trained_length, settings["d_max_terms"]))
        texts.append((f"{dataset} queries", dataset, split, QUERY, context.queries(dataset, split),
                      settings["q_max_length"] or trained_length, settings["q_max_terms"]))
    unknown = tuple(f"{label}: {count.source}" for label, *_, count, _, _ in texts if count.n is None)
    if unknown:
        return Work(devices=ranks, unknown=unknown)
    phases, disk, unbounded = [], 0, []
    for label, dataset, split_, column, count, length, terms in texts:
        # Batches of length-sorted texts (longest first in each chunk: trimbench.encoding.length_order)
        # are padded to about their own texts' length: the mean, the padded length of a batch of one.
        tokens, source = context.padded_length(dataset, split_, column, model, length, 1)
        phases.append(Phase(f"encode {label}", model, rank_batches(count.n, batch, settings["encode_chunk"], ranks),
                            batch, tokens, train=False, head="mlm", lengths_source=source, max_length=length))
        if terms is None:
            unbounded.append((label, "d_max_terms" if column == DOCUMENT else "q_max_terms"))
        else:
            disk += count.n * (terms * CSR_TERM_BYTES + CSR_ROW_BYTES)
    notes = [f"{label}: {count.n} texts ({count.source})" for label, *_, count, _, _ in texts]
    notes.append(f"disk: at most {CSR_TERM_BYTES} bytes a kept term (splade.q_max_terms / d_max_terms) + "
                 f"{CSR_ROW_BYTES} a text")
    # a vector keeps every term it activates where no max_terms is set: how many, only the run tells
    disk_unknown = tuple(f"{label}: every term a vector activates is kept (no splade.{key}), {CSR_TERM_BYTES} bytes "
                         "each" for label, key in unbounded)
    return Work(phases=tuple(phases), examples=sum(count.n for *_, count, _, _ in texts), devices=ranks,
                batch_key="splade.batch_size", disk_bytes=disk, notes=tuple(notes), disk_unknown=disk_unknown)
