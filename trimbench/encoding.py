"""One forward pass per model and text set: every requested layer pooled, every dim a slice.

The transformer runs once with all hidden states; each requested hidden state then goes through
the model's own modules after the transformer (pooling, normalisation, dense heads), exactly as
sentence-transformers' ``AdaptiveLayerLoss`` feeds layer outputs to them. Hidden state ``k`` of
the full model is the last hidden state of the model physically cut to ``k`` layers, so each
(layer, dim) cell equals encoding the cut model with ``truncate_dim=dim``.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import numpy as np
from tqdm.auto import tqdm

from trimbench.errors import NotFiniteError
from trimbench.models import encoder_layers

#: an encoding's precision (the dense tracks' ``evaluation.precision``) -> the dtype its matrix products
#: run in under ``torch.autocast`` (None: plain fp32, no autocast)
AUTOCAST_DTYPES = {"fp32": None, "bf16": "bfloat16", "fp16": "float16"}


class ForwardCounter:
    """Counts transformer forward passes (used by tests and the grid benchmark).

    sentence-transformers calls ``auto_model.forward`` directly, bypassing module hooks, so the
    bound method itself is wrapped.
    """

    def __init__(self, st_model):
        self.calls = 0
        self._model = st_model[0].auto_model
        original = self._model.forward

        def counted(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        self._model.forward = counted

    def close(self):
        del self._model.forward


def encode_layers(st_model, texts: list[str], layers: list[int], batch_size: int = 64,
                  max_dim: int | None = None, dtype=np.float32, out: np.ndarray | None = None,
                  show_progress: bool = True, precision: str = "fp32") -> np.ndarray:
    """Embeddings ``[len(layers), len(texts), max_dim]`` from one pass over ``texts``.

    ``layers`` are hidden-state indices (0 = the embedding output, k = after block k). Texts are
    batched longest first, as ``SentenceTransformer.encode`` does, so padding matches it.
    ``out`` may be a pre-allocated (e.g. memory-mapped) array to fill. ``precision`` (fp32, bf16,
    fp16): the forward pass runs under ``torch.autocast`` of that dtype on the model's device (see
    :func:`autocast`); the embeddings are returned as ``dtype`` whatever it is.
    """
    import torch
    from sentence_transformers.util import batch_to_device

    transformer, heads = st_model[0], list(st_model)[1:]
    n_hidden = len(_blocks(transformer)) + 1
    for layer in layers:
        if not 0 <= layer < n_hidden:
            raise ValueError(f"layer {layer} is outside this {n_hidden - 1}-layer model")
    width = st_model.get_embedding_dimension()
    max_dim = max_dim or width
    if out is None:
        out = np.empty((len(layers), len(texts), max_dim), dtype=dtype)
    order = length_order(texts)
    device = st_model.device
    st_model.eval()
    with torch.inference_mode(), hidden_states_kept(transformer), autocast(device, precision):
        for start in tqdm(range(0, len(texts), batch_size), desc="encode", disable=not show_progress,
                          mininterval=5):
            index = order[start:start + batch_size]
            features = st_model.preprocess([texts[i] for i in index])
            features = transformer(batch_to_device(features, device))
            for slot, layer in enumerate(layers):
                embedding = pool_layer(heads, features, layer)[:, :max_dim]
                check_finite_embeddings(embedding, layer, [texts[i] for i in index])
                out[slot, index] = embedding.float().cpu().numpy().astype(dtype, copy=False)
    return out


def check_finite_embeddings(embedding, layer: int, texts: list[str]) -> None:
    """A NaN or infinite embedding (a model whose weights diverged) is a :class:`NotFiniteError` naming
    the layer and the text, never an array scored as results (NaN cells silently left out of tables)."""
    import torch

    finite = torch.isfinite(embedding).all(dim=-1)
    if not bool(finite.all()):
        row = int((~finite).nonzero()[0, 0])
        raise NotFiniteError(f"layer {layer}'s embedding of the text {texts[row][:80]!r} is not finite (NaN or "
                             "infinite): the model's weights are, or its pooling divides by zero; the embeddings "
                             "are not saved")


def autocast(device, precision: str):
    """The context an encoding's forward pass runs in: ``torch.autocast`` on ``device``'s type at
    ``precision``'s dtype (matrix products and attention in half precision, norms and softmax in fp32:
    torch's op lists), or none for fp32. Autocast, not a model cast to half: the weights stay fp32,
    as a mixed-precision training leaves them. CPU autocast takes bf16 and fp16 too (the tests')."""
    import torch

    if precision not in AUTOCAST_DTYPES:
        raise ValueError(f"encoding precision '{precision}': one of {', '.join(AUTOCAST_DTYPES)}")
    if AUTOCAST_DTYPES[precision] is None:
        return nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=getattr(torch, AUTOCAST_DTYPES[precision]))


def length_order(texts: list[str]) -> np.ndarray:
    """Positions of ``texts``, longest first (ties in their order): batches of this order pad
    least, as ``SentenceTransformer.encode`` batches."""
    return np.argsort([-len(t) for t in texts], kind="stable")


def rank_rows(texts: list[str], batch_size: int, rank: int, ranks: int) -> np.ndarray:
    """Positions of the ``texts`` that ``rank`` of ``ranks`` encodes, in their length order: every
    ``ranks``-th batch of :func:`length_order`, from the ``rank``-th. Every batch is the one a
    single device encodes (the same texts, the same padding), and round robin over length-sorted
    batches gives each rank long and short texts alike. :func:`encode_layers` given these texts
    in this order batches them so again (they are sorted; each batch but the last is full)."""
    order = length_order(texts)
    return order[np.arange(len(order)) // batch_size % ranks == rank]


@contextmanager
def hidden_states_kept(transformer):
    """Make the sentence-transformers ``Transformer`` module return ``all_layer_embeddings``."""
    config = transformer.auto_model.config
    previous = config.output_hidden_states
    config.output_hidden_states = True
    try:
        yield
    finally:
        config.output_hidden_states = previous


def pool_layer(heads, features: dict, layer: int):
    """Sentence embeddings of hidden state ``layer``: it goes through the modules after the
    transformer (``heads``) in place of the last hidden state."""
    layer_features = {**features, "token_embeddings": features["all_layer_embeddings"][layer]}
    for module in heads:
        layer_features = module(layer_features)
    return layer_features["sentence_embedding"]


def _blocks(transformer):
    return encoder_layers(transformer.auto_model)
