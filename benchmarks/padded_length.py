"""How far the cost plan's padded length from a contract's five figures is from the exact one.

A batch is padded to its longest text (``trimbench.cost.lengths.padded_length``): exact from a
measured sample, approximated from the figures a contract records (mean, p50, p90, p99, max,
untruncated), clipped at the job's maximum length. For each text column whose figures the contracts
record, this measures the whole file again (the file its source names, under ``--data``), then
prints the exact expected padded length (the file's lengths truncated at each maximum length, a
batch of distinct texts) against the contract's approximation, per batch size, and the relative
error. Texts as the plan counts them: all-MiniLM-L6-v2's WordPiece, special tokens included.

    python benchmarks/padded_length.py                                     # ../shared/data
    python benchmarks/padded_length.py --data /path/to/data --batches 1 8 32 128
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main() -> None:
    from trimbench.cost import lengths as tl

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--max-lengths", type=int, nargs="+", default=[32, 64, 128, 256, 512])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16, 64])
    args = parser.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"no data folder {args.data} (the files the contracts' lengths were measured on)")
    tokenizer = tl.load_tokenizer(tl.proxy_tokenizer_folder())
    errors = []
    print("column | max_length | " + " | ".join(f"batch {b}: exact / contract (error)" for b in args.batches))
    for which, figures, path, column in tl.recorded_figures(args.data):
        if path is None or not path.is_file():
            print(f"{which}: its file is not under {args.data}")
            continue
        measured = np.array(tl.measure_lengths(tl.read_texts(path, column), tokenizer, None).sample)
        recorded = tl.Lengths(*(figures[key] for key in ("mean", "p50", "p90", "p99", "max")), f"contract {which}")
        for cap in args.max_lengths:
            if cap >= 2 * measured.max():
                continue  # the same figures as the next smaller cap above every text
            exact = tl.from_sample(np.minimum(measured, cap), f"measured on {path}")
            approx = tl.truncated(recorded, cap)
            cells = []
            for batch in args.batches:
                want, got = tl.padded_length(exact, batch), tl.padded_length(approx, batch)
                errors.append((got - want) / want)
                cells.append(f"{want:.1f} / {got:.1f} ({100 * errors[-1]:+.1f} %)")
            print(f"{which} | {cap} | " + " | ".join(cells))
    spread = np.array(errors) * 100
    print(f"contract / exact - 1 over {len(errors)} cells: median {np.median(spread):+.1f} %, "
          f"min {spread.min():+.1f} %, max {spread.max():+.1f} %, mean |error| {np.abs(spread).mean():.1f} %")


if __name__ == "__main__":
    main()
