"""Rule encode_sparse: sparse vectors of every evaluation corpus and its queries, for one trained variant.

input:  model  the trained variant's SPLADE folder (sentence-transformers SparseEncoder)
        data   each evaluation dataset's BEIR-style folder (corpus, queries, qrels parquet)
output: vectors  a folder per corpus: docs.npz / queries.npz (scipy CSR of integer impacts) and vocab.json
params: datasets, corpus_of, settings, max_length
"""

import json
import logging
import os
import shutil
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.launch import is_main_process, written_by_ranks
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    from trimbench.data.io import RetrievalSplit, doc_texts
    from trimbench.distributed import init_process_group
    from trimbench.splade import vectors as sparse
    from trimbench.splade.model import load_splade_model

    p = job.params
    settings = p.settings
    # splade.encode_devices ranks under torchrun, each encoding its batches; rank 0 writes the vectors
    with written_by_ranks(job, __file__, "vectors", "splade.encode_devices") as tmp:
        if tmp is None:  # the ranks wrote it
            return
        init_process_group()  # in a rank: before the model is loaded, each rank on its own GPU
        with reading(job.input.model):
            model = load_splade_model(job.input.model)
        encoded = {}  # corpus -> (documents, terms per document), for the log of datasets sharing it
        for dataset, folder in zip(p.datasets, job.input.data, strict=True):
            first = p.corpus_of[dataset]
            docs = None  # the same corpus as an earlier dataset: encoded once, linked
            if first == dataset:
                corpus = RetrievalSplit.read(folder, "corpus")
                docs = sparse.encode_sparse(model, doc_texts(corpus), settings["p_max_length"] or p.max_length,
                                            settings["batch_size"], settings["quantization"], settings["encode_chunk"],
                                            settings["d_max_terms"], parts=Path(tmp) / dataset)
            queries = sparse.encode_sparse(model, list(RetrievalSplit.read(folder, "queries")["text"]),
                                           settings["q_max_length"] or p.max_length, settings["batch_size"],
                                           settings["quantization"], settings["encode_chunk"], settings["q_max_terms"],
                                           parts=Path(tmp) / dataset)
            if not is_main_process():
                continue
            if first == dataset:
                encoded[dataset] = docs.shape[0], sparse.active_terms(docs)
            else:
                _link(Path(tmp) / first / sparse.DOCS_FILE, Path(tmp) / dataset / sparse.DOCS_FILE)
            sparse.save_vectors(Path(tmp) / dataset, docs, queries)
            log.info("%s: %d documents (%.1f terms each), %d queries (%.1f terms each)", dataset, *encoded[first],
                     queries.shape[0], sparse.active_terms(queries))
        if is_main_process():
            (Path(tmp) / sparse.VOCAB_FILE).write_text(json.dumps(sparse.vocabulary(model.tokenizer)))


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # a file system without hard links
        shutil.copyfile(source, target)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
