"""Rule encode_texts: every requested layer and dim of one variant on each evaluation set's texts.

input:  model  the variant's sentence-transformers folder
        data   each evaluation dataset's STS table (parquet: sentence1, sentence2, score)
output: embeddings  <dataset>.npy per dataset ([layers, texts, max_dim] float) and manifest.json (layers, shapes)
params: datasets, layers, max_dim, pooling, max_seq_length, batch_size, precision (the forward pass's autocast)
"""

import json
import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    import numpy as np
    import pandas as pd

    from trimbench.data.tables import sts_texts
    from trimbench.encoding import encode_layers
    from trimbench.models import load_sentence_model

    p = job.params
    # Trained BERT-S models were saved cut, so every model is encoded as it is on disk.
    with reading(job.input.model):
        model = load_sentence_model(job.input.model, pooling=p.pooling, max_seq_length=p.max_seq_length)
    out_dir = Path(job.output.embeddings)
    with atomic_path(out_dir) as tmp:
        Path(tmp).mkdir(parents=True)
        manifest = {"layers": p.layers, "max_dim": p.max_dim, "datasets": {}}
        for dataset, table in zip(p.datasets, job.input.data, strict=True):
            texts, _, _ = sts_texts(pd.read_parquet(table))
            array = encode_layers(model, texts, p.layers, batch_size=p.batch_size, max_dim=p.max_dim,
                                  precision=p.precision)
            np.save(Path(tmp) / f"{dataset}.npy", array)
            manifest["datasets"][dataset] = {"texts": len(texts), "shape": list(array.shape)}
            log.info("encoded %s: %s", dataset, array.shape)
        (Path(tmp) / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
