"""Training objectives of the STS grid track, built from sentence-transformers' losses."""

from __future__ import annotations

import random

import torch.nn.functional as F
from sentence_transformers.base.losses.merged_forward import column_merging_disabled
from sentence_transformers.base.model import BaseModel
from sentence_transformers.sentence_transformer.losses import (
    Matryoshka2dLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
)
from sentence_transformers.sentence_transformer.losses.adaptive_layer import ForwardDecorator, TransformerDecorator


def _unwrap(model):
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
        model = _unwrap(self.model)
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


def build_sts_loss(model, method: str, train: dict, dims: list[int], semantics: str):
    """The seed's objective per method: MNRL (cosine, scale) and its Matryoshka / 2D wrappers."""
    base = MultipleNegativesRankingLoss(model, scale=train["scale"])
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
