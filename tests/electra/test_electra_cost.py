"""The ELECTRA track's job costs (trimbench.electra.cost) on hand-made experiments and a fake
context: the counts are worked out by hand in each test."""

from __future__ import annotations

import pytest
from cost_fakes import BLOCK_PARAMETERS, EMBEDDING_PARAMETERS, TableContext, experiment, shapes

from trimbench.cost.work import Count
from trimbench.electra.cost import job_cost

DATASETS = {"sts": {"source": "local", "path": "sts", "kind": "sts"},
            "sick": {"source": "local", "path": "sick", "kind": "pair-class", "num_labels": 3},
            "nli": {"source": "local", "path": "nli", "kind": "pair-class", "num_labels": 3},
            "words": {"source": "local", "path": "words", "kind": "sts"}}
MODELS = {"enc": {"source": "tiny", "layers": 2, "dim": 32}}
ROWS = {("sts", "train"): 100, ("sts", "validation"): 70, ("sts", "test"): 130, ("sick", "train"): 100,
        ("sick", "validation"): 70, ("sick", "test"): 130, ("nli", "train"): 1000,
        ("words", "train"): 500, ("words", "validation"): 64}


def _exp(**keys) -> dict:
    exp = experiment({"datasets": DATASETS, "models": MODELS, "experiments": {"el": {
        "track": "electra", "models": ["enc"], "tasks": ["sts"], "seeds": [0, 1],
        "train": {"epochs": 2, "batch_size": 32}, **keys}}}, "el")
    exp["_depths"] = {"enc": 2}  # prepare's
    return exp


def _context(rows=None) -> TableContext:
    return TableContext(DATASETS, MODELS, rows=ROWS if rows is None else rows, depths={"enc": 2},
                        base_lengths={"sentence1": 10, "sentence2": 14}, max_lengths={"enc": 512})


def _fine_tunings(exp, task="sts", context=None):
    return job_cost("train_electra", {"experiment": "el", "task": task, "model": "enc"}, exp, context or _context())


def test_a_job_trains_every_cut_and_seed_each_for_its_epochs():
    work = _fine_tunings(_exp())
    # 100 pairs, batch 32: 4 steps an epoch, 8 a fine-tuning; k = 0, 1, 2 with 2 seeds: 6 fine-tunings
    assert work.optimizer_steps == 48
    training = [p for p in work.phases if p.train]
    assert [(p.layers, p.count) for p in training] == [(0, 16), (1, 16), (2, 16)]
    # both texts of each pair go through the cut model in a step, a forward each (the seed's hf_model.py
    # forward), each padded over the batch of 32: 32 x 42 and 32 x 46 tokens held together
    assert all(shapes(p) == [(32, 42, 512), (32, 46, 512)] and p.head == "encoder" for p in training)
    assert all((p.batch, p.length) == (64, 44) for p in training)
    assert {p.max_length for p in work.phases} == {512}  # the model's own limit: max_seq_length null


def test_doubling_epochs_doubles_the_steps_and_layers_pick_the_cuts():
    once = _fine_tunings(_exp())
    twice = _fine_tunings(_exp(train={"epochs": 4, "batch_size": 32}))
    assert twice.optimizer_steps == 2 * once.optimizer_steps
    cut = _fine_tunings(_exp(layers=[1]))
    assert [p.layers for p in cut.phases] == [1, 1, 1] and cut.optimizer_steps == 16


def test_dev_and_test_are_encoded_each_epoch_and_at_the_end():
    work = _fine_tunings(_exp())
    dev, test = (next(p for p in work.phases if p.label == f"{split} L0") for split in ("dev", "test"))
    # dev: after each of 2 epochs, the scoring, and at most the last epoch's scoring (select best):
    # 4 passes x 2 texts x 2 batches of 64 x 2 seeds; test: 2 scorings x 2 texts x 3 batches x 2 seeds
    assert (dev.count, test.count) == (32, 24)
    assert not dev.train and dev.batch == 64 and dev.layers == 0
    assert dev.length == 13  # length-sorted batches: each text about its own length, (11 + 15) / 2
    last = _fine_tunings(_exp(train={"epochs": 2, "batch_size": 32, "select": "last"}))
    assert next(p for p in last.phases if p.label == "dev L0").count == 24  # 3 passes


def test_a_softmax_task_trains_a_classifier_and_a_cosine_task_none():
    work = _fine_tunings(_exp(tasks=["sick"]), task="sick")
    assert {p.head for p in work.phases if p.train} == {"classifier"}
    assert {p.head for p in _fine_tunings(_exp()).phases} == {"encoder"}


def test_unknown_rows_give_no_phases_and_name_the_split():
    rows = {key: n for key, n in ROWS.items() if key != ("sts", "train")}
    work = _fine_tunings(_exp(), context=_context(rows))
    assert not work.phases and work.unknown == ("sts train: no count of sts train",)


def test_the_start_model_stays_loaded_beside_each_fine_tuning():
    assert _fine_tunings(_exp()).resident_bytes == 4 * (EMBEDDING_PARAMETERS + 2 * BLOCK_PARAMETERS)


def test_domain_adaptation_trains_the_mlm_head_on_the_texts_with_accumulation():
    exp = _exp(domain_adaptation={"dataset": "nli", "epochs": 10, "batch_size": 32, "gradient_accumulation": 8,
                                  "checkpoint_steps": 0})
    work = job_cost("adapt_domain", {"experiment": "el", "model": "enc"}, exp, _context())
    # at most 2 texts a row of 1000: 63 batches an epoch, 8 steps (the last of 7 batches), 10 epochs
    assert work.examples == 2000 and work.optimizer_steps == 80
    (phase,) = work.phases
    assert (phase.count, phase.batch, phase.head, phase.layers, phase.train) == (630, 32, "mlm", None, True)
    assert phase.length == 14 + 32  # the longer column's padded length
    capped = job_cost("adapt_domain", {"model": "enc"}, {**exp, "domain_adaptation": {
        **exp["domain_adaptation"], "max_samples": 256}}, _context())
    assert capped.optimizer_steps == 10  # 8 batches, one step an epoch


def test_word_similarity_pretunes_the_cut_and_saves_it():
    exp = _exp(word_similarity={"datasets": ["words"], "epochs": 3, "batch_size": 128})
    work = job_cost("pretune_word_similarity", {"experiment": "el", "model": "enc", "k": "1"}, exp, _context())
    training, dev = work.phases
    # 500 pairs, batch 128: 4 steps an epoch, 3 epochs; dev (64 pairs) after each epoch, 2 texts, batch 64
    assert work.optimizer_steps == 12 and (training.count, training.batch, training.layers) == (12, 256, 1)
    assert training.max_length == 16  # word_similarity.max_seq_length's default
    assert (dev.count, dev.train) == (6, False)
    assert work.disk_bytes == 4 * (EMBEDDING_PARAMETERS + BLOCK_PARAMETERS)


@pytest.mark.parametrize("rule", ["electra_table", "electra_figure", "electra_pareto_figure"])
def test_the_views_are_not_priced(rule):
    assert job_cost(rule, {"experiment": "el"}, _exp(), _context()) is None


def test_the_default_count_of_distinct_texts_is_every_rows_text_columns_named_with_its_sources():
    """CostContext.unique_texts, the upper bound a plan without a copy prices ELECTRA's domain adaptation
    at: rows x text columns of each split, duplicates counted; unknown where any split's rows are."""
    context = TableContext({"d": {"kind": "sts"}}, {}, rows={("d", "train"): 10, ("d", "test"): 5})
    assert context.unique_texts("d", ["train", "test"]) == Count(
        30, "at most 2 texts a row (sentence1, sentence2) of train 10 (table d train) + test 5 (table d test)")
    assert context.unique_texts("d", ["train", "dev", "extra"]) == Count(None, "no count of d dev; no count of d extra")
