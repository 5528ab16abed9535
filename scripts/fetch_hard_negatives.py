"""Rule fetch_hard_negatives: one file of the hard-negatives hub dataset the SPLADE training reads.

input:  -
output: file  one file of sentence-transformers/msmarco-hard-negatives as published (jsonl.gz or pkl.gz)
params: hard_negatives
"""

import shutil
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from huggingface_hub import hf_hub_download

    hard = job.params.hard_negatives
    with atomic_path(job.output.file) as tmp:
        download = Path(f"{tmp}.download")  # the hub client's own folder, removed below
        found = hf_hub_download(hard["id"], job.wildcards.file, repo_type="dataset", revision=hard.get("revision"),
                                local_dir=str(download))
        Path(found).rename(tmp)
        shutil.rmtree(download, ignore_errors=True)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
