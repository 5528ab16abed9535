"""Rule encode_corpus: the corpus and queries of every evaluation set, every grid layer at the widest dim, once.

input:  model  the variant's sentence-transformers folder
        data   each evaluation dataset's BEIR-style folder (corpus, queries, qrels parquet)
output: embeddings  a folder per dataset with docs.npy (fp16 [layers, docs, max_dim], absent where the dataset
                    shares another's corpus) and queries.npy; manifest.json: layers, max_dim, each dataset's entry
params: datasets, corpus_of, layers, max_dim, pooling, q_max_length, p_max_length, batch_size, chunk,
        precision (the forward pass's autocast)
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.launch import is_main_process, written_by_ranks
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    from trimbench.data.io import RetrievalSplit
    from trimbench.dense.search import encode_queries, encode_retrieval_set, write_manifest
    from trimbench.distributed import init_process_group
    from trimbench.models import load_sentence_model

    p = job.params
    # retrieval.encode_devices ranks under torchrun, each encoding its batches into the one output
    with written_by_ranks(job, __file__, "embeddings", "retrieval.encode_devices") as tmp:
        if tmp is None:  # the ranks wrote it
            return
        init_process_group()  # in a rank: before the model is loaded, each rank on its own GPU
        with reading(job.input.model):
            model = load_sentence_model(job.input.model, pooling=p.pooling)
        counts = {}
        for dataset, folder in zip(p.datasets, job.input.data, strict=True):
            docs_of = p.corpus_of[dataset]
            if docs_of == dataset:
                counts[dataset] = encode_retrieval_set(model, RetrievalSplit.load(folder), p.layers, p.max_dim,
                                                       Path(tmp) / dataset, p.q_max_length, p.p_max_length,
                                                       p.batch_size, p.chunk, p.precision)
            else:  # its corpus is encoded with dataset docs_of's
                counts[dataset] = {"docs_of": docs_of, **encode_queries(
                    model, RetrievalSplit.read(folder, "queries"), p.layers, p.max_dim, Path(tmp) / dataset,
                    p.q_max_length, p.batch_size, p.precision)}
            log.info("encoded %s: %s", dataset, counts[dataset])
        if is_main_process():
            write_manifest(Path(tmp), p.layers, p.max_dim, counts)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
