"""One forward pass fills the whole (layer, dim) grid, and each cell equals the cut model."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from trimbench.encoding import ForwardCounter, encode_layers
from trimbench.models import cut_layers, depth, load_sentence_model

TEXTS = [
    "The cat sat on the mat.",
    "A man is playing a guitar on stage while the crowd sings along.",
    "Stocks fell sharply after the announcement.",
    "Rain.",
    "Scientists discovered a new species of frog in the rainforest of Borneo last year.",
]


@pytest.mark.parametrize("fixture", ["tiny_bert_dir", "minilm_dir", "tiny_deberta_dir"])
def test_grid_cells_equal_cut_model_with_truncate_dim(fixture, request):
    """Hidden state k of one pass equals the model cut to k blocks, k = 0 (the embedding output)
    included; DeBERTa's relative attention and its encoder's own LayerNorm on the relative
    embeddings (shared by every block) do not break that."""
    folder = request.getfixturevalue(fixture)
    model = load_sentence_model(folder, device="cpu")
    layers = list(range(0, depth(model) + 1))
    width = model.get_embedding_dimension()
    dims = [width, width // 2, 8]
    grid = encode_layers(model, TEXTS, layers, batch_size=2, show_progress=False)
    for slot, k in enumerate(layers):
        cut = cut_layers(load_sentence_model(folder, device="cpu"), k)
        assert depth(cut) == k
        for d in dims:
            expected = cut.encode(TEXTS, batch_size=2, truncate_dim=d, convert_to_numpy=True)
            np.testing.assert_allclose(grid[slot, :, :d], expected, atol=1e-5, rtol=0)


def test_cut_model_reloads_with_its_depth(tiny_bert_dir, tmp_path):
    model = cut_layers(load_sentence_model(tiny_bert_dir, device="cpu"), 2)
    model.save(str(tmp_path / "cut"))
    reloaded = SentenceTransformer(str(tmp_path / "cut"), device="cpu")
    assert depth(reloaded) == 2
    np.testing.assert_allclose(reloaded.encode(TEXTS), model.encode(TEXTS), atol=1e-6)


def test_deberta_cut_to_no_blocks_is_its_embedding_output_and_reloads(tiny_deberta_dir, tmp_path):
    """transformers' DeBERTa encoder fails without blocks; ours returns hidden state 0, saved and
    reloaded too (word-similarity pre-tuned cuts at k = 0 are saved models)."""
    full = load_sentence_model(tiny_deberta_dir, device="cpu")
    expected = encode_layers(full, TEXTS, [0], show_progress=False)[0]
    cut = cut_layers(load_sentence_model(tiny_deberta_dir, device="cpu"), 0)
    np.testing.assert_allclose(cut.encode(TEXTS), expected, atol=1e-5)
    cut.save(str(tmp_path / "cut"))
    reloaded = load_sentence_model(tmp_path / "cut", device="cpu")
    assert depth(reloaded) == 0
    np.testing.assert_allclose(reloaded.encode(TEXTS), expected, atol=1e-5)


def test_one_forward_pass_per_batch_whatever_the_grid(tiny_bert_dir):
    model = load_sentence_model(tiny_bert_dir, device="cpu")
    counter = ForwardCounter(model)
    encode_layers(model, TEXTS, [0, 1, 2, 3], batch_size=len(TEXTS), show_progress=False)
    assert counter.calls == 1
    counter.calls = 0
    encode_layers(model, TEXTS, [3], batch_size=2, show_progress=False)
    assert counter.calls == 3  # ceil(5 / 2) batches, not one per layer or dim
    counter.close()


def test_layer_outside_model_is_an_error(tiny_bert_dir):
    model = load_sentence_model(tiny_bert_dir, device="cpu")
    with pytest.raises(ValueError, match="layer 4 is outside this 3-layer model"):
        encode_layers(model, TEXTS, [4], show_progress=False)


def test_pooling_override(tiny_bert_dir):
    mean = load_sentence_model(tiny_bert_dir, pooling="mean", device="cpu")
    cls = load_sentence_model(tiny_bert_dir, pooling="cls", device="cpu")
    a = encode_layers(mean, TEXTS, [3], show_progress=False)
    b = encode_layers(cls, TEXTS, [3], show_progress=False)
    assert not np.allclose(a, b)


def test_encoding_fills_the_dtype_asked_from_batches_on_the_models_device(tiny_bert_dir, monkeypatch):
    """fp16 asked, fp16 returned (the float32 values rounded once); every batch is moved to the
    model's device (a GPU's, on a cluster), whatever device the tokenizer left it on."""
    import sentence_transformers.util

    model = load_sentence_model(tiny_bert_dir, device="cpu")
    moved_to = []
    to_device = sentence_transformers.util.batch_to_device
    monkeypatch.setattr(sentence_transformers.util, "batch_to_device",
                        lambda batch, device: moved_to.append(device) or to_device(batch, device))
    full = encode_layers(model, TEXTS, [1, 3], batch_size=3, show_progress=False)
    half = encode_layers(model, TEXTS, [1, 3], batch_size=3, dtype=np.float16, show_progress=False)
    assert full.dtype == np.float32 and half.dtype == np.float16
    assert np.array_equal(half, full.astype(np.float16))
    assert moved_to == [model.device] * 4


def test_length_order_is_longest_first_ties_in_their_order():
    """16 texts of 1, 2, 3 characters in turn (numpy's default sort reorders ties from 16 on)."""
    from trimbench.encoding import length_order

    texts = ["a" * (1 + i % 3) for i in range(16)]
    assert length_order(texts).tolist() == [2, 5, 8, 11, 14, 1, 4, 7, 10, 13, 0, 3, 6, 9, 12, 15]


def test_forward_counter_counts_any_call_and_passes_it_on(tiny_bert_dir):
    """The counted forward is the model's own for positional arguments too; closed, it counts no more."""
    import torch

    model = load_sentence_model(tiny_bert_dir, device="cpu")
    ids = torch.tensor([[101, 2000, 102]])
    expected = model[0].auto_model(ids).last_hidden_state
    counter = ForwardCounter(model)
    assert torch.equal(model[0].auto_model(ids).last_hidden_state, expected) and counter.calls == 1
    counter.close()
    model[0].auto_model(input_ids=ids)
    assert counter.calls == 1


def test_a_model_with_non_finite_weights_is_refused_naming_the_layer_and_text(tiny_bert_dir):
    """The probe: a 2DMSE model trained to NaN weights was encoded and scored NaN everywhere, its rows
    silently missing from the tables. Only block 2 is broken here, so the hidden state after block 1
    encodes and the one after block 2 is named."""
    import torch

    from trimbench.errors import NotFiniteError
    from trimbench.models import encoder_layers

    model = load_sentence_model(tiny_bert_dir, device="cpu")
    assert np.isfinite(encode_layers(model, TEXTS, [1, 2], batch_size=2, show_progress=False)).all()
    with torch.no_grad():
        next(encoder_layers(model[0].auto_model)[1].parameters()).fill_(float("nan"))
    assert np.isfinite(encode_layers(model, TEXTS, [1], batch_size=2, show_progress=False)).all()
    with pytest.raises(NotFiniteError, match=r"^layer 2's embedding of the text 'Scientists discovered a new "
                                             r"species .*' is not finite \(NaN or infinite\)"):
        encode_layers(model, TEXTS, [1, 2], batch_size=2, show_progress=False)


def test_bf16_encoding_runs_the_forward_pass_under_bf16_autocast(minilm_dir):
    """evaluation.precision bf16 (the 2DMSE retrieval seed's --bf16): the model's linear layers compute
    in bf16 and the last layer's embeddings equal sentence-transformers' own encode under CPU bf16
    autocast (the same single batch), not the fp32 ones; fp32 runs no autocast; the stored array is
    float32 either way."""
    import torch

    model = load_sentence_model(minilm_dir, device="cpu")
    last = depth(model)
    seen = []
    linear = next(m for m in model[0].auto_model.modules() if isinstance(m, torch.nn.Linear))
    hook = linear.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    try:
        half = encode_layers(model, TEXTS, [last], batch_size=len(TEXTS), show_progress=False, precision="bf16")[0]
        full = encode_layers(model, TEXTS, [last], batch_size=len(TEXTS), show_progress=False)[0]
    finally:
        hook.remove()
    assert seen == [torch.bfloat16, torch.float32]
    assert half.dtype == full.dtype == np.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = model.encode(TEXTS, batch_size=len(TEXTS), convert_to_numpy=True)
    assert np.allclose(half, expected, atol=1e-6)  # measured: equal
    assert np.abs(half - full).max() > 1e-4  # bf16 rounding shows (measured 1.3e-3): the autocast ran
    assert np.allclose(half, full, atol=1e-2)


def test_an_unknown_encoding_precision_is_an_error(tiny_bert_dir):
    model = load_sentence_model(tiny_bert_dir, device="cpu")
    with pytest.raises(ValueError, match="encoding precision 'int8': one of fp32, bf16, fp16"):
        encode_layers(model, TEXTS, [1], show_progress=False, precision="int8")
