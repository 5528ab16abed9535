"""Rule train_electra: every (k, seed) run of one task and model: cut, fine-tune, score on dev and test.

input:  models, train, validation, test
output: scores, history
params: runs, start_layers, random_init, objective, num_labels, kind, train, pooling, eval_batch_size, meta
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
    from trimbench.electra.train import reinitialise, train_runs
    from trimbench.jobs.fingerprint import run_fingerprint
    from trimbench.models import load_sentence_model

    p = job.params
    # One start model for every k, or one per k (word-similarity pre-tuned cuts), as the params say.
    start = dict(zip(p.start_layers, job.input.models, strict=True)) if p.start_layers else {}
    loaded = {}  # the start model of the runs at hand (runs come k by k), read from disk once

    def load_model(k, seed):
        path = start.get(k, job.input.models[0])
        if path not in loaded:
            loaded.clear()
            with reading(path):
                loaded[path] = load_sentence_model(path, pooling=p.pooling, max_seq_length=p.train["max_seq_length"])
        model = copy.deepcopy(loaded[path])  # each run cuts and trains its own copy
        return reinitialise(model, seed) if p.random_init else model

    tables = {split: pd.read_parquet(getattr(job.input, split)) for split in ("train", "validation", "test")}
    inputs = [*job.input.models, job.input.train, job.input.validation, job.input.test]
    work_dir = Path(job.output.scores).with_name("unfinished")
    finished = train_runs(load_model, p.runs, p.objective, p.num_labels, p.kind, tables, p.train, p.eval_batch_size,
                          work_dir, run_fingerprint(job.named("params"), inputs))
    rows = [{**p.meta, "layer": k, "seed": seed, **row} for k, seed, run_rows, _ in finished for row in run_rows]
    with atomic_path(job.output.scores) as tmp:
        score_table.write(score_table.frame(rows), tmp)
    histories = {f"L{k}/seed{seed}": history for k, seed, _, history in finished}
    with atomic_path(job.output.history) as tmp:
        Path(tmp).write_text(json.dumps(histories, indent=1, sort_keys=True))
    shutil.rmtree(work_dir)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
