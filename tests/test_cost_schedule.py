"""trimbench.cost.work's training schedule against the trainer's counts, worked out by hand
(transformers 5's Trainer: ceil(batches / accumulation) steps an epoch, every batch of each epoch run)."""

from __future__ import annotations

import pytest

from trimbench.cost.work import optimizer_steps, training_batches


def test_steps_round_up_each_epoch_before_the_epochs_multiply():
    # 2000 rows, batch 32: 63 batches an epoch, 8 steps of 8 (the last of 7); 10 epochs: 80 steps
    assert optimizer_steps(2000, 32, 10, accumulation=8) == 80
    assert training_batches(2000, 32, 10, accumulation=8) == 630


def test_a_dropped_last_batch_and_max_steps():
    assert optimizer_steps(1000, 64, 3, drop_last=True) == 45  # 15 whole batches an epoch
    assert optimizer_steps(1000, 64, 3) == 48
    assert optimizer_steps(1000, 64, 3, max_steps=7) == 7 and training_batches(1000, 64, 3, max_steps=7) == 7
    # 20 steps of 4 batches over epochs of 16 batches (4 steps): 5 whole epochs
    assert training_batches(1000, 64, 3, max_steps=20, accumulation=4) == 80


def test_a_fraction_of_an_epoch_stops_after_its_steps():
    # 10 batches an epoch, 3 steps (4 + 4 + 2 batches); 1.5 epochs: 5 steps, one epoch and 2 steps of 4
    assert optimizer_steps(100, 10, 1.5, accumulation=4) == 5
    assert training_batches(100, 10, 1.5, accumulation=4) == 18
    assert training_batches(100, 10, 1.5) == 15


def _counted_model():
    """A one-weight regression for transformers' Trainer that counts its forward passes."""
    import torch

    class Counted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(1))
            self.forwards = 0

        def forward(self, x, labels=None):
            self.forwards += 1
            return {"loss": ((self.weight * x - labels) ** 2).mean()}

    return Counted()


@pytest.mark.parametrize(("rows", "batch", "epochs", "accumulation", "drop_last"),
                         [(100, 10, 1.5, 4, False), (25, 4, 2, 1, True), (23, 4, 2, 3, False)])
def test_the_schedule_is_the_trainers(tmp_path, rows, batch, epochs, accumulation, drop_last):
    """The steps and batches a real transformers Trainer runs (on a one-weight model, on CPU)."""
    import datasets
    from transformers import Trainer, TrainingArguments

    model = _counted_model()
    args = TrainingArguments(str(tmp_path), per_device_train_batch_size=batch, num_train_epochs=epochs,
                             gradient_accumulation_steps=accumulation, dataloader_drop_last=drop_last,
                             use_cpu=True, report_to="none", save_strategy="no", logging_strategy="no",
                             disable_tqdm=True)
    data = datasets.Dataset.from_dict({"x": [1.0] * rows, "labels": [2.0] * rows})
    state = Trainer(model=model, args=args, train_dataset=data).train()
    assert state.global_step == optimizer_steps(rows, batch, epochs, accumulation=accumulation, drop_last=drop_last)
    assert model.forwards == training_batches(rows, batch, epochs, accumulation=accumulation, drop_last=drop_last)
