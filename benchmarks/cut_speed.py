"""Encoding with a model physically cut at layer k against the full model (figure 2).

The same texts, the same batch size, ``SentenceTransformer.encode`` end to end (tokenising and
pooling included); each depth is timed ``--repeats`` times, round robin so that a burst of load
from other processes hits every depth alike, and the fastest run counts. Prints, for each k, the
time relative to the full model beside the budget k/L + 5 %.

    python benchmarks/cut_speed.py                       # all-MiniLM-L6-v2, 6 depths
    python benchmarks/cut_speed.py --model bert-base --texts 512 --max-seq-length 256
"""

from __future__ import annotations

import argparse
import copy
import time

import _shared

from trimbench.models import cut_layers, depth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=_shared.MODEL_CHOICES, default="minilm")
    parser.add_argument("--texts", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default=None, help="default: cuda when there is one, else cpu")
    parser.add_argument("--margin", type=float, default=0.05, help="the budget is k/L + margin")
    args = parser.parse_args()

    import torch

    full = _shared.load_model(args.model, device=args.device, max_seq_length=args.max_seq_length)
    layers = depth(full)
    models = {k: cut_layers(copy.deepcopy(full), k) for k in range(1, layers)} | {layers: full}
    # Long enough to reach max_seq_length: the attention cost is the same at every depth.
    passages = _shared.lee_passages(args.texts * 4)
    texts = [" ".join(passages[i * 4:(i + 1) * 4]) for i in range(args.texts)]

    def encode(model):
        model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
        if model.device.type == "cuda":
            torch.cuda.synchronize()

    for model in models.values():
        encode(model)  # warm-up: allocator, kernels
    times = {k: float("inf") for k in models}
    for _ in range(args.repeats):
        for k, model in models.items():
            start = time.perf_counter()
            encode(model)
            times[k] = min(times[k], time.perf_counter() - start)

    print(f"model {args.model} ({layers} layers) on {full.device}, {torch.get_num_threads()} threads; {len(texts)} "
          f"texts, batch {args.batch_size}, max_seq_length {args.max_seq_length}; best of {args.repeats}")
    print(f"{'k':>3} {'seconds':>8} {'time / full':>12} {'budget k/L+' + format(args.margin, '.0%'):>14} {'':>4}")
    failed = []
    for k in sorted(models):
        ratio, budget = times[k] / times[layers], k / layers + args.margin
        ok = ratio <= budget
        failed += [] if ok else [k]
        print(f"{k:>3} {times[k]:8.3f} {ratio:12.3f} {budget:14.3f} {'ok' if ok else 'OVER':>4}")
    print("every depth within its budget" if not failed else f"over budget at k = {failed}")


if __name__ == "__main__":
    main()
