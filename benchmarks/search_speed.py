"""Exact top-k search: faiss against brute force on the same vectors (figure 7).

faiss is the workflow's path (``trimbench.search.search``: an ``IndexFlatIP``, on the GPU when
faiss has one); brute force is one matrix product and a top-k, with numpy (argpartition) and with
torch (``topk``, also on the GPU when there is one). The vectors are unit-normalised random
Gaussians, seeded; every method must return the same top-k sets (checked), and the times are
the best of ``--repeats``, measured side by side.

    python benchmarks/search_speed.py                                  # 100k docs x 384 dims
    python benchmarks/search_speed.py --docs 1000000 --dim 768 --queries 6980
"""

from __future__ import annotations

import argparse

import _shared
import numpy as np


def numpy_topk(docs: np.ndarray, queries: np.ndarray, k: int, block: int = 1024):
    """Scores a block of queries at a time (bounded memory), then argpartition + sort of the top k."""
    ids = np.empty((len(queries), k), dtype=np.int64)
    scores = np.empty((len(queries), k), dtype=np.float32)
    for start in range(0, len(queries), block):
        block_scores = queries[start:start + block] @ docs.T
        top = np.argpartition(-block_scores, k - 1, axis=1)[:, :k]
        top_scores = np.take_along_axis(block_scores, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        ids[start:start + block] = np.take_along_axis(top, order, axis=1)
        scores[start:start + block] = np.take_along_axis(top_scores, order, axis=1)
    return scores, ids


def torch_topk(docs, queries, k: int, block: int = 1024):
    import torch

    out = [torch.topk(queries[start:start + block] @ docs.T, k, dim=1) for start in range(0, len(queries), block)]
    if docs.is_cuda:
        torch.cuda.synchronize()
    return torch.cat([o.values for o in out]), torch.cat([o.indices for o in out])


def same_sets(a: np.ndarray, b: np.ndarray) -> float:
    """Share of queries whose top-k id sets agree (ties at the k-th score may swap a document)."""
    return float(np.mean([set(x) == set(y) for x, y in zip(a, b, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import faiss
    import torch

    from trimbench.search import search

    rng = np.random.default_rng(0)
    docs = rng.standard_normal((args.docs, args.dim), dtype=np.float32)
    queries = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    faiss_gpu = hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    results, times = {}, {}

    def timed(name, run):
        results[name] = run()
        times[name] = _shared.best_time(run, args.repeats)

    timed("faiss " + ("GPU" if faiss_gpu else "CPU") + " IndexFlatIP", lambda: search(docs, queries, args.k)[1])
    timed("numpy matmul + argpartition", lambda: numpy_topk(docs, queries, args.k)[1])
    docs_t, queries_t = torch.from_numpy(docs), torch.from_numpy(queries)
    timed("torch matmul + topk (cpu)", lambda: torch_topk(docs_t, queries_t, args.k)[1].numpy())
    if torch.cuda.is_available():
        docs_g, queries_g = docs_t.cuda(), queries_t.cuda()
        timed("torch matmul + topk (cuda)", lambda: torch_topk(docs_g, queries_g, args.k)[1].cpu().numpy())

    reference = next(iter(results))
    print(f"{args.docs} docs x {args.dim} dims, {args.queries} queries, top {args.k}; {torch.get_num_threads()} "
          f"threads; faiss {faiss.__version__} ({'with' if faiss_gpu else 'no'} GPU); best of {args.repeats}")
    print(f"{'method':<30} {'seconds':>8} {'queries/s':>10} {'time / faiss':>13} {'same top-k':>11}")
    for name, seconds in times.items():
        print(f"{name:<30} {seconds:8.3f} {args.queries / seconds:10.0f} {seconds / times[reference]:13.2f} "
              f"{same_sets(results[name], results[reference]):11.1%}")


if __name__ == "__main__":
    main()
