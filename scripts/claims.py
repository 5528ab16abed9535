"""Rule claims: the reproduced work's claims, checked on our scores and on the published numbers.

input:  scores      each experiment's score table (parquet, tidy), params.names' order
        reference   the track's published numbers (CSV, reference/README.md)
        statements  reference/claims.yaml: each claim's statement, source and check
output: markdown, csv, html  one row per claim: ours, published, verdict (Markdown, CSV, HTML page)
params: names, configs, main_metrics, model_ids
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.report.claims import claims_outputs, load_claims

    p = job.params
    configs = dict(zip(p.names, p.configs, strict=True))
    scores = {name: score_table.read(path) for name, path in zip(p.names, job.input.scores, strict=True)}
    job.write_texts(claims_outputs(job.wildcards.experiment, configs, scores, pd.read_csv(job.input.reference),
                                   p.main_metrics, p.model_ids, load_claims(job.input.statements)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
