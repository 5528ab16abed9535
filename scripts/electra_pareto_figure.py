"""Rule electra_pareto_figure: the ELECTRA track's Pareto figure (parameters against quality).

input:  scores (the experiment's score table), reference (the published per-layer curves, reference/electra.csv)
output: png, svg (parameters used against test score, dev-chosen layers ringed, the front drawn)
params: main_metrics (task -> metric), reference_experiments (task -> the published experiment), select (which
        epoch our test scores are), roles (model -> discriminator / generator / encoder), title
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.electra.report import electra_pareto_figure, read_layer_table

    p = job.params
    table = read_layer_table(job.input.scores, job.input.reference, p.reference_experiments, p.main_metrics, p.select)
    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        electra_pareto_figure(table, p.roles, p.title, {"png": png, "svg": svg})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
