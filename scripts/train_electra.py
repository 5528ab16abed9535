"""Rule train_electra: every (k, seed) fine-tuning of one task and model: cut, fine-tune, score on dev and test.

input:  pretuned    one word-similarity pre-tuned model per k (sentence-transformers folders), or none
        model       the one model every k starts from (adapted or registry folder), or none
        train, validation, test  the task's tables (parquet, the task kind's columns)
output: scores   a tidy score table (parquet: trimbench.scores.COLUMNS, one row per cell, metric and split):
                 every (k, seed), dev and test
        history  JSON: "L<k>/seed<seed>" -> that fine-tuning's per-epoch dev scores
params: fine_tunings, start_layers, random_init, objective, num_labels, kind, train, pooling, eval_batch_size, meta
"""

import copy
import json
import shutil
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.electra.train import fine_tune_cuts, reinitialise
    from trimbench.jobs.fingerprint import run_fingerprint
    from trimbench.models import load_sentence_model

    p = job.params
    # One start model per k (word-similarity pre-tuned cuts), or one for every k.
    pretuned = dict(zip(p.start_layers, job.input.pretuned, strict=True))
    loaded = {}  # the start model of the fine-tunings at hand (they come k by k), read from disk once

    def load_model(k, seed):
        path = pretuned[k] if pretuned else job.input.model
        if path not in loaded:
            loaded.clear()
            with reading(path):
                loaded[path] = load_sentence_model(path, pooling=p.pooling, max_seq_length=p.train["max_seq_length"])
        model = copy.deepcopy(loaded[path])  # each fine-tuning cuts and trains its own copy
        return reinitialise(model, seed) if p.random_init else model

    tables = {split: pd.read_parquet(getattr(job.input, split)) for split in ("train", "validation", "test")}
    inputs = [*(list(pretuned.values()) or [job.input.model]), job.input.train, job.input.validation, job.input.test]
    work_dir = Path(job.output.scores).with_name("unfinished")
    finished = fine_tune_cuts(load_model, p.fine_tunings, p.objective, p.num_labels, p.kind, tables, p.train,
                              p.eval_batch_size, work_dir, run_fingerprint(job.named("params"), inputs))
    rows = [{**p.meta, "layer": k, "seed": seed, **row} for k, seed, cut_rows, _ in finished for row in cut_rows]
    with atomic_path(job.output.scores) as tmp:
        score_table.write(score_table.frame(rows), tmp)
    histories = {f"L{k}/seed{seed}": history for k, seed, _, history in finished}
    with atomic_path(job.output.history) as tmp:
        Path(tmp).write_text(json.dumps(histories, indent=1, sort_keys=True))
    shutil.rmtree(work_dir)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
