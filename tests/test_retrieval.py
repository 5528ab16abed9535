"""The shared retrieval machinery: mining, the CE filter, metrics, one-pass encoding, real SciFact."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trimbench.beir import RetrievalSplit, read_beir_folder
from trimbench.mining import bm25_mine, filter_false_negatives, negatives_from_hits
from trimbench.search import evaluate_run, read_trec_run, run_frame, write_trec_run


def _split(n_docs: int = 12) -> RetrievalSplit:
    words = ["apple", "river", "engine", "violin", "planet", "garden", "copper", "winter", "falcon", "marble",
             "harbor", "lantern"]
    corpus = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n_docs)], "title": "",
                           "text": [f"{words[i]} {words[i]} story about {words[(i + 1) % n_docs]} and apple"
                                    for i in range(n_docs)]})
    queries = pd.DataFrame({"query_id": ["q0", "q1", "q2"], "text": ["apple river", "engine violin", "planet"]})
    qrels = pd.DataFrame({"query_id": ["q0", "q0", "q1", "q2"], "doc_id": ["d0", "d11", "d2", "d4"],
                          "relevance": [1, 1, 1, 2]})
    return RetrievalSplit(corpus, queries, qrels)


def test_negatives_from_hits_skip_positives_and_keep_order():
    hits = [("a", 3.0), ("p", 2.5), ("b", 2.0), ("c", 1.0)]
    assert negatives_from_hits(hits, {"p"}, 2) == [{"doc_id": "a", "score": 3.0}, {"doc_id": "b", "score": 2.0}]


def test_bm25_mining_excludes_positives():
    split = _split()
    rows = list(bm25_mine(split, depth=10, keep=5))
    relevant = split.relevant()
    assert [r["query_id"] for r in rows] == ["q0", "q1", "q2"]
    for row in rows:
        negatives = [n["doc_id"] for n in row["negatives"]]
        assert negatives and not set(negatives) & relevant[row["query_id"]]
        assert row["positives"] == sorted(relevant[row["query_id"]])
        scores = [n["score"] for n in row["negatives"]]
        assert scores == sorted(scores, reverse=True) and len(negatives) <= 5
    # BM25 really ranks: "apple river" hits d1 (river twice, apple once) among the negatives first.
    assert rows[0]["negatives"][0]["doc_id"] == "d1"


def test_cross_encoder_filter_drops_exactly_the_rule():
    negatives = [{"doc_id": d, "score": 1.0} for d in ("a", "b", "c", "d")]
    # min positive CE score 2.0, margin 0.5 -> drop a negative scoring above 1.5
    kept = filter_false_negatives(negatives, [2.0, 3.0], [1.5, 1.51, -4.0, 2.5], margin=0.5)
    assert [n["doc_id"] for n in kept] == ["a", "c"]
    assert [n["ce_score"] for n in kept] == [1.5, -4.0]
    # margin 0: only those strictly above the weakest positive go
    kept = filter_false_negatives(negatives, [2.0], [2.0, 2.01, 0.0, 5.0], margin=0.0)
    assert [n["doc_id"] for n in kept] == ["a", "c"]


def test_metrics_equal_trec_eval_on_a_hand_made_run(tmp_path):
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q3"], "doc_id": ["d1", "d3", "d5", "d7"],
                          "relevance": [1, 2, 1, 1]})
    run = pd.DataFrame({"query_id": ["q1", "q1", "q1", "q2", "q2", "q3", "q3"],
                        "doc_id": ["d2", "d3", "d1", "d4", "d6", "d7", "d8"],
                        "score": [0.9, 0.8, 0.7, 0.5, 0.4, 0.5, 0.5], "rank": [1, 2, 3, 1, 2, 1, 2]})
    path = tmp_path / "run.trec"
    write_trec_run(run, path, "hand")
    got = evaluate_run(read_trec_run(path), qrels, ["mrr@10", "ndcg@10", "recall@10", "recall@100"])
    # trec_eval: rank by score, ties by doc id descending (so q3's tie puts d8 before d7);
    # gain = relevance, discount log2(rank + 1); queries without a relevant hit count as 0.
    ndcg_q1 = (2 / math.log2(3) + 1 / math.log2(4)) / (2 + 1 / math.log2(3))
    ndcg_q3 = (1 / math.log2(3)) / 1
    assert got["mrr@10"] == pytest.approx((0.5 + 0 + 0.5) / 3, abs=1e-6)
    assert got["ndcg@10"] == pytest.approx((ndcg_q1 + 0 + ndcg_q3) / 3, abs=1e-6)
    assert got["recall@10"] == pytest.approx(2 / 3, abs=1e-6)
    assert got["recall@100"] == pytest.approx(2 / 3, abs=1e-6)


def test_run_frame_ranks_and_drops_faiss_padding():
    scores = np.array([[3.0, 2.0, -1.0], [1.0, 0.5, 0.2]], dtype=np.float32)
    ids = np.array([[2, 0, -1], [1, 2, 0]])
    run = run_frame(["a", "b"], ["x", "y", "z"], scores, ids)
    assert list(run["doc_id"]) == ["z", "x", "y", "z", "x"]
    assert list(run["rank"]) == [1, 2, 1, 2, 3]


def test_corpus_encoded_in_one_pass_for_every_cell(tiny_bert_dir, tmp_path):
    from trimbench.encoding import ForwardCounter
    from trimbench.models import load_sentence_model
    from trimbench.search import encode_retrieval_set, grid_scores, write_manifest

    split = _split()
    model = load_sentence_model(tiny_bert_dir, pooling="cls")
    counter = ForwardCounter(model)
    layers, dims = [1, 2, 3], [32, 16, 8]
    encode_retrieval_set(model, split, layers, max(dims), tmp_path / "emb" / "toy", q_max=16, p_max=32,
                         batch_size=4, chunk_size=5)
    write_manifest(tmp_path / "emb", layers, max(dims), {"toy": {}})
    # 12 documents in chunks of 5 (5, 5, 2) at 4 per batch: 2 + 2 + 1 passes; 3 queries: 1 pass.
    assert counter.calls == 5 + 1
    docs = np.load(tmp_path / "emb" / "toy" / "docs.npy", mmap_mode="r")
    assert docs.dtype == np.float16 and docs.shape == (3, 12, 32)
    rows = grid_scores(tmp_path / "emb", "toy", split, layers, dims, ["ndcg@10", "recall@10"], 10, "dot",
                       tmp_path / "runs", {"variant": "x"})
    assert counter.calls == 6  # searching the 9 cells runs the model no more
    assert len(rows) == 3 * 3 * 2 and all(0 <= r["value"] <= 1 for r in rows)
    assert len(list((tmp_path / "runs").glob("*.trec"))) == 9
    # Every query retrieves all 12 documents: recall@10 < 1 only because 12 > 10.
    first = read_trec_run(tmp_path / "runs" / "toy.L3.d8.trec")
    assert first.groupby("query_id").size().tolist() == [10, 10, 10]


@pytest.mark.realdata
def test_pretrained_minilm_on_scifact_matches_mteb(shared_data: Path, minilm_dir, tmp_path):
    """all-MiniLM-L6-v2, its mean pooling, cosine, ``title + " " + text``: MTEB gives nDCG@10 0.64508."""
    from trimbench.models import load_sentence_model
    from trimbench.search import encode_retrieval_set, grid_scores, write_manifest

    split = read_beir_folder(shared_data / "scifact", "test")
    assert len(split.corpus) == 5183 and len(split.queries) == 300
    model = load_sentence_model(minilm_dir)
    encode_retrieval_set(model, split, [6], 384, tmp_path / "scifact", q_max=None, p_max=None, batch_size=32,
                         chunk_size=100_000)
    write_manifest(tmp_path, [6], 384, {"scifact": {}})
    rows = grid_scores(tmp_path, "scifact", split, [6], [384], ["ndcg@10"], 1000, "cosine", None, {})
    assert abs(rows[0]["value"] - 0.6451) <= 0.001, rows[0]["value"]


@pytest.mark.realdata
def test_trec_topics_and_qrels_files_replace_a_splits_judgements(shared_data: Path):
    """The DL19 sample's corpus with the official TREC DL 2019 topics and graded qrels."""
    from trimbench.beir import load_retrieval

    entry = {"source": "local", "path": str(shared_data / "msmarco-dl19-sample"), "splits": {},
             "topics": str(shared_data / "msmarco-trec" / "topics.dl19-passage.txt"),
             "qrels": str(shared_data / "msmarco-trec" / "qrels.dl19-passage.txt")}
    split = load_retrieval("dl19", entry, "test")
    assert len(split.corpus) == 5000 and len(split.queries) == 43  # the judged DL19 queries
    assert set(split.qrels["relevance"]) == {0, 1, 2, 3}  # graded, judged non-relevant kept
    assert split.relevant()["19335"] >= {"1720389"}


def test_dense_miner_excludes_positives(tiny_bert_dir):
    from trimbench.mining import dense_mine
    from trimbench.models import load_sentence_model

    split = _split()
    rows = list(dense_mine(split, load_sentence_model(tiny_bert_dir, pooling="cls"), depth=6, keep=4))
    relevant = split.relevant()
    for row in rows:
        negatives = [n["doc_id"] for n in row["negatives"]]
        assert len(negatives) == 4 and not set(negatives) & relevant[row["query_id"]]
