"""Rule pareto_figure: the ELECTRA track's Pareto figure (parameters against quality).

input:  scores     the experiment's score table (parquet, tidy)
        reference  the published ELECTRA-track numbers (CSV)
output: png, svg  parameters used against test score, one point per (model, k), the front marked
params: main_metrics, reference_experiments, select, roles, title
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.electra.report import pareto_figure as draw
    from trimbench.electra.report import read_layer_table

    p = job.params
    table = read_layer_table(job.input.scores, job.input.reference, p.reference_experiments, p.main_metrics,
                             p.select)
    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        draw(table, p.roles, p.title, {"png": png, "svg": svg})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
