"""Rule scoreboard_pareto: quality against cost for every variant of every experiment, per dataset and cost.

input:  scores      each experiment's score table (parquet, tidy)
        references  each experiment's published numbers (CSV)
output: points  per (dataset, cost): every variant's cost and quality, front marked (CSV)
        png, svg  per (dataset, cost): quality against cost, the Pareto front in black
params: figures, names, configs, main_metrics
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.plots.figures import cross_track_pareto_figure
    from trimbench.report.scoreboard import COSTS, pareto_points
    from trimbench.report.scoreboard import experiments as scoreboard_experiments

    p = job.params
    experiments = scoreboard_experiments(p.names, p.configs, p.main_metrics, job.input.scores, job.input.references)
    for (dataset, cost), points_path, png, svg in zip(p.figures, job.output.points, job.output.png, job.output.svg,
                                                      strict=True):
        points = pareto_points(experiments, dataset, cost)
        with atomic_path(points_path) as tmp:
            points.to_csv(tmp, index=False, float_format="%.6f")
        metrics = sorted({metrics[dataset] for metrics in p.main_metrics if dataset in metrics})
        cross_track_pareto_figure(points, COSTS[cost][0], " / ".join(metrics),
                                  f"{dataset}: every variant of every experiment", {"png": png, "svg": svg})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
