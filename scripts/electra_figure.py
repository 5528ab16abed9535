"""Rule electra_figure: the ELECTRA track's layer figure.

input:  scores     the experiment's score table (parquet, tidy)
        reference  the published ELECTRA-track numbers (CSV)
output: png, svg  the main metric per layer k, one line per model, published curves beside ours
params: main_metrics, reference_experiments, select, roles, title
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench import scores as score_table
    from trimbench.electra.report import layer_figure, read_layer_table

    p = job.params
    table = read_layer_table(job.input.scores, job.input.reference, p.reference_experiments, p.main_metrics,
                             p.select)
    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        layer_figure(score_table.read(job.input.scores), table, p.roles, p.main_metrics,
                     p.title, {"png": png, "svg": svg})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
