"""Row counts before any job (trimbench.data.sizes): counted in a local copy, read from a contract, or
unknown with what would give them; never guessed."""

from __future__ import annotations

import json

from trimbench.data.sizes import JUDGED_TOPICS, corpus_rows, query_rows, split_rows


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_a_local_split_is_counted_in_its_file(tmp_path):
    _jsonl(tmp_path / "train.jsonl", [{"sentence1": "a", "sentence2": "b", "score": 1.0}] * 7)
    (tmp_path / "test.tsv").write_text("sentence1\tsentence2\tscore\na\tb\t1\n\nc\td\t2\n")
    entry = {"source": "local", "path": str(tmp_path), "splits": {}, "kind": "sts"}
    assert split_rows("copy", entry, "train", tmp_path).n == 7
    # the header is no row, a blank line neither
    assert split_rows("copy", entry, "test", tmp_path).n == 2
    missing = split_rows("copy", entry, "validation", tmp_path)
    assert missing.n is None and "validation" in missing.source


def test_a_filtering_builder_counts_a_local_copys_kept_rows_and_bounds_a_hubs(tmp_path):
    """benchmarks/plan_calibration.py found STS-B's 5,749 rows priced where min_score kept 1,406."""
    scores = [5.0, 4.5, 3.0, 1.0, 4.0]
    _jsonl(tmp_path / "train.jsonl", [{"sentence1": f"a{i}", "sentence2": f"b{i}", "score": score}
                                      for i, score in enumerate(scores)])
    entry = {"source": "local", "path": str(tmp_path), "splits": {}, "kind": "pairs", "min_score": 0.8,
             "score_range": [0, 5], "columns": {"anchor": "sentence1", "positive": "sentence2"}}
    count = split_rows("pairs", entry, "train", tmp_path)
    # scores 4.0, 4.5 and 5.0 of 5: at least 0.8 of the scale
    assert count.n == 3 and "min_score" in count.source
    hub = {"source": "hub", "id": "sentence-transformers/stsb", "revision": "ab7a5ac0e35aa22088bdcf23e7fd99b220e53308",
           "splits": {}, "kind": "pairs", "min_score": 0.8}
    bounded = split_rows("stsb-pairs", hub, "train", tmp_path)
    assert bounded.n == 5749 and "upper bound" in bounded.source


def test_a_hub_split_is_read_from_its_contract_and_a_missing_count_says_so(tmp_path):
    stsb = {"source": "hub", "id": "sentence-transformers/stsb", "revision": "ab7a5ac0e35aa22088bdcf23e7fd99b220e53308",
            "splits": {}, "kind": "sts"}
    count = split_rows("stsb", stsb, "train", tmp_path)
    assert count.n == 5749 and "sentence-transformers--stsb.yaml" in count.source
    sick = {"source": "hub", "id": "mteb/sickr-sts", "splits": {}, "kind": "sts"}
    unknown = split_rows("sickr", sick, "train", tmp_path)
    assert unknown.n is None


def test_a_local_retrieval_copy_counts_its_documents_and_judged_queries(tmp_path):
    _jsonl(tmp_path / "corpus.jsonl", [{"_id": str(i), "title": "", "text": "t"} for i in range(5)])
    (tmp_path / "qrels").mkdir()
    # three judgements of two queries
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t1\t1\nq1\t2\t1\nq2\t3\t1\n")
    entry = {"source": "local", "path": str(tmp_path), "splits": {}, "kind": "retrieval"}
    assert corpus_rows("copy", entry, tmp_path, "test").n == 5
    assert query_rows("copy", entry, "test", tmp_path).n == 2


def test_hub_retrieval_counts_come_from_the_corpus_and_qrels_contracts(tmp_path):
    scifact = {"source": "hub", "id": "BeIR/scifact", "revision": "984eed826375f18d27936c4a32bf0f8491e3f414",
               "splits": {}, "kind": "retrieval"}
    assert corpus_rows("scifact", scifact, tmp_path, "test").n == 5183
    assert query_rows("scifact", scifact, "test", tmp_path).n == 300
    assert query_rows("scifact", scifact, "train", tmp_path).n == 809
    # nfcorpus' train split's judged queries are recorded nowhere: unknown, not guessed
    nfcorpus = {"source": "hub", "id": "BeIR/nfcorpus", "splits": {}, "kind": "retrieval"}
    assert query_rows("nfcorpus", nfcorpus, "train", tmp_path).n is None
    # BEIR's dev.tsv is the contract's split 'validation'
    msmarco = {"source": "hub", "id": "BeIR/msmarco", "splits": {}, "kind": "retrieval"}
    assert query_rows("msmarco", msmarco, "dev", tmp_path).n == 6980
    dl19 = {"source": "hub", "id": "BeIR/msmarco", "splits": {"test": "dev"}, "kind": "retrieval",
            "qrels_url": "https://example.org/topics-and-qrels/qrels.dl19-passage.txt"}
    assert query_rows("trec-dl-2019", dl19, "test", tmp_path).n == JUDGED_TOPICS["qrels.dl19-passage.txt"][0] == 43
    other = {**dl19, "qrels_url": "https://example.org/qrels.other.txt"}
    assert query_rows("other", other, "test", tmp_path).n is None
