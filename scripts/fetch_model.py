"""Rule fetch_model: a registry model into results/models/ (a tiny random one built locally, or the
hub's at its revision).

input:  vocab  a tiny model's vocabulary: another registry model's folder (none otherwise)
output: model  a sentence-transformers (or transformers) folder: the hub's files at the pinned revision,
               or a tiny random model
params: entry, packaged
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    from trimbench.models import build_tiny_model, fetch_hub_model

    entry, out_dir = job.params.entry, Path(job.output.model)
    with atomic_path(out_dir) as tmp:
        if entry["source"] == "tiny":
            build_tiny_model(entry, Path(job.input.vocab), Path(tmp))
        else:
            fetch_hub_model(entry, Path(tmp))
    log.info("model ready in %s", out_dir)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
