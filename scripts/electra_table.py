"""Rule electra_table: the ELECTRA track's layer tables and dev-choice tables, ours beside the published curves.

input:  scores     the experiment's score table (parquet, tidy)
        reference  the published ELECTRA-track numbers (CSV)
output: layers_*  per (task, model, k) mean and spread over seeds, ours and published (md, csv, html)
        choice_*  the layer each model's dev score picks and its test score (md, csv, html)
params: main_metrics, reference_experiments, select
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.electra.report import choice_tables, layer_tables, read_layer_table

    p = job.params
    table = read_layer_table(job.input.scores, job.input.reference, p.reference_experiments, p.main_metrics,
                             p.select)
    outputs = {f"layers_{k}": v for k, v in layer_tables(table).items()}
    outputs |= {f"choice_{k}": v for k, v in choice_tables(table).items()}
    job.write_texts(outputs)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
