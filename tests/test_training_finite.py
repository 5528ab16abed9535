"""A training whose loss turns NaN or infinite fails naming the model and the steps, never finishes
as results (the probe: ``train.kl_temperature: 0`` trained a NaN 2DMSE model whose log said
``train_loss: 0.0``, 126 of 126 NaN scores, exit code 0)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from trimbench.errors import NotFiniteError
from trimbench.training import check_finite_loss, fine_tune, training_arguments

TRAIN = {"epochs": 1, "max_steps": 2, "batch_size": 2, "gradient_accumulation": 1, "lr": 1e-4,
         "warmup_steps": 0, "weight_decay": 0.0, "precision": "fp32", "gradient_checkpointing": False,
         "seed": 42, "logging_steps": 1, "checkpoint_steps": 0, "batch_sampler": "batch_sampler",
         "scale": 20.0, "n_dims_per_step": -1, "kl_div_weight": 1.0}
PAIRS = pd.DataFrame({"anchor": ["a cat sat", "rain falls", "stocks fell", "a frog"],
                      "positive": ["the cat is sitting", "it rains", "markets dropped", "a new species"]})


def two_dmse(tiny_bert_dir, kl_temperature: float):
    from trimbench.dense.losses import build_sts_loss
    from trimbench.models import load_for_training

    model = load_for_training(tiny_bert_dir, "mean", 16, 42, "sdpa", None)
    return model, build_sts_loss(model, "2dmse", {**TRAIN, "kl_temperature": kl_temperature}, [16, 32], "seed")


@pytest.mark.parametrize(("logging_steps", "steps"), [(1, "step 1"), (5, "steps 1-2")],
                         ids=["named-at-its-log", "named-after-the-last-log"])
def test_a_2dmse_training_at_temperature_zero_fails_naming_the_model_and_steps(tiny_bert_dir, tmp_path,
                                                                                 logging_steps, steps):
    """Logged every step: the first log names step 1. Logged every 5 of 2 steps: no log comes, and the
    run's mean loss (which the trainer would have filtered to 0.0) names every step."""
    model, loss = two_dmse(tiny_bert_dir, 0.0)
    output = tmp_path / "models" / "2dmse"
    with pytest.raises(NotFiniteError) as error:
        fine_tune(model, PAIRS, loss, {**TRAIN, "logging_steps": logging_steps}, output, "fp")
    assert str(error.value).startswith(f"training {output}: the loss is nan over {steps} ("), str(error.value)
    assert not output.exists()


def test_a_finite_training_saves_its_model(tiny_bert_dir, tmp_path):
    model, loss = two_dmse(tiny_bert_dir, 0.3)
    metrics = fine_tune(model, PAIRS, loss, TRAIN, tmp_path / "model", "fp")
    assert math.isfinite(metrics["train_loss"]) and (tmp_path / "model" / "modules.json").is_file()


def test_the_trainer_logs_a_non_finite_loss_as_it_is(tmp_path):
    """transformers' default replaces a NaN step's loss by the mean of the others in its logs."""
    assert training_arguments(TRAIN, tmp_path).logging_nan_inf_filter is False


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_check_finite_loss_names_what_and_the_steps(value):
    with pytest.raises(NotFiniteError, match=rf"^training the cosine_mse fine-tuning of seed 3: the loss is "
                                             rf"{value} over steps 11-20 "):
        check_finite_loss(value, "the cosine_mse fine-tuning of seed 3", 11, 20)
    check_finite_loss(0.0, "x", 1, 1)
    check_finite_loss(None, "x", 1, 1)
