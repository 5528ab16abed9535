"""Rule index_sparse: a pyserini impact index per evaluation corpus of one trained variant.

input:  vectors  encode_sparse's folder (per corpus: docs.npz CSR impacts, vocab.json)
        data     each evaluation dataset's BEIR-style folder (corpus, queries, qrels parquet)
output: index  a folder per corpus: a Lucene impact index (pyserini, --impact --pretokenized)
params: datasets, corpus_of
"""

import logging
from pathlib import Path

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.run import run

log = logging.getLogger("trimbench")


def main(job) -> None:
    """An impact index per corpus of the run; each finished one is kept, so a job cut short
    resumes with the corpora left."""
    import tempfile

    from trimbench.data.io import RetrievalSplit
    from trimbench.jobs.fingerprint import FINGERPRINT_FILE, run_fingerprint, stamped_work_dir
    from trimbench.splade import vectors as sparse

    p, out, vectors = job.params, Path(job.output.index), Path(job.input.vectors)
    work = stamped_work_dir(out.with_name(out.name + ".unfinished"),
                            run_fingerprint(job.named("params"), [job.input.vectors, *job.input.data]))
    vocab = sparse.read_vocabulary(vectors)
    for dataset, folder in zip(p.datasets, job.input.data, strict=True):
        if p.corpus_of[dataset] != dataset:
            continue  # searched in the index of the first dataset with its corpus
        if (work / dataset).is_dir():
            log.info("impact index of %s: built by an earlier attempt, kept", dataset)
            continue
        with reading(vectors):
            docs = sparse.load_docs(vectors / dataset)
        doc_ids = list(RetrievalSplit.read(folder, "corpus", columns=["doc_id"])["doc_id"])
        with tempfile.TemporaryDirectory(prefix="vectors-") as collection, atomic_path(work / dataset) as tmp:
            sparse.write_vector_collection(doc_ids, docs, vocab, Path(collection))
            sparse.build_impact_index(Path(collection), Path(tmp), threads=int(job.threads))
        log.info("impact index of %s: %d documents", dataset, docs.shape[0])
    (work / FINGERPRINT_FILE).unlink()
    work.rename(out)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
