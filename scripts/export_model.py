"""Rule export_model: one (layer, dim) cell of a variant as a standalone sentence-transformers folder.

input:  model  the variant's sentence-transformers folder
output: model  a standalone sentence-transformers folder: the first k layers, truncate_dim d
params: layers, dim, pooling, max_seq_length
"""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run


def main(job) -> None:
    from trimbench.export import save_trimmed
    from trimbench.models import load_sentence_model

    p = job.params
    with reading(job.input.model):
        model = load_sentence_model(job.input.model, pooling=p.pooling, max_seq_length=p.max_seq_length)
    with atomic_path(job.output.model) as tmp:
        save_trimmed(model, p.layers, p.dim, tmp, job.input.model)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
