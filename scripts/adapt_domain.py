"""Rule adapt_domain: domain adaptation (MLM) of one ELECTRA-track model on the adaptation texts.

input:  model  the registry model's sentence-transformers folder
        data   the adaptation dataset's split tables (parquet, the dataset kind's text columns)
output: model  the MLM-adapted model: a sentence-transformers folder (the fresh MLM head dropped)
params: stage, resume, kind
"""


from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench.electra.train import adapt_domain as adapt
    from trimbench.electra.train import unique_texts
    from trimbench.jobs.fingerprint import run_fingerprint

    p = job.params
    table = pd.concat([pd.read_parquet(path) for path in job.input.data], ignore_index=True)
    stage = {**p.stage, **p.resume}  # resume: outside the compared params
    texts = unique_texts(table, p.kind, stage["max_samples"], stage["seed"])
    output = Path(job.output.model)
    fingerprint = run_fingerprint(job.named("params"), [job.input.model, *job.input.data])
    with atomic_path(output) as tmp:
        adapt(Path(job.input.model), texts, stage, Path(tmp), output.with_name(output.name + ".ckpt"), fingerprint)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
