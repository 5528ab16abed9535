"""Training throughput on several devices (``train.devices``): samples/s of the same global batch on
1 and on N ranks.

Each run is what rule train_model runs on that many devices: the embedded default's ``train``
settings with this benchmark's batch and length and ``devices`` set, MNRL from
``trimbench.dense.losses.build_sts_loss`` (gathered across ranks), ``trimbench.training.fine_tune``
(``split_batches``: each rank takes batch / N of every batch). One device is a plain process; N
devices are N ranks under ``torchrun --standalone``, as ``trimbench.jobs.launch.launched`` starts
them. On CPU the ranks share the machine's cores (each gets cores / N threads, gloo between them),
so the scaling is not a GPU node's; on a GPU node each rank has its own GPU (NCCL):

    python benchmarks/ddp_throughput.py                                   # CPU: 1 and 2 ranks
    python benchmarks/ddp_throughput.py --model bert-base --devices 1 2 4 8 --samples 16384 \\
        --batch-size 128 --max-seq-length 128                             # a GPU node
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _shared

REPO = Path(__file__).resolve().parent.parent


def rank_run(args) -> None:
    """One rank (or the one process) of a run: train, and rank 0 writes the seconds it took."""
    import pandas as pd
    import torch

    from trimbench.config import prepare as tb_config
    from trimbench.data.lee import lee_ict
    from trimbench.dense.losses import build_sts_loss
    from trimbench.jobs import launch
    from trimbench.training import fine_tune

    devices = launch.world_size()
    train = tb_config.load_file(REPO / "config.yaml", workdir=REPO)["experiments"]["sts-v1"]["train"]
    train = {**train, "batch_size": args.batch_size, "max_seq_length": args.max_seq_length, "max_samples": None,
             "epochs": 1, "logging_steps": 10_000, "checkpoint_steps": 0, "devices": devices,
             "precision": "bf16" if torch.cuda.is_available() else "fp32"}
    pairs = lee_ict("train", 0.2, 10_000, 42)[["anchor", "positive"]]
    frame = pd.concat([pairs] * -(-args.samples // len(pairs)), ignore_index=True).head(args.samples)
    model = _shared.load_model(args.model, max_seq_length=args.max_seq_length)
    loss = build_sts_loss(model, "full", train, [model.get_embedding_dimension()], "seed", "mnrl")
    start = time.perf_counter()
    fine_tune(model, frame, loss, train, Path(args.out) / "model", "benchmark")
    seconds = time.perf_counter() - start
    if launch.is_main_process():
        (Path(args.out) / "seconds.json").write_text(json.dumps(seconds))


def measure(args, devices: int, out: Path) -> float:
    threads = args.threads_per_rank or max(1, (os.cpu_count() or 1) // devices)
    command = [__file__, "--rank-run", "--out", str(out), "--model", args.model, "--samples", str(args.samples),
               "--batch-size", str(args.batch_size), "--max-seq-length", str(args.max_seq_length)]
    launcher = [sys.executable] if devices == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={devices}"]
    subprocess.run([*launcher, *command], check=True, capture_output=True,
                   env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    return json.loads((out / "seconds.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=_shared.MODEL_CHOICES, default="minilm")
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--samples", type=int, default=256, help="training pairs (one epoch)")
    parser.add_argument("--batch-size", type=int, default=32, help="the global batch, split over the devices")
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--threads-per-rank", type=int, default=None,
                        help="CPU threads of each rank (default: the cores / devices)")
    parser.add_argument("--rank-run", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_run:
        rank_run(args)
        return
    import torch

    threads = args.threads_per_rank or "cores / devices"
    where = "GPU" if torch.cuda.is_available() else f"CPU ({os.cpu_count()} cores, {threads} threads a rank, gloo)"
    print(f"model {args.model} on {where}; {args.samples} pairs, global batch {args.batch_size}, "
          f"max_seq_length {args.max_seq_length}")
    print(f"{'devices':>7} {'seconds':>8} {'samples/s':>10} {'vs 1':>6}")
    first = None
    with tempfile.TemporaryDirectory(prefix="trimbench-ddp-bench-") as tmp:
        for devices in args.devices:
            seconds = measure(args, devices, Path(tmp) / str(devices))
            first = first or seconds
            print(f"{devices:>7} {seconds:8.2f} {args.samples / seconds:10.1f} {first / seconds:6.2f}")


if __name__ == "__main__":
    main()
