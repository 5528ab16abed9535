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
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from trimbench.data.io import RetrievalSplit, doc_texts
from trimbench.dense.losses import unwrapped
from trimbench.distributed import gathered
from trimbench.encoding import hidden_states_kept, pool_layer
from trimbench.models import encoder_layers

if TYPE_CHECKING:
    import datasets
    import pyarrow as pa

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


def group_pools(split: RetrievalSplit, pools: Iterable[dict], max_samples: int | None = None,
                seed: int = 42) -> tuple[datasets.Dataset, pa.Array]:
    """The training table the trainer draws groups from, and the passage texts it points into.

    One row per training query with a positive: ``row`` (its index, Tevatron's ``item``), the query,
    and its positives and negative pool as positions into the returned texts (``title text``, as
    Tevatron's ``format_passage``). ``pools``: the negatives cache's rows (query id, positives in
    the source's order, negatives best first). ``max_samples``: that many queries, by seed.
    """
    import datasets
    import pyarrow as pa

    position = pd.Index(split.corpus["doc_id"])
    query_text = dict(zip(split.queries["query_id"], split.queries["text"], strict=True))
    queries, positives, negatives = [], [], []
    for pool in pools:
        if not pool["positives"] or pool["query_id"] not in query_text:
            continue
        queries.append(query_text[pool["query_id"]])
        positives.append(position.get_indexer(pool["positives"]).tolist())
        negatives.append(position.get_indexer([n["doc_id"] for n in pool["negatives"]]).tolist())
    if any(-1 in ids for ids in positives + negatives):
        raise ValueError("the negatives cache names passages that are not in the training corpus: rebuild it")
    keep = np.arange(len(queries))
    if max_samples is not None and len(keep) > max_samples:
        keep = np.sort(np.random.default_rng(seed).choice(len(keep), size=max_samples, replace=False))
    table = datasets.Dataset.from_dict({"row": list(range(len(keep))), "query": [queries[i] for i in keep],
                                        "positives": [positives[i] for i in keep],
                                        "negatives": [negatives[i] for i in keep]})
    texts = pa.array((text for text in doc_texts(split.corpus)), type=pa.large_string(), size=len(split.corpus))
    return table, texts


class EpochGroups:
    """Each query's training group, drawn afresh every epoch as Tevatron's ``TrainDataset.__getitem__``
    does (``src/tevatron/retriever/dataset.py:42-79`` of the seed's fork); a ``datasets`` transform
    over :func:`group_pools`' table that the sentence-transformers trainer reads as columns query,
    positive, negative_1 .. negative_{group_size-1}.

    For row ``i`` in epoch ``e``, with ``h = i + seed`` (``hash(item + seed)``: an int's hash is
    itself): the positive is ``positives[(h + e) % len(positives)]``; with a pool of at least
    ``group_size - 1`` negatives, the pool is shuffled once by ``random.Random(h)``, doubled, and
    epoch ``e`` takes the ``group_size - 1`` after offset ``e·(group_size-1) mod len(pool)`` (so
    successive epochs walk through the pool). A smaller pool is sampled with replacement (Tevatron:
    ``random.choices`` on the global generator; here one seeded by (h, e), so a rerun draws the
    same); a query with none gets random passages that are not its positives (Tevatron would fail).
    The epoch is set by :meth:`callback` at each epoch's start.
    """

    def __init__(self, texts, group_size: int, seed: int):
        self.texts = texts
        self.negatives_per_group = group_size - 1
        self.seed = seed
        self.epoch = 0

    def draw(self, row: int, positives: list[int], negatives: list[int], epoch: int) -> tuple[int, list[int]]:
        """(positive, negatives) of ``row`` in ``epoch``, as positions into the texts."""
        hashed = row + self.seed
        n = self.negatives_per_group
        positive = positives[(hashed + epoch) % len(positives)]
        if len(negatives) >= n:
            pool = list(negatives)
            random.Random(hashed).shuffle(pool)
            offset = epoch * n % len(pool)
            return positive, (pool * 2)[offset:offset + n]
        rng = random.Random(hashed * 1_000_003 + epoch)
        if negatives:
            return positive, rng.choices(negatives, k=n)
        banned = set(positives)
        others = [i for i in rng.sample(range(len(self.texts)), min(len(self.texts), n + len(banned)))
                  if i not in banned]
        return positive, rng.choices(others, k=n) if len(others) < n else others[:n]

    def __call__(self, batch: dict) -> dict:
        drawn = [self.draw(row, positives, negatives, self.epoch)
                 for row, positives, negatives in zip(batch["row"], batch["positives"], batch["negatives"],
                                                      strict=True)]
        out = {"query": list(batch["query"]), "positive": self._texts([p for p, _ in drawn])}
        for k in range(self.negatives_per_group):
            out[f"negative_{k + 1}"] = self._texts([negs[k] for _, negs in drawn])
        return out

    def _texts(self, positions: list[int]) -> list[str]:
        return self.texts.take(positions).to_pylist()

    def callback(self):
        """A trainer callback that sets the epoch the groups are drawn for (a resumed run's too)."""
        from transformers import TrainerCallback

        groups = self

        class RedrawGroups(TrainerCallback):
            def on_epoch_begin(self, args, state, control, **kwargs):
                groups.epoch = math.floor(state.epoch + 1e-6)

        return RedrawGroups()
