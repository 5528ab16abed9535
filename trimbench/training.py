"""Fine-tuning with the sentence-transformers trainer."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import shutil
from pathlib import Path

import pandas as pd

from trimbench import distributed
from trimbench.data.columns import KIND_COLUMNS
from trimbench.errors import NotFiniteError
from trimbench.jobs import faults, launch
from trimbench.jobs.fingerprint import stamped_work_dir

log = logging.getLogger(__name__)

# The files the trainer writes into a checkpoint after the model, trainer_state.json last: with all
# of them there (and the state readable) the checkpoint is complete.
CHECKPOINT_FILES = ("optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json")
#: the file that marks a saved sentence-transformers model (a plain transformers one: config.json)
SENTENCE_MODEL_FILE = "modules.json"
#: checkpoints kept to resume from after a kill, a requeue or a retry (the trainer's save_total_limit):
#: two, so a newest one cut short by a kill still leaves a complete one
CHECKPOINTS_KEPT = 2


def training_rows(frame: pd.DataFrame, kind: str, max_samples: int | None, seed: int) -> pd.DataFrame:
    """The training columns of ``kind``, subsampled by seed to at most ``max_samples`` rows."""
    frame = frame[list(KIND_COLUMNS[kind])]
    if max_samples is not None and len(frame) > max_samples:
        frame = frame.sample(n=max_samples, random_state=seed).sort_index()
    return frame.reset_index(drop=True)


#: what a ``train`` section's speed settings default to where it has none (the ELECTRA track's)
SPEED_DEFAULTS = {"attention": "sdpa", "tf32": True, "optimizer": "auto", "compile": False, "dataloader_workers": 0}


def speed_setting(train: dict, key: str):
    return train.get(key, SPEED_DEFAULTS[key])


def optimizer_name(choice: str, cuda: bool) -> str:
    """``auto``: AdamW with fused CUDA kernels on a GPU (one kernel for all parameters instead of
    several per tensor); elsewhere torch's plain AdamW, so CPU results stay what they were."""
    if choice == "auto":
        return "adamw_torch_fused" if cuda else "adamw_torch"
    return choice


def tf32_available() -> bool:
    """TF32 matmuls need an Ampere or newer GPU; the trainer refuses ``tf32=True`` anywhere else."""
    import torch

    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8


def tf32_argument(setting: bool) -> bool | None:
    """The trainer's ``tf32`` for the config's: ``False`` turns TF32 off outright (transformers'
    ``None`` would let ``torch_compile`` turn it on: ``TrainingArguments.__post_init__`` enables it for
    a compiled fp32 run), ``True`` asks for it where the GPU has it; elsewhere ``None`` (the trainer
    refuses ``True`` there, and there is nothing to turn on)."""
    if not setting:
        return False
    return True if tf32_available() else None


def training_arguments(train: dict, output_dir: Path, arguments_class=None, **overrides):
    """The trainer's arguments from a ``train`` config section; ``overrides`` are further arguments;
    ``arguments_class``: another model family's arguments (default sentence-transformers').

    On a GPU the section's speed settings apply: ``precision`` (bf16 / fp16 autocast), ``tf32``
    for the fp32 matmuls that remain, the fused AdamW (``optimizer: auto``), ``compile``
    (torch.compile) and ``dataloader_workers`` (tokenising batches beside the GPU, in pinned
    memory). The attention implementation is set on the model (:func:`trimbench.models.use_attention`).
    """
    import torch
    from sentence_transformers import SentenceTransformerTrainingArguments

    cuda = torch.cuda.is_available()
    workers = speed_setting(train, "dataloader_workers")
    arguments_class = arguments_class or SentenceTransformerTrainingArguments
    if "batch_sampler" in {field.name for field in dataclasses.fields(arguments_class)}:  # not plain transformers'
        overrides = {"batch_sampler": train["batch_sampler"], **overrides}
    arguments = dict(
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
        tf32=tf32_argument(speed_setting(train, "tf32")),
        optim=optimizer_name(speed_setting(train, "optimizer"), cuda),
        torch_compile=speed_setting(train, "compile"),
        gradient_checkpointing=train["gradient_checkpointing"],
        seed=train["seed"],
        data_seed=train["seed"],
        logging_steps=train["logging_steps"],
        # the trainer would otherwise log a NaN or infinite step's loss as the mean of the others
        # (a NaN model logged "train_loss: 0.0"): the logged loss must show it (finite_loss_callback)
        logging_nan_inf_filter=False,
        save_strategy="steps" if train["checkpoint_steps"] else "no",
        save_steps=max(1, train["checkpoint_steps"]),
        save_total_limit=CHECKPOINTS_KEPT,
        report_to="none",
        dataloader_num_workers=workers,
        dataloader_pin_memory=cuda,
        dataloader_persistent_workers=workers > 0,
        use_cpu=not cuda,
    )
    if train.get("devices", 1) > 1:
        # Each batch of batch_size is drawn as on one device and split over the ranks
        # (distributed.py): per device batch_size / devices, the same batches, the same steps.
        arguments["accelerator_config"] = {"split_batches": True}
    return arguments_class(**{**arguments, **overrides})


def _checkpoint_step(path: Path) -> int:
    match = re.fullmatch(r"checkpoint-(\d+)", path.name)
    return int(match.group(1)) if match else -1


def checkpoint_files(model_file: str, ranks: int) -> tuple[str, ...]:
    """What a complete checkpoint holds: with several ranks, each saves its own random state."""
    rng_states = ["rng_state.pth"] if ranks == 1 else [f"rng_state_{rank}.pth" for rank in range(ranks)]
    return (model_file, *(name for name in CHECKPOINT_FILES if name != "rng_state.pth"), *rng_states)


def checkpoint_complete(path: Path, model_file: str = SENTENCE_MODEL_FILE, ranks: int = 1) -> bool:
    """Every file of the checkpoint written (each rank's random state), and its trainer state
    readable and of its step."""
    if not all((path / name).is_file() and (path / name).stat().st_size > 0
               for name in checkpoint_files(model_file, ranks)):
        return False
    try:
        state = json.loads((path / "trainer_state.json").read_text())
    except ValueError:
        return False
    return state.get("global_step") == _checkpoint_step(path)


def resumable_checkpoint(work_dir: Path, fingerprint: str, model_file: str = SENTENCE_MODEL_FILE) -> Path | None:
    """Prepare ``work_dir`` for a run with ``fingerprint``; return the checkpoint to resume from.

    A work dir of other settings is discarded, incomplete checkpoints are removed; the newest
    complete checkpoint is returned (None: start from scratch).
    """
    stamped_work_dir(work_dir, fingerprint)
    shutil.rmtree(work_dir / "model", ignore_errors=True)  # a final save cut short
    checkpoints = sorted((work_dir / "trainer").glob("checkpoint-*"), key=_checkpoint_step)
    for checkpoint in checkpoints:
        if not checkpoint_complete(checkpoint, model_file, launch.world_size()):
            log.warning("removing incomplete checkpoint %s", checkpoint)
            shutil.rmtree(checkpoint)
    return newest_checkpoint(work_dir)


def newest_checkpoint(work_dir: Path) -> Path | None:
    """The newest checkpoint :func:`resumable_checkpoint` kept (all complete by then)."""
    checkpoints = sorted((work_dir / "trainer").glob("checkpoint-*"), key=_checkpoint_step)
    return checkpoints[-1] if checkpoints else None


def checkpoint_callback():
    from transformers import TrainerCallback

    class Checkpoints(TrainerCallback):
        """No checkpoint after the last step (the final model is saved right after it); the fault
        tests' kill point once a checkpoint is written completely."""

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step >= state.max_steps and state.global_step % args.save_steps:
                control.should_save = False

        def on_save(self, args, state, control, **kwargs):
            faults.hold("checkpoint")

    return Checkpoints()


def check_finite_loss(loss, what: str, first_step: int, last_step: int) -> None:
    """A NaN or infinite training loss is a :class:`NotFiniteError` naming ``what`` is trained and the
    steps the loss covers, never a model that finishes as results (a NaN model scored NaN everywhere,
    its rows silently missing from the tables)."""
    if loss is not None and not math.isfinite(loss):
        steps = f"step {last_step}" if first_step >= last_step else f"steps {first_step}-{last_step}"
        raise NotFiniteError(f"training {what}: the loss is {loss} over {steps} (a setting that divides by zero, "
                            "a learning rate too large, or fp16 overflow); the model is not saved")


def finite_loss_callback(what: str):
    """Checks each logged loss (the mean over the steps since the previous log) with :func:`check_finite_loss`."""
    from transformers import TrainerCallback

    class FiniteLoss(TrainerCallback):
        logged_step = 0

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                check_finite_loss(logs["loss"], what, self.logged_step + 1, state.global_step)
                self.logged_step = state.global_step

    return FiniteLoss()


def fine_tune(model, frame, loss, train: dict, output_dir: Path, fingerprint: str,
              trainer_class=None, arguments_class=None, callbacks=(), argument_overrides=None) -> dict:
    """Train ``model`` on ``frame`` (a table, or a ``datasets.Dataset``) with ``loss`` and save it
    to ``output_dir``.

    Checkpoints go to ``<output_dir>.tmp/trainer/`` every ``train["checkpoint_steps"]`` steps; a
    re-run after a kill, a requeue or a retry resumes from the newest complete one when its
    ``fingerprint`` (:func:`trimbench.jobs.fingerprint.run_fingerprint`) is the same. The model is
    written to a temporary sibling and renamed, so a killed job never leaves a directory that looks
    finished. Returns the trainer's final log entry. ``trainer_class`` / ``arguments_class``: another model family's
    trainer (the sparse encoders'); ``callbacks``: added to the checkpoint callback;
    ``argument_overrides``: a track's own trainer arguments (SPLADE's optimiser epsilon, drop_last).
    A dataset with a transform (rows drawn per epoch, :class:`trimbench.pools.EpochGroups`)
    gets dataloader workers started afresh each epoch, so they see the epoch its callback sets.
    """
    import datasets
    from sentence_transformers import SentenceTransformerTrainer
    from transformers import set_seed

    distributed.init_process_group()
    set_seed(train["seed"])
    output_dir = Path(output_dir)
    work_dir = output_dir.with_name(output_dir.name + ".tmp")
    # Rank 0 alone tidies the work dir; the other ranks then read what it left.
    checkpoint = resumable_checkpoint(work_dir, fingerprint) if launch.is_main_process() else None
    distributed.barrier()
    if not launch.is_main_process():
        checkpoint = newest_checkpoint(work_dir)
    drawn_per_epoch = isinstance(frame, datasets.Dataset) and frame.format["type"] == "custom"
    trainer = (trainer_class or SentenceTransformerTrainer)(
        model=model,
        args=training_arguments(train, work_dir / "trainer", arguments_class,
                                **{**({"dataloader_persistent_workers": False} if drawn_per_epoch else {}),
                                   **(argument_overrides or {})}),
        train_dataset=frame if isinstance(frame, datasets.Dataset) else datasets.Dataset.from_pandas(
            frame, preserve_index=False),
        loss=loss,
        callbacks=[checkpoint_callback(), finite_loss_callback(str(output_dir)), *callbacks],
    )
    if checkpoint is not None:
        log.info("resuming from checkpoint %s (step %d)", checkpoint, _checkpoint_step(checkpoint))
    result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    log.info("training finished: %s", result.metrics)
    # the steps after the last log count in the run's mean loss only
    check_finite_loss(result.metrics.get("train_loss"), str(output_dir), 1, result.global_step)
    if launch.is_main_process():  # the ranks' models are the same: one writes it
        model.save(str(work_dir / "model"))
        shutil.rmtree(output_dir, ignore_errors=True)
        (work_dir / "model").rename(output_dir)
        shutil.rmtree(work_dir, ignore_errors=True)
    distributed.barrier()
    return result.metrics
