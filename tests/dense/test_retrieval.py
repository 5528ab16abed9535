"""The shared retrieval machinery: mining, the CE filter, metrics, one-pass encoding, real SciFact."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trimbench.bm25 import build_index
from trimbench.data.beir import read_beir_folder
from trimbench.data.io import RetrievalSplit
from trimbench.negatives import bm25_mine, filter_false_negatives, negatives_from_hits
from trimbench.runs import evaluate_run, read_trec_run, run_frame, write_trec_run


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


def test_bm25_mining_excludes_positives(tmp_path):
    split = _split()
    build_index(split.corpus, tmp_path / "index", "flat", threads=1, dataset="hand-made")
    rows = list(bm25_mine(split, tmp_path / "index", depth=10, keep=5, k1=0.9, b=0.4))
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


def test_bm25_mining_searches_at_the_configured_k1_and_b(tmp_path):
    """The miner's scores are pyserini's own LuceneSearcher's at the k1 and b it is given (the
    experiment's bm25 section), not at pyserini's defaults 0.9 / 0.4 nor Lucene's 1.2 / 0.75."""
    from trimbench.java import setup_java

    split = _split()
    build_index(split.corpus, tmp_path / "index", "flat", threads=1, dataset="hand-made")
    setup_java()
    from pyserini.search.lucene import LuceneSearcher

    by_parameters = {}
    for k1, b in ((2.0, 0.9), (0.3, 0.1)):
        rows = list(bm25_mine(split, tmp_path / "index", depth=12, keep=12, k1=k1, b=b))
        searcher = LuceneSearcher(str(tmp_path / "index"))
        searcher.set_bm25(k1, b)
        for row, text in zip(rows, split.queries["text"], strict=True):
            expected = [(hit.docid, pytest.approx(hit.score, abs=1e-6)) for hit in searcher.search(text, k=12)
                        if hit.docid not in row["positives"]]
            assert [(n["doc_id"], n["score"]) for n in row["negatives"]] == expected
        searcher.close()
        by_parameters[k1, b] = [n["score"] for row in rows for n in row["negatives"]]
    assert by_parameters[2.0, 0.9] != pytest.approx(by_parameters[0.3, 0.1])  # the parameters matter here


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


def _filler(n: int) -> list[str]:
    """Ids of irrelevant documents (unjudged, but for q1's n00)."""
    return [f"n{i:02d}" for i in range(n)]


def _graded_run_and_qrels() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Twelve hits per query (scores 12 .. 1 unless tied) and graded judgements:
    q1: its one relevant document at rank 11; q2: a relevant document tied at the top score with an
    irrelevant one whose id sorts before it; q3: grades 1-3 at ranks 3, 4, 11 and one grade-2 never
    retrieved; q4: judged but not in the run; q5: its relevant document tied at ranks 10-11."""
    def hits(query, ids, scores=None):
        scores = scores or [float(12 - i) for i in range(len(ids))]
        return pd.DataFrame({"query_id": query, "doc_id": ids, "score": scores})

    filler = _filler(11)
    q1 = hits("q1", filler[:10] + ["rel"] + filler[10:])
    # "b" and "a" tie at 12: trec_eval puts "b" (larger id) first; an ascending tie-break would not.
    q2 = hits("q2", ["a", "b"] + filler[:10], [12.0, 12.0] + [float(11 - i) for i in range(10)])
    q3 = hits("q3", filler[:2] + ["g2", "g1"] + filler[2:9] + ["g3"])
    # "z" and "y" tie at 3: trec_eval ranks "z" 10th, so the cut at 10 keeps it.
    q5 = hits("q5", filler[:9] + ["y", "z"], [float(12 - i) for i in range(9)] + [3.0, 3.0])
    # the run's own rank column is ignored, as by trec_eval: give a wrong one
    run = pd.concat([q1, q2, q3, q5], ignore_index=True).assign(rank=1)
    qrels = pd.DataFrame([("q1", "rel", 1), ("q1", "n00", 0), ("q2", "b", 1), ("q2", "n03", 2),
                          ("q3", "g1", 1), ("q3", "g2", 2), ("q3", "g3", 3), ("q3", "unseen", 2),
                          ("q4", "x", 1), ("q5", "z", 1)], columns=["query_id", "doc_id", "relevance"])
    return run, qrels


def test_metrics_equal_trec_eval_with_its_cutoff_ties_and_grades():
    """Every retrieval metric against its definition (trec_eval -c: the mean over the five judged
    queries) and, for RR@10, against trec_eval's own recip_rank (pytrec_eval) on the run cut to 10
    in trec_eval's order, i.e. ``trec_eval -M 10 -m recip_rank``."""
    import pytrec_eval

    run, qrels = _graded_run_and_qrels()
    metrics = ["mrr@10", "ndcg@10", "recall@10", "recall@100", "recall@1000"]
    got = evaluate_run(run, qrels, metrics)

    def dcg(gains):
        return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))

    # q1: nothing relevant in the top 10 (RR@10 0, not 1/11); q2: "b" first, "n03" (grade 2) at
    # rank 6 (b, a, n00, n01, n02, n03); q3: g2 at 3, g1 at 4, g3 at 11 (outside nDCG@10); q5: z 10th.
    ndcg = [0.0, dcg([1, 0, 0, 0, 0, 2]) / dcg([2, 1]), dcg([0, 0, 2, 1]) / dcg([3, 2, 2, 1]), 0.0,
            dcg([0] * 9 + [1]) / dcg([1])]
    expected = {
        "mrr@10": (0 + 1 + 1 / 3 + 0 + 1 / 10) / 5,
        "ndcg@10": sum(ndcg) / 5,
        "recall@10": (0 + 2 / 2 + 2 / 4 + 0 + 1) / 5,
        "recall@100": (1 + 1 + 3 / 4 + 0 + 1) / 5,
        "recall@1000": (1 + 1 + 3 / 4 + 0 + 1) / 5,
    }
    assert got == pytest.approx(expected, abs=1e-9)

    # trec_eval's recip_rank on the hand-cut run (its order: q2's tie gives b before a).
    top10 = {"q1": _filler(10), "q2": ["b", "a"] + _filler(8), "q3": _filler(2) + ["g2", "g1"] + _filler(8)[2:],
             "q5": _filler(9) + ["z"]}
    cut = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in top10.items()}
    judged = {q: dict(zip(g["doc_id"], g["relevance"].astype(int), strict=True)) for q, g in qrels.groupby("query_id")}
    trec = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"}).evaluate(cut)
    assert got["mrr@10"] == pytest.approx(sum(v["recip_rank"] for v in trec.values()) / 5, abs=1e-12)
    # The same without the cut counts q1's rank-11 hit (what ir-measures' pytrec_eval RR@10 gave).
    uncut = {q: dict(zip(g["doc_id"], g["score"], strict=True)) for q, g in run.groupby("query_id")}
    uncut_rr = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"}).evaluate(uncut)
    assert sum(v["recip_rank"] for v in uncut_rr.values()) / 5 == pytest.approx(expected["mrr@10"] + 1 / 11 / 5)


def test_binary_measures_count_the_datasets_relevance_level():
    """TREC DL's MRR and recall count grade >= 2 (trec_eval -l 2, SPLADE's binary qrels); nDCG's
    gains stay the grades."""
    run, qrels = _graded_run_and_qrels()
    metrics = ["mrr@10", "ndcg@10", "recall@10", "recall@1000"]
    level1 = evaluate_run(run, qrels, metrics)
    level2 = evaluate_run(run, qrels, metrics, relevance_level=2)
    # grade >= 2: q1, q4 and q5 have none (0); q2 has n03 (rank 6; b is grade 1); q3 has g2 (rank
    # 3), g3 (rank 11) and unseen.
    assert level2["mrr@10"] == pytest.approx((0 + 1 / 6 + 1 / 3 + 0 + 0) / 5)
    assert level2["recall@10"] == pytest.approx((0 + 1 + 1 / 3 + 0 + 0) / 5)
    assert level2["recall@1000"] == pytest.approx((0 + 1 + 2 / 3 + 0 + 0) / 5)
    assert level2["ndcg@10"] == level1["ndcg@10"]


def test_run_frame_ranks_and_drops_faiss_padding():
    scores = np.array([[3.0, 2.0, -1.0], [1.0, 0.5, 0.2]], dtype=np.float32)
    ids = np.array([[2, 0, -1], [1, 2, 0]])
    run = run_frame(["a", "b"], ["x", "y", "z"], scores, ids)
    assert list(run["doc_id"]) == ["z", "x", "y", "z", "x"]
    assert list(run["rank"]) == [1, 2, 1, 2, 3]


def test_corpus_encoded_in_one_pass_for_every_cell(tiny_bert_dir, tmp_path):
    from trimbench.dense.search import encode_retrieval_set, grid_scores, write_manifest
    from trimbench.encoding import ForwardCounter
    from trimbench.models import load_sentence_model

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
@pytest.mark.slow  # the 5,183 abstracts at 256 tokens: minutes on a CPU core
def test_pretrained_minilm_on_scifact_matches_mteb(shared_data: Path, minilm_dir, tmp_path):
    """all-MiniLM-L6-v2, its mean pooling, cosine, ``title + " " + text``: MTEB gives nDCG@10 0.64508.
    MRR@10, nDCG@10 and recall@100 also equal sentence-transformers' InformationRetrievalEvaluator
    (its own code, cut at k; the Home Depot seed's evaluator) on the same run."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    from trimbench.dense.search import encode_retrieval_set, grid_scores, write_manifest
    from trimbench.models import load_sentence_model

    split = read_beir_folder(shared_data / "scifact", "test")
    assert len(split.corpus) == 5183 and len(split.queries) == 300
    model = load_sentence_model(minilm_dir)
    encode_retrieval_set(model, split, [6], 384, tmp_path / "scifact", q_max=None, p_max=None, batch_size=32,
                         chunk_size=100_000)
    write_manifest(tmp_path, [6], 384, {"scifact": {}})
    rows = grid_scores(tmp_path, "scifact", split, [6], [384], ["mrr@10", "ndcg@10", "recall@100"], 1000, "cosine",
                       tmp_path / "runs", {})
    ours = {row["metric"]: row["value"] for row in rows}
    assert abs(ours["ndcg@10"] - 0.6451) <= 0.001, ours

    run = read_trec_run(tmp_path / "runs" / "scifact.L6.d384.trec")
    relevant = {q: set(g.loc[g["relevance"] > 0, "doc_id"]) for q, g in split.qrels.groupby("query_id")}
    evaluator = InformationRetrievalEvaluator({q: q for q in relevant}, {d: d for d in split.corpus["doc_id"]},
                                              relevant, mrr_at_k=[10], ndcg_at_k=[10], precision_recall_at_k=[100])
    hits = {q: [{"corpus_id": d, "score": s} for d, s in zip(g["doc_id"], g["score"], strict=True)]
            for q, g in run.groupby("query_id")}
    theirs = evaluator.compute_metrics([hits.get(q, []) for q in evaluator.queries_ids])
    assert ours["mrr@10"] == pytest.approx(theirs["mrr@k"][10], abs=1e-9)
    assert ours["ndcg@10"] == pytest.approx(theirs["ndcg@k"][10], abs=1e-9)
    assert ours["recall@100"] == pytest.approx(theirs["recall@k"][100], abs=1e-9)


@pytest.mark.realdata
def test_trec_topics_and_qrels_files_replace_a_splits_judgements(shared_data: Path):
    """The DL19 sample's corpus with the official TREC DL 2019 topics and graded qrels."""
    from trimbench.data.beir import load_retrieval

    entry = {"source": "local", "path": str(shared_data / "msmarco-dl19-sample"), "splits": {},
             "topics": str(shared_data / "msmarco-trec" / "topics.dl19-passage.txt"),
             "qrels": str(shared_data / "msmarco-trec" / "qrels.dl19-passage.txt")}
    split = load_retrieval("dl19", entry, "test")
    assert len(split.corpus) == 5000 and len(split.queries) == 43  # the judged DL19 queries
    assert set(split.qrels["relevance"]) == {0, 1, 2, 3}  # graded, judged non-relevant kept
    assert split.relevant()["19335"] >= {"1720389"}


def test_dense_miner_excludes_positives(tiny_bert_dir):
    from trimbench.models import load_sentence_model
    from trimbench.negatives import dense_mine

    split = _split()
    rows = list(dense_mine(split, load_sentence_model(tiny_bert_dir, pooling="cls"), depth=6, keep=4))
    relevant = split.relevant()
    for row in rows:
        negatives = [n["doc_id"] for n in row["negatives"]]
        assert len(negatives) == 4 and not set(negatives) & relevant[row["query_id"]]


def test_datasets_over_one_corpus_share_its_encoding(tiny_bert_dir, tmp_path):
    """DL19 / DL20 beside MS MARCO dev: the corpus is encoded once, in the first dataset's folder;
    the others' queries search it and score as if they had their own copy."""
    from trimbench.dense.search import encode_queries, encode_retrieval_set, grid_scores, write_manifest
    from trimbench.encoding import ForwardCounter
    from trimbench.models import load_sentence_model

    split = _split()
    other = RetrievalSplit(split.corpus, split.queries.iloc[1:].reset_index(drop=True), split.qrels)
    model = load_sentence_model(tiny_bert_dir, pooling="cls")
    counter = ForwardCounter(model)
    emb = tmp_path / "emb"
    counts = {"dev": encode_retrieval_set(model, split, [3], 32, emb / "dev", 16, 32, 4, 50),
              "dl": {"docs_of": "dev", **encode_queries(model, other.queries, [3], 32, emb / "dl", 16, 4)}}
    write_manifest(emb, [3], 32, counts)
    assert counter.calls == 3 + 1 + 1 and not (emb / "dl" / "docs.npy").exists()
    shared = grid_scores(emb, "dl", other, [3], [32, 8], ["ndcg@10"], 10, "dot", None, {})
    encode_retrieval_set(model, other, [3], 32, tmp_path / "own" / "dl", 16, 32, 4, 50)
    write_manifest(tmp_path / "own", [3], 32, {"dl": {}})
    own = grid_scores(tmp_path / "own", "dl", other, [3], [32, 8], ["ndcg@10"], 10, "dot", None, {})
    assert [r["value"] for r in shared] == pytest.approx([r["value"] for r in own])


def _write_jsonl_gz(path: Path, rows: list[dict]) -> None:
    import gzip
    import json

    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def _tevatron_folder(folder: Path) -> Path:
    """Tevatron's files in its layout: corpus.jsonl.gz and train / dev splits."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = [{"docid": str(i), "title": f" Title {i} " if i % 2 else "-", "text": f" passage {i} text "}
              for i in range(40)]
    _write_jsonl_gz(folder / "corpus.jsonl.gz", corpus)

    def passages(ids):
        return [{"docid": str(i), "title": corpus[i]["title"], "text": corpus[i]["text"]} for i in ids]

    train = [{"query_id": "7", "query": " what is 7 ", "positive_passages": passages([3, 1]),
              "negative_passages": passages(range(10, 40))},
             {"query_id": "8", "query": "eight", "positive_passages": passages([2]),
              "negative_passages": passages([5, 6])}]
    _write_jsonl_gz(folder / "train.jsonl.gz", train)
    _write_jsonl_gz(folder / "dev.jsonl.gz", [{"query_id": "100", "query": "dev q", "positive_passages": [],
                                               "negative_passages": []},
                                              {"query_id": "101", "query": "unjudged", "positive_passages": [],
                                               "negative_passages": []}])
    return folder


def test_tevatron_layout_gives_titles_positives_and_negatives_in_order(tmp_path):
    from trimbench.data.beir import load_retrieval
    from trimbench.data.io import doc_texts
    from trimbench.negatives import dataset_negatives

    entry = {"source": "local", "path": str(_tevatron_folder(tmp_path / "tev")), "format": "tevatron",
             "splits": {}}
    split = load_retrieval("msmarco-train", entry, "train")
    # Tevatron's format_passage: f"{title.strip()} {text.strip()}".strip()
    texts = dict(zip(split.corpus["doc_id"], doc_texts(split.corpus), strict=True))
    assert texts["1"] == "Title 1 passage 1 text" and texts["2"] == "- passage 2 text"
    assert split.queries.to_dict("records") == [{"query_id": "7", "text": "what is 7"},
                                                 {"query_id": "8", "text": "eight"}]
    rows = list(dataset_negatives(split))
    assert rows[0]["positives"] == ["3", "1"]  # the source's order (Tevatron rotates by position)
    assert [n["doc_id"] for n in rows[0]["negatives"]] == [str(i) for i in range(10, 40)]
    assert [n["doc_id"] for n in rows[1]["negatives"]] == ["5", "6"]


def test_trec_files_are_read_locally_or_downloaded(tmp_path):
    """A TREC file beside the run is read; an absent one comes from its URL (here a file:// URL);
    absent with no URL is one error naming the file."""
    from trimbench.data.beir import load_retrieval
    from trimbench.errors import DataError

    folder = _tevatron_folder(tmp_path / "tev")
    (tmp_path / "remote").mkdir()
    (tmp_path / "remote" / "qrels.txt").write_text("100 0 4 1\n")
    (tmp_path / "remote" / "topics.txt").write_text("200\tdl query\n201\tunjudged dl query\n")
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "qrels.txt").write_text("100 Q0 9 1\n200 Q0 4 3\n200 Q0 5 0\n")
    base = {"source": "local", "path": str(folder), "format": "tevatron", "splits": {}}
    # dev: Tevatron's queries, judged by the qrels file (Tevatron's dev split has no positives)
    dev = load_retrieval("msmarco", {**base, "qrels": "local/nothing.txt",
                                     "qrels_url": (tmp_path / "remote" / "qrels.txt").as_uri()}, "dev", tmp_path)
    assert dev.queries["query_id"].tolist() == ["100"] and dev.qrels.values.tolist() == [["100", "4", 1]]
    dev = load_retrieval("msmarco", {**base, "qrels": "local/qrels.txt",
                                     "qrels_url": (tmp_path / "remote" / "qrels.txt").as_uri()}, "dev", tmp_path)
    assert dev.qrels.loc[dev.qrels["query_id"] == "100", "doc_id"].tolist() == ["9"]  # the local file wins
    # DL: topics and qrels both from files (Tevatron's split is not read), graded judgements kept
    dl = load_retrieval("dl", {**base, "topics_url": (tmp_path / "remote" / "topics.txt").as_uri(),
                               "qrels": str(tmp_path / "local" / "qrels.txt")}, "test", tmp_path)
    assert dl.queries.to_dict("records") == [{"query_id": "200", "text": "dl query"}]
    assert sorted(dl.qrels["relevance"]) == [0, 1, 3] and len(dl.corpus) == 40
    with pytest.raises(DataError, match=r"TREC qrels file 'local/nothing.txt' does not exist"):
        load_retrieval("msmarco", {**base, "qrels": "local/nothing.txt"}, "dev", tmp_path)
    with pytest.raises(DataError, match=r"cannot download TREC qrels file .*put it at 'local/nothing.txt'"):
        load_retrieval("msmarco", {**base, "qrels": "local/nothing.txt",
                                   "qrels_url": (tmp_path / "remote" / "gone.txt").as_uri()}, "dev", tmp_path)


def _arguana_like(tmp_path: Path) -> tuple[RetrievalSplit, Path]:
    """An ArguAna-like set: each query is itself a corpus document (same id, same vector), its
    judged counter-argument the next best; 6 documents, one layer of 4 dims, written by hand."""
    doc_ids = ["a1", "a2", "a3", "c1", "c2", "c3"]
    docs = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0],
                     [0.9, 0.1, 0, 0], [0.1, 0.9, 0, 0], [0, 0.1, 0.9, 0]], dtype=np.float16)
    folder = tmp_path / "emb" / "arguana"
    folder.mkdir(parents=True)
    np.save(folder / "docs.npy", docs[None])
    np.save(folder / "queries.npy", docs[None, :3])  # queries a1..a3 are documents a1..a3
    (tmp_path / "emb" / "manifest.json").write_text('{"layers": [1], "max_dim": 4, "datasets": {"arguana": {}}}')
    split = RetrievalSplit(pd.DataFrame({"doc_id": doc_ids, "title": "", "text": doc_ids}),
                           pd.DataFrame({"query_id": ["a1", "a2", "a3"], "text": ["a1", "a2", "a3"]}),
                           pd.DataFrame({"query_id": ["a1", "a2", "a3"], "doc_id": ["c1", "c2", "c3"], "relevance": 1}))
    return split, tmp_path / "emb"


def test_beir_search_drops_the_querys_own_document_and_keeps_k(tmp_path):
    """N2: each query's top hit is itself; dropped, k + 1 searched so k hits remain, and the judged
    counter-argument scores at rank 1 (BEIR's ignore_identical_ids, naver/splade beir_eval.py:82-88)."""
    from trimbench.dense.search import grid_scores

    split, emb = _arguana_like(tmp_path)
    metrics = ["mrr@10", "recall@10"]
    kept = grid_scores(emb, "arguana", split, [1], [4], metrics, 2, "dot", tmp_path / "kept", {})
    dropped = grid_scores(emb, "arguana", split, [1], [4], metrics, 2, "dot", tmp_path / "dropped", {},
                          ignore_identical_ids=True)
    with_self, without_self = (read_trec_run(tmp_path / d / "arguana.L1.d4.trec") for d in ("kept", "dropped"))
    assert (with_self["query_id"] == with_self["doc_id"]).sum() == 3  # the self-hit is each query's first
    assert not (without_self["query_id"] == without_self["doc_id"]).any()
    assert without_self.groupby("query_id").size().tolist() == [2, 2, 2]
    assert without_self[without_self["rank"] == 1]["doc_id"].tolist() == ["c1", "c2", "c3"]
    assert {r["metric"]: r["value"] for r in kept} == {"mrr@10": 0.5, "recall@10": 1.0}
    assert {r["metric"]: r["value"] for r in dropped} == {"mrr@10": 1.0, "recall@10": 1.0}


def test_identical_ids_are_ignored_by_default_on_beir_data_only():
    """The presets' BEIR sets drop self-hits; MS MARCO, TREC DL, Home Depot and Lee do not."""
    import yaml

    from trimbench.config.prepare import ignores_identical_ids

    def entries(preset: str) -> dict:
        return yaml.safe_load((Path(__file__).parents[2] / preset).read_text())["datasets"]

    splade, dense = entries("configs/splade.yaml"), entries("configs/2dmse-retrieval.yaml")
    assert all(ignores_identical_ids(splade[name]) for name in ("arguana", "quora", "scifact", "trec-covid"))
    assert all(ignores_identical_ids(dense[name]) for name in ("arguana", "scifact"))
    assert not any(ignores_identical_ids(splade[name]) for name in ("msmarco-dev", "trec-dl-2019", "trec-dl-2020"))
    assert not any(ignores_identical_ids(dense[name]) for name in ("msmarco", "trec-dl-2019", "trec-dl-2020"))
    assert not ignores_identical_ids(entries("configs/homedepot.yaml")["home-depot"])
    assert not ignores_identical_ids(entries("config.yaml")["lee-ict-retrieval"])
    assert not ignores_identical_ids({**splade["arguana"], "ignore_identical_ids": False})


def test_a_local_beir_folder_drops_self_hits_by_default_as_the_hub_copy_does():
    """A BEIR folder on disk (source local: a user's own, or make mini's local copy of the hub's
    SciFact) is the same data as the hub's: its self-hits go by default; a local Tevatron folder's
    ids are separate numberings, as the hub's."""
    from trimbench.config.local import _local_entry
    from trimbench.config.prepare import ignores_identical_ids

    assert ignores_identical_ids({"kind": "retrieval", "source": "local", "path": "data/arguana"})
    assert ignores_identical_ids({"kind": "retrieval", "source": "local", "format": "beir", "path": "data/arguana"})
    assert not ignores_identical_ids({"kind": "retrieval", "source": "local", "format": "tevatron", "path": "m"})
    hub = {"kind": "retrieval", "source": "hub", "id": "BeIR/scifact", "local_copy": {"path": "scifact"}}
    local = _local_entry(hub, "copies")
    assert local["source"] == "local" and ignores_identical_ids(local) and ignores_identical_ids(hub)
