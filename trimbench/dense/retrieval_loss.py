"""2DMSE retrieval training (the seed's Tevatron fork, implemented from its description).

Training groups: a query, one positive and ``group_size - 1`` mined negatives. The score of a
query and a passage is the unnormalised dot product of CLS embeddings (times ``scale``, 1 in the
paper); a query's loss is the cross-entropy of its positive among every passage of the batch
(its own group's negatives and all other groups' passages: in-batch negatives). Write
``CE(l, d)`` for that loss with query and passage embeddings from layer ``l`` cut to ``d`` dims;
``L`` is the last layer, ``D`` the full width, ``w_l = 1 / (1 + ln l)`` and ``T`` the target dims.

- ``full`` ("BERT"): ``CE(L, D)``
- ``separate`` ("BERT-S"): a model cut to ``L`` layers trained with ``CE(L, d)`` for its one ``d``
- ``matryoshka`` ("MSE"): ``CE(L, D) + Σ_{d∈T} CE(L, d)``
- ``2dmse``: ``CE(L, D) + Σ_{d∈T} [CE(L, d) + Σ_{l<L} w_l · CE(l, d)]`` — every layer, every step
- ``starbucks-2dmse`` (Starbucks' "BERT-2DMSE", ielab/Starbucks ``retrieval/modeling.py``
  ``SrlDenseModel.forward`` with ``--sub_model_sampling``): over its layer list ``Λ`` (ending at
  ``L``) and dim list ``Δ``, one sub-layer ``s`` of ``Λ``'s others drawn uniformly per step, then
  ``CE(L, D) + Σ_{l∈{s, L}} Σ_{d∈Δ, (l,d)≠(L,D)} [CE(l, d) + β · KL(softmax(S*) ‖ softmax(S_{l,d}))]``,
  ``S*`` the detached ``(L, D)`` scores, ``β`` the KL weight (batch-mean KL, no temperature factor)

Ablations (combinable): ``score_align`` adds ``(MSE(S, S*) + KL(softmax(S*/τ) ‖ softmax(S/τ))) / (B·N)``
for each sub-model's ``B × N`` score matrix ``S`` against the detached target ``S*`` = scores at
``(l, D)`` for a sub-layer and ``(L, D)`` at the last (``compare_to_last_layer``: always
``(L, D)``); ``sub_layer_full_dim`` adds ``w_l · CE(l, D)``; ``passage_to_last_layer`` takes
passages from layer ``L`` always ("fixed-doc") instead of from the query's layer ("paired-doc").

sentence-transformers' ``MultipleNegativesRankingLoss`` with hard-negative columns is ``CE(L, D)``
(tested), but its Matryoshka / 2D wrappers cannot express per-layer weights, paired / fixed
passages or score alignment, so one module computes every term from a single forward pass per
text column with all hidden states kept.
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F
from torch import nn

from trimbench.dense.losses import unwrapped
from trimbench.distributed import gathered
from trimbench.encoding import hidden_states_kept, pool_layer
from trimbench.models import encoder_layers

#: the method name of Starbucks' 2DMSE training (the module docstring)
STARBUCKS = "starbucks-2dmse"


def layer_weight(layer: int) -> float:
    """``w_l = 1 / (1 + ln l)``."""
    return 1.0 / (1.0 + math.log(layer))


def truncate_features(features: dict, max_length: int | None, sep_token_id: int | None) -> dict:
    """Cut tokenised texts to ``max_length`` tokens as the tokenizer would (last kept token [SEP])."""
    ids = features["input_ids"]
    if max_length is None or ids.shape[1] <= max_length:
        return features
    lengths = features["attention_mask"].sum(dim=1)
    out = {key: value[:, :max_length] if torch.is_tensor(value) and value.dim() == 2 else value
           for key, value in features.items()}
    if sep_token_id is not None:
        out["input_ids"] = out["input_ids"].clone()
        out["input_ids"][lengths > max_length, max_length - 1] = sep_token_id
    return out


class GroupedContrastiveLoss(nn.Module):
    """The methods and ablations of the module docstring over (query, positive, negatives...) rows."""

    def __init__(self, model, method: str, target_dims: list[int], settings: dict, cut_dim: int | None = None):
        super().__init__()
        self.model = model
        self.method = method
        self.target_dims = sorted(target_dims, reverse=True)
        self.settings = settings
        self.cut_dim = cut_dim
        self.depth = len(_transformer_blocks(model))
        self.width = model.get_embedding_dimension()

    def _layers_needed(self) -> list[int]:
        if self.method == "2dmse":
            return list(range(1, self.depth + 1))
        if self.method == STARBUCKS:
            # Starbucks draws with Python's random (modeling.py: random.sample(range(num_layers-1), 1)),
            # which the trainer seeds and its checkpoints restore.
            layers = sorted(self.settings["starbucks_layers"])
            return [layers[random.sample(range(len(layers) - 1), 1)[0]], layers[-1]]
        return [self.depth]

    def _embed(self, features: dict, layers: list[int]) -> dict[int, torch.Tensor]:
        model = unwrapped(self.model)
        transformer, heads = model[0], list(model)[1:]
        # Through the trainer's model (DDP on several devices: its forward prepares the gradient sync)
        with hidden_states_kept(transformer):
            out = self.model(features)
        return {layer: pool_layer(heads, out, layer) for layer in layers}

    def forward(self, sentence_features, labels=None):
        s = self.settings
        query_features, *passage_features = sentence_features
        sep = getattr(unwrapped(self.model).tokenizer, "sep_token_id", None)
        layers = self._layers_needed()
        queries = self._embed(truncate_features(query_features, s["q_max_length"], sep), layers)
        passage_layers = [self.depth] if s["passage_to_last_layer"] else layers
        groups = [self._embed(f, passage_layers) for f in passage_features]
        passages = {layer: torch.stack([g[layer] for g in groups], dim=1).flatten(0, 1) for layer in passage_layers}
        # On several devices every rank scores the whole batch (its queries and groups gathered in
        # rank order, which is the batch's order): the loss is the one-device loss on each rank.
        queries = {layer: gathered(embeddings) for layer, embeddings in queries.items()}
        passages = {layer: gathered(embeddings) for layer, embeddings in passages.items()}
        group = len(passage_features)
        target = torch.arange(queries[self.depth].shape[0], device=queries[self.depth].device) * group

        def scores(layer: int, dim: int) -> torch.Tensor:
            p = passages[self.depth if s["passage_to_last_layer"] else layer]
            return s["scale"] * queries[layer][:, :dim] @ p[:, :dim].T

        full_scores = {}

        def full(layer: int) -> torch.Tensor:
            if layer not in full_scores:
                full_scores[layer] = scores(layer, self.width)
            return full_scores[layer]

        def sub_model(layer: int, dim: int) -> torch.Tensor:
            sub = scores(layer, dim)
            loss = F.cross_entropy(sub, target)
            if s["score_align"]:
                teacher_layer = self.depth if s["compare_to_last_layer"] else layer
                loss = loss + score_alignment(sub, full(teacher_layer).detach(), s["kl_temperature"])
            return loss

        if self.method == "separate":
            return F.cross_entropy(scores(self.depth, self.cut_dim or self.width), target)
        if self.method == STARBUCKS:
            return starbucks_loss(scores, target, *layers, self.width, s["starbucks_dims"], s["starbucks_kl_weight"])
        loss = F.cross_entropy(full(self.depth), target)
        if self.method in ("matryoshka", "2dmse"):
            for dim in self.target_dims:
                loss = loss + sub_model(self.depth, dim)
        if self.method == "2dmse":
            for layer in range(1, self.depth):
                weight = layer_weight(layer)
                for dim in self.target_dims:
                    loss = loss + weight * sub_model(layer, dim)
                if s["sub_layer_full_dim"]:
                    loss = loss + weight * F.cross_entropy(full(layer), target)
        return loss


def starbucks_loss(scores, target: torch.Tensor, sampled: int, last: int, width: int, dims: list[int],
                   kl_weight: float) -> torch.Tensor:
    """Starbucks' sampled-layer 2DMSE step (``retrieval/modeling.py`` ``SrlDenseModel.forward``):
    ``scores(layer, dim)`` gives a (queries x passages) score matrix (already divided by the
    temperature); the full ``(last, width)`` scores are the CE target's logits and, detached, the
    KL teacher of every other (layer, dim) pair of the sampled and the last layer."""
    teacher = scores(last, width)
    loss = F.cross_entropy(teacher, target)
    teacher = teacher.detach()
    for layer in (sampled, last):
        for dim in dims:
            if (layer, dim) == (last, width):  # the full model's loss is already in
                continue
            sub = scores(layer, dim)
            loss = loss + F.cross_entropy(sub, target)
            if kl_weight > 0:
                kl = F.kl_div(F.log_softmax(sub, dim=1), F.softmax(teacher, dim=1), reduction="batchmean")
                loss = loss + kl_weight * kl
    return loss


def score_alignment(student: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
    """``(MSE(S, S*) + KL(softmax(S*/τ) ‖ softmax(S/τ))) / (queries × passages)``.

    The seed's ``compute_score_loss`` (``dense_2d_matryoshka_v2.py:174-180``) divides the sum by
    the score matrix's size once more (MSE is already a mean over its cells, KL a mean over
    queries): at 128 queries × 1,024 passages the term is 1/131,072 of the plain sum, a small
    regulariser beside the cross-entropy rather than the loss's largest part.
    """
    queries, passages = student.shape
    kl = F.kl_div(F.log_softmax(student / temperature, dim=1), F.softmax(teacher / temperature, dim=1),
                  reduction="batchmean")
    return (F.mse_loss(student, teacher) + kl) / queries / passages


def _transformer_blocks(model):
    return encoder_layers(model[0].auto_model)
