"""Rule pretune_word_similarity: a model cut at k, pre-fine-tuned on word similarity.

input:  model       the model the cut starts from (adapted or registry): a sentence-transformers folder
        train       the word-similarity datasets' train tables (parquet: sentence1, sentence2, score)
        validation  their validation tables (same columns)
output: model  the model cut to k layers and pre-tuned: a sentence-transformers folder
params: k, stage, pooling, eval_batch_size
"""

import json
import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    import pandas as pd

    from trimbench.data.columns import KIND_COLUMNS
    from trimbench.electra.train import fine_tune_pairs
    from trimbench.models import cut_layers, load_sentence_model
    from trimbench.training import training_rows

    p, stage = job.params, job.params.stage
    with reading(job.input.model):
        model = cut_layers(load_sentence_model(job.input.model, pooling=p.pooling), p.k)
    # Words need few tokens; the saved model keeps its own length for the sentences that follow.
    own_length, model.max_seq_length = model.max_seq_length, stage["max_seq_length"] or model.max_seq_length
    train = pd.concat([pd.read_parquet(path) for path in job.input.train], ignore_index=True)
    dev = pd.concat([pd.read_parquet(path) for path in job.input.validation], ignore_index=True)
    train = training_rows(train, "sts", stage["max_samples"], stage["seed"])
    log.info("word-similarity pre-fine-tuning at k=%d on %d pairs (%d for dev)", p.k, len(train), len(dev))
    _, history, _ = fine_tune_pairs(model, "cosine_mse", 2, train, dev[list(KIND_COLUMNS["sts"])], stage,
                                    stage["seed"], p.eval_batch_size)
    model.max_seq_length = own_length
    with atomic_path(job.output.model) as tmp:
        model.save(str(tmp))
        (Path(tmp) / "trimbench_history.json").write_text(json.dumps(history, indent=1, sort_keys=True))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
