"""Rule prepare_data: one split of a registry dataset as a normalised table.

input:  -
output: table  the split as parquet with the dataset kind's columns (trimbench.data.columns.KIND_COLUMNS)
params: name, entry
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    from trimbench.data.tables import load_split

    p = job.params
    # Relative paths in the config are the working directory's: a job runs there (also on SLURM).
    frame = load_split(p.name, p.entry, job.wildcards.split, Path.cwd())
    log.info("dataset %s split %s: %d rows", p.name, job.wildcards.split, len(frame))
    if frame.empty:
        raise ValueError(f"dataset '{p.name}' split '{job.wildcards.split}' has no rows")
    with atomic_path(job.output.table) as tmp:
        frame.to_parquet(tmp, index=False)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
