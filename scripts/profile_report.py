"""Rule profile_report: the profile's tables in the report, every model of the experiment side by side.

input:  quality, encode, search, funnel, recommend  each model's tables (CSV, rule profile_model), params.models' order
output: page   the tables (HTML): recommended cuts, full models, every cell, encode speed, search latency, funnel
params: models
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.profile.report import joined_tables, profile_cells, profile_page

    encode = joined_tables(job.input.encode)
    cells = profile_cells(joined_tables(job.input.quality), encode, job.params.models)
    with atomic_path(job.output.page) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(profile_page(job.wildcards.experiment, cells, joined_tables(job.input.recommend), encode,
                                      joined_tables(job.input.search), joined_tables(job.input.funnel)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
