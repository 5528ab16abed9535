"""Rule sts_versions: tables and figure of several STS experiments (e.g. v1 and v2) side by side.

input:  scores      each experiment's score table (parquet, tidy)
        references  each experiment's published numbers (CSV)
output: markdown, csv, html  the seed's table of every experiment, side by side
        png, svg            one subplot per layer, every experiment's lines
params: blocks, title
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    import pandas as pd

    from trimbench import scores as score_table
    from trimbench.dense.grid import VersionBlock, sts_versions_figure, sts_versions_tables

    p = job.params
    blocks = [
        VersionBlock(spec["label"], score_table.read(scores), pd.read_csv(reference), spec["reference_variant"],
                     spec["dataset"], spec["metric"])
        for spec, scores, reference in zip(p.blocks, job.input.scores, job.input.references, strict=True)
    ]
    job.write_texts(sts_versions_tables(blocks))
    sts_versions_figure(blocks, p.title, {"png": job.output.png, "svg": job.output.svg})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
