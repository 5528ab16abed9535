"""The dense tracks' job costs (trimbench.dense.cost) on hand-made experiments and a fake context:
the counts are worked out by hand in each test."""

from __future__ import annotations

import pytest
from cost_fakes import BLOCK_PARAMETERS, EMBEDDING_PARAMETERS, TableContext, experiment, shapes

from trimbench.cost.work import FP32_BYTES
from trimbench.dense.cost import job_cost

DATASETS = {"pairs": {"source": "local", "path": "pairs", "kind": "pairs"},
            "triplets": {"source": "local", "path": "triplets", "kind": "triplets"},
            "sts": {"source": "local", "path": "sts", "kind": "sts"},
            "marco": {"source": "local", "path": "marco", "kind": "retrieval"},
            "beir": {"source": "local", "path": "beir", "kind": "retrieval"}}
MODELS = {"enc": {"source": "tiny", "layers": 4, "dim": 32}}


def _sts(objective: str = "mnrl", **train) -> dict:
    exp = experiment({"datasets": DATASETS, "models": MODELS, "experiments": {"x": {
        "track": "2dmse-sts", "model": "enc", "methods": ["full", "separate", "matryoshka", "2dmse"],
        "grid": {"layers": [2, 4], "dims": [8, 32]}, "objective": objective,
        "train": {"dataset": "pairs", "epochs": 2, "batch_size": 32, "max_seq_length": 64, **train},
        "evaluation": {"datasets": ["sts"], "split": "test", "batch_size": 16}}}}, "x")
    exp["_depth"] = 4
    return exp


def _retrieval(**retrieval) -> dict:
    exp = experiment({"datasets": DATASETS, "models": MODELS, "experiments": {"r": {
        "track": "2dmse-retrieval", "model": "enc", "methods": ["full", "separate"],
        "grid": {"layers": [2, 4], "dims": [8, 32]},
        "train": {"dataset": "marco", "split": "train", "epochs": 1, "batch_size": 8, "devices": 2},
        "evaluation": {"datasets": ["marco", "beir"], "split": "test", "batch_size": 10},
        "retrieval": {"group_size": 4, "q_max_length": 16, "p_max_length": 64, "separate_cells": [[2, 8]],
                      **retrieval}}}}, "r")
    exp["_depth"], exp["_corpus_of"] = 4, {"marco": "marco", "beir": "beir"}
    return exp


def _context(**tables) -> TableContext:
    counts = {"rows": {("pairs", "train"): 100, ("triplets", "train"): 100, ("sts", "test"): 30},
              "queries": {("marco", "train"): 40, ("marco", "test"): 7, ("beir", "test"): 5},
              "corpora": {"marco": 1000, "beir": 95}}
    counts.update(tables)
    return TableContext(DATASETS, MODELS, base_lengths={"anchor": 10, "positive": 20, "negative": 25, "sentence1": 5,
                                                        "sentence2": 5, "query": 4, "document": 40},
                        depths={"enc": 4}, max_lengths={"enc": 128}, **counts)


def test_a_pair_training_is_its_epochs_batches_with_both_texts_a_step():
    work = job_cost("train_model", {"variant": "full"}, _sts(), context := _context())
    # 100 rows, batch 32: 4 batches an epoch (the last partial), 2 epochs
    assert work.optimizer_steps == 8 and work.examples == 100
    (phase,) = work.phases
    assert phase.count == 8 and phase.train and phase.layers is None
    # anchors padded to 10 + 32, positives to 20 + 32: MNRL on two columns runs a forward for each
    # (sentence-transformers' embed_columns keeps the first column's own), 64 texts of 47 tokens on average
    assert shapes(phase) == [(32, 42, 64), (32, 52, 64)]
    assert (phase.batch, phase.length, phase.max_length) == (64, 47, 64) and phase.tokens == 8 * 32 * (42 + 52)
    assert ("pairs", "train", "anchor", "enc", 64, 32) in context.padded
    # the saved model: embeddings and four blocks in fp32
    assert work.disk_bytes == (EMBEDDING_PARAMETERS + 4 * BLOCK_PARAMETERS) * FP32_BYTES


@pytest.mark.parametrize("objective, method, merged", [("mnrl", "full", True), ("mnrl", "separate-L2", True),
                                                       ("mnrl", "matryoshka", True), ("mnrl", "2dmse", False),
                                                       ("angle", "full", False), ("angle", "2dmse", False)])
def test_a_triplet_step_merges_the_candidates_where_the_loss_does(objective, method, merged):
    """MNRL (alone or in MatryoshkaLoss) embeds the anchors alone and the positives and negatives in one
    forward padded to the longer; the 2D losses and the AnglE objective forward each column alone
    (tests/dense/test_losses.py checks the losses themselves run these forwards)."""
    work = job_cost("train_model", {"variant": method}, _sts(objective, dataset="triplets"), _context())
    (phase,) = work.phases
    anchor, positive, negative = (32, 42, 64), (32, 52, 64), (32, 57, 64)
    assert shapes(phase) == ([anchor, (64, 57, 64)] if merged else [anchor, positive, negative])


def test_bert_s_trains_a_cut_model_and_writes_only_its_blocks():
    work = job_cost("train_model", {"variant": "separate-L2"}, _sts(), _context())
    (phase,) = work.phases
    assert phase.layers == 2
    assert work.disk_bytes == (EMBEDDING_PARAMETERS + 2 * BLOCK_PARAMETERS) * FP32_BYTES


def test_doubling_epochs_doubles_the_steps_and_max_samples_caps_the_rows():
    assert job_cost("train_model", {"variant": "full"}, _sts(epochs=4), _context()).optimizer_steps == 16
    capped = job_cost("train_model", {"variant": "full"}, _sts(max_samples=64), _context())
    assert capped.examples == 64 and capped.optimizer_steps == 4


def test_unknown_rows_price_nothing_and_say_which():
    work = job_cost("train_model", {"variant": "full"}, _sts(), _context(rows={}))
    assert work.phases == () and "pairs train" in work.unknown[0]


def test_a_group_training_splits_its_queries_over_the_devices_each_with_its_passages():
    work = job_cost("train_retriever", {"variant": "full"}, _retrieval(), context := _context())
    # 40 queries, batch 8: 5 steps; each device 4 queries and 4 x 4 passages
    assert work.optimizer_steps == 5 and work.devices == 2
    (phase,) = work.phases
    assert phase.count == 5
    # the queries, then each of the 4 passage columns, a forward each, each padded over its 4 texts
    assert ("marco", "train", "query", "enc", 16, 4) in context.padded
    assert ("marco", "train", "document", "enc", 64, 4) in context.padded
    assert shapes(phase) == [(4, 8, 16)] + [(4, 44, 64)] * 4
    # the longest step: queries at 16 tokens, passages at 64
    assert phase.max_length == 64
    # the job holds the training split's whole corpus (1,000 passages) in host memory, each at its
    # mean length (a batch of one: 40 + 1 tokens), for the plan's mem_mb
    assert work.held_texts == ((1000, 41),)
    assert ("marco", "train", "document", "enc", 64, 1) in context.padded
    # a corpus of unknown size holds nothing the plan could count (the job is priced without it)
    assert job_cost("train_retriever", {"variant": "full"}, _retrieval(), _context(corpora={})).held_texts == ()


def test_a_corpus_is_encoded_once_its_queries_per_dataset_its_batches_shared_by_the_devices():
    exp = _retrieval(encode_devices=2)
    work = job_cost("encode_corpus", {"variant": "full"}, exp, _context())
    labels = {phase.label: phase for phase in work.phases}
    assert set(labels) == {"encode marco queries", "encode marco corpus", "encode beir queries", "encode beir corpus"}
    # 1000 passages in batches of 10: 100 batches, 50 a device
    assert labels["encode marco corpus"].count == 50 and not labels["encode marco corpus"].train
    assert labels["encode beir corpus"].count == 5  # 10 batches (the last partial), 5 a device
    assert work.examples == 1000 + 7 + 95 + 5
    # every grid layer at the widest dim, float16
    assert work.disk_bytes == (1000 + 7 + 95 + 5) * 2 * 32 * 2
    shared = dict(exp, _corpus_of={"marco": "marco", "beir": "marco"})
    again = job_cost("encode_corpus", {"variant": "full"}, shared, _context())
    assert "encode beir corpus" not in {phase.label for phase in again.phases}
    # a split with a corpus of its own (the embedded retrieval set's held-out articles): the evaluated
    # split's is encoded, the training split's is held by the training
    own = _context(corpora={("marco", "test"): 300, ("marco", "train"): 2000, "beir": 95})
    labels = {phase.label: phase for phase in job_cost("encode_corpus", {"variant": "full"}, exp, own).phases}
    assert labels["encode marco corpus"].count == 15  # 300 passages: 30 batches, 15 a device
    assert job_cost("train_retriever", {"variant": "full"}, _retrieval(), own).held_texts == ((2000, 41),)


def test_a_bert_s_cell_encodes_at_its_cut_and_its_one_dim():
    work = job_cost("encode_corpus", {"variant": "separate-L2-d8"}, _retrieval(), _context())
    assert {phase.layers for phase in work.phases} == {2}
    assert work.disk_bytes == (1000 + 7 + 95 + 5) * 1 * 8 * 2


def test_cpu_jobs_are_not_priced():
    assert job_cost("retrieval_scores", {"variant": "full"}, _retrieval(), _context()) is None
    assert job_cost("grid_table", {}, _sts(), _context()) is None


# --- encodings: length-sorted batches ---------------------------------------------------------------

SORTED_DATASETS = {"sts": {"source": "local", "path": "sts", "kind": "sts"},
            "ret": {"source": "local", "path": "ret", "kind": "retrieval"}}
SORTED_MODELS = {"enc": {"source": "tiny", "layers": 2, "dim": 32}}


def _sorted_exp(track: str, **keys) -> dict:
    exp = experiment({"datasets": SORTED_DATASETS, "models": SORTED_MODELS, "experiments": {"d": {
        "track": track, "model": "enc", "methods": ["pretrained"], "grid": {"layers": [1, 2], "dims": [32, 16]},
        **keys}}}, "d")
    exp["_depth"], exp["_width"] = 2, 32  # prepare's
    exp["_corpus_of"] = {"ret": "ret"}
    return exp


def _sorted_context() -> TableContext:
    # a text of each column is padded to its base + the batch asked for (cost_fakes): batch 1 is the mean
    return TableContext(SORTED_DATASETS, SORTED_MODELS, rows={("sts", "test"): 130}, queries={("ret", "test"): 70},
                        corpora={"ret": 1000}, depths={"enc": 2}, max_lengths={"enc": 512},
                        base_lengths={"sentence1": 10, "sentence2": 14, "query": 9, "document": 100})


def test_encodings_pad_each_length_sorted_batch_to_its_own_texts_not_a_random_batchs_longest():
    # trimbench.encoding.encode_layers batches the texts longest first: a batch of 64 is padded to
    # about its texts' own length, the padded length of a batch of one (9 + 1 tokens for a query),
    # not to the longest of 64 random draws (9 + 64 in the fake)
    context = _sorted_context()
    sts_exp = _sorted_exp("2dmse-sts", evaluation={"datasets": ["sts"], "split": "test", "batch_size": 64})
    sts = job_cost("encode_texts", {"experiment": "d", "variant": "pretrained"}, sts_exp, context)
    assert [(p.count, p.batch, p.length) for p in sts.phases] == [(3, 64, 11), (3, 64, 15)]
    retrieval = _sorted_exp("2dmse-retrieval", evaluation={"datasets": ["ret"], "split": "test", "batch_size": 64},
                     retrieval={"p_max_length": 96})
    corpus = job_cost("encode_corpus", {"experiment": "d", "variant": "pretrained"}, retrieval, context)
    # the queries at 9 + 1 tokens; the passages' 100 + 1 cut at p_max_length 96
    assert [(p.count, p.batch, p.length) for p in corpus.phases] == [(2, 64, 10), (16, 64, 96)]
    assert {question[-1] for question in context.padded} == {1}


def test_the_encodings_are_priced_at_the_precision_they_run_at():
    """evaluation.precision (the 2DMSE retrieval seed's bf16 encoding): every phase of encode_texts and
    encode_corpus carries it, so the plan prices the dtype that runs; fp32 by default; the training's
    own precision stays the train section's."""
    for precision in ("fp32", "bf16", "fp16"):
        retrieval, sts = _retrieval(), _sts()
        if precision != "fp32":
            retrieval["evaluation"]["precision"] = sts["evaluation"]["precision"] = precision
        corpus = job_cost("encode_corpus", {"variant": "full"}, retrieval, _context())
        texts = job_cost("encode_texts", {"variant": "full"}, sts, _context())
        assert len(corpus.phases) == 4 and len(texts.phases) == 2
        assert {phase.precision for phase in (*corpus.phases, *texts.phases)} == {precision}
        (trained,) = job_cost("train_retriever", {"variant": "full"}, retrieval, _context()).phases
        assert trained.precision == "tf32"  # the train section's: fp32 with tf32 unset, the trainer's TF32
