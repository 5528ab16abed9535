"""Rule scoreboard: the reproduction scoreboard: each experiment against the work it reproduces.

input:  scores          each experiment's score table (parquet, tidy)
        references      each experiment's published numbers (CSV)
        figure          the headline Pareto figure (PNG) the status page shows
        bm25            the BM25 baselines' score tables (parquet, tidy)
        bm25_reference  reference/bm25.csv: published BM25 numbers
output: csv, markdown, html  one row per experiment: its headline, ours, published, verdict
        comparisons         every cell both have: ours, published, delta (HTML page)
params: names, configs, main_metrics, bm25_names, figure_caption,
        bm25_published  each BM25 row's datasets on pyserini's collections (the ones compared)
"""


from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    import base64

    from trimbench.report.scoreboard import (
        bm25_experiments,
        comparisons_html,
        readable_status,
        status_html,
        status_table,
    )
    from trimbench.report.scoreboard import experiments as scoreboard_experiments

    p = job.params
    experiments = scoreboard_experiments(p.names, p.configs, p.main_metrics, job.input.scores, job.input.references)
    configs = dict(zip(p.names, p.configs, strict=True))
    experiments += bm25_experiments(p.bm25_names, [configs[name] for name in p.bm25_names], list(job.input.bm25),
                                    job.input.bm25_reference, p.bm25_published)
    status = status_table(experiments)
    figure_uri = "data:image/png;base64," + base64.b64encode(Path(job.input.figure).read_bytes()).decode()
    outputs = {
        "csv": status.to_csv(index=False, float_format="%.6f"),
        "markdown": "# Reproduction status\n\n" + readable_status(status).to_markdown(index=False) + "\n",
        "html": status_html(status, figure_uri, job.params.figure_caption),
        "comparisons": comparisons_html(experiments),
    }
    job.write_texts(outputs)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
