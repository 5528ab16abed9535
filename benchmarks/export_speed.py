"""Exported trimmed models against the full model: encode throughput (figure 3).

Each cell (k, d) is written by ``trimbench.export.export_trimmed`` (what rule export_model runs)
and loaded back with plain ``SentenceTransformer(path)``; the full model and every export encode
the same texts with the same batch, round robin, best of ``--repeats``. Prints texts/s, the speed-up
over the full model, the bytes an embedding takes, and the largest difference from the full
model's grid cell (``trimbench.encoding``; it must stay below 1e-5).

    python benchmarks/export_speed.py                              # MiniLM: (2, 128), (4, 256), (6, 384)
    python benchmarks/export_speed.py --model bert-base --cells 3:128 6:256 12:768
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _shared
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=_shared.MODEL_CHOICES, default="minilm")
    parser.add_argument("--cells", nargs="+", default=["2:128", "4:256", "6:384"], metavar="K:D")
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from trimbench.encoding import encode_layers
    from trimbench.export import export_trimmed

    cells = [tuple(map(int, cell.split(":"))) for cell in args.cells]
    texts = _shared.lee_passages(args.texts)
    full = _shared.load_model(args.model, device="cpu", max_seq_length=args.max_seq_length)
    source = Path(full[0].auto_model.name_or_path)
    grid = encode_layers(full, texts, sorted({k for k, _ in cells}), batch_size=args.batch_size, show_progress=False)
    slot = {k: i for i, k in enumerate(sorted({k for k, _ in cells}))}
    with tempfile.TemporaryDirectory(prefix="trimbench-export-bench-") as tmp:
        models = {"full": full}
        for k, d in cells:
            out = export_trimmed(source, k, d, Path(tmp) / f"L{k}_d{d}", max_seq_length=args.max_seq_length)
            models[f"L{k}_d{d}"] = SentenceTransformer(str(out), device="cpu")
        worst = {name: float(np.abs(models[name].encode(texts, batch_size=args.batch_size) -
                                    grid[slot[k], :, :d]).max())
                 for (k, d), name in zip(cells, list(models)[1:], strict=True)}
        times = {name: float("inf") for name in models}
        for _ in range(args.repeats):
            for name, model in models.items():
                start = time.perf_counter()
                model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
                times[name] = min(times[name], time.perf_counter() - start)

    print(f"model {args.model}, {len(texts)} texts, batch {args.batch_size}, max_seq_length {args.max_seq_length}, "
          f"{torch.get_num_threads()} threads; best of {args.repeats}")
    print(f"{'model':<10} {'texts/s':>8} {'speed-up':>9} {'bytes/emb (fp32)':>17} {'max |diff| to grid cell':>24}")
    for name, seconds in times.items():
        dim = models[name].get_embedding_dimension()
        diff = f"{worst[name]:.1e}" if name in worst else "-"
        print(f"{name:<10} {len(texts) / seconds:8.1f} {times['full'] / seconds:8.2f}x {dim * 4:17d} {diff:>24}")


if __name__ == "__main__":
    main()
