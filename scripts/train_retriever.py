"""Rule train_retriever: fine-tune one variant of a 2DMSE retrieval experiment on (query, positive, negatives) groups.

input:  model      the registry model's sentence-transformers folder
        data       the training split's BEIR-style folder (corpus, queries, qrels parquet)
        negatives  mined negatives (JSON lines: query_id, positives, negatives)
output: model  the trained variant: a sentence-transformers folder
params: method, cut_layers, cut_dim, pooling, train, resume, settings
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
    from trimbench.data.io import RetrievalSplit
    from trimbench.dense.retrieval_loss import GroupedContrastiveLoss
    from trimbench.jobs.fingerprint import run_fingerprint
    from trimbench.models import load_for_training
    from trimbench.negatives import iter_rows
    from trimbench.pools import EpochGroups, group_pools
    from trimbench.training import fine_tune

    p = job.params
    # resume, devices (the rule's gpu resource): outside the compared params
    train, settings = {**p.train, **p.resume, "devices": job.devices}, p.settings
    model = load_for_training(job.input.model, p.pooling, settings["p_max_length"], train["seed"],
                              train["attention"], p.cut_layers)
    table, texts = group_pools(RetrievalSplit.load(job.input.data), iter_rows(Path(job.input.negatives)),
                               train["max_samples"], train["seed"])
    groups = EpochGroups(texts, settings["group_size"], train["seed"])
    log.info("method %s on %d queries, groups of %d passages drawn afresh each epoch", p.method, len(table),
             settings["group_size"])
    loss = GroupedContrastiveLoss(model, p.method, settings["target_dims"], settings, p.cut_dim)
    # with the devices: a checkpoint resumes under the same number of ranks only
    fingerprint = run_fingerprint({**job.named("params"), "train": train},
                                  [job.input.model, job.input.data, job.input.negatives])
    fine_tune(model, table.with_transform(groups), loss, train, Path(job.output.model), fingerprint,
              callbacks=[groups.callback()])


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
