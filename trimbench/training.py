"""Fine-tuning with the sentence-transformers trainer."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pandas as pd

from trimbench.data import KIND_COLUMNS

log = logging.getLogger(__name__)


def training_rows(frame: pd.DataFrame, kind: str, max_samples: int | None, seed: int) -> pd.DataFrame:
    """The training columns of ``kind``, subsampled by seed to at most ``max_samples`` rows."""
    frame = frame[list(KIND_COLUMNS[kind])]
    if max_samples is not None and len(frame) > max_samples:
        frame = frame.sample(n=max_samples, random_state=seed).sort_index()
    return frame.reset_index(drop=True)


def training_arguments(train: dict, output_dir: Path, **overrides):
    """The trainer's arguments from a ``train`` config section; ``overrides`` are further arguments."""
    import torch
    from sentence_transformers import SentenceTransformerTrainingArguments

    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=train["epochs"],
        max_steps=train["max_steps"],
        per_device_train_batch_size=train["batch_size"],
        gradient_accumulation_steps=train["gradient_accumulation"],
        learning_rate=train["lr"],
        warmup_steps=train["warmup_steps"],
        weight_decay=train["weight_decay"],
        fp16=train["precision"] == "fp16",
        bf16=train["precision"] == "bf16",
        gradient_checkpointing=train["gradient_checkpointing"],
        seed=train["seed"],
        data_seed=train["seed"],
        batch_sampler=train["batch_sampler"],
        logging_steps=train["logging_steps"],
        save_strategy="no",
        report_to="none",
        dataloader_num_workers=0,
        use_cpu=not torch.cuda.is_available(),
        **overrides,
    )


def fine_tune(model, frame: pd.DataFrame, loss, train: dict, output_dir: Path) -> dict:
    """Train ``model`` on ``frame`` with ``loss`` and save it to ``output_dir``.

    The model is written to a temporary sibling and renamed, so a killed job never leaves a
    directory that looks finished. Returns the trainer's final log entry.
    """
    import datasets
    from sentence_transformers import SentenceTransformerTrainer
    from transformers import set_seed

    set_seed(train["seed"])
    output_dir = Path(output_dir)
    work_dir = output_dir.with_name(output_dir.name + ".tmp")
    shutil.rmtree(work_dir, ignore_errors=True)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=training_arguments(train, work_dir / "trainer"),
        train_dataset=datasets.Dataset.from_pandas(frame, preserve_index=False),
        loss=loss,
    )
    result = trainer.train()
    log.info("training finished: %s", result.metrics)
    model.save(str(work_dir / "model"))
    shutil.rmtree(output_dir, ignore_errors=True)
    (work_dir / "model").rename(output_dir)
    shutil.rmtree(work_dir, ignore_errors=True)
    return result.metrics
