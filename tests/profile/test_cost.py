"""The profile's measured costs (trimbench.profile.cost), on a tiny random BERT and hand-made embeddings.

Times on a shared machine cannot be compared (a cut model is not reliably faster in one run), so these
tests hold what cannot flake: the rows and columns, positive finite times, the model cut for real and given
back whole, bytes and index sizes against faiss' own storage, every index's ranking against a brute-force
one, FLOPs against the formula of a BERT block and the plan's full count, the spread on a hand-made frame,
and each bad input named.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from trimbench.errors import ConfigError
from trimbench.profile import cost

ENCODE_COLUMNS = ["layer", "device", "batch_size", "texts", "repeat", "seconds", "texts_per_second",
                  "tokens_per_text_mean"]
SEARCH_COLUMNS = ["precision", "dim", "n_docs", "n_queries", "k", "repeat", "seconds", "ms_per_query",
                  "index_bytes"]
TEXTS = ["A man is playing a guitar.", "Two dogs run across a snowy field near the trees.",
         "The committee approved the budget after a long debate about schools and roads in the county.",
         "Rain.", "A woman slices an onion on a wooden board while a child watches from the doorway."] * 3


@pytest.fixture(scope="module")
def tiny_model(tiny_bert_dir):
    from trimbench.models import load_sentence_model

    return load_sentence_model(tiny_bert_dir, device="cpu")


def unit_rows(rows: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# --- encode_speed -----------------------------------------------------------------------------


def test_encode_speed_gives_a_row_per_layer_and_repeat_with_real_times(tiny_model, tiny_bert_dir):
    from transformers import AutoTokenizer

    frame = cost.encode_speed(tiny_model, TEXTS, [1, 3], batch_size=4, repeats=2)
    assert list(frame.columns[:len(ENCODE_COLUMNS)]) == ENCODE_COLUMNS
    assert list(zip(frame["repeat"], frame["layer"], strict=True)) == [(0, 1), (0, 3), (1, 1), (1, 3)]
    assert set(frame["device"]) == {"cpu"} and set(frame["batch_size"]) == {4} and set(frame["texts"]) == {15}
    assert set(frame["max_seq_length"]) == {tiny_model.max_seq_length}
    assert (frame["seconds"] > 0).all() and np.isfinite(frame["seconds"]).all()
    assert np.allclose(frame["texts_per_second"], 15 / frame["seconds"])
    # the tokens a text takes: its tokenizer's own count (special tokens in, cut at max_seq_length)
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_dir), local_files_only=True)
    lengths = [len(ids) for ids in tokenizer(TEXTS, truncation=True, max_length=tiny_model.max_seq_length)["input_ids"]]
    assert list(frame["tokens_per_text_mean"]) == pytest.approx([np.mean(lengths)] * 4)


def block_calls(model) -> tuple[list[int], list]:
    """A forward-call counter on each transformer block of ``model`` (and the hooks, to remove)."""
    from trimbench.models import encoder_layers

    calls = [0] * len(encoder_layers(model[0].auto_model))

    def counter(index):
        def hook(*_):
            calls[index] += 1
        return hook

    hooks = [block.register_forward_hook(counter(i)) for i, block in enumerate(encoder_layers(model[0].auto_model))]
    return calls, hooks


def test_encode_speed_runs_the_model_cut_at_the_layer(tiny_model):
    calls, hooks = block_calls(tiny_model)
    try:
        cost.encode_speed(tiny_model, TEXTS, [1], batch_size=4, repeats=2)
    finally:
        for hook in hooks:
            hook.remove()
    # warm-up: one batch; then two repeats of the 15 texts in 4 batches each: block 1 only
    assert calls == [1 + 2 * 4, 0, 0]


@pytest.fixture(scope="module")
def tiny_deberta(tiny_deberta_dir):
    from trimbench.models import load_sentence_model

    return load_sentence_model(tiny_deberta_dir, device="cpu")


@pytest.mark.parametrize("name", ["tiny_model", "tiny_deberta"])
def test_encode_speed_gives_the_model_back_whole(name, request):
    import torch

    from trimbench.models import encoder_layers

    tiny_model = request.getfixturevalue(name)
    hf_model = tiny_model[0].auto_model
    blocks, state = encoder_layers(hf_model), {k: v.clone() for k, v in hf_model.state_dict().items()}
    before = tiny_model.encode(TEXTS[:5])
    cost.encode_speed(tiny_model, TEXTS, [2, 1], batch_size=8, repeats=1)
    assert encoder_layers(hf_model) is blocks and len(blocks) == 3 and hf_model.config.num_hidden_layers == 3
    after = hf_model.state_dict()
    assert after.keys() == state.keys() and all(torch.equal(after[k], state[k]) for k in state)
    np.testing.assert_array_equal(tiny_model.encode(TEXTS[:5]), before)


def test_encode_speed_gives_the_model_back_when_encoding_fails(tiny_model, monkeypatch):
    from trimbench.models import encoder_layers

    hf_model = tiny_model[0].auto_model
    blocks = encoder_layers(hf_model)

    def failing(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(tiny_model, "encode", failing)
    with pytest.raises(RuntimeError, match="out of memory"):
        cost.encode_speed(tiny_model, TEXTS, [1], batch_size=4, repeats=1)
    assert encoder_layers(hf_model) is blocks and hf_model.config.num_hidden_layers == 3


@pytest.mark.parametrize(("arguments", "named"), [
    (dict(layers=[0]), "layers 0 outside the model's 1 to 3"),
    (dict(layers=[2, 4]), "layers 4 outside the model's 1 to 3"),
    (dict(layers=[]), "no layers to profile"),
    (dict(layers=[1.5]), "layers 1.5 outside"),
    (dict(layers=[1, 2, 1]), "layers 1 given more than once"),
    (dict(texts=[]), "no texts to encode"),
    (dict(batch_size=0), "batch_size must be an integer of at least 1, not 0"),
    (dict(repeats=0), "repeats must be an integer of at least 1, not 0"),
])
def test_encode_speed_names_bad_input(tiny_model, arguments, named):
    given = dict(texts=TEXTS, layers=[1], batch_size=4, repeats=1) | arguments
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        cost.encode_speed(tiny_model, **given)


# --- bytes and search -------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [384, 100, 1, 8, 9])
def test_embedding_bytes_are_what_sentence_transformers_stores(dim):
    from sentence_transformers import quantize_embeddings

    embeddings = unit_rows(4, dim, seed=dim)
    assert cost.embedding_bytes(dim, "float32") == 4 * dim
    assert cost.embedding_bytes(dim, "int8") == quantize_embeddings(embeddings, "int8").nbytes // 4 == dim
    assert cost.embedding_bytes(dim, "binary") == quantize_embeddings(embeddings, "ubinary").nbytes // 4
    assert cost.embedding_bytes(dim, "binary") == math.ceil(dim / 8)


@pytest.mark.parametrize(("dim", "precision", "named"), [
    (384, "fp16", "unknown precision 'fp16' (one of float32, int8, binary)"),
    (0, "int8", "dim must be an integer of at least 1, not 0"),
])
def test_embedding_bytes_names_bad_input(dim, precision, named):
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
        cost.embedding_bytes(dim, precision)


@pytest.mark.parametrize("precision", cost.PRECISIONS)
def test_search_speed_gives_a_row_per_repeat_with_the_serialized_size(precision):
    import faiss

    corpus, queries = unit_rows(120, 24, seed=1), unit_rows(7, 24, seed=2)
    frame = cost.search_speed(corpus, queries, precision, k=5, repeats=3)
    assert list(frame.columns[:len(SEARCH_COLUMNS)]) == SEARCH_COLUMNS
    assert list(frame["repeat"]) == [0, 1, 2]
    assert set(map(tuple, frame[["precision", "dim", "n_docs", "n_queries", "k"]].values)) == {
        (precision, 24, 120, 7, 5)}
    assert (frame["seconds"] > 0).all() and np.isfinite(frame["seconds"]).all()
    assert np.allclose(frame["ms_per_query"], 1000 * frame["seconds"] / 7)
    index = cost.ExactIndex(corpus, precision).index
    serialized = (faiss.serialize_index_binary(index) if precision == "binary" else faiss.serialize_index(index))
    assert set(frame["index_bytes"]) == {serialized.size}


def test_search_speed_runs_on_the_threads_asked_and_gives_faiss_its_own_back():
    import faiss

    own = faiss.omp_get_max_threads()
    frame = cost.search_speed(unit_rows(50, 8, seed=0), unit_rows(3, 8, seed=1), "binary", k=2, repeats=2, threads=1)
    assert list(frame["threads"]) == [1, 1] and faiss.omp_get_max_threads() == own
    assert set(cost.search_speed(unit_rows(50, 8, seed=0), unit_rows(3, 8, seed=1), "binary", repeats=1)
               ["threads"]) == {own}


@pytest.mark.parametrize(("precision", "bytes_per_value"), [("float32", 4), ("int8", 1), ("binary", 1 / 8)])
def test_index_bytes_grow_with_docs_times_dims_as_faiss_stores_them(precision, bytes_per_value):
    def size(docs, dim):
        return int(cost.search_speed(unit_rows(docs, dim, seed=docs + dim), unit_rows(2, dim, seed=3), precision,
                                     k=1, repeats=1)["index_bytes"].iloc[0])

    assert size(300, 16) - size(100, 16) == 200 * 16 * bytes_per_value
    assert size(100, 64) - size(100, 32) == 100 * 32 * bytes_per_value
    if precision == "binary":  # bits padded to a whole byte, as numpy.packbits pads them
        assert size(100, 17) == size(100, 24) == size(100, 16) + 100


def test_float32_search_is_the_brute_force_ranking():
    corpus, queries = unit_rows(200, 16, seed=4), unit_rows(9, 16, seed=5)
    index = cost.ExactIndex(corpus, "float32")
    scores, ids = index.search(*index.quantised_queries(queries), k=6)
    expected = np.argsort(-(queries @ corpus.T), axis=1)[:, :6]
    np.testing.assert_array_equal(ids, expected)


def test_int8_search_is_the_inner_product_of_the_corpus_calibrated_codes():
    from sentence_transformers import quantize_embeddings

    corpus, queries = unit_rows(200, 16, seed=6), unit_rows(9, 16, seed=7)
    index = cost.ExactIndex(corpus, "int8")
    scores, ids = index.search(*index.quantised_queries(queries), k=6)
    # sentence-transformers' faiss search indexes the codes as uint8: int8's bins shifted by 128
    codes = quantize_embeddings(corpus, "uint8", calibration_embeddings=corpus).astype(np.int64)
    assert np.array_equal(codes - 128, quantize_embeddings(corpus, "int8", calibration_embeddings=corpus))
    query_codes = quantize_embeddings(queries, "uint8", calibration_embeddings=corpus).astype(np.int64)
    exact = query_codes @ codes.T
    np.testing.assert_array_equal(scores, -np.sort(-exact, axis=1)[:, :6])  # integers: no rounding, ties by value
    np.testing.assert_array_equal(np.take_along_axis(exact, ids, axis=1), scores)


def test_binary_search_is_the_hamming_distance_of_the_sign_bits():
    corpus, queries = unit_rows(200, 20, seed=8), unit_rows(9, 20, seed=9)
    index = cost.ExactIndex(corpus, "binary")
    distances, ids = index.search(*index.quantised_queries(queries), k=6)
    hamming = ((queries[:, None, :] > 0) != (corpus[None, :, :] > 0)).sum(axis=2)
    np.testing.assert_array_equal(distances, np.sort(hamming, axis=1)[:, :6])
    np.testing.assert_array_equal(np.take_along_axis(hamming, ids, axis=1), distances)


@pytest.mark.parametrize(("precision", "theirs"), [("int8", "uint8"), ("binary", "ubinary")])
@pytest.mark.parametrize("multiplier", [None, 4])
def test_quantised_search_ranks_as_sentence_transformers_semantic_search_faiss(precision, theirs, multiplier):
    from sentence_transformers import quantize_embeddings
    from sentence_transformers.util.quantization import semantic_search_faiss

    corpus, queries = unit_rows(300, 32, seed=10), unit_rows(8, 32, seed=11)
    index = cost.ExactIndex(corpus, precision, rescore_multiplier=multiplier)
    scores, ids = index.search(*index.quantised_queries(queries), k=5)
    calibration = corpus if precision == "int8" else None
    quantised = quantize_embeddings(corpus, theirs, calibration_embeddings=calibration)
    hits, _ = semantic_search_faiss(queries, corpus_embeddings=quantised, corpus_precision=theirs, top_k=5,
                                    calibration_embeddings=calibration, rescore=multiplier is not None,
                                    rescore_multiplier=multiplier or 1, exact=True)
    their_scores = np.array([[hit["score"] for hit in query_hits] for query_hits in hits])
    np.testing.assert_allclose(scores, their_scores, rtol=1e-6)
    if multiplier is not None:  # float scores: one order (the unrescored ones tie, and faiss orders ties alike)
        np.testing.assert_array_equal(ids, [[hit["corpus_id"] for hit in query_hits] for query_hits in hits])
    rows = cost.search_speed(corpus, queries, precision, k=5, repeats=1, rescore_multiplier=multiplier)
    assert set(rows["rescore_multiplier"]) == {multiplier or 0}


@pytest.mark.parametrize(("corpus", "queries", "precision", "more", "error", "named"), [
    ((10, 8), (2, 8), "int4", {}, ConfigError, "unknown precision 'int4'"),
    ((10, 8), (2, 4), "float32", {}, ValueError, "query_embeddings have 4 dims, the corpus 8"),
    ((0, 8), (2, 8), "float32", {}, ValueError, r"corpus_embeddings must be a non-empty matrix"),
    ((10, 8), (2, 8), "float32", {"rescore_multiplier": 2}, ConfigError, "float32 has nothing to rescore"),
    ((10, 8), (2, 8), "binary", {"rescore_multiplier": 0}, ConfigError, "rescore_multiplier must be"),
    ((10, 8), (2, 8), "binary", {"k": 0}, ConfigError, "k must be an integer of at least 1, not 0"),
    ((10, 8), (2, 8), "binary", {"repeats": -1}, ConfigError, "repeats must be an integer of at least 1, not -1"),
    ((10, 8), (2, 8), "binary", {"threads": 0}, ConfigError, "threads must be an integer of at least 1, not 0"),
])
def test_search_speed_names_bad_input(corpus, queries, precision, more, error, named):
    with pytest.raises(error, match=named):
        cost.search_speed(unit_rows(*corpus, seed=0) if corpus[0] else np.zeros(corpus, np.float32),
                          unit_rows(*queries, seed=1), precision, **more)


def test_search_speed_names_embeddings_that_are_not_finite_floats():
    corpus = unit_rows(10, 8, seed=0)
    corpus[3, 2] = np.nan
    with pytest.raises(ValueError, match="corpus_embeddings hold non-finite values"):
        cost.search_speed(corpus, unit_rows(2, 8, seed=1), "float32")
    with pytest.raises(ValueError, match="query_embeddings must be float embeddings .* not int8"):
        cost.search_speed(unit_rows(10, 8, seed=0), np.ones((2, 8), np.int8), "int8")


# --- FLOPs ------------------------------------------------------------------------------------


def test_flops_grow_by_one_bert_block_per_layer(tiny_bert_dir):
    """tiny_bert_dir: hidden 32, feed-forward 37, 3 blocks. A block's forward on T tokens: the four
    hidden x hidden projections and the two feed-forward matrices (2 FLOPs a multiply-add), and the
    attention's scores and weighted sum (T x T x hidden each)."""
    hidden, feed_forward, tokens = 32, 37, 11
    block = 2 * tokens * (4 * hidden * hidden + 2 * hidden * feed_forward) + 2 * 2 * tokens * tokens * hidden
    flops = [cost.flops_per_text(tiny_bert_dir, layer, tokens) for layer in (1, 2, 3)]
    assert flops[1] - flops[0] == flops[2] - flops[1] == block


@pytest.mark.parametrize("folder", ["tiny_bert_dir", "tiny_deberta_dir"])
def test_flops_of_the_full_depth_are_the_plans_full_forward(folder, request):
    from trimbench.cost.step import Step, measure

    folder = request.getfixturevalue(folder)
    arch = cost.model_architecture(folder)
    full = measure(Step(arch, batch=1, length=23, train=False)).flops  # counted on all 3 blocks, not extended
    flops = [cost.flops_per_text(folder, layer, 23) for layer in (1, 2, 3)]
    assert flops[2] == full and flops[2] - flops[1] == flops[1] - flops[0] > 0


def test_flops_read_a_sentence_transformers_folder_a_config_and_a_loaded_models_config(minilm_dir, tiny_model,
                                                                                        tiny_bert_dir):
    import json

    from trimbench.cost.architecture import Architecture

    arch = cost.model_architecture(minilm_dir)  # modules.json beside config.json
    assert (arch.model_type, arch.num_hidden_layers, arch.hidden_size, arch.intermediate_size) == ("bert", 6, 384, 1536)
    config = json.loads((tiny_bert_dir / "config.json").read_text())
    by_folder = cost.flops_per_text(tiny_bert_dir, 2, 9)
    assert cost.flops_per_text(config, 2, 9) == by_folder
    assert cost.flops_per_text(tiny_model[0].auto_model.config, 2, 9) == by_folder
    assert isinstance(cost.model_architecture(config), Architecture)


@pytest.mark.parametrize(("layer", "tokens", "named"), [
    (0, 10, "layers 0 outside the model's 1 to 3"),
    (4, 10, "layers 4 outside the model's 1 to 3"),
    (2, 0, "tokens must be an integer of at least 1, not 0"),
    (2, 513, "length 513 beyond the model's 512 tokens"),
])
def test_flops_name_bad_input(tiny_bert_dir, layer, tokens, named):
    with pytest.raises(ConfigError, match=named):
        cost.flops_per_text(tiny_bert_dir, layer, tokens)


def test_flops_name_a_config_without_the_facts(tmp_path):
    with pytest.raises(ConfigError, match="the cost model needs .*intermediate_size"):
        cost.flops_per_text({"model_type": "bert", "num_hidden_layers": 2, "hidden_size": 8}, 1, 4)
    with pytest.raises(ConfigError, match="model folder '.*nowhere' does not exist"):
        cost.flops_per_text(tmp_path / "nowhere", 1, 4)
    with pytest.raises(ConfigError, match="cannot read an architecture from a list"):
        cost.flops_per_text([1, 2], 1, 4)


# --- summarise --------------------------------------------------------------------------------


def test_summarise_gives_median_range_and_interquartile_range_per_group():
    frame = pd.DataFrame({"layer": [2, 1, 1, 2, 1, 1, 3], "device": ["cpu"] * 7,
                          "seconds": [10.0, 4.0, 1.0, 30.0, 3.0, 2.0, 7.0]})
    out = cost.summarise(frame, "seconds", ["device", "layer"])
    expected = pd.DataFrame({"device": ["cpu"] * 3, "layer": [1, 2, 3],
                             # layer 1: 1, 2, 3, 4: quartiles at 1.75 and 3.25; layer 2: 10, 30: at 15 and 25
                             "seconds_median": [2.5, 20.0, 7.0], "seconds_min": [1.0, 10.0, 7.0],
                             "seconds_max": [4.0, 30.0, 7.0], "seconds_iqr": [1.5, 10.0, 0.0], "repeats": [4, 2, 1]})
    pd.testing.assert_frame_equal(out, expected)
    assert list(cost.summarise(frame, "seconds", "layer")["layer"]) == [1, 2, 3]


def test_summarise_names_a_missing_column_and_an_empty_frame():
    frame = pd.DataFrame({"layer": [1], "seconds": [1.0]})
    with pytest.raises(ValueError, match="no column 'ms_per_query' to summarise"):
        cost.summarise(frame, "ms_per_query", "layer")
    with pytest.raises(ValueError, match="no column 'precision'"):
        cost.summarise(frame, "seconds", ["precision"])
    with pytest.raises(ValueError, match="no rows to summarise 'seconds'"):
        cost.summarise(frame.iloc[:0], "seconds", "layer")
