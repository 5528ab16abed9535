"""Rule convert_ce_scores: the cross-encoder scores file as a table (query, passage, score).

input:  scores  the hub's cross-encoder scores pickle ({qid: {pid: score}}, gzip)
output: table   a parquet table (qid int64, pid int64, score float32) sorted by (qid, pid)
params: -
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    from trimbench.splade.triplets import convert_ce_scores as convert

    with atomic_path(job.output.table) as tmp:
        pairs = convert(Path(job.input.scores), Path(tmp))
    log.info("%d (query, passage) cross-encoder scores converted", pairs)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
