"""What the dense tracks' GPU jobs do (the face's ``cost``): trainings on pairs, triplets or scored pairs
(rule train_model), on query groups (train_retriever), and the encodings of STS sets (encode_texts) and
of retrieval corpora (encode_corpus), as steps the plan prices (trimbench.cost).

The step structure follows the trainings: sentence-transformers' losses run the text columns through
the encoder before one backward, a forward each or candidates merged (:func:`sts_forwards`); the
retrieval training (trimbench.dense.retrieval_loss, after ielab/2DMSE-Reproduce
code/Retrieval/tevatron/src/tevatron/retriever/modeling/encoder.py, forward) encodes a batch of queries,
then each column of their groups' passages, then one backward. The 2DMSE / Matryoshka /
Starbucks terms reuse those hidden states (an extra loss over sliced embeddings: batch x batch x dim,
negligible beside the encoder), so a step is one pass whatever the method; BERT-S trains a cut model.
"""

from __future__ import annotations

from trimbench.cost.work import (
    CostContext,
    Count,
    Forward,
    Phase,
    Work,
    batches,
    matmul_precision,
    merged,
    optimizer_steps,
    rank_batches,
    training_batches,
    training_disk,
    training_phase,
)
from trimbench.data.columns import DOCUMENT, QUERY, text_columns
from trimbench.dense.variants import encoded_layers, variant_retrieval_settings, variant_train_settings, variants
from trimbench.training import CHECKPOINTS_KEPT

#: bytes of one stored embedding value: encode_texts keeps float32, encode_corpus float16
#: (scripts/encode_texts.py, scripts/encode_corpus.py)
TEXT_EMBEDDING_BYTES = 4
CORPUS_EMBEDDING_BYTES = 2
#: the batch an encoding's length is padded at: trimbench.encoding.encode_layers batches texts longest
#: first (as SentenceTransformer.encode), so each batch is padded to about its own texts' length: the
#: mean, the padded length of a batch of one (as the SPLADE and ELECTRA encodings count it), not the
#: longest of a random batch's draws
SORTED_BATCH = 1


def job_cost(rule: str, wildcards: dict, exp: dict, context: CostContext) -> Work | None:
    """The work of a dense track's job; None for a CPU job (scores, tables, figures)."""
    price = {"train_model": _train_pairs, "train_retriever": _train_groups, "encode_texts": _encode_texts,
             "encode_corpus": _encode_corpus}.get(rule)
    return price(wildcards, exp, context) if price else None


def _variant(exp: dict, name: str):
    return next(v for v in variants(exp, exp["_depth"]) if v.name == name)


def _unknown(*counts) -> tuple[str, ...]:
    return tuple(count.source for count in counts if count.n is None)


#: the methods whose loss is sentence-transformers' MultipleNegativesRankingLoss, alone or in MatryoshkaLoss
#: (trimbench.dense.losses.build_sts_loss, objective mnrl): it embeds its columns with embed_columns
MNRL_EMBEDDED_METHODS = ("full", "separate", "matryoshka")


def sts_forwards(columns: list[Forward], method: str, objective: str) -> list[Forward]:
    """The forwards of a train_model step over its text ``columns`` (trimbench.dense.losses.build_sts_loss):
    MNRL's ``embed_columns`` runs the first column alone and the others merged into one forward
    (sentence-transformers base/losses/merged_forward.py); the 2D losses (``column_merging_disabled``)
    and the AnglE / ESE objective (a forward per column) run each column alone."""
    if objective == "mnrl" and method in MNRL_EMBEDDED_METHODS and len(columns) > 2:
        return [columns[0], merged(columns[1:])]
    return list(columns)


def _train_pairs(wildcards: dict, exp: dict, context: CostContext) -> Work:
    variant = _variant(exp, wildcards["variant"])
    train = variant_train_settings(exp, variant.method)
    dataset, split = train["dataset"], train["split"]

    def shape(per_device: int) -> tuple[list[Forward], str]:
        columns, sources = [], []
        for column in text_columns(context.datasets[dataset]["kind"]):
            length, source = context.padded_length(dataset, split, column, exp["model"], train["max_seq_length"],
                                                   per_device)
            columns.append(Forward(per_device, length, train["max_seq_length"], source))
            sources.append(f"{column}: {source}")
        return sts_forwards(columns, variant.method, exp["objective"]), "; ".join(sources)

    rows = context.rows(dataset, split).capped(train["max_samples"], "train.max_samples")
    return _training(exp, variant, train, rows, shape, f"rows: {rows.source}", context)


def _train_groups(wildcards: dict, exp: dict, context: CostContext) -> Work:
    variant = _variant(exp, wildcards["variant"])
    train = variant_train_settings(exp, variant.method)
    retrieval = variant_retrieval_settings(exp, variant.method)
    dataset, split = train["dataset"], train["split"]
    p_max = retrieval["p_max_length"] or context.max_length(exp["model"])
    # the model is loaded at p_max_length (scripts/train_retriever.py), which cuts uncut queries too
    q_max = retrieval["q_max_length"] or p_max

    def shape(per_device: int) -> tuple[list[Forward], str]:
        # the queries, then each of the group's passage columns, a forward each (trimbench.dense.retrieval_loss:
        # RetrievalLoss.forward embeds them one by one), each column padded to its own longest
        q_length, q_source = context.padded_length(dataset, split, QUERY, exp["model"], q_max, per_device)
        p_length, p_source = context.padded_length(dataset, split, DOCUMENT, exp["model"], p_max, per_device)
        passages = [Forward(per_device, p_length, p_max, p_source)] * retrieval["group_size"]
        queries = Forward(per_device, q_length, q_max, q_source)
        return [queries, *passages], f"queries: {q_source}; passages: {p_source}"

    queries = context.queries(dataset, split).capped(train["max_samples"], "train.max_samples")
    # the job loads the training split whole (scripts/train_retriever.py: RetrievalSplit.load), and
    # keeps every passage's text for the groups drawn each epoch (trimbench.pools.group_pools)
    corpus = context.corpus(dataset, split)
    held = ()
    if corpus.n is not None:
        mean_tokens, _ = context.padded_length(dataset, split, DOCUMENT, exp["model"], p_max, SORTED_BATCH)
        held = ((corpus.n, mean_tokens),)
    return _training(exp, variant, train, queries, shape,
                     f"queries: {queries.source}; {retrieval['group_size']} passages a query; held in memory: "
                     f"the corpus ({corpus.source})", context, held)


def _training(exp: dict, variant, train: dict, rows: Count, shape, source: str, context: CostContext,
              held_texts: tuple = ()) -> Work:
    """A training's one phase: its steps (the trainer's schedule over ``rows``), each its forwards
    (``shape(sequences a device)`` -> the forwards of a step and where their lengths came from)
    before one backward, and what it writes; ``held_texts``: the texts it holds beside its rows
    (trimbench.cost.work.Work.held_texts)."""
    if rows.n is None:
        return Work(unknown=_unknown(rows), devices=train["devices"])
    per_device = train["batch_size"] // train["devices"]
    schedule = (rows.n, train["batch_size"], train["epochs"], train["max_steps"], train["gradient_accumulation"])
    steps = optimizer_steps(*schedule)
    forwards, lengths_source = shape(per_device)
    phase = training_phase("train", exp["model"], training_batches(*schedule), forwards, layers=variant.cut_layers,
                           precision=matmul_precision(train), gradient_checkpointing=train["gradient_checkpointing"],
                           lengths_source=lengths_source)
    parameters = context.parameters(exp["model"], variant.cut_layers)
    disk, disk_note = training_disk(parameters, steps, train["checkpoint_steps"], CHECKPOINTS_KEPT)
    # train.devices gathers in-batch negatives across devices (the single-device training); accumulation
    # would shrink the negatives of the in-batch losses, so it is not offered
    return Work((phase,), examples=rows.n, optimizer_steps=steps, devices=train["devices"], disk_bytes=disk,
                notes=(source, disk_note), split_keys=("train.devices",),
                checkpointing_key="train.gradient_checkpointing", held_texts=held_texts)


def _encode_texts(wildcards: dict, exp: dict, context: CostContext) -> Work:
    variant = _variant(exp, wildcards["variant"])
    evaluation = exp["evaluation"]
    batch = evaluation["batch_size"]
    max_length = evaluation["max_seq_length"] or context.max_length(exp["model"])
    phases, counts, texts = [], [], 0
    for dataset in evaluation["datasets"]:
        rows = context.rows(dataset, evaluation["split"])
        counts.append(rows)
        if rows.n is None:
            continue
        for column in text_columns(context.datasets[dataset]["kind"]):
            length, source = context.padded_length(dataset, evaluation["split"], column, exp["model"], max_length,
                                                   SORTED_BATCH)
            phases.append(Phase(f"encode {dataset} {column}", exp["model"], batches(rows.n, batch), batch, length,
                                train=False, layers=variant.cut_layers, precision=evaluation["precision"],
                                lengths_source=source, max_length=max_length))
            texts += rows.n
    unknown = _unknown(*counts)
    if unknown:
        return Work(unknown=unknown)
    max_dim = max(exp["grid"]["dims"])
    return Work(tuple(phases), examples=texts, batch_key="evaluation.batch_size",
                disk_bytes=texts * len(variant.eval_layers) * max_dim * TEXT_EMBEDDING_BYTES)


def _encode_corpus(wildcards: dict, exp: dict, context: CostContext) -> Work:
    variant = _variant(exp, wildcards["variant"])
    evaluation, retrieval = exp["evaluation"], exp["retrieval"]
    devices = retrieval["encode_devices"]
    batch = evaluation["batch_size"]
    max_length = context.max_length(exp["model"])
    layers = len(encoded_layers(exp, variant))
    max_dim = variant.cut_dim or max(exp["grid"]["dims"])
    phases, counts, vectors = [], [], 0
    for dataset in evaluation["datasets"]:
        split = evaluation["split"]
        queries = context.queries(dataset, split)
        counts.append(queries)
        parts = [("queries", queries, QUERY, retrieval["q_max_length"] or max_length)]
        if exp["_corpus_of"][dataset] == dataset:
            docs = context.corpus(dataset, split)
            counts.append(docs)
            parts.append(("corpus", docs, DOCUMENT, retrieval["p_max_length"] or max_length))
        for part, count, column, part_max in parts:
            if count.n is None:
                continue
            length, source = context.padded_length(dataset, split, column, exp["model"], part_max, SORTED_BATCH)
            # each chunk's batches dealt round robin over the ranks (trimbench.dense.search.encode_to_memmap);
            # the queries are one chunk
            chunk = retrieval["encode_chunk"] if part == "corpus" else count.n
            phases.append(Phase(f"encode {dataset} {part}", exp["model"], rank_batches(count.n, batch, chunk, devices),
                                batch, length, train=False, layers=variant.cut_layers,
                                precision=evaluation["precision"], lengths_source=source, max_length=part_max))
            vectors += count.n
    unknown = _unknown(*counts)
    if unknown:
        return Work(unknown=unknown, devices=devices)
    return Work(tuple(phases), examples=vectors, devices=devices, batch_key="evaluation.batch_size",
                disk_bytes=vectors * layers * max_dim * CORPUS_EMBEDDING_BYTES)

