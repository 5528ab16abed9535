"""faiss' exact search (trimbench/search.py): the dense grid's and the dense miner's."""

from __future__ import annotations

import numpy as np


def test_search_adds_the_documents_in_chunks_and_ranks_every_one():
    """Five documents added two at a time (a corpus of millions is added 500,000 at a time): the top 5
    of each query are all five, by the plain product."""
    from trimbench.search import search

    docs = np.array([[1, 0, 0], [0, 2, 0], [0, 0, 3], [4, 1, 0], [0, 1, 5]], dtype=np.float16)
    queries = np.array([[1, 1, 1], [1, 0, 2]], dtype=np.float32)  # scores 1 2 3 5 6 and 1 0 6 4 10
    scores, ids = search(docs, queries, 5, "dot", add_chunk=2)
    assert ids.tolist() == [[4, 3, 2, 1, 0], [4, 2, 3, 0, 1]]
    assert scores.tolist() == [[6, 5, 3, 2, 1], [10, 6, 4, 1, 0]]


def test_search_moves_the_index_to_the_gpu_when_faiss_has_one(monkeypatch):
    """faiss-gpu's path on a CPU machine: with faiss' GPU functions stubbed to report one GPU, the
    exact index is handed to index_cpu_to_gpu and searched there; without, it stays on the CPU."""
    import faiss

    from trimbench.search import flat_index, search

    class GpuIndex:  # the moved index: faiss' own CPU index underneath, so search still runs
        def __init__(self, index):
            self.index, self.searched = index, 0

        def add(self, vectors):
            self.index.add(vectors)

        def search(self, queries, k):
            self.searched += 1
            return self.index.search(queries, k)

    moved = []
    monkeypatch.setattr(faiss, "StandardGpuResources", lambda: "resources", raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    monkeypatch.setattr(faiss, "index_cpu_to_gpu",
                        lambda resources, device, index: moved.append((resources, device)) or GpuIndex(index),
                        raising=False)
    index = flat_index(4)
    assert isinstance(index, GpuIndex) and moved == [("resources", 0)]
    docs = np.eye(4, dtype=np.float32)
    scores, ids = search(docs, docs[[2]], 1)
    assert ids.tolist() == [[2]] and len(moved) == 2
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 0)
    assert isinstance(flat_index(4), faiss.IndexFlatIP) and len(moved) == 2


def test_without_faiss_the_error_says_how_to_install_it(monkeypatch):
    import sys

    import pytest

    from trimbench.search import flat_index

    monkeypatch.setitem(sys.modules, "faiss", None)  # `import faiss` raises ImportError
    with pytest.raises(ImportError, match=r"^faiss is not installed: `make env` installs faiss-cpu, `make env "
                                          r"FAISS=gpu` faiss-gpu \(pyproject.toml's extras cpu / gpu\)$"):
        flat_index(4)


def test_a_corpus_is_added_500000_documents_at_a_time(monkeypatch):
    """The float32 copy of an fp16 corpus is made a chunk at a time: 500,001 documents are added as
    500,000 and 1, and the last one (the only one pointing the query's way) is found."""
    from trimbench import search as exact

    added = []
    make_index = exact.flat_index

    def recording_index(dim):
        index = make_index(dim)
        add = index.add
        index.add = lambda vectors: added.append(len(vectors)) or add(vectors)
        return index

    monkeypatch.setattr(exact, "flat_index", recording_index)
    docs = np.zeros((500_001, 2), dtype=np.float16)
    docs[:, 0], docs[-1] = 1, [0, 1]
    scores, ids = exact.search(docs, np.array([[0, 1]], dtype=np.float32), 1)
    assert added == [500_000, 1] and ids.tolist() == [[500_000]] and scores.tolist() == [[1.0]]
