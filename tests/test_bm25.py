"""The BM25 baseline and the miner's index (trimbench/bm25.py) on a hand-made corpus: our run is
pyserini's searcher's on the same index, multifield differs from flat where titles matter, and a
multifield index of a corpus without titles is refused, by the config and by the index job."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from trimbench.bm25 import Searcher, build_index, documents
from trimbench.config import prepare as tb_config
from trimbench.errors import ConfigError, DataError
from trimbench.java import setup_java

REPO = Path(__file__).resolve().parents[1]

#: "zebra" is in d-title's title only and in d-text's text: a flat index (one field) and a
#: multifield one (text, title apart) score them differently
CORPUS = pd.DataFrame({
    "doc_id": ["d-title", "d-text", "d-other", "d-more"],
    "title": ["zebra", "", "horses", "zebra crossing"],
    "text": ["apple pie", "zebra apple banana", "apple orchard zebra fields near the river", "road safety rules"],
})
QUERY_IDS, QUERIES = ["q1", "q2"], ["zebra", "apple zebra"]


@pytest.fixture(scope="module")
def indexes(tmp_path_factory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("bm25")
    out = {}
    for fields in ("flat", "multifield"):
        build_index(CORPUS, work / fields, fields, threads=1, dataset="hand-made")
        out[fields] = work / fields
    return out


def pyserini_run(index: Path, weights: dict | None) -> list[tuple[str, str, float]]:
    """pyserini's own LuceneSearcher at its BM25 defaults (k1 0.9, b 0.4), query by query."""
    setup_java()
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(str(index))
    searcher.set_bm25(0.9, 0.4)
    extra = {"fields": weights} if weights else {}
    hits = [(qid, hit.docid, hit.score) for qid, text in zip(QUERY_IDS, QUERIES, strict=True)
            for hit in searcher.search(text, k=10, **extra)]
    searcher.close()
    return hits


@pytest.mark.parametrize("fields", ["flat", "multifield"])
def test_bm25_run_is_pyserinis_searcher_on_the_same_index(indexes, fields):
    searcher = Searcher(indexes[fields], fields)
    run = searcher.run(QUERY_IDS, QUERIES, k=10)
    searcher.close()
    ours = list(zip(run["query_id"], run["doc_id"], run["score"], strict=True))
    # pyserini 2cr beir.yaml, condition bm25-multifield: --fields contents=1.0 title=1.0 (written out
    # here, not read from trimbench.bm25, so that a wrong weight there fails this test)
    theirs = pyserini_run(indexes[fields], {"contents": 1.0, "title": 1.0} if fields == "multifield" else None)
    assert [(q, d) for q, d, _ in ours] == [(q, d) for q, d, _ in theirs]
    assert [s for *_, s in ours] == pytest.approx([s for *_, s in theirs], abs=1e-6)
    assert list(run["rank"]) == [r for q in QUERY_IDS for r in range(1, (run["query_id"] == q).sum() + 1)]


def test_multifield_differs_from_flat_where_titles_matter(indexes):
    runs = {}
    for fields in ("flat", "multifield"):
        searcher = Searcher(indexes[fields], fields)
        runs[fields] = searcher.run(["q1"], ["zebra"], k=10)
        searcher.close()
    # zebra is in every document: flat, d-title's short contents ("zebra apple pie") keeps it second;
    # multifield, its zebra is in the title field alone and it falls behind d-other's text
    assert runs["flat"]["doc_id"].tolist() == ["d-text", "d-title", "d-more", "d-other"]
    assert runs["multifield"]["doc_id"].tolist() == ["d-text", "d-other", "d-title", "d-more"]


def test_documents_are_laid_out_as_pyserinis_beir_collections():
    flat, multi = list(documents(CORPUS, "flat")), list(documents(CORPUS, "multifield"))
    assert flat[0] == {"id": "d-title", "contents": "zebra apple pie"}
    assert flat[1] == {"id": "d-text", "contents": "zebra apple banana"}
    assert multi[0] == {"id": "d-title", "contents": "apple pie", "title": "zebra"}


def test_a_multifield_index_of_a_corpus_without_titles_names_the_dataset(tmp_path):
    with pytest.raises(DataError, match="dataset 'untitled': bm25.fields multifield needs document titles"):
        build_index(CORPUS.assign(title=""), tmp_path / "index", "multifield", threads=1, dataset="untitled")
    assert not (tmp_path / "index").exists()


def test_multifield_bm25_on_a_corpus_without_titles_is_a_config_error():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    tb_config.prepare(config, REPO)  # flat, the default, is fine
    config["experiments"]["retrieval"]["bm25"] = {"fields": "multifield"}
    with pytest.raises(ConfigError, match=r"experiments\.retrieval\.bm25\.fields: multifield needs document "
                                          r"titles and dataset 'lee-ict-retrieval' has none"):
        tb_config.prepare(config, REPO)
