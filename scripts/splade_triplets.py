"""Rule splade_triplets: the training pools of one SPLADE method (each query's positives and
negatives, as positions into the training corpus; train_splade rotates one triplet a step out of them).

input:  data       the training split's BEIR-style folder (corpus, queries, qrels parquet)
        negatives  mined negatives (JSON lines) or the hub's hard-negatives file (jsonl.gz)
        ce_scores  convert_ce_scores' table (parquet: qid, pid, score), with the hub's file
output: triplets  parquet, a row per training query: its positives and negatives as positions into the corpus
params: hard_negatives, seed, max_samples
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    import tempfile

    from trimbench.data.io import RetrievalSplit
    from trimbench.negatives import read_rows
    from trimbench.pools import mined_pool_frame
    from trimbench.splade import triplets as hn

    p, method = job.params, job.wildcards.method
    split = RetrievalSplit.load(job.input.data)
    hard = p.hard_negatives
    if hard is None:
        frame = mined_pool_frame(split, read_rows(Path(job.input.negatives)), p.max_samples, p.seed)
    elif hard["source"] == "standin":
        with tempfile.TemporaryDirectory(prefix="hard-negatives-") as work:
            hn.standin_files(split, Path(work), p.seed)
            hn.convert_ce_scores(Path(work) / "scores.pkl.gz", Path(work) / "ce-scores.parquet")
            rows = hn.read_hard_negatives(Path(work) / "negatives.jsonl.gz")
            scores = hn.CrossEncoderScores(Path(work) / "ce-scores.parquet")
            frame = hn.hard_negative_pools(hn.numbered(split), rows, scores, method, hard, p.seed, p.max_samples)
    else:
        with reading(job.input.ce_scores):
            scores = hn.CrossEncoderScores(Path(job.input.ce_scores))
        frame = hn.hard_negative_pools(split, hn.read_hard_negatives(Path(job.input.negatives)), scores, method,
                                       hard, p.seed, p.max_samples)
    if frame.empty:
        raise ValueError(f"no training pool for {method}: no query has both a positive and a negative")
    log.info("%s: %d training queries, %.1f negatives each on average (one a step, rotated per epoch)", method,
             len(frame), frame["negatives"].map(len).mean())
    with atomic_path(job.output.triplets) as tmp:
        frame.to_parquet(tmp, index=False)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
