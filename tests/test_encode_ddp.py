"""Corpus encoding on two devices (two CPU ranks, gloo) writes the single device's output, through
the job's script as a job runs it (launched by the job's process, published by it once both ranks
are done): ``scripts/encode_corpus.py``, the same dense arrays byte for byte and the same manifest;
``scripts/encode_sparse.py``, the same sparse vectors.

The corpus has texts of uneven length, an odd size and chunks that end inside it (7 documents in
chunks of 3, batches of 2: rank 1 has no batch in the last chunk); a second dataset shares its
corpus (its queries only).
"""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from trimbench.data.io import RetrievalSplit

WORDS = "falcon river copper engine violin garden bridge lantern meadow harbor glacier orchard".split()
LAYERS, MAX_DIM = [1, 3], 32


def a_split(docs: int, queries: int, offset: int = 0) -> RetrievalSplit:
    """Texts of 1 to 13 words, in no length order."""
    def text(i: int) -> str:
        return " ".join(WORDS[(i + j) % len(WORDS)] for j in range(1 + (5 * i + offset) % 13))

    corpus = pd.DataFrame({"doc_id": [f"d{i}" for i in range(docs)], "title": "",
                           "text": [text(i) for i in range(docs)]})
    asked = pd.DataFrame({"query_id": [f"q{i}" for i in range(queries)],
                          "text": [text(i + 3) for i in range(queries)]})
    qrels = pd.DataFrame({"query_id": ["q0"], "doc_id": ["d0"], "relevance": [1]})
    return RetrievalSplit(corpus, asked, qrels)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    a_split(7, 5).save(folder / "toy")
    a_split(7, 3, offset=2).save(folder / "toy-dl")
    return folder


def encode(script: str, model, data, output: str, out, params: dict, devices: int, tmp_path):
    """The job of ``scripts/<script>.py`` on the datasets of :func:`data` (toy-dl shares toy's corpus)."""
    params = {"datasets": ["toy", "toy-dl"], "corpus_of": {"toy": "toy", "toy-dl": "toy"}, **params}
    command = [sys.executable, str(REPO / "scripts" / f"{script}.py"),
               "--input", f"model={model}", f"data={json.dumps([str(data / 'toy'), str(data / 'toy-dl')])}",
               "--output", f"{output}={out}", "--wildcards", "experiment=e", "variant=full", "run=r",
               "--resources", f"gpu={devices}", "--params", json.dumps(params), "--threads", "2",
               "--log", str(tmp_path / f"{devices}.log")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert (done.returncode == 0) == (model.name != "broken"), (tmp_path / f"{devices}.log").read_text()[-3000:]
    if devices > 1:
        log = (tmp_path / f"{devices}.log").read_text()
        assert "launching 2 ranks" in log and " rank 0/2 " in log and " rank 1/2 " in log


def encode_dense(model, data, out, devices: int, tmp_path):
    encode("encode_corpus", model, data, "embeddings", out,
           {"layers": LAYERS, "max_dim": MAX_DIM, "pooling": "mean", "q_max_length": 16, "p_max_length": 24,
            "batch_size": 2, "chunk": 3, "precision": "fp32"}, devices, tmp_path)


def files(folder) -> dict:
    return {path.relative_to(folder).as_posix(): path for path in sorted(folder.rglob("*")) if path.is_file()}


def test_two_ranks_encode_the_one_device_arrays(tiny_bert_dir, data, tmp_path):
    one, two = tmp_path / "one" / "full", tmp_path / "two" / "full"
    for out, devices in ((one, 1), (two, 2)):
        encode_dense(tiny_bert_dir, data, out, devices, tmp_path)
    assert files(one).keys() == files(two).keys() == {"manifest.json", "toy/docs.npy", "toy/queries.npy",
                                                      "toy-dl/queries.npy"}
    assert (one / "manifest.json").read_text() == (two / "manifest.json").read_text()
    for name, path in files(one).items():
        if name.endswith(".npy"):
            single, ranked = np.load(path), np.load(two / name)
            assert single.shape == ranked.shape and single.shape[::2] == (len(LAYERS), MAX_DIM)
            assert np.isfinite(single).all() and np.abs(single).sum(axis=2).min() > 0  # every row written
            np.testing.assert_array_equal(ranked, single)
            assert path.read_bytes() == (two / name).read_bytes()
    # nothing left beside the published folders
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["full"]


def test_a_failing_rank_publishes_nothing(data, tmp_path):
    """A model that cannot be loaded: the ranks fail, the job fails, and no output (nor a temporary
    one) is left."""
    (tmp_path / "broken").mkdir()
    encode_dense(tmp_path / "broken", data, tmp_path / "out" / "full", 2, tmp_path)
    assert "torchrun ended with exit code" in (tmp_path / "2.log").read_text()
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.fixture(scope="module")
def tiny_splade_dir(tiny_bert_dir, tmp_path_factory):
    """A saved SPLADE model: its MLM head drawn once (each rank loads the same)."""
    import torch

    from trimbench.splade.model import load_splade_model

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("splade") / "model"
    load_splade_model(tiny_bert_dir, device="cpu").save(str(out))
    return out


def test_two_ranks_encode_the_one_device_sparse_vectors(tiny_splade_dir, data, tmp_path):
    import scipy.sparse as sp

    settings = {"quantization": 100, "q_max_length": None, "p_max_length": 24, "batch_size": 2, "encode_chunk": 3,
                "q_max_terms": None, "d_max_terms": 8}
    one, two = tmp_path / "one" / "r", tmp_path / "two" / "r"
    for out, devices in ((one, 1), (two, 2)):
        encode("encode_sparse", tiny_splade_dir, data, "vectors", out,
               {"settings": settings, "max_length": 16}, devices, tmp_path)
    assert files(one).keys() == files(two).keys() == {"vocab.json", "toy/docs.npz", "toy/queries.npz",
                                                      "toy-dl/docs.npz", "toy-dl/queries.npz"}
    assert (one / "vocab.json").read_text() == (two / "vocab.json").read_text()
    for name in ("toy/docs.npz", "toy/queries.npz", "toy-dl/queries.npz"):
        single, ranked = sp.load_npz(one / name).tocsr(), sp.load_npz(two / name).tocsr()
        assert single.shape == ranked.shape and single.shape[0] in (7, 5, 3)
        assert np.diff(single.indptr).min() > 0  # every text has terms: every row was written
        for field in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(ranked, field), getattr(single, field))
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["r"]
