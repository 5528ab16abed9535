"""Rule encode_sparse: sparse vectors of every evaluation corpus and its queries, for one run.

input:  model, data
output: vectors
params: datasets, corpus_of, settings, max_length
"""

import json
import logging
import os
import shutil
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    from trimbench.data.io import RetrievalSplit, doc_texts
    from trimbench.splade import vectors as sparse
    from trimbench.splade.model import load_splade_model

    p = job.params
    settings = p.settings
    with reading(job.input.model):
        model = load_splade_model(job.input.model)
    encoded = {}  # corpus -> (documents, terms per document), for the log of datasets sharing it
    with atomic_path(job.output.vectors) as tmp:
        for dataset, folder in zip(p.datasets, job.input.data, strict=True):
            first = p.corpus_of[dataset]
            if first != dataset:  # the same corpus as an earlier dataset: encoded once, linked
                (Path(tmp) / dataset).mkdir(parents=True)
                source, target = Path(tmp) / first / sparse.DOCS_FILE, Path(tmp) / dataset / sparse.DOCS_FILE
                try:
                    os.link(source, target)
                except OSError:  # a file system without hard links
                    shutil.copyfile(source, target)
                docs = None
            else:
                corpus = RetrievalSplit.read(folder, "corpus")
                docs = sparse.encode_sparse(model, doc_texts(corpus), settings["p_max_length"] or p.max_length,
                                            settings["batch_size"], settings["quantization"], settings["encode_chunk"],
                                            settings["d_max_terms"])
                encoded[dataset] = docs.shape[0], sparse.active_terms(docs)
            queries = sparse.encode_sparse(model, list(RetrievalSplit.read(folder, "queries")["text"]),
                                           settings["q_max_length"] or p.max_length, settings["batch_size"],
                                           settings["quantization"], settings["encode_chunk"], settings["q_max_terms"])
            sparse.save_vectors(Path(tmp) / dataset, docs, queries)
            log.info("%s: %d documents (%.1f terms each), %d queries (%.1f terms each)", dataset, *encoded[first],
                     queries.shape[0], sparse.active_terms(queries))
        (Path(tmp) / sparse.VOCAB_FILE).write_text(json.dumps(sparse.vocabulary(model.tokenizer)))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
