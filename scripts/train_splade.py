"""Rule train_splade: train one SPLADE variant (model, method, lambda_q, lambda_d).

input:  model     the registry model's folder (a masked-LM checkpoint, or an encoder given a tied head)
        triplets  splade_triplets' pools (parquet: each query's positives and negatives as positions)
        data      the training split's BEIR-style folder the positions point into
output: model  the trained variant: a sentence-transformers SparseEncoder folder
params: variant, semantics, train, resume, max_length
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.launch import launched
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    if launched(job, __file__):  # as train.devices ranks under torchrun
        return
    import pandas as pd
    from transformers import set_seed

    from trimbench.data.io import RetrievalSplit
    from trimbench.jobs.fingerprint import run_fingerprint
    from trimbench.splade.model import load_splade_model, train_splade
    from trimbench.splade.triplets import epoch_pairs

    p = job.params
    variant = p.variant
    train = {**p.train, **p.resume, "devices": job.devices}  # resume, devices: outside the compared params
    # Seeded before loading: a head the checkpoint lacks (mlm_head: tied) starts the same on a resume.
    set_seed(train["seed"])
    with reading(job.input.model):
        model = load_splade_model(job.input.model, max_seq_length=p.max_length)
    pools = pd.read_parquet(job.input.triplets)
    dataset, pairs = epoch_pairs(pools, RetrievalSplit.load(job.input.data), train["seed"])  # the seed's rotation
    log.info("%s from %s on %d queries (a pair each, rotated per epoch), lambda_q %g, lambda_d %g, semantics %s",
             variant["method"], variant["model"], len(pools), variant["lambda_q"], variant["lambda_d"], p.semantics)
    # with the devices: a checkpoint resumes under the same number of ranks only
    fingerprint = run_fingerprint({**job.named("params"), "train": train},
                                  [job.input.model, job.input.triplets, job.input.data])
    train_splade(model, dataset, variant["method"], variant["lambda_q"],
                 variant["lambda_d"], p.semantics, train, Path(job.output.model), fingerprint,
                 callbacks=[pairs.callback()])


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
