"""Rule prepare_retrieval: one split of a retrieval dataset as corpus, queries and qrels.

input:  -
output: folder  corpus (doc_id, title, text), queries (query_id, text), qrels (query_id, doc_id, relevance)
                parquet tables, and the source's own negatives where it gives some
params: name, entry
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    from trimbench.data.beir import load_retrieval

    p = job.params
    split = load_retrieval(p.name, p.entry, job.wildcards.split, Path.cwd())
    log.info("dataset %s split %s: %d documents, %d queries, %d judgements", p.name, job.wildcards.split,
             len(split.corpus), len(split.queries), len(split.qrels))
    with atomic_path(job.output.folder) as tmp:
        split.save(Path(tmp))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
