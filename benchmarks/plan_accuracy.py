"""How exact the cost model of one step is (trimbench.cost.step, docs/performance.md "What a step costs").

FLOPs: the count of a bert-base forward (``BertConfig()``: 12 layers, 768 wide, 3072 feed-forward)
under FakeTensorMode against the analytic count of Kaplan et al. 2020 ("Scaling Laws for Neural
Language Models", section 2.1, table 1): 2 FLOPs per weight of the blocks' matrices per token,
N = layers x (4 d^2 + 2 d I) (embeddings are lookups, biases and norms elementwise), plus attention's
two products, QK^T and the weights times V, 2 x 2 x layers x L x d per token. The pooler (one d x d
product on each sequence's first token) is left out of the analytic count; the budget is 5 %.

Memory: the estimate of a small model's training step (BERT-mini's shape: 4 layers, 256 wide, 4
heads, 1024 feed-forward; the step trimbench.cost.step builds, batch x length tokens, AdamW) against
the same step run for real on this CPU and recorded by torch's profiler (``profile_memory=True``): the
parameters and AdamW's states alive before the step plus the highest running sum of the step's
allocations and frees. The step is run once before (AdamW creates its states in its first step). The
budget is 15 %.

    python benchmarks/plan_accuracy.py
    python benchmarks/plan_accuracy.py --lengths 64 512 --batch 16
"""

from __future__ import annotations

import argparse
import time

from trimbench.cost.architecture import Architecture
from trimbench.cost.step import Step, measure, profiled_peak_bytes

BERT_BASE = Architecture("bert", num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                         vocab_size=30522, max_position_embeddings=512, source="BertConfig() defaults")
BERT_MINI = Architecture("bert", num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024,
                         vocab_size=30522, max_position_embeddings=512,
                         source="google/bert_uncased_L-4_H-256_A-4's shape (feed-forward 4 x 256)")


def analytic_forward_flops(arch: Architecture, batch: int, length: int) -> float:
    d, layers, tokens = arch.hidden_size, arch.num_hidden_layers, batch * length
    weights = layers * (4 * d * d + 2 * d * arch.intermediate_size)
    return 2 * weights * tokens + 2 * 2 * layers * length * d * tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32, help="sequences of the bert-base forward")
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 512])
    parser.add_argument("--memory-batch", type=int, default=32, help="sequences of the small model's step")
    parser.add_argument("--memory-length", type=int, default=128)
    args = parser.parse_args()

    print(f"FLOPs of a bert-base forward, batch {args.batch} (budget 5 %)")
    print(f"{'length':>7} {'counted TFLOP':>14} {'analytic TFLOP':>15} {'difference':>11} {'count s':>8}")
    for length in args.lengths:
        started = time.perf_counter()
        counted = measure(Step(BERT_BASE, args.batch, length, train=False)).flops
        seconds = time.perf_counter() - started
        analytic = analytic_forward_flops(BERT_BASE, args.batch, length)
        print(f"{length:>7} {counted / 1e12:14.4f} {analytic / 1e12:15.4f} {counted / analytic - 1:+11.2%} "
              f"{seconds:8.1f}")

    batch, length = args.memory_batch, args.memory_length
    print(f"\npeak memory of a BERT-mini step ({BERT_MINI.num_hidden_layers} layers, {BERT_MINI.hidden_size} wide), "
          f"batch {batch} x {length} tokens: estimate vs this CPU's profiler (budget 15 %)")
    print(f"{'step':<24} {'estimate MiB':>13} {'profiled MiB':>13} {'difference':>11} {'estimate s':>11}")
    # a retrieval step's shape: a query batch, then 8 passage columns, a forward each before the one backward
    columns = dict(more_forwards=((batch // 2, length),) * 8)
    for label, step in (("training, fp32", Step(BERT_MINI, batch, length, train=True)),
                        ("training, bf16 autocast", Step(BERT_MINI, batch, length, train=True, dtype="bf16")),
                        ("inference, fp32", Step(BERT_MINI, batch, length, train=False)),
                        ("training, 1 + 8 columns", Step(BERT_MINI, batch // 2, length // 4, train=True, **columns)),
                        ("same, checkpointing", Step(BERT_MINI, batch // 2, length // 4, train=True,
                                                     gradient_checkpointing=True, **columns))):
        started = time.perf_counter()
        estimate = measure(step).peak_bytes
        seconds = time.perf_counter() - started
        profiled = profiled_peak_bytes(step)
        print(f"{label:<24} {estimate / 2**20:13.1f} {profiled / 2**20:13.1f} {estimate / profiled - 1:+11.2%} "
              f"{seconds:11.1f}")


if __name__ == "__main__":
    main()
