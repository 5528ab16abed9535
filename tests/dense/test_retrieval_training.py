"""2DMSE retrieval training: the loss terms, their weights, the ablation flags and their config checks."""

from __future__ import annotations

import copy
import math

import pandas as pd
import pytest
import torch
from conftest import REPO

from trimbench.config.prepare import load_file, prepare
from trimbench.data.io import RetrievalSplit
from trimbench.dense.retrieval_loss import (
    GroupedContrastiveLoss,
    layer_weight,
    score_alignment,
    starbucks_loss,
    truncate_features,
)
from trimbench.dense.variants import variants
from trimbench.errors import ConfigError
from trimbench.pools import EpochGroups, group_pools

SETTINGS = {"q_max_length": 16, "p_max_length": 32, "scale": 1.0, "score_align": False,
            "compare_to_last_layer": False, "sub_layer_full_dim": False, "passage_to_last_layer": False,
            "kl_temperature": 1.0}
TEXTS = [["what is a falcon", "how do rivers form", "copper wire uses"],
         ["a falcon is a bird of prey", "rivers form from rain", "copper conducts electricity"],
         ["engines burn fuel", "violins have strings", "gardens need water"]]


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    from trimbench.models import load_sentence_model

    return load_sentence_model(tiny_bert_dir, pooling="cls")


def _features(model):
    return [model.tokenize(column) for column in TEXTS]


def _ce(model, features, layer, dim, passage_layer=None):
    from trimbench.encoding import hidden_states_kept, pool_layer

    def embed(f, at):
        with hidden_states_kept(model[0]):
            out = model[0](dict(f))
        return pool_layer(list(model)[1:], out, at)

    q = embed(truncate_features(features[0], 16, model.tokenizer.sep_token_id), layer)
    p = torch.stack([embed(f, passage_layer or layer) for f in features[1:]], 1).flatten(0, 1)
    scores = q[:, :dim] @ p[:, :dim].T
    return torch.nn.functional.cross_entropy(scores, torch.arange(3) * 2)


def test_layer_weights():
    assert layer_weight(1) == 1.0
    assert layer_weight(3) == pytest.approx(1 / (1 + math.log(3)))


def test_full_equals_mnrl_with_hard_negatives_at_scale_one(tiny):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.util import dot_score

    torch.manual_seed(0)
    ours = GroupedContrastiveLoss(tiny, "full", [16], SETTINGS)(_features(tiny), None)
    mnrl = MultipleNegativesRankingLoss(tiny, scale=1.0, similarity_fct=dot_score)(_features(tiny), None)
    assert ours.item() == pytest.approx(mnrl.item(), rel=1e-5)


def test_2dmse_is_the_weighted_sum_of_its_terms(tiny):
    features = _features(tiny)
    got = GroupedContrastiveLoss(tiny, "2dmse", [16, 8], SETTINGS)(features, None).item()
    want = _ce(tiny, features, 3, 32)
    for dim in (16, 8):
        want = want + _ce(tiny, features, 3, dim)
        for layer in (1, 2):
            want = want + layer_weight(layer) * _ce(tiny, features, layer, dim)
    assert got == pytest.approx(want.item(), rel=1e-5)
    # sub_layer_full_dim adds w_l CE(l, full); fixed-doc takes passages from the last layer
    flags = {**SETTINGS, "sub_layer_full_dim": True}
    extra = sum(layer_weight(layer) * _ce(tiny, features, layer, 32) for layer in (1, 2))
    got = GroupedContrastiveLoss(tiny, "2dmse", [16, 8], flags)(features, None).item()
    assert got == pytest.approx((want + extra).item(), rel=1e-5)
    fixed = {**SETTINGS, "passage_to_last_layer": True}
    got = GroupedContrastiveLoss(tiny, "matryoshka", [8], fixed)(features, None).item()
    assert got == pytest.approx((_ce(tiny, features, 3, 32) + _ce(tiny, features, 3, 8)).item(), rel=1e-5)
    got = GroupedContrastiveLoss(tiny, "2dmse", [8], fixed)(features, None).item()
    fixed_want = _ce(tiny, features, 3, 32) + _ce(tiny, features, 3, 8)
    fixed_want = fixed_want + sum(layer_weight(k) * _ce(tiny, features, k, 8, passage_layer=3) for k in (1, 2))
    assert got == pytest.approx(fixed_want.item(), rel=1e-5)


def test_2dmse_terms_cut_to_their_dims_on_hand_made_embeddings(tiny, monkeypatch):
    """The loss over embeddings given by hand (2 queries, a positive and a negative column; each layer
    its own): every term by the module docstring's formula. Coordinate 9 (index 8) adds 100 to every
    negative's score, so a term cut one dimension too wide is off by tens, not by a hair."""
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    embeddings = {layer: torch.randn(6, 32, generator=gen, dtype=torch.float64) for layer in (1, 2, 3)}
    for rows in embeddings.values():  # rows: queries 0-1, positives 2-3, negatives 4-5
        rows[[0, 1, 4, 5], 8] = 10.0
    columns = [{"input_ids": torch.zeros(2, 1, dtype=torch.long), "attention_mask": torch.ones(2, 1), "column": c}
               for c in range(3)]
    loss = GroupedContrastiveLoss(tiny, "2dmse", [8, 4], SETTINGS)
    monkeypatch.setattr(loss, "_embed", lambda features, layers: {
        layer: embeddings[layer][2 * features["column"]:2 * features["column"] + 2] for layer in layers})

    def ce(layer, dim):
        q, pos, neg = embeddings[layer][:2], embeddings[layer][2:4], embeddings[layer][4:]
        passages = torch.stack([pos, neg], 1).flatten(0, 1)  # q0's positive, q0's negative, q1's ...
        return F.cross_entropy(q[:, :dim] @ passages[:, :dim].T, torch.tensor([0, 2])).item()

    want = ce(3, 32) + sum(ce(3, d) + layer_weight(1) * ce(1, d) + layer_weight(2) * ce(2, d) for d in (8, 4))
    assert loss(columns, None).item() == pytest.approx(want, rel=1e-9)
    assert ce(3, 9) - ce(3, 8) > 50  # the premise: one dimension more costs a term tens


def test_score_align_adds_a_nonnegative_term_and_trains(tiny):
    features = _features(tiny)
    plain = GroupedContrastiveLoss(tiny, "2dmse", [8], SETTINGS)(features, None)
    aligned = GroupedContrastiveLoss(tiny, "2dmse", [8], {**SETTINGS, "score_align": True})(features, None)
    last = GroupedContrastiveLoss(tiny, "2dmse", [8], {**SETTINGS, "score_align": True,
                                                       "compare_to_last_layer": True})(features, None)
    assert aligned.item() > plain.item() and last.item() > plain.item() and aligned.item() != last.item()
    aligned.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in tiny.parameters())
    tiny.zero_grad()


def _hand_alignment(student, teacher, temperature):
    """(MSE + KL(softmax(T/τ) ‖ softmax(S/τ))) / (B·N), written out with math on plain floats."""
    rows, cols = len(student), len(student[0])
    mse = sum((s - t) ** 2 for srow, trow in zip(student, teacher, strict=True)
              for s, t in zip(srow, trow, strict=True)) / (rows * cols)

    def log_softmax(row):
        top = max(row)
        log_norm = top + math.log(sum(math.exp(v - top) for v in row))
        return [v - log_norm for v in row]

    kl = 0.0
    for srow, trow in zip(student, teacher, strict=True):
        log_p = log_softmax([v / temperature for v in srow])
        log_q = log_softmax([v / temperature for v in trow])
        kl += sum(math.exp(lq) * (lq - lp) for lp, lq in zip(log_p, log_q, strict=True))
    return (mse + kl / rows) / rows / cols


def test_score_alignment_is_the_seeds_compute_score_loss_at_bert_magnitudes():
    # Unnormalised dot scores of BERT CLS vectors are in the hundreds: the seed's division by
    # queries x passages keeps the term small beside the cross-entropy.
    student = [[212.0, 180.5, 175.0, 190.25], [160.0, 201.0, 199.5, 170.0], [140.0, 150.0, 230.0, 120.5]]
    teacher = [[220.0, 170.0, 181.0, 185.0], [150.0, 215.5, 190.0, 168.0], [149.0, 139.0, 228.0, 131.0]]
    for temperature in (1.0, 0.3):
        got = score_alignment(torch.tensor(student), torch.tensor(teacher), temperature).item()
        assert got == pytest.approx(_hand_alignment(student, teacher, temperature), rel=1e-5)
    # the un-normalised sum would be 12x larger (3 queries x 4 passages)
    plain = _hand_alignment(student, teacher, 1.0) * 12
    assert plain > 70 and score_alignment(torch.tensor(student), torch.tensor(teacher), 1.0).item() < plain / 11
    # cosine-scale scores, where the temperature shapes the teacher's distribution
    student, teacher = [[0.9, 0.1, -0.2], [0.3, 0.8, 0.0]], [[0.6, 0.5, -0.4], [0.1, 0.7, 0.2]]
    got = score_alignment(torch.tensor(student, dtype=torch.float64), torch.tensor(teacher, dtype=torch.float64), 0.5)
    assert got.item() == pytest.approx(_hand_alignment(student, teacher, 0.5), rel=1e-9)


def test_score_align_adds_the_aligned_terms_to_2dmse(tiny):
    """2DMSE + score_align = plain 2DMSE + Σ_d align((L, d) → (L, D)) + Σ_l w_l Σ_d align((l, d) → (l, D));
    compare_to_last_layer aligns every sub-model with (L, D)."""
    from trimbench.encoding import hidden_states_kept, pool_layer

    features = _features(tiny)

    def scores(layer, dim):
        def embed(f):
            with hidden_states_kept(tiny[0]):
                out = tiny[0](dict(f))
            return pool_layer(list(tiny)[1:], out, layer)

        q = embed(truncate_features(features[0], 16, tiny.tokenizer.sep_token_id))
        p = torch.stack([embed(f) for f in features[1:]], 1).flatten(0, 1)
        return (q[:, :dim] @ p[:, :dim].T).tolist()

    settings = {**SETTINGS, "kl_temperature": 0.5}
    with torch.no_grad():
        plain = GroupedContrastiveLoss(tiny, "2dmse", [16, 8], settings)(features, None).item()
        for last in (False, True):
            flags = {**settings, "score_align": True, "compare_to_last_layer": last}
            got = GroupedContrastiveLoss(tiny, "2dmse", [16, 8], flags)(features, None).item()
            want = plain
            for layer in (1, 2, 3):
                weight = 1.0 if layer == 3 else layer_weight(layer)
                target = scores(3 if last else layer, 32)
                for dim in (16, 8):
                    want += weight * _hand_alignment(scores(layer, dim), target, 0.5)
            assert got == pytest.approx(want, rel=1e-4)


def test_starbucks_loss_by_hand_on_tiny_tensors():
    """Starbucks' BERT-2DMSE step: CE of the full model, then for the drawn layer 1 and the last layer
    3, every dim of [2, 4] but (3, 4): CE + β·KL(softmax(full scores) ‖ softmax(scores)), batch mean."""
    import numpy as np

    gen = torch.Generator().manual_seed(0)
    queries = {layer: torch.randn(2, 4, generator=gen, dtype=torch.float64) for layer in (1, 3)}
    passages = {layer: torch.randn(4, 4, generator=gen, dtype=torch.float64) for layer in (1, 3)}
    target = torch.tensor([0, 2])  # groups of 2 passages

    def scores(layer, dim):
        return queries[layer][:, :dim] @ passages[layer][:, :dim].T

    got = starbucks_loss(scores, target, 1, 3, 4, [4, 2], 0.5).item()  # the full width first: skipped, not the end

    def log_softmax(m):
        m = m - m.max(axis=1, keepdims=True)
        return m - np.log(np.exp(m).sum(axis=1, keepdims=True))

    def ce(m):
        return -np.mean([log_softmax(m)[i, t] for i, t in enumerate([0, 2])])

    def kl(teacher, student):
        p = np.exp(log_softmax(teacher))
        return float((p * (log_softmax(teacher) - log_softmax(student))).sum() / teacher.shape[0])

    q = {k: v.numpy() for k, v in queries.items()}
    d = {k: v.numpy() for k, v in passages.items()}
    full = q[3] @ d[3].T
    want = ce(full)
    for layer, dim in ((1, 2), (1, 4), (3, 2)):
        sub = q[layer][:, :dim] @ d[layer][:, :dim].T
        want += ce(sub) + 0.5 * kl(full, sub)
    assert got == pytest.approx(want, rel=1e-12)
    # β = 0: CE terms only
    no_kl = ce(full) + sum(ce(q[k][:, :m] @ d[k][:, :m].T) for k, m in ((1, 2), (1, 4), (3, 2)))
    assert starbucks_loss(scores, target, 1, 3, 4, [2, 4], 0.0).item() == pytest.approx(no_kl, rel=1e-12)


def test_starbucks_draws_one_sub_layer_per_step_with_pythons_random(tiny):
    """The drawn layer is Starbucks' ``random.sample(range(num_layers - 1), 1)`` of its layer list
    (the trainer seeds Python's random); the step's loss is :func:`starbucks_loss` of the model's
    CLS embeddings at the drawn and the last layer."""
    import random

    from trimbench.encoding import hidden_states_kept, pool_layer

    settings = {**SETTINGS, "starbucks_layers": [3, 1, 2], "starbucks_dims": [8, 16, 32], "starbucks_kl_weight": 1.0}
    loss = GroupedContrastiveLoss(tiny, "starbucks-2dmse", [16], settings)
    random.seed(5)
    draws = [loss._layers_needed() for _ in range(40)]
    random.seed(5)
    assert draws == [[[1, 2][random.sample(range(2), 1)[0]], 3] for _ in range(40)]
    assert {layer for layer, _ in draws} == {1, 2}

    features = _features(tiny)

    def embed(f, at):
        with hidden_states_kept(tiny[0]):
            out = tiny[0](dict(f))
        return pool_layer(list(tiny)[1:], out, at)

    random.seed(11)
    sampled = loss._layers_needed()[0]
    q = {k: embed(truncate_features(features[0], 16, tiny.tokenizer.sep_token_id), k) for k in (sampled, 3)}
    p = {k: torch.stack([embed(f, k) for f in features[1:]], 1).flatten(0, 1) for k in (sampled, 3)}
    want = starbucks_loss(lambda k, m: q[k][:, :m] @ p[k][:, :m].T, torch.arange(3) * 2, sampled, 3, 32, [8, 16, 32],
                          1.0)
    random.seed(11)
    got = loss(features, None)
    assert got.item() == pytest.approx(want.item(), rel=1e-5)
    got.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in tiny.parameters())
    tiny.zero_grad()


def test_query_truncation_keeps_sep_last(tiny):
    features = tiny.tokenize(["one two three four five six seven eight nine ten eleven twelve", "short"])
    cut = truncate_features(features, 6, tiny.tokenizer.sep_token_id)
    assert cut["input_ids"].shape[1] == 6
    assert cut["input_ids"][0, -1].item() == tiny.tokenizer.sep_token_id
    assert cut["input_ids"][1].tolist() == features["input_ids"][1, :6].tolist()


def _pools_split(n_docs=40):
    corpus = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n_docs)], "title": ["T"] + [""] * (n_docs - 1),
                           "text": [f"passage {i}" for i in range(n_docs)]})
    queries = pd.DataFrame({"query_id": ["q0", "q1", "q2", "q3"], "text": ["Q0", "Q1", "Q2", "Q3"]})
    qrels = pd.DataFrame({"query_id": ["q0", "q1", "q1", "q2", "q3"], "doc_id": ["d0", "d1", "d2", "d3", "d4"],
                          "relevance": 1})
    pools = [{"query_id": "q0", "positives": ["d0"], "negatives": [{"doc_id": f"d{10 + k}"} for k in range(30)]},
             {"query_id": "q1", "positives": ["d1", "d2"], "negatives": [{"doc_id": "d5"}, {"doc_id": "d6"}]},
             {"query_id": "q2", "positives": ["d3"], "negatives": []},
             {"query_id": "q3", "positives": ["d4"], "negatives": [{"doc_id": f"d{10 + k}"} for k in range(7)]}]
    return RetrievalSplit(corpus, queries, qrels), pools


def test_epoch_groups_walk_tevatrons_rotation():
    """Tevatron's TrainDataset.__getitem__ by hand: row 0, seed 42, a pool of 30, 7 negatives a group."""
    import random

    split, pools = _pools_split()
    table, texts = group_pools(split, pools)
    assert texts[0].as_py() == "T passage 0" and texts[1].as_py() == "passage 1"  # title text
    groups = EpochGroups(texts, group_size=8, seed=42)
    pool = list(range(10, 40))
    random.Random(0 + 42).shuffle(pool)  # hash(item + seed), shuffled once for every epoch
    drawn = []
    for epoch in range(3):
        positive, negatives = groups.draw(0, table[0]["positives"], table[0]["negatives"], epoch)
        offset = epoch * 7 % 30
        assert positive == 0 and negatives == (pool * 2)[offset:offset + 7]
        drawn.append(set(negatives))
    # three epochs walk 21 distinct passages of the pool; only pool passages are drawn
    assert len(drawn[0] | drawn[1] | drawn[2]) == 21 and set().union(*drawn) <= set(range(10, 40))
    # the 11th epoch wraps round the doubled pool: offset 70 % 30 = 10
    assert groups.draw(0, table[0]["positives"], table[0]["negatives"], 10)[1] == (pool * 2)[10:17]
    # two positives alternate by (row + seed + epoch) % 2; a pool of exactly 7 is rotated as well
    assert [groups.draw(1, [1, 2], [5, 6], e)[0] for e in range(3)] == [2, 1, 2]
    pool7 = list(range(10, 17))
    random.Random(3 + 42).shuffle(pool7)
    assert groups.draw(3, [4], list(range(10, 17)), 1)[1] == pool7
    # reproducible: another instance draws the same
    assert EpochGroups(texts, 8, 42).draw(0, [0], list(range(10, 40)), 2) == groups.draw(0, [0], list(range(10, 40)), 2)


def test_epoch_groups_small_and_empty_pools():
    split, pools = _pools_split()
    table, texts = group_pools(split, pools)
    groups = EpochGroups(texts, group_size=8, seed=42)
    small = [groups.draw(1, [1, 2], [5, 6], e)[1] for e in range(4)]
    assert all(len(n) == 7 and set(n) <= {5, 6} for n in small) and len({tuple(n) for n in small}) > 1
    assert small == [EpochGroups(texts, 8, 42).draw(1, [1, 2], [5, 6], e)[1] for e in range(4)]
    empty = groups.draw(2, [3], [], 0)[1]
    assert len(empty) == 7 and 3 not in empty and all(0 <= i < 40 for i in empty)
    batch = groups(table[:4])
    assert list(batch) == ["query", "positive", *[f"negative_{k}" for k in range(1, 8)]]
    assert batch["query"] == ["Q0", "Q1", "Q2", "Q3"] and batch["positive"][0] == "T passage 0"
    # subsampling keeps queries by seed
    assert len(group_pools(split, pools, max_samples=2, seed=1)[0]) == 2


def test_groups_are_redrawn_each_epoch_in_training(tiny, tmp_path):
    """Through the sentence-transformers trainer: the callback moves the epoch, so the batches of
    epoch 1 hold other negatives than epoch 0's, each exactly Tevatron's draw for that epoch."""
    from trimbench.training import fine_tune

    split, pools = _pools_split()
    table, texts = group_pools(split, pools)

    class Recording(EpochGroups):
        seen: list = []

        def __call__(self, batch):
            out = super().__call__(batch)
            self.seen += [(self.epoch, row, out["negative_1"][i]) for i, row in enumerate(batch["row"])]
            return out

    groups = Recording(texts, group_size=3, seed=42)
    loss = GroupedContrastiveLoss(tiny, "full", [16], {**SETTINGS, "q_max_length": 8})
    train = {"epochs": 2, "max_steps": -1, "batch_size": 2, "gradient_accumulation": 1, "lr": 1e-4,
             "warmup_steps": 0, "weight_decay": 0.0, "precision": "fp32", "gradient_checkpointing": False,
             "seed": 42, "logging_steps": 1, "checkpoint_steps": 0, "batch_sampler": "batch_sampler"}
    fine_tune(tiny, table.with_transform(groups), loss, train, tmp_path / "model", "fp",
              callbacks=[groups.callback()])
    trained = [(epoch, row, text) for epoch, row, text in groups.seen if epoch in (0, 1)]
    by_epoch = {e: {row: text for epoch, row, text in trained if epoch == e} for e in (0, 1)}
    assert set(by_epoch[0]) == set(by_epoch[1]) == {0, 1, 2, 3}
    for epoch, rows in by_epoch.items():
        for row, text in rows.items():
            want = groups.draw(row, table[row]["positives"], table[row]["negatives"], epoch)[1][0]
            assert text == texts[want].as_py()
    assert by_epoch[0][0] != by_epoch[1][0]  # a pool of 30: epoch 1 takes the next two


def _config():
    return copy.deepcopy(load_file(REPO / "config.yaml", workdir=REPO))


def _raw():
    import yaml

    return yaml.safe_load((REPO / "config.yaml").read_text())


def test_ablation_flags_are_checked_at_parse_time():
    raw = _raw()
    raw["experiments"]["retrieval"]["retrieval"]["compare_to_last_layer"] = True
    with pytest.raises(ConfigError, match="retrieval.compare_to_last_layer: needs retrieval.score_align"):
        prepare(raw, REPO)
    raw = _raw()
    raw["experiments"]["retrieval"]["retrieval"]["target_dims"] = [512]
    with pytest.raises(ConfigError, match="retrieval.target_dims: dim 512 is larger"):
        prepare(raw, REPO)
    raw = _raw()
    raw["experiments"]["retrieval"]["evaluation"]["metrics"] = ["spearman_cosine"]
    raw["experiments"]["retrieval"]["evaluation"]["main_metric"] = "spearman_cosine"
    with pytest.raises(ConfigError, match="not retrieval metrics"):
        prepare(raw, REPO)
    raw = _raw()
    raw["experiments"]["retrieval"]["evaluation"]["datasets"] = ["lee-sim"]
    with pytest.raises(ConfigError, match="needs kind 'retrieval'"):
        prepare(raw, REPO)
    raw = _raw()
    raw["experiments"]["retrieval"]["retrieval"]["negatives"] = {"miner": "dataset"}
    with pytest.raises(ConfigError, match="retrieval.negatives.miner: 'dataset' takes the training dataset's own "
                                          "negatives, and dataset 'lee-ict-retrieval' has none"):
        prepare(raw, REPO)
    raw = _raw()
    raw["experiments"]["retrieval"]["train"]["precision_by_method"] = {"separate": "bf16"}
    with pytest.raises(ConfigError, match=r"train.precision_by_method: \['separate'\] are not among"):
        prepare(raw, REPO)


def test_starbucks_settings_are_checked_at_parse_time():
    raw = _raw()
    exp = raw["experiments"]["retrieval"]
    exp["methods"] = ["full", "starbucks-2dmse"]
    exp["retrieval"].update(starbucks_layers=[2, 4, 6], starbucks_dims=[32, 64, 384])
    config = prepare(copy.deepcopy(raw), REPO)["experiments"]["retrieval"]
    assert [v.name for v in variants(config, config["_depth"])] == ["full", "starbucks-2dmse"]
    exp["retrieval"]["starbucks_layers"] = [2, 4]
    with pytest.raises(ConfigError, match=r"retrieval.starbucks_layers: \[2, 4\] must .* last layer 6"):
        prepare(copy.deepcopy(raw), REPO)
    exp["retrieval"].update(starbucks_layers=[2, 6], starbucks_dims=[768])
    with pytest.raises(ConfigError, match=r"retrieval.starbucks_dims: \[768\] larger"):
        prepare(copy.deepcopy(raw), REPO)
    raw = _raw()
    raw["experiments"]["sts-v1"]["methods"] = ["starbucks-2dmse"]
    with pytest.raises(ConfigError, match="starbucks-2dmse is trained on retrieval groups"):
        prepare(raw, REPO)


def test_retrieval_bert_s_is_one_model_per_cell():
    raw = _raw()
    exp = raw["experiments"]["retrieval"]
    exp["methods"] = ["full", "separate"]
    exp["grid"] = {"layers": [2, 6], "dims": [384, 32]}
    exp["retrieval"]["separate_cells"] = [[2, 32], [6, 384]]
    config = prepare(raw, REPO)["experiments"]["retrieval"]
    found = {v.name: (v.cut_layers, v.cut_dim, v.model_variant) for v in variants(config, config["_depth"])}
    assert found == {"full": (None, None, "full"), "separate-L2-d32": (2, 32, "separate-L2-d32"),
                     "separate-L6-d384": (6, 384, "full")}
    exp["retrieval"]["separate_cells"] = [[3, 32]]
    with pytest.raises(ConfigError, match="separate_cells: \\[3, 32\\] is not a"):
        prepare(raw, REPO)


def test_ablation_groups_are_found_from_the_preset():
    from trimbench.dense.ablations import ablation_groups, label

    config = load_file(REPO / "configs" / "2dmse-retrieval-ablations.yaml", {"smoke": True}, REPO)
    toy = load_file(REPO / "config.yaml", workdir=REPO)["experiments"]["retrieval"]
    groups = ablation_groups(config["experiments"])
    # The toy experiment of another model and grid joins no group when the configs are combined.
    assert ablation_groups({**config["experiments"], "retrieval": toy}) == groups
    # members in the validated config's (sorted) order
    assert groups == {
        "loss": ["ablation-base", "ablation-align-last", "ablation-score-align", "ablation-sub-full"],
        "dims": ["ablation-base", "ablation-dims-2", "ablation-dims-4", "ablation-dims-6", "ablation-dims-6-full"],
        "doc": ["ablation-base", "ablation-fixed-doc"],
    }
    assert label(config["experiments"]["ablation-align-last"]) == "2DMSE +align to (L, full) dims 128"
    assert label(config["experiments"]["ablation-dims-6-full"]) == "2DMSE +CE(l, full) dims 8,16,32,64,128,512"


def _hand_made_loss(tiny, monkeypatch, method, target_dims, settings, cut_dim=None):
    """The loss over hand-made embeddings (2 queries; a positive and a negative column; each layer of the
    tiny model's 3 its own, width 32), and what its ``_embed`` was given: the query columns' input ids."""
    gen = torch.Generator().manual_seed(1)
    embeddings = {layer: torch.randn(6, 32, generator=gen, dtype=torch.float64) for layer in (1, 2, 3)}
    columns = [{"input_ids": torch.tensor([[101, 7, 8, 9, 102], [101, 7, 102, 0, 0]]),
                "attention_mask": torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]), "column": c} for c in range(3)]
    seen = []

    def embed(features, layers):
        seen.append((features["column"], features["input_ids"].tolist(), sorted(layers)))
        return {layer: embeddings[layer][2 * features["column"]:2 * features["column"] + 2] for layer in layers}

    loss = GroupedContrastiveLoss(tiny, method, target_dims, {**SETTINGS, **settings}, cut_dim=cut_dim)
    monkeypatch.setattr(loss, "_embed", embed)
    return loss(columns, None).item(), embeddings, seen


def _hand_scores(embeddings, layer, dim, passage_layer=None, scale=1.0):
    q = embeddings[layer][:2, :dim]
    p = embeddings[passage_layer or layer]
    passages = torch.stack([p[2:4], p[4:]], 1).flatten(0, 1)  # q0's positive, q0's negative, q1's ...
    return scale * q @ passages[:, :dim].T


def _hand_ce(scores):
    return torch.nn.functional.cross_entropy(scores, torch.tensor([0, 2])).item()


def test_each_methods_terms_on_hand_made_embeddings(tiny, monkeypatch):
    """BERT, BERT-S, MSE and 2DMSE with every ablation flag, over embeddings given by hand: each the module
    docstring's sum of cross-entropies at its (layer, dim) cuts, scores times ``scale``."""
    emb = None

    def ce(layer, dim, passage_layer=None, scale=1.0):
        return _hand_ce(_hand_scores(emb, layer, dim, passage_layer, scale))

    got, emb, seen = _hand_made_loss(tiny, monkeypatch, "full", [8], {"scale": 2.0, "q_max_length": 3})
    assert got == pytest.approx(ce(3, 32, scale=2.0), rel=1e-9)
    # The queries cut to q_max_length (the last kept token the tokenizer's [SEP]); passages as they come; layer L.
    sep = tiny.tokenizer.sep_token_id
    assert seen == [(0, [[101, 7, sep], [101, 7, 102]], [3]), (1, [[101, 7, 8, 9, 102], [101, 7, 102, 0, 0]], [3]),
                    (2, [[101, 7, 8, 9, 102], [101, 7, 102, 0, 0]], [3])]
    got, emb, _ = _hand_made_loss(tiny, monkeypatch, "separate", [16], {"scale": 0.5}, cut_dim=8)
    assert got == pytest.approx(ce(3, 8, scale=0.5), rel=1e-9)
    got, emb, _ = _hand_made_loss(tiny, monkeypatch, "separate", [16], {})  # no cut: the full width
    assert got == pytest.approx(ce(3, 32), rel=1e-9)
    got, emb, _ = _hand_made_loss(tiny, monkeypatch, "matryoshka", [4, 8], {})
    assert got == pytest.approx(ce(3, 32) + ce(3, 8) + ce(3, 4), rel=1e-9)
    got, emb, seen = _hand_made_loss(tiny, monkeypatch, "2dmse", [8], {"sub_layer_full_dim": True})
    want = ce(3, 32) + ce(3, 8) + sum(layer_weight(k) * (ce(k, 8) + ce(k, 32)) for k in (1, 2))
    assert got == pytest.approx(want, rel=1e-9)
    assert [layers for *_, layers in seen] == [[1, 2, 3]] * 3
    # fixed-doc: every layer's queries against the last layer's passages
    got, emb, seen = _hand_made_loss(tiny, monkeypatch, "2dmse", [8, 4],
                                     {"passage_to_last_layer": True, "sub_layer_full_dim": True})
    want = ce(3, 32) + ce(3, 8) + ce(3, 4) + sum(
        layer_weight(k) * (ce(k, 8, 3) + ce(k, 4, 3) + ce(k, 32, 3)) for k in (1, 2))
    assert got == pytest.approx(want, rel=1e-9)
    assert [layers for *_, layers in seen] == [[1, 2, 3], [3], [3]]


@pytest.mark.parametrize("last", [False, True])
def test_score_align_on_hand_made_embeddings(tiny, monkeypatch, last):
    """Each sub-model's CE plus its scores aligned (at τ = 2, scale 3) with the full width of its own
    layer, or of the last layer (compare_to_last_layer); the full model itself is not aligned."""
    settings = {"score_align": True, "compare_to_last_layer": last, "kl_temperature": 2.0, "scale": 3.0}
    got, emb, _ = _hand_made_loss(tiny, monkeypatch, "2dmse", [8], settings)

    def term(layer, dim):
        sub = _hand_scores(emb, layer, dim, scale=3.0)
        teacher = _hand_scores(emb, 3 if last else layer, 32, scale=3.0)
        return _hand_ce(sub) + _hand_alignment(sub.tolist(), teacher.tolist(), 2.0)

    want = _hand_ce(_hand_scores(emb, 3, 32, scale=3.0)) + term(3, 8) + sum(
        layer_weight(k) * term(k, 8) for k in (1, 2))
    assert got == pytest.approx(want, rel=1e-9)


def test_starbucks_step_on_hand_made_embeddings(tiny, monkeypatch):
    """Layers [3, 2]: the drawn sub-layer can only be 2; the step is starbucks_loss of the scores at layers
    2 and 3 (scale 2), over the dims [32, 8], with the KL weight."""
    settings = {"starbucks_layers": [3, 2], "starbucks_dims": [32, 8], "starbucks_kl_weight": 0.5, "scale": 2.0}
    got, emb, seen = _hand_made_loss(tiny, monkeypatch, "starbucks-2dmse", [16], settings)
    assert [layers for *_, layers in seen] == [[2, 3]] * 3
    want = starbucks_loss(lambda k, m: _hand_scores(emb, k, m, scale=2.0), torch.tensor([0, 2]), 2, 3, 32, [32, 8],
                          0.5).item()
    assert got == pytest.approx(want, rel=1e-12)


def test_truncate_features_cuts_every_token_matrix_and_ends_cut_rows_with_sep():
    ids = torch.tensor([[101, 5, 6, 7, 102, 0], [101, 5, 102, 0, 0, 0], [101, 5, 6, 102, 0, 0]])
    mask = (ids > 0).long()
    features = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids),
                "lengths": torch.tensor([5, 3, 4]), "text": "kept"}
    cut = truncate_features(features, 4, 102)
    # Rows longer than 4 tokens end with [SEP]; a row of exactly 4 or fewer is kept as it was.
    assert cut["input_ids"].tolist() == [[101, 5, 6, 102], [101, 5, 102, 0], [101, 5, 6, 102]]
    assert cut["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 1, 1]]
    assert cut["token_type_ids"].shape == (3, 4)
    assert cut["lengths"].tolist() == [5, 3, 4] and cut["text"] == "kept"  # not a token matrix: as it was
    assert ids[0].tolist() == [101, 5, 6, 7, 102, 0]  # the caller's ids untouched
    assert truncate_features(features, 4, None)["input_ids"].tolist() == [[101, 5, 6, 7], [101, 5, 102, 0],
                                                                           [101, 5, 6, 102]]
    assert truncate_features(features, 6, 102) is features and truncate_features(features, None, 102) is features
