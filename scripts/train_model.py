"""Rule train_model: fine-tune one variant of a dense STS experiment (its method's loss, cut where it says).

input:  model  the registry model's sentence-transformers folder
        data   the training split's table (parquet, the dataset kind's columns)
output: model  the trained variant: a sentence-transformers folder (saved cut where the method cuts)
params: method, cut_layers, pooling, objective, semantics, dims, train, resume, kind
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.launch import launched
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    if launched(job, __file__):  # as train.devices ranks under torchrun
        return
    import pandas as pd

    from trimbench.dense.losses import build_sts_loss
    from trimbench.jobs.fingerprint import run_fingerprint
    from trimbench.models import load_for_training
    from trimbench.training import fine_tune, training_rows

    p = job.params
    train = {**p.train, **p.resume, "devices": job.devices}  # resume, devices: outside the compared params
    model = load_for_training(job.input.model, p.pooling, train["max_seq_length"], train["seed"], train["attention"],
                              p.cut_layers)
    frame = training_rows(pd.read_parquet(job.input.data), p.kind, train["max_samples"], train["seed"])
    log.info("method %s on %d rows of kind %s", p.method, len(frame), p.kind)
    loss = build_sts_loss(model, p.method, train, p.dims, p.semantics, p.objective)
    log.info("objective %s: loss %s", p.objective, type(loss).__name__)
    # with the devices: a checkpoint resumes under the same number of ranks only
    fingerprint = run_fingerprint({**job.named("params"), "train": train}, [job.input.model, job.input.data])
    fine_tune(model, frame, loss, train, Path(job.output.model), fingerprint)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
