"""Training throughput: the workflow's training path against a plain sentence-transformers script (figure 5).

Both train the same model with the same loss (MultipleNegativesRankingLoss, scale 20), batch,
sequence length, precision and inverse-cloze Lee pairs for one epoch, from a freshly loaded
model, and save it. "ours" is what rule train_model runs: the embedded default's ``train``
settings (schema defaults filled) with this benchmark's batch, length and precision, the loss from
``trimbench.dense.losses.build_sts_loss``, ``trimbench.training.fine_tune`` (checkpoints, fingerprint,
atomic save; on a GPU also TF32, fused AdamW, SDPA attention). "plain" is the trainer with its
defaults, as a user's script would call it. Rounds alternate ours / plain; the best of each counts.
Prints samples/s, tokens/s (non-padding tokens), the ratio, and on a GPU the model FLOPs
utilisation (MFU: 6·N + 12·L·d·T FLOPs per trained token against the device's dense peak).

    python benchmarks/train_throughput.py                                   # CPU: MiniLM, fp32
    python benchmarks/train_throughput.py --model bert-base --samples 8192 --batch-size 64 \\
        --max-seq-length 128 --precision bf16                               # a GPU: bert-base, bf16
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _shared

REPO = Path(__file__).resolve().parent.parent
#: dense bf16/fp16 tensor-core peaks (TFLOP/s, no sparsity) from the vendors' data sheets; the
#: longest matching name wins (e.g. "H100 PCIe" before "H100")
GPU_PEAK_TFLOPS = {"H100": 989.4, "H100 PCIe": 756.0, "H200": 989.4, "GH200": 989.4, "A100": 312.0, "L40S": 362.1,
                   "L4": 121.0, "A10G": 70.0, "A10": 125.0, "V100": 125.0, "RTX 4090": 165.2}


def device_peak_tflops(device_name: str) -> float | None:
    matches = [name for name in GPU_PEAK_TFLOPS if name in device_name]
    return GPU_PEAK_TFLOPS[max(matches, key=len)] if matches else None


def flops_per_token(model, mean_tokens: float) -> float:
    """Training FLOPs per token (PaLM, appendix B): 6 per non-embedding parameter (forward 2,
    backward 4) plus the attention scores and values, 12·L·d·T."""
    auto_model = model[0].auto_model
    config = auto_model.config
    embedding = sum(p.numel() for p in auto_model.embeddings.parameters())
    non_embedding = sum(p.numel() for p in auto_model.parameters()) - embedding
    return 6 * non_embedding + 12 * config.num_hidden_layers * config.hidden_size * mean_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=_shared.MODEL_CHOICES, default="minilm")
    parser.add_argument("--samples", type=int, default=64, help="training pairs (one epoch)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default=None,
                        help="default: bf16 on a GPU, fp32 on a CPU")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's peak, for MFU off the table")
    args = parser.parse_args()

    import datasets
    import pandas as pd
    import torch
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from trimbench.config import prepare as tb_config
    from trimbench.data.lee import lee_ict
    from trimbench.dense.losses import build_sts_loss
    from trimbench.jobs.fingerprint import run_fingerprint
    from trimbench.models import use_attention
    from trimbench.training import fine_tune

    cuda = torch.cuda.is_available()
    precision = args.precision or ("bf16" if cuda else "fp32")
    train = tb_config.load_file(REPO / "config.yaml", workdir=REPO)["experiments"]["sts-v1"]["train"]
    train = {**train, "batch_size": args.batch_size, "max_seq_length": args.max_seq_length, "precision": precision,
             "max_samples": None, "epochs": 1, "logging_steps": 10_000}
    pairs = lee_ict("train", 0.2, 10_000, 42)[["anchor", "positive"]]
    frame = pd.concat([pairs] * -(-args.samples // len(pairs)), ignore_index=True).head(args.samples)

    def load():
        return _shared.load_model(args.model, max_seq_length=args.max_seq_length)

    def ours(out: Path) -> None:
        model = use_attention(load(), train["attention"])
        loss = build_sts_loss(model, "full", train, [model.get_embedding_dimension()], "seed", "mnrl")
        start = time.perf_counter()
        fine_tune(model, frame, loss, train, out, run_fingerprint(train, []))
        return time.perf_counter() - start

    def plain(out: Path) -> None:
        model = load()
        start = time.perf_counter()
        trainer_args = SentenceTransformerTrainingArguments(
            output_dir=str(out) + "-trainer", num_train_epochs=1, per_device_train_batch_size=args.batch_size,
            learning_rate=train["lr"], warmup_steps=train["warmup_steps"], weight_decay=train["weight_decay"],
            fp16=precision == "fp16", bf16=precision == "bf16", seed=train["seed"], save_strategy="no",
            report_to="none", logging_steps=10_000, use_cpu=not cuda)
        trainer = SentenceTransformerTrainer(model=model, args=trainer_args,
                                             train_dataset=datasets.Dataset.from_pandas(frame, preserve_index=False),
                                             loss=MultipleNegativesRankingLoss(model, scale=train["scale"]))
        trainer.train()
        model.save(str(out))
        return time.perf_counter() - start

    best = {"ours": float("inf"), "plain": float("inf")}
    with tempfile.TemporaryDirectory(prefix="trimbench-train-bench-") as tmp:
        for round_ in range(args.rounds):
            for name, run in (("ours", ours), ("plain", plain)):
                best[name] = min(best[name], run(Path(tmp) / f"{name}-{round_}"))

    model = load()
    tokenizer = model.tokenizer
    lengths = [len(ids) for column in ("anchor", "positive")
               for ids in tokenizer(list(frame[column]), truncation=True, max_length=args.max_seq_length)["input_ids"]]
    tokens, mean_tokens = sum(lengths), sum(lengths) / len(lengths)
    device = torch.cuda.get_device_name() if cuda else f"cpu ({torch.get_num_threads()} threads)"
    peak = args.peak_tflops or (device_peak_tflops(device) if cuda and precision != "fp32" else None)
    per_token = flops_per_token(model, mean_tokens)
    print(f"model {args.model} on {device}, {precision}; {len(frame)} pairs, batch {args.batch_size}, "
          f"max_seq_length {args.max_seq_length} (mean {mean_tokens:.1f} tokens a text); best of {args.rounds} rounds")
    print(f"{'path':<6} {'seconds':>8} {'samples/s':>10} {'tokens/s':>10} {'MFU':>7}")
    for name, seconds in best.items():
        mfu = f"{tokens / seconds * per_token / (peak * 1e12):7.1%}" if peak else "    n/a"
        print(f"{name:<6} {seconds:8.2f} {len(frame) / seconds:10.1f} {tokens / seconds:10.0f} {mfu}")
    print(f"ours / plain samples/s: {best['plain'] / best['ours']:.3f} (goal >= 0.95)")
    if not peak:
        print("MFU: no peak known for this device and precision (pass --peak-tflops)")


if __name__ == "__main__":
    main()
