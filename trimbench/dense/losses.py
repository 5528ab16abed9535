"""Training objectives of the STS grid track, built from sentence-transformers' losses.

v1 (``objective: mnrl``): MNRL and its Matryoshka / 2D wrappers, as the 2DMSE-Reproduce seed ran
them with sentence-transformers 3.x. v2 (``objective: angle``): the AnglE objective and its
Espresso (ESE) 2D training, which the seed ran from a vendored copy of ``angle_emb``; they are
re-implemented here on sentence-transformers' losses and trainer, and each docstring names the
``angle_emb`` code it mirrors.
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F
from sentence_transformers.base.losses.merged_forward import column_merging_disabled
from sentence_transformers.base.model import BaseModel
from sentence_transformers.sentence_transformer.losses import (
    AnglELoss,
    CoSENTLoss,
    Matryoshka2dLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
)
from sentence_transformers.sentence_transformer.losses.adaptive_layer import ForwardDecorator, TransformerDecorator
from torch import nn

from trimbench.distributed import from_main_process, gathered
from trimbench.encoding import hidden_states_kept, pool_layer


def unwrapped(model):
    """The sentence-transformers model inside the trainer's wrappers (DDP, torch.compile)."""
    while not isinstance(model, BaseModel):
        model = getattr(model, "_orig_mod", None) or model.module
    return model


class SeedMatryoshka2dLoss(Matryoshka2dLoss):
    """``Matryoshka2dLoss`` with the semantics of sentence-transformers 3.x, which the
    2DMSE-Reproduce seed ran.

    Per step: ``L(h_L, d_1) + Σ_{l ∈ S} L(h_l, d_l) / l / |S| + T · KL(p_l ‖ p_L)`` where ``S`` is
    one prior layer drawn from 1..L-1, each ``L(·, d)`` the MatryoshkaLoss at its own random dim,
    and ``p = softmax(e / T)`` of the full-width pooled embeddings (``T`` = ``kl_temperature``).

    sentence-transformers 6 differs in three ways, so ``forward`` is overridden (the rest is the
    library's): it may draw hidden state 0 (the embedding output) as the prior layer, it weights
    prior layers uniformly by default (the seed's ``1 / (1 + i)`` over indices ``i`` of layers
    1..L-1 is ``1 / l``), and it detaches the last layer's distribution (the KL teacher); the
    seed back-propagates through the teacher as well.
    """

    def forward(self, sentence_features, labels):
        model = unwrapped(self.model)
        original_transformer_forward = model[0].forward
        transformer_decorator = TransformerDecorator(model[0], original_transformer_forward)
        model[0].forward = transformer_decorator
        original_forward = model.forward
        forward_decorator = ForwardDecorator(original_forward)
        model.forward = forward_decorator
        temperature = self.kl_temperature
        try:
            with column_merging_disabled():
                loss = self.loss(sentence_features, labels) * self.last_layer_weight
                teacher = F.softmax(forward_decorator.get_embeddings() / temperature, dim=-1)
                # Hidden states are [embedding output, layer 1, ..., layer L]: the seed skipped both ends.
                prior_layers = range(1, transformer_decorator.num_layers - 1)
                if 0 < self.n_layers_per_step < len(prior_layers):
                    prior_layers = random.sample(prior_layers, self.n_layers_per_step)
                for layer in prior_layers:
                    transformer_decorator.set_layer_idx(layer)
                    layer_loss = self.loss(sentence_features, labels)
                    loss = loss + layer_loss / layer / len(prior_layers) * self.prior_layers_weight
                    student = F.log_softmax(forward_decorator.get_embeddings() / temperature, dim=-1)
                    kl_div = F.kl_div(student, teacher, reduction="batchmean")
                    loss = loss + kl_div * temperature * self.kl_div_weight
        finally:
            model[0].forward = original_transformer_forward
            model.forward = original_forward
        return loss


class AngleObjective(nn.Module):
    """The AnglE base loss on (text, positive, negative) triplets: ``angle_emb.AngleLoss`` with
    ``DatasetFormats.B``.

    ``ibn_w · CE(cos(a, [p; n]) · ibn_tau)`` (angle_emb's ``contrastive_with_negative_loss``: in-batch
    negatives plus the hard negatives; sentence-transformers' MNRL is exactly that)
    ``+ cosine_w · CoSENT + angle_w · AnglE`` over the pairs (a, p) labelled 1 and (a, n) labelled 0
    (angle_emb's ``cosine_loss`` and ``angle_loss`` are sentence-transformers' ``CoSENTLoss`` and
    ``AnglELoss``: the same pairwise log-sum-exp over the cosine or the normalised complex angle
    difference). A term with weight 0 is not computed, as in angle_emb.

    On several devices every rank computes this loss of the whole batch, gathered
    (:func:`~trimbench.distributed.gathered`): the pairwise log-sum-exp terms range over every pair
    of the batch, as on one device. ``all_gather``'s backward sums the ranks' gradients of each
    rank's embeddings and DDP averages the parameter gradients, so the update is the one device's.
    angle_emb itself gathers nothing (``angle_emb/angle.py`` ``AngleTrainer.compute_loss``: each GPU's
    loss of its own batch).
    """

    def __init__(self, model, ibn_w: float = 30.0, cosine_w: float = 0.0, angle_w: float = 1.0,
                 ibn_tau: float = 20.0, cosine_tau: float = 20.0, angle_tau: float = 20.0):
        super().__init__()
        self.model = model
        self.weights = {"ibn": ibn_w, "cosine": cosine_w, "angle": angle_w}
        self.ibn = MultipleNegativesRankingLoss(model, scale=ibn_tau)
        self.cosine = CoSENTLoss(model, scale=cosine_tau)
        self.angle = AnglELoss(model, scale=angle_tau)

    def embedding_loss(self, embeddings: list[torch.Tensor]) -> torch.Tensor:
        anchor, positive, negative = embeddings
        pairs = [torch.cat([anchor, anchor]), torch.cat([positive, negative])]
        labels = torch.cat([torch.ones(len(anchor)), torch.zeros(len(anchor))]).to(anchor.device)
        terms = {
            "ibn": lambda: self.ibn.compute_loss_from_embeddings(embeddings, None),
            "cosine": lambda: self.cosine.compute_loss_from_embeddings(pairs, labels),
            "angle": lambda: self.angle.compute_loss_from_embeddings(pairs, labels),
        }
        return sum(weight * terms[name]() for name, weight in self.weights.items() if weight > 0)

    def forward(self, sentence_features, labels=None):
        return self.embedding_loss([gathered(self.model(f)["sentence_embedding"]) for f in sentence_features])


@torch.no_grad()
def pca_compress(m: torch.Tensor, k: int) -> torch.Tensor:
    """angle_emb ``AngleESETrainer.pca_compress``: ``m @ (u · diag(s))`` with ``u, s`` the top-``k``
    low-rank SVD of ``A = softmax(mᵀm / √D)``; no gradient. ``svd_lowrank`` draws a random
    projection, so the result is deterministic given torch's seed. Computed in float32 outside
    autocast: a softmax over D×D logits and a QR in fp16/bf16 lose the small components (and CUDA
    has no half-precision QR)."""
    with torch.autocast(device_type=m.device.type, enabled=False):
        m = m.float()
        a = F.softmax(m.T @ m / m.shape[-1] ** 0.5, dim=-1)
        u, s, _ = torch.svd_lowrank(a, q=k)
        # the same random projection on every rank of a multi-device run: rank 0's
        return m @ from_main_process(u @ torch.diag(s))


def alignment_loss(inputs: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """angle_emb ``AngleTrainer.compute_distillation_loss`` (mse_weight 1): ``MSE + T · KL(t ‖ i)``
    with both sides softened by ``T``."""
    loss = F.mse_loss(inputs, targets)
    if temperature > 0:
        loss = loss + F.kl_div(F.log_softmax(inputs / temperature, dim=-1), F.softmax(targets / temperature, dim=-1),
                               reduction="batchmean") * temperature
    return loss


#: Which hidden states are ESE students: angle_emb's ``range(n_layers - 1)`` (``seed``: the
#: embedding output and layers 1..L-2, never L-1) or every transformer layer below the last.
ESE_STUDENTS = {"seed": lambda n_layers: range(0, n_layers - 1), "corrected": lambda n_layers: range(1, n_layers)}


class EspressoLoss(nn.Module):
    """AnglE's Espresso (ESE) 2D objective, ``angle_emb.AngleESETrainer.compute_loss``.

    Teacher (the last layer): ``L(h_L) + L(h_L[:, :c]) + align(h_L[:, :c], pca_compress(h_L, c))``;
    with ``students=None`` that is all (angle_emb's ``apply_mrl``, our ``matryoshka``). Students
    (``compute_student_loss``): for each student hidden state ``i`` with weight
    ``w_i = 1 / (1 + ln(1 + i))``, ``w_i · (L(h_i[:, :c]) + align(h_i[:, :c], pca_compress(h_i, c)))``,
    summed and divided by ``L - 1``. ``L`` is the base :class:`AngleObjective`; ``align`` is
    :func:`alignment_loss` at ``kl_temperature``. As in angle_emb, the PCA target and the alignment
    are computed over all texts of the batch together (anchors, positives and negatives): on
    several devices, of the whole batch gathered, as :class:`AngleObjective`.
    ``students="corrected"`` takes layers ``l = 1..L-1`` with ``w_l = 1 / (1 + ln l)`` instead.
    """

    def __init__(self, model, base: AngleObjective, compression_size: int = 128, kl_temperature: float = 1.0,
                 pca: bool = True, students: str | None = "seed"):
        super().__init__()
        if students is not None and students not in ESE_STUDENTS:
            raise ValueError(f"students must be one of {sorted(ESE_STUDENTS)} or None, not {students!r}")
        self.model = model
        self.base = base
        self.compression_size = compression_size
        self.kl_temperature = kl_temperature
        self.pca = pca
        self.students = students

    def compressed_loss(self, embeddings: list[torch.Tensor]) -> torch.Tensor:
        c = self.compression_size
        loss = self.base.embedding_loss([e[:, :c] for e in embeddings])
        if self.pca:
            stacked = torch.cat(embeddings)
            loss = loss + alignment_loss(stacked[:, :c], pca_compress(stacked, c), self.kl_temperature)
        return loss

    def student_weight(self, index: int) -> float:
        return 1.0 / (1.0 + math.log(index if self.students == "corrected" else 1 + index))

    def forward(self, sentence_features, labels=None):
        model = unwrapped(self.model)
        with hidden_states_kept(model[0]):
            outputs = [self.model(f) for f in sentence_features]
        teacher = [gathered(o["sentence_embedding"]) for o in outputs]
        loss = self.base.embedding_loss(teacher) + self.compressed_loss(teacher)
        if self.students is None:
            return loss
        n_layers = len(outputs[0]["all_layer_embeddings"]) - 1
        heads = list(model)[1:]
        student_loss = 0.0
        for index in ESE_STUDENTS[self.students](n_layers):
            students = [gathered(pool_layer(heads, o, index)) for o in outputs]
            student_loss = student_loss + self.compressed_loss(students) * self.student_weight(index)
        return loss + student_loss / (n_layers - 1)


def build_angle_loss(model, method: str, train: dict, semantics: str):
    """The seed's v2 objective per method: AnglE for BERT / BERT-S, ESE's teacher part for MSE
    (``apply_mrl``), the full ESE for 2DMSE."""
    angle = train["angle"]
    base = AngleObjective(model, **angle)
    if method in ("full", "separate"):
        return base
    ese = train["ese"]
    students = None if method == "matryoshka" else ("seed" if semantics == "seed" else "corrected")
    return EspressoLoss(model, base, compression_size=ese["compression_size"], kl_temperature=ese["kl_temperature"],
                        pca=ese["pca"], students=students)


def build_sts_loss(model, method: str, train: dict, dims: list[int], semantics: str, objective: str = "mnrl"):
    """The seed's objective per method: MNRL (cosine, scale) and its Matryoshka / 2D wrappers (v1),
    or the AnglE / ESE objective (v2)."""
    if objective == "angle":
        return build_angle_loss(model, method, train, semantics)
    # On several devices each one's queries rank the passages of the whole batch (the wrappers
    # below call this loss per layer and dim; their KL terms are means over rows, which DDP's
    # gradient average makes the whole batch's).
    base = MultipleNegativesRankingLoss(model, scale=train["scale"], gather_across_devices=train.get("devices", 1) > 1)
    dims = sorted(dims, reverse=True)
    if method in ("full", "separate"):
        return base
    if method == "matryoshka":
        return MatryoshkaLoss(model, base, dims, n_dims_per_step=train["n_dims_per_step"])
    if method == "2dmse":
        if semantics == "seed":
            return SeedMatryoshka2dLoss(model, base, dims, kl_temperature=train["kl_temperature"],
                                        kl_div_weight=train["kl_div_weight"])
        return Matryoshka2dLoss(model, base, dims)
    raise ValueError(f"no STS training loss for method '{method}'")
