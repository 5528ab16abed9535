"""Helper of the multi-device tests (not a test): a few steps of one loss family through
``trimbench.training.fine_tune`` on fixed rows of a tiny model, on one process or as each rank of
``torchrun --nproc_per_node N``; rank 0 writes the logged losses and the trained parameters.

    python tests/ddp_training.py --case mnrl --model DIR --out DIR [--built-for-devices N] [--interrupt-after K]

``--built-for-devices 1`` under torchrun builds the loss as for one device (no gathering): what
the tests show to differ. ``--interrupt-after K`` stops every rank once step K's checkpoint is
saved; the next run on the same ``--out`` resumes from it. Dropout is off: its masks are drawn
per process, so with it only the distribution of the training would be the same, not its numbers.
"""

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trimbench import distributed  # noqa: E402
from trimbench.jobs import launch  # noqa: E402

WORDS = ("falcon river copper engine violin garden bridge lantern meadow harbor glacier orchard canyon "
         "pepper marble ribbon thunder saddle candle quartz").split()
GROUP_SETTINGS = {"q_max_length": 16, "p_max_length": 32, "scale": 1.0, "score_align": True,
                  "compare_to_last_layer": False, "sub_layer_full_dim": True, "passage_to_last_layer": False,
                  "kl_temperature": 1.0}
#: every AnglE term on (the defaults weigh CoSENT 0), ESE at a width below the tiny model's 32
ESE_SETTINGS = {"angle": {"cosine_w": 1.0}, "ese": {"compression_size": 16, "kl_temperature": 1.0, "pca": True}}
BATCH = 8
STEPS = 3


def train_settings(devices: int) -> dict:
    return {"epochs": 1, "max_steps": STEPS, "batch_size": BATCH, "gradient_accumulation": 1, "lr": 1.0,
            "warmup_steps": 0, "weight_decay": 0.0, "precision": "fp32", "gradient_checkpointing": False,
            "batch_sampler": "batch_sampler", "seed": 7, "logging_steps": 1, "checkpoint_steps": 0,
            "devices": devices, "scale": 20.0, "n_dims_per_step": -1, "kl_temperature": 0.3, "kl_div_weight": 1.0,
            "adam_epsilon": 1e-6, "drop_last": False,
            # Plain SGD: the update is the gradient itself (AdamW's first steps are ~lr·sign(g), which
            # hides how far two gradients differ)
            "optimizer": "sgd"}


def rows(count: int) -> dict[str, list[str]]:
    draw = random.Random(0)

    def text() -> str:
        return " ".join(draw.sample(WORDS, 4))

    return {"query": [text() for _ in range(count)], "positive": [text() for _ in range(count)],
            "negative": [text() for _ in range(count)]}


def without_dropout(model):
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def parameters(model) -> dict:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


class Interrupted(RuntimeError):
    pass


def interruption(after_step: int):
    """Every rank stops once the checkpoint of ``after_step`` is saved by all of them (a kill then)."""
    from transformers import TrainerCallback

    class Interrupt(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == after_step:
                distributed.barrier()
                raise Interrupted(f"interrupted after the checkpoint of step {after_step}")

    return Interrupt()


def train(case: str, model_dir: str, out: Path, built_for: int, interrupt_after: int | None = None) -> None:
    import datasets
    import torch
    from transformers import TrainerCallback

    from trimbench.training import fine_tune

    train = train_settings(built_for)
    if interrupt_after is not None or (out / "model.tmp").is_dir():  # a run to interrupt, or its resumption
        train["checkpoint_steps"] = 1
    if interrupt_after is not None:
        callbacks_first = [interruption(interrupt_after)]
    else:
        callbacks_first = []
    frame = datasets.Dataset.from_dict(rows(BATCH * STEPS))
    losses = []

    class Losses(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                losses.append(logs["loss"])

    family = {}
    if case == "splade":
        from sentence_transformers import SparseEncoderTrainer, SparseEncoderTrainingArguments

        from trimbench.splade.model import load_splade_model, regulariser_schedule, seed_optimisation, splade_loss

        torch.manual_seed(0)
        model = without_dropout(load_splade_model(model_dir, max_seq_length=32, device="cpu"))
        loss = splade_loss(model, "splade_max", 0.05, 0.03, "seed", built_for)
        family = dict(trainer_class=SparseEncoderTrainer, arguments_class=SparseEncoderTrainingArguments,
                      argument_overrides=seed_optimisation(train, "splade_max"))
        callbacks = [regulariser_schedule(loss, "seed")]
    else:
        from trimbench.models import load_for_training

        model = without_dropout(load_for_training(model_dir, "mean", 32, 0, "sdpa", None))
        callbacks = []
        if case == "group":
            from trimbench.dense.retrieval_loss import GroupedContrastiveLoss

            loss = GroupedContrastiveLoss(model, "2dmse", [16, 8], GROUP_SETTINGS)
        elif case == "ese":  # AnglE (in-batch, CoSENT and angle terms) in ESE's 2D training, PCA targets
            from trimbench.dense.losses import build_angle_loss

            loss = build_angle_loss(model, "2dmse", {**train, **ESE_SETTINGS}, "seed")
        else:
            from trimbench.dense.losses import build_sts_loss

            loss = build_sts_loss(model, "full" if case == "mnrl" else "2dmse", train, [16, 32], "seed")
    initial = parameters(model)
    fine_tune(model, frame, loss, train, out / "model", "test", callbacks=[*callbacks_first, *callbacks, Losses()],
              **family)
    if launch.is_main_process():
        torch.save({"initial": initial, "trained": parameters(model)}, out / "parameters.pt")
        (out / "losses.json").write_text(json.dumps(losses))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=["mnrl", "2dmse", "group", "ese", "splade"], required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--built-for-devices", type=int, default=None)
    parser.add_argument("--interrupt-after", type=int, default=None, help="stop after this step's checkpoint")
    args = parser.parse_args()
    built_for = args.built_for_devices or launch.world_size()
    train(args.case, args.model, Path(args.out), built_for, args.interrupt_after)


if __name__ == "__main__":
    main()
