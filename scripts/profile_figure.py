"""Rule profile_figure: one Pareto figure of the profile, every model of the experiment side by side.

input:  quality, encode  each model's tables (CSV, rule profile_model), params.models' order
output: png, svg  the mean quality over the family's datasets against the cost (wildcards family, cost)
params: models
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.profile.report import joined_tables, pareto_figure, profile_cells

    cells = profile_cells(joined_tables(job.input.quality), joined_tables(job.input.encode), job.params.models)
    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        pareto_figure(cells, job.wildcards.family, job.wildcards.cost, {"png": png, "svg": svg})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
