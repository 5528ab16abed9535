"""Rule splade_ensemble: the TREC runs of several SPLADE variants fused; TREC runs and scores.

input:  runs           each member variant's TREC run folder (<dataset>.trec)
        member_scores  each member's score table (parquet, tidy): FLOPS summed
        data           each evaluation dataset's BEIR-style folder (qrels for the metrics)
output: scores  a tidy score table (parquet: trimbench.scores.COLUMNS, one row per cell, metric and split)
        runs    a folder of fused TREC run files, <dataset>.trec
params: datasets, metrics, relevance_level, top_k, average_over, average_name, meta
"""


from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench import scores as score_table
    from trimbench.runs import read_trec_run, write_runs_and_scores
    from trimbench.splade import vectors as sparse

    p = job.params
    runs = {}
    for dataset in p.datasets:
        members = []
        for folder in job.input.runs:
            with reading(folder):
                members.append(read_trec_run(Path(folder) / f"{dataset}.trec"))
        runs[dataset] = sparse.ensemble_runs(members, p.top_k)
    flops = sparse.ensemble_flops([score_table.read(path) for path in job.input.member_scores])
    rows = [{**p.meta, **row} for row in flops if row["dataset"] in p.datasets]
    write_runs_and_scores(runs, rows, job.wildcards.variant, dict(zip(p.datasets, job.input.data, strict=True)),
                          p.metrics, p.relevance_level, p.meta, p.average_over, p.average_name, job.output.runs,
                          job.output.scores)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
