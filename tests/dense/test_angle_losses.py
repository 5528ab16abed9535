"""STS v2 objectives (AnglE base loss, Espresso 2D training) against direct re-computation from the
formulas in the issue and angle_emb, on a tiny random BERT with CLS pooling."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from trimbench.dense.losses import AngleObjective, EspressoLoss, alignment_loss, build_sts_loss, pca_compress
from trimbench.models import encoder_layers, load_sentence_model

ANCHORS = ["a dog runs in the park", "the market fell today", "rain is expected tomorrow", "she plays violin"]
POSITIVES = ["a puppy is running outside", "stocks dropped sharply", "showers are forecast", "music on strings"]
NEGATIVES = ["the cat sleeps all day", "a new phone was released", "the museum opens at nine", "he fixed the car"]
C = 8  # compression size
T = 1.0  # ESE KL temperature
SEED_WEIGHTS = {"ibn_w": 30.0, "cosine_w": 0.0, "angle_w": 1.0, "ibn_tau": 20.0, "cosine_tau": 20.0,
                "angle_tau": 20.0}


@pytest.fixture
def model(tiny_bert_dir):
    model = load_sentence_model(tiny_bert_dir, pooling="cls", device="cpu")
    model.eval()  # no dropout: the direct computation must see the same network
    return model


def features(model):
    return [model.preprocess(texts) for texts in (ANCHORS, POSITIVES, NEGATIVES)]


def cls_layers(model, texts):
    """CLS vectors of every hidden state (0 = embedding output), straight from transformers."""
    batch = model.preprocess(texts)
    out = model[0].auto_model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                              token_type_ids=batch.get("token_type_ids"), output_hidden_states=True)
    return [h[:, 0] for h in out.hidden_states]


def triplet_layers(model):
    return [cls_layers(model, texts) for texts in (ANCHORS, POSITIVES, NEGATIVES)]


def ibn(a, p, n, tau=20.0):
    scores = F.normalize(a, dim=-1) @ F.normalize(torch.cat([p, n]), dim=-1).T * tau
    return F.cross_entropy(scores, torch.arange(len(a)))


def ranked_pairs(similarity):
    """log(1 + Σ exp(s_neg - s_pos)) over every (negative pair, positive pair)."""
    positive, negative = similarity[: len(similarity) // 2], similarity[len(similarity) // 2:]
    return torch.log1p(torch.exp(negative[:, None] - positive[None, :]).sum())


def angle_similarity(u, v, tau=20.0):
    """|Σ_j Re + Im of u_j · conj(v_j)| / (‖u‖ ‖v‖), the halves of each vector as real and imaginary
    parts (angle_emb's normalised complex division, written with complex numbers)."""
    half = u.shape[1] // 2
    uc, vc = torch.complex(u[:, :half], u[:, half:]), torch.complex(v[:, :half], v[:, half:])
    product = uc * vc.conj()
    return (product.real + product.imag).sum(1).abs() / (u.norm(dim=1) * v.norm(dim=1)) * tau


def base_loss(a, p, n, ibn_w=30.0, angle_w=1.0, cosine_w=0.0, tau=20.0):
    u, v = torch.cat([a, a]), torch.cat([p, n])
    loss = ibn_w * ibn(a, p, n, tau) + angle_w * ranked_pairs(angle_similarity(u, v, tau))
    if cosine_w:
        loss = loss + cosine_w * ranked_pairs(F.cosine_similarity(u, v) * tau)
    return loss


def pca(m, k):
    a = F.softmax(m.T @ m / math.sqrt(m.shape[1]), dim=-1)
    u, s, _ = torch.svd_lowrank(a, q=k)
    return m @ u @ torch.diag(s)


def align(x, y, t=T):
    kl = F.kl_div(F.log_softmax(x / t, -1), F.softmax(y / t, -1), reduction="batchmean")
    return F.mse_loss(x, y) + kl * t


def compressed(a, p, n):
    stacked = torch.cat([a, p, n])
    return base_loss(a[:, :C], p[:, :C], n[:, :C]) + align(stacked[:, :C], pca(stacked, C))


def test_base_loss_equals_formula(model):
    a, p, n = (layers[-1] for layers in triplet_layers(model))
    got = AngleObjective(model, **SEED_WEIGHTS)(features(model))
    assert torch.allclose(got, base_loss(a, p, n), atol=1e-4)
    with_cosine = AngleObjective(model, **{**SEED_WEIGHTS, "cosine_w": 0.5})(features(model))
    assert torch.allclose(with_cosine, base_loss(a, p, n, cosine_w=0.5), atol=1e-4)


def test_zero_weight_terms_are_left_out(model):
    only_angle = AngleObjective(model, **{**SEED_WEIGHTS, "ibn_w": 0.0})(features(model))
    a, p, n = (layers[-1] for layers in triplet_layers(model))
    assert torch.allclose(only_angle, base_loss(a, p, n, ibn_w=0.0), atol=1e-5)


def test_pca_compress_shape_no_gradient_deterministic():
    m = torch.randn(12, 32, requires_grad=True)
    torch.manual_seed(3)
    first = pca_compress(m, 8)
    torch.manual_seed(3)
    again = pca_compress(m, 8)
    assert first.shape == (12, 8)
    assert not first.requires_grad
    assert torch.equal(first, again)
    torch.manual_seed(3)
    assert torch.allclose(first, pca(m.detach(), 8), atol=1e-6)


def test_pca_compress_runs_in_float32_under_autocast():
    m = torch.randn(12, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        half = torch.nn.Linear(32, 32)(m)
        assert half.dtype == torch.bfloat16
        torch.manual_seed(1)
        compressed_half = pca_compress(half, 8)
    assert compressed_half.dtype == torch.float32
    torch.manual_seed(1)
    assert torch.allclose(compressed_half, pca(half.float(), 8), atol=1e-5)


def ese(model, students, train_weights=SEED_WEIGHTS):
    return EspressoLoss(model, AngleObjective(model, **train_weights), compression_size=C, kl_temperature=T,
                        students=students)


def teacher_part(layers):
    a, p, n = (column[-1] for column in layers)
    return base_loss(a, p, n) + compressed(a, p, n)


def test_matryoshka_is_the_teacher_part(model):
    torch.manual_seed(0)
    got = ese(model, None)(features(model))
    layers = triplet_layers(model)
    torch.manual_seed(0)
    assert torch.allclose(got, teacher_part(layers), atol=1e-4)


@pytest.mark.parametrize(("students", "indices", "weight"), [
    ("seed", [0, 1], lambda i: 1 / (1 + math.log(1 + i))),
    ("corrected", [1, 2], lambda layer: 1 / (1 + math.log(layer))),
])
def test_ese_equals_formula(model, students, indices, weight):
    torch.manual_seed(0)
    got = ese(model, students)(features(model))
    layers = triplet_layers(model)
    n_layers = len(layers[0]) - 1
    torch.manual_seed(0)
    expected = teacher_part(layers)
    student_sum = sum(weight(i) * compressed(*(column[i] for column in layers)) for i in indices)
    assert torch.allclose(got, expected + student_sum / (n_layers - 1), atol=1e-4)


def block_gradients(model, loss) -> list[float]:
    """Gradient mass on [embeddings, block 1, ..., block L]."""
    model.zero_grad()
    loss.backward()
    auto_model = model[0].auto_model
    parts = [auto_model.embeddings, *encoder_layers(auto_model)]
    return [sum(p.grad.abs().sum().item() for p in part.parameters() if p.grad is not None) for part in parts]


@pytest.mark.parametrize(("students", "reached"), [
    # seed: students are hidden states 0 and 1 (embedding output, block 1): blocks 2, 3 get nothing
    ("seed", [True, True, False, False]),
    # corrected: layers 1 and 2: only the last block gets nothing
    ("corrected", [True, True, True, False]),
])
def test_student_gradients_reach_the_student_layers_only(model, students, reached):
    torch.manual_seed(0)
    full = ese(model, students)(features(model))
    torch.manual_seed(0)
    teacher = ese(model, None)(features(model))
    grads = block_gradients(model, full - teacher)
    # The teacher terms cancel up to float rounding (~1e-5 of gradient mass here).
    assert [g > 1e-4 * max(grads) for g in grads] == reached


def test_teacher_gradients_reach_every_layer(model):
    grads = block_gradients(model, ese(model, None)(features(model)))
    assert all(g > 0 for g in grads)


def test_build_angle_losses(model):
    train = {"angle": SEED_WEIGHTS, "ese": {"compression_size": C, "kl_temperature": T, "pca": True}}
    assert type(build_sts_loss(model, "full", train, [32], "seed", "angle")) is AngleObjective
    assert type(build_sts_loss(model, "separate", train, [32], "seed", "angle")) is AngleObjective
    assert build_sts_loss(model, "matryoshka", train, [32], "seed", "angle").students is None
    assert build_sts_loss(model, "2dmse", train, [32], "seed", "angle").students == "seed"
    assert build_sts_loss(model, "2dmse", train, [32], "corrected", "angle").students == "corrected"


@pytest.mark.parametrize("method", ["full", "matryoshka", "2dmse"])
def test_built_angle_loss_carries_the_configs_weights_and_ese_settings(model, method):
    """Each configured weight, temperature and ESE setting reaches the loss that trains (a value
    dropped there falls back to the class default silently)."""
    angle = {"ibn_w": 3.0, "cosine_w": 0.5, "angle_w": 2.0, "ibn_tau": 7.0, "cosine_tau": 11.0, "angle_tau": 13.0}
    train = {"angle": angle, "ese": {"compression_size": 7, "kl_temperature": 0.25, "pca": False}}
    loss = build_sts_loss(model, method, train, [32], "seed", "angle")
    objective = loss if method == "full" else loss.base
    assert type(objective) is AngleObjective and objective.model is model
    assert objective.weights == {"ibn": 3.0, "cosine": 0.5, "angle": 2.0}
    assert (objective.ibn.scale, objective.cosine.scale, objective.angle.scale) == (7.0, 11.0, 13.0)
    if method != "full":
        assert type(loss) is EspressoLoss and loss.model is model
        assert (loss.compression_size, loss.kl_temperature, loss.pca) == (7, 0.25, False)


def test_alignment_loss_by_hand():
    """MSE + T·KL(softmax(t/T) ‖ softmax(i/T)), the KL a mean over rows; at T = 0 the MSE alone."""
    inputs, targets = [[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]], [[0.0, 1.0, 1.0], [1.5, 0.0, -0.5]]
    mse = sum((i - t) ** 2 for row_i, row_t in zip(inputs, targets, strict=True)
              for i, t in zip(row_i, row_t, strict=True)) / 6

    def softmax(row, temperature):
        exps = [math.exp(v / temperature) for v in row]
        return [e / sum(exps) for e in exps]

    def kl(temperature):
        total = 0.0
        for row_i, row_t in zip(inputs, targets, strict=True):
            p, q = softmax(row_t, temperature), softmax(row_i, temperature)
            total += sum(pt * math.log(pt / qt) for pt, qt in zip(p, q, strict=True))
        return total / 2

    def got(temperature):
        return alignment_loss(torch.tensor(inputs, dtype=torch.float64), torch.tensor(targets, dtype=torch.float64),
                              temperature).item()

    assert got(2.0) == pytest.approx(mse + 2.0 * kl(2.0), rel=1e-12)
    assert got(1.0) == pytest.approx(mse + kl(1.0), rel=1e-12)  # the default
    assert alignment_loss(torch.tensor(inputs), torch.tensor(targets)).item() == pytest.approx(mse + kl(1.0), rel=1e-6)
    assert got(0.0) == pytest.approx(mse, rel=1e-12)


def hand_triplet(width=8, rows=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(rows, width, generator=gen) for _ in range(3)]


def test_embedding_loss_weights_each_term_at_its_own_scale(model):
    """ibn_w·CE(cos·ibn_tau) + cosine_w·CoSENT(cos·cosine_tau) + angle_w·AnglE(·angle_tau), each with its
    own weight and scale, on embeddings given by hand; a term of weight 0 left out."""
    a, p, n = hand_triplet()
    u, v = torch.cat([a, a]), torch.cat([p, n])
    ibn_term = ibn(a, p, n, tau=7.0)
    cosine_term = ranked_pairs(F.cosine_similarity(u, v) * 11.0)
    angle_term = ranked_pairs(angle_similarity(u, v, tau=13.0))
    weights = {"ibn_w": 2.0, "cosine_w": 0.5, "angle_w": 3.0, "ibn_tau": 7.0, "cosine_tau": 11.0, "angle_tau": 13.0}
    got = AngleObjective(model, **weights).embedding_loss([a, p, n])
    assert got.item() == pytest.approx((2.0 * ibn_term + 0.5 * cosine_term + 3.0 * angle_term).item(), rel=1e-5)
    only_cosine = AngleObjective(model, **{**weights, "ibn_w": 0.0, "angle_w": 0.0}).embedding_loss([a, p, n])
    assert only_cosine.item() == pytest.approx((0.5 * cosine_term).item(), rel=1e-5)
    defaults = AngleObjective(model).embedding_loss([a, p, n])  # the seed's: ibn 30, angle 1, scales 20
    assert defaults.item() == pytest.approx(base_loss(a, p, n).item(), rel=1e-5)
    with_cosine = AngleObjective(model, cosine_w=0.5).embedding_loss([a, p, n])  # CoSENT's default scale 20 too
    assert with_cosine.item() == pytest.approx(base_loss(a, p, n, cosine_w=0.5).item(), rel=1e-5)


def test_compressed_loss_and_student_weights_by_hand(model):
    """The base loss of the first c dims plus the alignment of those dims with the PCA of all texts
    (at the ESE temperature); without pca the base loss alone. Student weights 1 / (1 + ln(1 + i))
    (seed) or 1 / (1 + ln l) (corrected)."""
    embeddings = hand_triplet(width=16, rows=4, seed=2)
    ese_loss = EspressoLoss(model, AngleObjective(model), compression_size=4, kl_temperature=0.5)
    torch.manual_seed(7)
    got = ese_loss.compressed_loss(embeddings).item()
    stacked = torch.cat(embeddings)
    torch.manual_seed(7)
    want = base_loss(*(e[:, :4] for e in embeddings)) + align(stacked[:, :4], pca(stacked, 4), 0.5)
    assert got == pytest.approx(want.item(), rel=1e-5)
    plain = EspressoLoss(model, AngleObjective(model), compression_size=4, pca=False).compressed_loss(embeddings)
    assert plain.item() == pytest.approx(base_loss(*(e[:, :4] for e in embeddings)).item(), rel=1e-6)
    seed, corrected = ese(model, "seed"), ese(model, "corrected")
    assert [seed.student_weight(i) for i in (0, 2)] == pytest.approx([1.0, 1 / (1 + math.log(3))], rel=1e-12)
    assert [corrected.student_weight(i) for i in (1, 3)] == pytest.approx([1.0, 1 / (1 + math.log(3))], rel=1e-12)
    default = EspressoLoss(model, AngleObjective(model))
    assert (default.compression_size, default.kl_temperature, default.pca, default.students) == (128, 1.0, True, "seed")
    with pytest.raises(ValueError, match=r"students must be one of \['corrected', 'seed'\] or None, not 'all'"):
        EspressoLoss(model, AngleObjective(model), students="all")


def test_unwrapped_finds_the_model_inside_compile_and_ddp_wrappers(model):
    from types import SimpleNamespace

    from trimbench.dense.losses import unwrapped

    assert unwrapped(model) is model
    assert unwrapped(SimpleNamespace(module=model)) is model  # DDP
    assert unwrapped(SimpleNamespace(_orig_mod=SimpleNamespace(module=model))) is model  # compiled DDP
    assert unwrapped(SimpleNamespace(module=SimpleNamespace(_orig_mod=model))) is model
