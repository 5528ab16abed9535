"""Rule retrieval_ablation: one ablation figure: experiments that differ from the plain 2DMSE one in one setting.

input:  scores  the score tables of the group's experiments (parquet, tidy)
output: png, svg  the main metric against dim, a line per experiment of the group
params: configs, dataset, metric, title
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench import scores as score_table
    from trimbench.dense.ablations import ablation_figure

    p = job.params
    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        ablation_figure([score_table.read(path) for path in job.input.scores], p.configs, p.dataset, p.metric,
                        p.title, {"png": png, "svg": svg})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
