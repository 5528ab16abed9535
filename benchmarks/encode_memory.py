"""Resident memory of corpus encoding is flat in the corpus size (figure 6).

Each measurement runs in its own process (peak RSS is per process): it loads the model, then
encodes N passages through the workflow's path, ``trimbench.dense.search.encode_to_memmap`` (chunks
of ``--chunk`` passages, every grid layer pooled in one pass, written to an fp16 ``.npy``
memory map). For contrast, both sizes are also encoded into one array in memory
(``encode_layers`` without chunks, float32), which is what the chunks avoid. Prints the peak RSS
after loading and after encoding, and each path's growth per 1000 passages (the allocator's own
growth, a few MB, is in both).

    python benchmarks/encode_memory.py                              # 2000 and 8000 passages
    python benchmarks/encode_memory.py --sizes 10000 100000 --chunk 5000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import _shared


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure(args) -> None:
    """The child: encode ``args.passages`` passages one way and print its peak RSS as JSON."""
    from trimbench.dense.search import encode_to_memmap
    from trimbench.encoding import encode_layers

    model = _shared.load_model(args.model, device="cpu", max_seq_length=args.max_seq_length)
    texts = _shared.lee_passages(args.passages)
    layers = list(range(1, len(model[0].auto_model.encoder.layer) + 1))
    dim = model.get_embedding_dimension()
    encode_layers(model, texts[:args.batch_size], layers, batch_size=args.batch_size, show_progress=False)
    loaded = peak_rss_mb()  # after a first batch: the model's working memory is in
    with tempfile.TemporaryDirectory() as tmp:
        if args.mode == "memmap":
            encode_to_memmap(model, texts, layers, dim, Path(tmp) / "docs.npy", args.batch_size, args.chunk)
        else:
            encode_layers(model, texts, layers, batch_size=args.batch_size, show_progress=False)
    print(json.dumps({"loaded": loaded, "peak": peak_rss_mb(), "layers": len(layers), "dim": dim}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=_shared.MODEL_CHOICES, default="minilm")
    parser.add_argument("--sizes", type=int, nargs=2, default=[2000, 8000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--chunk", type=int, default=1000, help="passages per chunk (the rule's encode_chunk)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-seq-length", type=int, default=16)
    parser.add_argument("--passages", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["memmap", "in-memory"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.passages is not None:
        measure(args)
        return

    def child(passages: int, mode: str) -> dict:
        command = [sys.executable, __file__, "--model", args.model, "--chunk", str(args.chunk), "--batch-size",
                   str(args.batch_size), "--max-seq-length", str(args.max_seq_length), "--passages", str(passages),
                   "--mode", mode]
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        return json.loads(output.strip().splitlines()[-1])

    small, large = args.sizes
    paths = {"memmap": "chunks + fp16 memmap", "in-memory": "one float32 array"}
    runs = {(mode, n): child(n, mode) for mode in paths for n in (small, large)}
    shape = runs["memmap", small]
    print(f"model {args.model}: {shape['layers']} layers x {shape['dim']} dims kept per passage; chunks of "
          f"{args.chunk}, batch {args.batch_size}, max_seq_length {args.max_seq_length}")
    print(f"{'passages':>9} {'path':<22} {'RSS loaded MB':>14} {'peak RSS MB':>12} {'encoding adds MB':>17}")
    for (mode, passages), run in runs.items():
        print(f"{passages:>9} {paths[mode]:<22} {run['loaded']:14.0f} {run['peak']:12.0f} "
              f"{run['peak'] - run['loaded']:17.0f}")
    held = shape["layers"] * shape["dim"] * 4 / 1024**2 * 1000
    for mode, label in paths.items():
        growth = (runs[mode, large]["peak"] - runs[mode, small]["peak"]) / (large - small) * 1000
        print(f"peak RSS growth, {label}: {growth:+.2f} MB per 1000 passages")
    print(f"(the float32 rows themselves are {held:.1f} MB per 1000 passages)")

if __name__ == "__main__":
    main()
