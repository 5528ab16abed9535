"""Rule profile_model: one model's trim profile, its recommended cuts and their export.

input:  model      the model's folder (a packaged model's folder in this environment: param packaged)
        sts        the STS datasets' tables (parquet: sentence1, sentence2, score), params.sts's order
        retrieval  the retrieval datasets' folders (corpus, queries, qrels), params.retrieval's order
output: quality, encode, search, funnel, flops  the profile's tables (CSV; trimbench.profile.run.profile_model)
        recommend  the recommended cut per tolerance (CSV; trimbench.profile.recommend.recommend)
        scores     the float32 cells as a tidy score table (parquet: the status table's input)
        exported   one sentence-transformers folder per recommended cell (L<k>_d<d>_<precision>), each
                   with its model card (README.md)
params: model (registry name), sts, retrieval (dataset names), split, settings (layers, dims, precisions,
        rescore_multiplier, funnel, repeats, batch_size, speed_texts), ignore_identical_ids, tolerances,
        export, meta (experiment, track), packaged
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from pathlib import Path

    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.data.io import RetrievalSplit
    from trimbench.models import load_sentence_model
    from trimbench.profile.recommend import recommend
    from trimbench.profile.run import Settings, cells_with_costs, export_recommended, profile_model

    p = job.params
    settings = Settings(**p.settings, funnel=[tuple(pair) for pair in p.funnel],
                        ignore_identical_ids=p.ignore_identical_ids)
    with reading(job.input.model):
        model = load_sentence_model(job.input.model)
    sts = {name: pd.read_parquet(path) for name, path in zip(p.sts, job.input.sts, strict=True)}
    retrieval = {name: RetrievalSplit.load(path) for name, path in zip(p.retrieval, job.input.retrieval, strict=True)}
    tables = profile_model(model, job.input.model, sts, retrieval, settings)
    for name in ("quality", "encode", "search", "funnel", "flops"):
        with atomic_path(getattr(job.output, name)) as tmp:
            tables[name].assign(model=p.model).to_csv(tmp, index=False)
    cells = cells_with_costs(tables["quality"], tables["encode"]).assign(model=p.model)
    picks = recommend(cells, p.tolerances)
    with atomic_path(job.output.recommend) as tmp:
        picks.to_csv(tmp, index=False)
    float_cells = tables["quality"][tables["quality"]["precision"] == "float32"]
    rows = [{**p.meta, "variant": p.model, "model": p.model, "layer": row.layer, "dim": row.dim,
             "dataset": row.dataset, "split": p.split, "metric": row.metric, "value": row.value}
            for row in float_cells.itertuples(index=False)]
    with atomic_path(job.output.scores) as tmp:
        score_table.write(score_table.frame(rows), tmp)
    with atomic_path(job.output.exported) as tmp:
        Path(tmp).mkdir(parents=True)
        if p.export:
            export_recommended(job.input.model, p.model, picks, cells, Path(tmp))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
