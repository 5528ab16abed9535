"""SPLADE training: the naver/splade sentence-transformers code (``train_max.py``,
``train_distill.py``) on sentence-transformers 6's sparse side.

Model: an MLM head over the encoder; a text's weight for vocabulary term j is
``w_j = max over tokens t of log(1 + relu(logit_tj))`` (``SpladePooling``); scores are dot products.

- ``splade_max``: ``CE`` of each query's positive among every passage of the batch (its own hard
  negative and the other queries' passages; ``SparseMultipleNegativesRankingLoss``, dot, scale 1)
  ``+ λd·FLOPS(cat(pos, neg)) + λq·FLOPS(q)``.
- ``distil_splade``: ``MSE(s(q,p) − s(q,n), CE(q,p) − CE(q,n))`` (``SparseMarginMSELoss``) with the
  cross-encoder's score margins ``+ λd·(FLOPS(pos) + FLOPS(neg)) + λq·FLOPS(q)``.

``FLOPS(w) = Σ_j (mean over the batch of |w_j|)²`` (``FlopsLoss``).

``semantics`` picks where sentence-transformers 6 differs from the seed: ``seed`` keeps λ constant
and regularises each distil document column on its own; ``st6`` is the library as it is — λ ramped
quadratically from 0 over the first third of training (``SpladeRegularizerWeightSchedulerCallback``)
and the distil regulariser ``FLOPS(cat(pos, neg))``, about half the seed's sum.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

from trimbench.distributed import gathered
from trimbench.models import _transformer_folder, default_device
from trimbench.splade.checks import drop_last
from trimbench.training import fine_tune

log = logging.getLogger(__name__)

METHODS = ("splade_max", "distil_splade")


def flops_regulariser(embeddings: torch.Tensor) -> torch.Tensor:
    """``Σ_j (mean_i |w_ij|)²`` (SPLADE weights are non-negative, so this is FlopsLoss)."""
    return torch.sum(torch.mean(torch.abs(embeddings), dim=0) ** 2)


def is_sparse_encoder_folder(path: Path) -> bool:
    modules = Path(path) / "modules.json"
    return modules.is_file() and "SpladePooling" in modules.read_text()


def load_splade_model(path: str | Path, max_seq_length: int | None = None, device: str | None = None):
    """A trained SPLADE folder as saved, or any MLM checkpoint wrapped as
    ``Transformer(..., transformer_task="fill-mask") + SpladePooling("max")``.

    A checkpoint without MLM head weights (all-MiniLM-L6-v2: a bare BertModel) gets the standard
    head of its architecture, freshly initialised (seed the caller) with its decoder tied to the
    word embeddings — what ``AutoModelForMaskedLM`` does with weights the folder lacks.
    """
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import SpladePooling, Transformer

    path = Path(path)
    device = device or default_device()
    if is_sparse_encoder_folder(path):
        model = SparseEncoder(str(path), device=device, local_files_only=True)
    else:
        folder = _transformer_folder(path)
        transformer = Transformer(str(folder), transformer_task="fill-mask",
                                  model_kwargs={"local_files_only": True},
                                  processor_kwargs={"local_files_only": True})
        model = SparseEncoder(modules=[transformer, SpladePooling(pooling_strategy="max")], device=device)
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    return model


class BatchFlops(nn.Module):
    """FLOPS over the whole batch, gathered from every device of a multi-device run (one device:
    the batch as it is), as the seed computes it over its one GPU's batch (``Σ_j (mean_i |w_ij|)²``,
    naver/splade ``splade/losses/regularization.py:18-24``).

    ``columns=2``: the seed's distil document regulariser ``FLOPS(pos) + FLOPS(neg)``: SpladeLoss
    hands its document regulariser ``cat(pos, neg)`` and would take one FLOPS of it; this splits the
    batch back into its ``columns`` and sums their FLOPS.
    """

    def __init__(self, columns: int = 1):
        super().__init__()
        self.columns = columns

    def compute_loss_from_embeddings(self, embeddings: torch.Tensor) -> torch.Tensor:
        return sum(flops_regulariser(gathered(part)) for part in embeddings.chunk(self.columns, dim=0))


def splade_loss(model, method: str, lambda_q: float, lambda_d: float, semantics: str, devices: int = 1):
    """SpladeLoss around the method's ranking loss with the seed's or the library's regulariser;
    on several ``devices`` the in-batch negatives and the FLOPS are those of the whole batch."""
    from sentence_transformers import util
    from sentence_transformers.sparse_encoder.losses import (
        SparseMarginMSELoss,
        SparseMultipleNegativesRankingLoss,
        SpladeLoss,
    )

    gather = devices > 1
    # The library's FlopsLoss takes the FLOPS of its device's batch only: gathered ones instead.
    query_regulariser = BatchFlops() if gather else None
    if method == "splade_max":
        base = SparseMultipleNegativesRankingLoss(model, scale=1.0, similarity_fct=util.dot_score,
                                                  gather_across_devices=gather)
        document_regulariser = BatchFlops() if gather else None  # the seed's FLOPS(cat(pos, neg)) is the library's
    elif method == "distil_splade":
        base = SparseMarginMSELoss(model)  # a mean over its rows: DDP's gradient average is the batch's
        document_regulariser = BatchFlops(2) if semantics == "seed" else (BatchFlops() if gather else None)
    else:
        raise ValueError(f"unknown SPLADE method '{method}'; known: {list(METHODS)}")
    return SpladeLoss(model, base, document_regularizer_weight=lambda_d, query_regularizer_weight=lambda_q,
                      document_regularizer=document_regulariser, query_regularizer=query_regulariser)


def regulariser_schedule(loss, semantics: str):
    """The callback that sets λ during training: constant (seed) or the library's quadratic ramp."""
    from sentence_transformers.sparse_encoder.callbacks import SpladeRegularizerWeightSchedulerCallback

    if semantics == "st6":
        return SpladeRegularizerWeightSchedulerCallback(loss)

    class ConstantRegularizerWeights(SpladeRegularizerWeightSchedulerCallback):
        """λ as configured from the first step, as the seed's losses hold them. A subclass because
        SparseEncoderTrainer adds the ramp unless a callback of this type is given for the loss."""

        def __init__(self, loss):
            super().__init__(loss)
            self._current_query_regularizer_weight = self.max_query_regularizer_weight
            self._current_document_regularizer_weight = self.max_document_regularizer_weight

        def on_train_begin(self, args, state, control, **kwargs):
            pass

        def on_step_begin(self, args, state, control, **kwargs):
            pass

    return ConstantRegularizerWeights(loss)


def seed_optimisation(train: dict, method: str) -> dict:
    """The trainer arguments where the seed's ``SentenceTransformer.fit`` differs from the trainer's
    defaults, as the ``train`` section sets them (defaults: the seed's).

    ``adam_epsilon``: sentence-transformers 2.1 (the seed's, Nov 2021; ``SentenceTransformer.py``
    v2.1.0:564) optimises with ``transformers.AdamW``, whose eps is 1e-6 (the trainer's AdamW: 1e-8).
    That AdamW adds eps before its bias correction, torch's after: the same update once the
    second-moment correction is ~1 (after a few thousand steps). ``dataloader_drop_last``:
    train_distil.py:207 drops the last partial batch, train_max.py:205 keeps it.
    """
    return {"adam_epsilon": train["adam_epsilon"], "dataloader_drop_last": drop_last(train, method)}


def train_splade(model, frame, method: str, lambda_q: float, lambda_d: float, semantics: str, train: dict,
                 output_dir: Path, fingerprint: str, callbacks=()) -> dict:
    """Train on (query, positive, negative[, label]) rows (a table, or a dataset drawing them per epoch
    with its ``callbacks``: :class:`trimbench.pools.EpochGroups`); resumable as every trainer run here."""
    from sentence_transformers import SparseEncoderTrainer, SparseEncoderTrainingArguments

    loss = splade_loss(model, method, lambda_q, lambda_d, semantics, train["devices"])
    return fine_tune(model, frame, loss, train, output_dir, fingerprint,
                     trainer_class=SparseEncoderTrainer, arguments_class=SparseEncoderTrainingArguments,
                     callbacks=[regulariser_schedule(loss, semantics), *callbacks],
                     argument_overrides=seed_optimisation(train, method))
