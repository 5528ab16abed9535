"""The SPLADE track's job costs (trimbench.splade.cost) on hand-made variants and a fake context:
the counts are worked out by hand in each test."""

from __future__ import annotations

import copy

import pytest
from cost_fakes import BLOCK_PARAMETERS, EMBEDDING_PARAMETERS, MLM_HEAD_PARAMETERS, TableContext, experiment, shapes

from trimbench.splade.cost import job_cost

DATASETS = {name: {"source": "local", "path": name, "kind": "retrieval"} for name in ("marco", "dev", "dl19", "beir")}
MODELS = {"enc": {"source": "tiny", "layers": 2, "dim": 32}}


def _config(train=None, splade=None, evaluation=None) -> dict:
    return {"datasets": DATASETS, "models": MODELS, "experiments": {"sp": {
        "track": "splade",
        "variants": {"max": {"model": "enc", "method": "splade_max", "lambda_q": 0.001, "lambda_d": 0.001},
                     "distil": {"model": "enc", "method": "distil_splade", "lambda_q": 0.01, "lambda_d": 0.01}},
        "train": {"dataset": "marco", "epochs": 3, "batch_size": 64, "checkpoint_steps": 0, **(train or {})},
        "splade": splade or {},
        "evaluation": evaluation or {"datasets": ["dev"], "split": "test"}}}}


def _exp(**sections) -> dict:
    exp = experiment(_config(**sections), "sp")
    datasets = exp["evaluation"]["datasets"]
    # prepare's: datasets sharing a corpus point at the first of them (here dev and dl19 share one)
    exp["_corpus_of"] = {ds: ("dev" if ds == "dl19" else ds) for ds in datasets}
    return exp


def _context(**counts) -> TableContext:
    tables = {"queries": {("marco", "train"): 1000, ("dev", "test"): 70, ("dl19", "test"): 43, ("beir", "test"): 50},
              "corpora": {"dev": 25_000, "beir": 999}}
    tables.update(counts)
    return TableContext(DATASETS, MODELS, base_lengths={"query": 9, "document": 100}, depths={"enc": 2}, **tables)


def test_training_steps_are_the_seeds_batches_an_epoch_times_epochs():
    # 1000 pools, batch 64: splade_max keeps the last partial batch (16 a epoch), distil drops it (15)
    exp, context = _exp(), _context()
    assert job_cost("train_splade", {"experiment": "sp", "variant": "max"}, exp, context).optimizer_steps == 48
    distil = job_cost("train_splade", {"experiment": "sp", "variant": "distil"}, exp, context)
    assert distil.optimizer_steps == 45
    assert [phase.count for phase in distil.phases] == [45]
    assert distil.examples == 1000


def test_doubling_epochs_doubles_the_steps_and_max_samples_caps_the_rows():
    context = _context()
    three = job_cost("train_splade", {"variant": "max"}, _exp(), context)
    six = job_cost("train_splade", {"variant": "max"}, _exp(train={"epochs": 6}), context)
    assert six.optimizer_steps == 2 * three.optimizer_steps == 96
    capped = job_cost("train_splade", {"variant": "max"}, _exp(train={"max_samples": 640}), context)
    assert capped.examples == 640 and capped.optimizer_steps == 30


def test_a_step_forwards_queries_and_two_passages_a_row_through_the_mlm_head_split_over_devices():
    context = _context()
    work = job_cost("train_splade", {"variant": "max"}, _exp(train={"devices": 2, "precision": "fp16"}), context)
    (phase,) = work.phases
    assert work.devices == 2 and phase.train and phase.head == "mlm" and phase.precision == "fp16"
    # padded over each device's 32 rows (each rank collates its share), cut at the seed's 300 (splade_max)
    assert ("marco", "train", "query", "enc", 300, 32) in context.padded
    assert ("marco", "train", "document", "enc", 300, 32) in context.padded
    # on each device 32 queries of 9 + 32 tokens in a forward, then the 32 positives and 32 negatives of
    # 100 + 32 merged in one (SpladeLoss's embed_columns), held together until the backward
    assert shapes(phase) == [(32, 41, 300), (64, 132, 300)]
    assert (phase.batch, phase.length, phase.max_length) == (96, 102, 300)
    short = job_cost("train_splade", {"variant": "distil"}, _exp(train={"max_seq_length": 120}), context)
    assert short.phases[0].max_length == 120 and ("marco", "train", "document", "enc", 120, 64) in context.padded


def test_unknown_training_queries_give_no_phases_and_name_the_split():
    work = job_cost("train_splade", {"variant": "max"}, _exp(), _context(queries={}))
    assert not work.phases and not work.on_gpu
    assert len(work.unknown) == 1 and "marco train" in work.unknown[0]


def test_training_disk_is_the_mlm_model_and_the_checkpoints_kept():
    parameters = EMBEDDING_PARAMETERS + 2 * BLOCK_PARAMETERS + MLM_HEAD_PARAMETERS
    context = _context()
    assert job_cost("train_splade", {"variant": "max"}, _exp(), context).disk_bytes == 4 * parameters
    # 48 steps, a checkpoint every 10: four written, two kept, each the model and AdamW's two moments
    kept = job_cost("train_splade", {"variant": "max"}, _exp(train={"checkpoint_steps": 10}), context)
    assert kept.disk_bytes == 4 * parameters + 2 * 12 * parameters
    one = job_cost("train_splade", {"variant": "max"}, _exp(train={"checkpoint_steps": 40}), context)
    assert one.disk_bytes == 4 * parameters + 12 * parameters


def test_encoding_covers_each_corpus_once_and_every_query_set_in_each_ranks_batches():
    evaluation = {"datasets": ["dev", "dl19", "beir"], "split": "test"}
    splade = {"batch_size": 32, "encode_devices": 2, "d_max_terms": 100, "q_max_terms": 10, "p_max_length": 200}
    context = _context()
    work = job_cost("encode_sparse", {"variant": "max"}, _exp(splade=splade, evaluation=evaluation), context)
    labels = [p.label for p in work.phases]
    assert labels == ["encode dev corpus", "encode dev queries", "encode dl19 queries", "encode beir corpus",
                      "encode beir queries"]
    counts = {p.label: p.count for p in work.phases}
    # 25,000 passages in chunks of 10,000: 313 + 313 + 157 batches of 32, dealt to 2 ranks: 157 + 157 + 79
    assert counts["encode dev corpus"] == 393
    assert counts["encode dl19 queries"] == 1  # 43 queries: 2 batches, one on each rank
    assert all(not p.train and p.head == "mlm" and p.batch == 32 for p in work.phases)
    assert work.devices == 2 and work.examples == 25_000 + 70 + 43 + 999 + 50
    # length-sorted batches: padded about as a batch of one; passages cut at p_max_length, queries at 300
    corpus = work.phases[0]
    assert (corpus.length, corpus.max_length) == (101, 200) and work.phases[1].max_length == 300
    assert work.disk_bytes == (25_000 + 999) * (100 * 8 + 4) + (70 + 43 + 50) * (10 * 8 + 4)
    assert work.disk_unknown == ()
    # a corpus of the evaluated split's own is the one encoded (not another split's)
    own = _context(corpora={("dev", "test"): 1000, ("dev", "train"): 25_000, "beir": 999})
    encoded = job_cost("encode_sparse", {"variant": "max"}, _exp(splade=splade, evaluation=evaluation), own)
    assert encoded.phases[0].label == "encode dev corpus" and encoded.phases[0].count == 16  # 32 batches, 16 a rank


def test_encoding_without_max_terms_says_its_disk_is_unknown_and_unknown_counts_give_no_phases():
    context = _context()
    work = job_cost("encode_sparse", {"variant": "max"}, _exp(), context)
    # the vectors keep every term they activate: the disk is unknown (the plan shows no figure), not 0
    assert work.disk_bytes == 0
    assert [reason.split(":")[0] for reason in work.disk_unknown] == ["dev corpus", "dev queries"]
    assert "no splade.d_max_terms" in work.disk_unknown[0] and "no splade.q_max_terms" in work.disk_unknown[1]
    missing = job_cost("encode_sparse", {"variant": "max"}, _exp(), _context(corpora={}))
    assert not missing.phases and missing.unknown == ("dev corpus: no count of dev corpus",)


@pytest.mark.parametrize("rule", ["splade_triplets", "index_sparse", "splade_scores", "splade_ensemble",
                                  "splade_table", "convert_ce_scores", "fetch_hard_negatives"])
def test_the_cpu_rules_are_not_priced(rule):
    assert job_cost(rule, {"variant": "max", "method": "splade_max"}, _exp(), _context()) is None


def test_the_costs_leave_the_experiment_as_they_found_it():
    exp = _exp()
    before = copy.deepcopy(exp)
    job_cost("train_splade", {"variant": "max"}, exp, _context())
    job_cost("encode_sparse", {"variant": "max"}, exp, _context())
    assert exp == before
