"""2DMSE losses against direct re-computation from the formulas, on a tiny random BERT."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import (
    Matryoshka2dLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
)

from trimbench.cost.work import Forward
from trimbench.dense import losses as tb_losses
from trimbench.dense.cost import sts_forwards
from trimbench.dense.losses import SeedMatryoshka2dLoss, build_sts_loss
from trimbench.models import encoder_layers, load_sentence_model

ANCHORS = ["a dog runs in the park", "the market fell today", "rain is expected tomorrow", "she plays violin"]
POSITIVES = ["a puppy is running outside", "stocks dropped sharply", "showers are forecast", "music on strings"]
T = 0.3


@pytest.fixture
def model(tiny_bert_dir):
    torch.manual_seed(0)
    model = load_sentence_model(tiny_bert_dir, pooling="mean", device="cpu")
    model.eval()  # no dropout: the direct computation must see the same network
    return model


def features(model):
    return [model.preprocess(ANCHORS), model.preprocess(POSITIVES)]


def pooled_layers(model, texts):
    """Mean-pooled hidden states of every layer, computed directly with the transformers model."""
    batch = model.preprocess(texts)
    out = model[0].auto_model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                              token_type_ids=batch.get("token_type_ids"), output_hidden_states=True)
    mask = batch["attention_mask"].unsqueeze(-1).float()
    return [(h * mask).sum(1) / mask.sum(1) for h in out.hidden_states]


def mnrl(anchor, positive, scale=20.0):
    scores = F.normalize(anchor, dim=-1) @ F.normalize(positive, dim=-1).T * scale
    return F.cross_entropy(scores, torch.arange(len(anchor)))


def test_seed_2dmse_equals_formula(model, monkeypatch):
    sampled = []

    def pick_layer_two(population, k):
        sampled.append(list(population))
        return [2]

    monkeypatch.setattr(tb_losses.random, "sample", pick_layer_two)
    loss_fn = SeedMatryoshka2dLoss(model, MultipleNegativesRankingLoss(model), [32], kl_temperature=T)
    got = loss_fn(features(model), None)

    a, p = pooled_layers(model, ANCHORS), pooled_layers(model, POSITIVES)
    last, prior = 3, 2
    expected = mnrl(a[last], p[last]) + mnrl(a[prior], p[prior]) / prior
    student = torch.cat([a[prior], p[prior]])
    teacher = torch.cat([a[last], p[last]])
    kl = F.kl_div(F.log_softmax(student / T, -1), F.softmax(teacher / T, -1), reduction="batchmean")
    expected = expected + kl * T
    assert torch.allclose(got, expected, atol=1e-5)
    # The seed drew the prior layer from 1..L-1: never the embedding output, never the last layer.
    assert sampled == [[1, 2]]


@pytest.mark.parametrize("layers_per_step", [2, 0])
def test_seed_2dmse_weights_every_term_and_spreads_the_prior_layers(model, monkeypatch, layers_per_step):
    """With every prior layer of a 3-layer model's 1..L-1 in the step (two of two, or 0: all), each
    layer's loss is divided by its index and by their number, then weighted; each KL term by T and
    its weight."""
    monkeypatch.setattr(tb_losses.random, "sample", lambda population, k: pytest.fail("all layers: no draw"))
    loss_fn = SeedMatryoshka2dLoss(model, MultipleNegativesRankingLoss(model), [32], n_layers_per_step=layers_per_step,
                                   last_layer_weight=3.0, prior_layers_weight=2.0, kl_div_weight=0.5,
                                   kl_temperature=T)
    got = loss_fn(features(model), None)
    a, p = pooled_layers(model, ANCHORS), pooled_layers(model, POSITIVES)
    teacher = F.softmax(torch.cat([a[3], p[3]]) / T, -1)
    expected = 3.0 * mnrl(a[3], p[3])
    for layer in (1, 2):
        expected = expected + mnrl(a[layer], p[layer]) / layer / 2 * 2.0
        student = F.log_softmax(torch.cat([a[layer], p[layer]]) / T, -1)
        expected = expected + F.kl_div(student, teacher, reduction="batchmean") * T * 0.5
    assert torch.allclose(got, expected, atol=1e-5)


def kl_only_gradient_on_last_layer(model, loss_cls, monkeypatch):
    monkeypatch.setattr("random.sample", lambda population, k: [2])
    loss_fn = loss_cls(model, MultipleNegativesRankingLoss(model), [32], last_layer_weight=0.0,
                       prior_layers_weight=0.0, kl_temperature=T)
    model.zero_grad()
    loss_fn(features(model), None).backward()
    last_block = encoder_layers(model[0].auto_model)[-1]
    return sum(p.grad.abs().sum().item() for p in last_block.parameters() if p.grad is not None)


def test_seed_teacher_is_not_detached_but_st6_is(model, monkeypatch):
    assert kl_only_gradient_on_last_layer(model, SeedMatryoshka2dLoss, monkeypatch) > 0
    assert kl_only_gradient_on_last_layer(model, Matryoshka2dLoss, monkeypatch) == 0


def test_gradients_reach_every_layer(model):
    model.train()
    loss = build_sts_loss(model, "2dmse", {"scale": 20.0, "kl_temperature": T, "kl_div_weight": 1.0,
                                           "n_dims_per_step": -1}, [32, 16], "seed")
    loss(features(model), None).backward()
    for block in encoder_layers(model[0].auto_model):
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in block.parameters())


def test_matryoshka_sums_every_dim(model):
    train = {"scale": 20.0, "n_dims_per_step": -1}
    got = build_sts_loss(model, "matryoshka", train, [16, 32], "seed")(features(model), None)
    a, p = pooled_layers(model, ANCHORS)[3], pooled_layers(model, POSITIVES)[3]
    expected = mnrl(a, p) + mnrl(a[:, :16], p[:, :16])
    assert torch.allclose(got, expected, atol=1e-5)


def test_unknown_method():
    with pytest.raises(ValueError, match="no STS training loss for method 'bogus'"):
        build_sts_loss(None, "bogus", {"scale": 20.0}, [8], "seed")


V1_TRAIN = {"scale": 7.0, "n_dims_per_step": 2, "kl_temperature": 0.4, "kl_div_weight": 0.6}


@pytest.mark.parametrize(("method", "semantics", "devices"), [("full", "seed", None), ("separate", "seed", 2),
                                                              ("matryoshka", "corrected", 1),
                                                              ("2dmse", "seed", None), ("2dmse", "corrected", None)])
def test_v1_loss_is_the_methods_with_the_configs_settings(model, method, semantics, devices):
    """Each method's loss, around one MNRL of the configured scale that gathers the batch across
    devices only on several, over the dims largest first, with the configured per-step dims and
    (the seed's 2DMSE) KL temperature and weight."""
    train = V1_TRAIN if devices is None else {**V1_TRAIN, "devices": devices}
    loss = build_sts_loss(model, method, train, [8, 32, 16], semantics)
    matryoshka = loss.loss if method == "2dmse" else loss
    base = matryoshka if method in ("full", "separate") else matryoshka.loss
    assert type(base) is MultipleNegativesRankingLoss and base.model is model
    assert base.scale == 7.0 and base.gather_across_devices is (devices == 2)
    if method in ("full", "separate"):
        return
    assert type(matryoshka) is MatryoshkaLoss and matryoshka.model is model
    assert tuple(matryoshka.matryoshka_dims) == (32, 16, 8)
    if method == "matryoshka":
        assert matryoshka.n_dims_per_step == 2
        return
    assert loss.model is model
    if semantics == "seed":
        assert type(loss) is SeedMatryoshka2dLoss and (loss.kl_temperature, loss.kl_div_weight) == (0.4, 0.6)
    else:  # the library's own, at its defaults
        assert type(loss) is Matryoshka2dLoss


def test_an_unknown_v1_method_is_refused(model):
    with pytest.raises(ValueError, match="no STS training loss for method 'mrl'"):
        build_sts_loss(model, "mrl", V1_TRAIN, [8], "seed")


NEGATIVES = ["the old museum on the hill opens its doors at nine every morning except on sundays",
             "a new phone", "he fixed the car", "snow"]


@pytest.mark.parametrize("objective, method", [("mnrl", "full"), ("mnrl", "separate"), ("mnrl", "matryoshka"),
                                               ("mnrl", "2dmse"), ("angle", "full"), ("angle", "matryoshka"),
                                               ("angle", "2dmse")])
def test_the_plan_prices_the_forwards_the_training_loss_runs(model, objective, method):
    """trimbench.dense.cost.sts_forwards says which of a triplet step's columns share a forward (the
    plan counts each forward's memory on its own): the encoder's calls under the real loss, batch and
    padded length each, are the ones it names."""
    calls = []
    # on the embeddings: each run of the encoder (the decorators' cached calls of model[0] run none)
    hook = model[0].auto_model.embeddings.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(tuple(kwargs.get("input_ids", args[0] if args else None).shape)),
        with_kwargs=True)
    train = {**V1_TRAIN, "angle": {"ibn_w": 30.0, "cosine_w": 0.0, "angle_w": 1.0, "ibn_tau": 20.0,
                                   "cosine_tau": 20.0, "angle_tau": 20.0},
             "ese": {"compression_size": 8, "kl_temperature": 1.0, "pca": True}}
    columns = [model.preprocess(texts) for texts in (ANCHORS, POSITIVES, NEGATIVES)]
    try:
        build_sts_loss(model, method, train, [8, 32], "seed", objective)(columns, None)
    finally:
        hook.remove()
    planned = sts_forwards([Forward(*column["input_ids"].shape) for column in columns], method, objective)
    assert calls == [(forward.batch, forward.length) for forward in planned]
    assert len(set(calls)) > 1  # the columns' lengths differ: a merge would show
