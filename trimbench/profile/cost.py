"""What a cut costs, measured on this machine: encode throughput of the model cut at each layer, bytes per
embedding and per index at each precision, exact search latency, and the plan's FLOPs per text.

Pure functions over in-memory objects (a loaded sentence-transformers model, numpy embeddings); the
profile's jobs call them and write their frames. Every time is wall clock (``time.perf_counter``) after one
warm-up, ``repeats`` times, one row per run: this machine is shared, so a single figure would say more
about the other sessions than about the model; :func:`summarise` gives the median and the spread.

- **Encoding**: the model cut to its first ``layer`` blocks with the project's own cut
  (:func:`trimbench.models.cut_layers`, what the grid's export writes), in place and put back afterwards,
  encoding the dataset's own texts (their real lengths; sentence-transformers sorts them by length into
  batches of ``batch_size``).
- **Precision**: sentence-transformers' :func:`~sentence_transformers.quantize_embeddings`: int8 calibrated on
  the corpus (its per-dimension min and max, the queries quantised with the same ranges), binary as packed
  bits (``ubinary``: ``ceil(dim / 8)`` bytes).
- **Search**: exact faiss indexes, ranking as sentence-transformers' ``semantic_search_faiss(exact=True)``
  does (the profile's quality searches with it: :mod:`trimbench.profile.quality`). float32:
  :func:`trimbench.search.flat_index` (``IndexFlatIP``, the grid's exact search, on the GPU when faiss has
  one). int8: the 8-bit codes as ``semantic_search_faiss`` indexes them (``uint8``, the same 256 bins as
  int8 shifted by 128), in an ``IndexScalarQuantizer`` with ``QT_8bit_direct``, which keeps each code in
  one byte and scores the exact inner product of the codes: the ranking of ``semantic_search_faiss``'s
  ``IndexFlatIP`` over the codes cast to float, at a quarter of its bytes (what an int8 index is for).
  binary: ``IndexBinaryFlat`` over the packed bits, Hamming distance (a dimension that is no multiple of 8
  is padded with zero bits, as ``numpy.packbits`` pads it, which adds no distance). ``rescore_multiplier``
  adds sentence-transformers' rescoring: ``k x multiplier`` candidates from the quantised index, re-ranked
  by the float32 query against the candidates' stored vectors (int8 dequantised by the corpus' ranges,
  binary as 0/1 bits).
- **FLOPs**: the plan's count (:mod:`trimbench.cost.step`): the real transformers architecture run under
  fake tensors, one text of ``tokens`` tokens through the blocks kept, counted by torch's
  ``FlopCounterMode``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench.errors import ConfigError

PRECISIONS = ("float32", "int8", "binary")
#: the spread columns :func:`summarise` adds, each prefixed with the value's name
SPREAD = ("median", "min", "max", "iqr")


# --- checks -----------------------------------------------------------------------------------


def _check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ConfigError(f"unknown precision '{precision}' (one of {', '.join(PRECISIONS)})")


def _check_count(name: str, value, least: int = 1) -> int:
    """``value`` as an int of at least ``least``, else a ConfigError naming ``name`` and the value."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ConfigError(f"{name} must be an integer of at least {least}, not {value!r}")
    return int(value)


def _check_layers(layers: Iterable[int], depth: int) -> list[int]:
    layers = list(layers)
    if not layers:
        raise ConfigError(f"no layers to profile (1 to the model's {depth})")
    bad = [layer for layer in layers
           if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 1 <= layer <= depth]
    if bad:
        raise ConfigError(f"layers {', '.join(map(repr, bad))} outside the model's 1 to {depth}")
    twice = sorted({int(layer) for layer in layers if layers.count(layer) > 1})
    if twice:  # each layer's repeats are its rows: a layer given twice would count its runs twice
        raise ConfigError(f"layers {', '.join(map(str, twice))} given more than once")
    return [int(layer) for layer in layers]


# --- encoding ---------------------------------------------------------------------------------


def _synchronise(device: str) -> None:
    """Wait for the GPU's queued kernels, so the clock reads their end (a CPU computes in step)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def tokens_per_text(model, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
    """The tokens each text takes through ``model`` (its own preprocessing, special tokens included, cut at
    its ``max_seq_length``), padding not counted."""
    counts = []
    for start in range(0, len(texts), batch_size):
        features = model.preprocess(list(texts[start:start + batch_size]))
        counts.append(features["attention_mask"].sum(dim=1).numpy())
    return np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)


class _CutAt:
    """The model cut to its first ``layer`` blocks by :func:`trimbench.models.cut_layers` for the ``with``
    block, then given back its own block list and config (the blocks themselves are never copied)."""

    def __init__(self, model, layer: int):
        self.model, self.layer = model, layer

    def __enter__(self):
        from trimbench.models import cut_layers, encoder_layers

        hf_model = self.model[0].auto_model
        self.blocks = encoder_layers(hf_model)
        self.config = {key: getattr(hf_model.config, key) for key in ("num_hidden_layers", "n_layers")
                       if hasattr(hf_model.config, key)}
        cut_layers(self.model, self.layer)
        return self.model

    def __exit__(self, *exc_info):
        from trimbench.models import encoder_layers

        hf_model = self.model[0].auto_model
        cut = encoder_layers(hf_model)
        for module in hf_model.modules():  # the module holding the cut list takes the full one back
            for name, child in module.named_children():
                if child is cut:
                    setattr(module, name, self.blocks)
        for key, value in self.config.items():
            setattr(hf_model.config, key, value)
        return False


def encode_speed(model, texts: Sequence[str], layers: Iterable[int], batch_size: int, repeats: int = 3,
                 device: str | None = None) -> pd.DataFrame:
    """Texts per second of ``model`` cut at each of ``layers``, encoding ``texts`` (as given: their real
    lengths) in batches of ``batch_size``; one row per (layer, repeat).

    Each layer gets one warm-up (a batch of the longest texts: the largest buffers, the kernels) and then
    ``repeats`` timed runs over all the texts, the layers in turn within each repeat, so a burst of load from
    another process falls on every layer alike. ``device`` (default: where the model is) moves the model
    there for the measurement and back afterwards. The model is unchanged afterwards.

    Columns: ``layer, device, batch_size, texts, repeat, seconds, texts_per_second, tokens_per_text_mean``,
    ``threads`` (torch's CPU threads) and ``max_seq_length`` (where the texts were cut).
    """
    import torch

    from trimbench.models import depth

    texts = list(texts)
    if not texts:
        raise ConfigError("no texts to encode: the throughput needs the dataset's texts")
    batch_size, repeats = _check_count("batch_size", batch_size), _check_count("repeats", repeats)
    layers = _check_layers(layers, depth(model))
    home = str(model.device)
    device = str(device or home)
    tokens_mean = float(tokens_per_text(model, texts).mean())
    longest = sorted(texts, key=len, reverse=True)[:batch_size]
    rows = []
    try:
        if device != home:
            model.to(device)

        def encode(batch):
            model.encode(batch, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
            _synchronise(device)

        for layer in layers:
            with _CutAt(model, layer):
                encode(longest)
        for repeat in range(repeats):
            for layer in layers:
                with _CutAt(model, layer):
                    start = time.perf_counter()
                    encode(texts)
                    seconds = time.perf_counter() - start
                rows.append({"layer": layer, "device": device, "batch_size": batch_size, "texts": len(texts),
                             "repeat": repeat, "seconds": seconds, "texts_per_second": len(texts) / seconds,
                             "tokens_per_text_mean": tokens_mean, "threads": torch.get_num_threads(),
                             "max_seq_length": model.max_seq_length})
    finally:
        if device != home:
            model.to(home)
    return pd.DataFrame(rows)


# --- bytes and search -------------------------------------------------------------------------


def embedding_bytes(dim: int, precision: str) -> int:
    """Bytes of one ``dim``-dimensional embedding at ``precision``: 4 a dimension in float32, 1 in int8, one
    bit in binary (``ceil(dim / 8)`` bytes: sentence-transformers packs the bits with ``numpy.packbits``)."""
    dim = _check_count("dim", dim)
    _check_precision(precision)
    return {"float32": 4 * dim, "int8": dim, "binary": math.ceil(dim / 8)}[precision]


def _as_matrix(name: str, embeddings) -> np.ndarray:
    matrix = np.asarray(embeddings)
    if matrix.ndim != 2 or 0 in matrix.shape:
        raise ValueError(f"{name} must be a non-empty matrix (texts x dims), not of shape {matrix.shape}")
    if not np.issubdtype(matrix.dtype, np.floating):
        raise ValueError(f"{name} must be float embeddings (they are quantised here), not {matrix.dtype}")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{name} hold non-finite values (NaN or inf)")
    return np.ascontiguousarray(matrix, dtype=np.float32)


class ExactIndex:
    """An exact faiss index of ``corpus_embeddings`` (float, texts x dims) at ``precision``, with the queries
    quantised as the corpus was; :meth:`search` gives faiss' (scores, ids), best first (for binary the
    scores are Hamming distances, smallest first), re-ranked by the float32 queries when
    ``rescore_multiplier`` is given."""

    def __init__(self, corpus_embeddings, precision: str, rescore_multiplier: int | None = None):
        import faiss
        from sentence_transformers import quantize_embeddings

        from trimbench.search import flat_index

        _check_precision(precision)
        corpus = _as_matrix("corpus_embeddings", corpus_embeddings)
        if rescore_multiplier is not None:
            _check_count("rescore_multiplier", rescore_multiplier)
            if precision == "float32":
                raise ConfigError("rescore_multiplier rescores a quantised index: float32 has nothing to rescore")
        self.precision, self.rescore_multiplier = precision, rescore_multiplier
        self.n_docs, self.dim = corpus.shape
        self.calibration = corpus
        # int8's per-dimension start and step (sentence-transformers' ranges of the corpus), for rescoring
        low, high = corpus.min(axis=0), corpus.max(axis=0)
        steps = (high - low) / 255
        self.dequantise = (low.astype(np.float64), np.where(steps == 0, 1, steps).astype(np.float64))
        if precision == "float32":
            self.index, self.stored = flat_index(self.dim), None
            self.index.add(corpus)
        elif precision == "int8":
            self.stored = quantize_embeddings(corpus, "uint8", calibration_embeddings=corpus)
            self.index = faiss.IndexScalarQuantizer(self.dim, faiss.ScalarQuantizer.QT_8bit_direct,
                                                    faiss.METRIC_INNER_PRODUCT)
            self.index.add(self.stored.astype(np.float32))
        else:
            self.stored = quantize_embeddings(corpus, "ubinary")
            self.index = faiss.IndexBinaryFlat(8 * self.stored.shape[1])
            self.index.add(self.stored)

    def quantised_queries(self, query_embeddings) -> tuple[np.ndarray, np.ndarray]:
        """(the queries as the index takes them, the float32 queries) after checking their width."""
        from sentence_transformers import quantize_embeddings

        queries = _as_matrix("query_embeddings", query_embeddings)
        if queries.shape[1] != self.dim:
            raise ValueError(f"query_embeddings have {queries.shape[1]} dims, the corpus {self.dim}")
        if self.precision == "float32":
            return queries, queries
        if self.precision == "int8":
            quantised = quantize_embeddings(queries, "uint8", calibration_embeddings=self.calibration)
            return quantised.astype(np.float32), queries
        return quantize_embeddings(queries, "ubinary"), queries

    def search(self, queries: np.ndarray, floats: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` of the prepared ``queries`` (:meth:`quantised_queries`)."""
        k = min(k, self.n_docs)
        if self.rescore_multiplier is None:
            return self.index.search(queries, k)
        _, candidates = self.index.search(queries, min(k * self.rescore_multiplier, self.n_docs))
        stored = self.stored[candidates]  # queries x candidates x (dims or packed bytes)
        if self.precision == "binary":  # the float query against the document's bits, as sentence-transformers
            stored = np.unpackbits(stored, axis=-1)[..., : self.dim].astype(np.float64)
        else:  # the codes back in the embeddings' coordinates, as sentence-transformers' _dequantize_embeddings
            low, steps = self.dequantise
            stored = stored * steps + low
        scores = np.einsum("ij,ikj->ik", floats, stored)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, order, axis=1), np.take_along_axis(candidates, order, axis=1)

    def serialized_bytes(self) -> int:
        """The index's size as faiss writes it (``serialize_index`` / ``serialize_index_binary``)."""
        import faiss

        if self.precision == "binary":
            return int(faiss.serialize_index_binary(self.index).size)
        index = self.index
        if hasattr(faiss, "index_gpu_to_cpu") and type(index).__name__.startswith("Gpu"):
            index = faiss.index_gpu_to_cpu(index)
        return int(faiss.serialize_index(index).size)

    @property
    def device(self) -> str:
        return "cuda" if type(self.index).__name__.startswith("Gpu") else "cpu"


def search_speed(corpus_embeddings, query_embeddings, precision: str, k: int = 10, repeats: int = 3,
                 rescore_multiplier: int | None = None, threads: int | None = None) -> pd.DataFrame:
    """Milliseconds per query of an exact faiss search of ``corpus_embeddings`` at ``precision`` (see
    :class:`ExactIndex`), all the queries searched at once (faiss spreads them over its threads), after one
    warm-up; one row per repeat. The queries' quantisation is done once, outside the clock.

    ``threads`` sets faiss' OpenMP threads for the measurement (default: faiss' own, the machine's cores).
    On a machine shared with other work, 1 is the steadier figure: a search of a few microseconds a query
    (binary, small corpora) waits milliseconds for its threads whenever another process holds a core.

    Columns: ``precision, dim, n_docs, n_queries, k, repeat, seconds, ms_per_query, index_bytes`` (the
    serialized index's length), and ``device``, ``threads`` (faiss' OpenMP threads) and
    ``rescore_multiplier`` (0: none).
    """
    import faiss

    k, repeats = _check_count("k", k), _check_count("repeats", repeats)
    if threads is not None:
        threads = _check_count("threads", threads)
    index = ExactIndex(corpus_embeddings, precision, rescore_multiplier)
    queries, floats = index.quantised_queries(query_embeddings)
    index_bytes = index.serialized_bytes()
    own_threads = faiss.omp_get_max_threads()
    rows = []
    try:
        if threads is not None:
            faiss.omp_set_num_threads(threads)
        index.search(queries, floats, k)  # warm-up
        for repeat in range(repeats):
            start = time.perf_counter()
            index.search(queries, floats, k)
            seconds = time.perf_counter() - start
            rows.append({"precision": precision, "dim": index.dim, "n_docs": index.n_docs,
                         "n_queries": len(queries), "k": k, "repeat": repeat, "seconds": seconds,
                         "ms_per_query": 1000 * seconds / len(queries), "index_bytes": index_bytes,
                         "device": index.device, "threads": faiss.omp_get_max_threads(),
                         "rescore_multiplier": rescore_multiplier or 0})
    finally:
        faiss.omp_set_num_threads(own_threads)
    return pd.DataFrame(rows)


# --- FLOPs ------------------------------------------------------------------------------------


def model_architecture(model_folder_or_config):
    """The plan's :class:`~trimbench.cost.architecture.Architecture` of a model folder (sentence-transformers or
    transformers), a ``config.json`` mapping or transformers config, or an Architecture as it is."""
    import json
    import tempfile

    from trimbench.cost.architecture import Architecture, architecture

    given = model_folder_or_config
    if isinstance(given, Architecture):
        return given
    if isinstance(given, (str, Path)):
        folder = Path(given)
        if not folder.is_dir():
            raise ConfigError(f"model folder '{folder}' does not exist")
        return architecture(folder.name, {"source": "local", "path": str(folder.resolve())}, folder)
    if hasattr(given, "to_dict"):  # a transformers PretrainedConfig
        given = given.to_dict()
    if not isinstance(given, Mapping):
        raise ConfigError(f"cannot read an architecture from a {type(given).__name__}: give a model folder, "
                          "a config.json mapping or a transformers config")
    with tempfile.TemporaryDirectory() as folder:  # read as a folder's config.json is: the same checks
        (Path(folder) / "config.json").write_text(json.dumps(dict(given), default=str))
        try:
            found = architecture("the config given", {"source": "local", "path": folder}, Path(folder))
        except ConfigError as error:
            raise ConfigError(str(error).replace(f"'{folder}/config.json'", "the config given")) from None
    from dataclasses import replace

    return replace(found, source="the config given")


def flops_per_text(model_folder_or_config, layer: int, tokens: int, cache_dir: Path | None = None) -> float:
    """Forward FLOPs of one text of ``tokens`` tokens through the model cut to its first ``layer`` blocks,
    mean-pooled, in float32: the plan's count (:func:`trimbench.cost.step.step_cost`, the one- and two-block
    models counted under fake tensors and extended block by block; ``cache_dir`` keeps the counts)."""
    from trimbench.cost.step import Step, step_cost

    arch = model_architecture(model_folder_or_config)
    _check_layers([layer], arch.num_hidden_layers)
    tokens = _check_count("tokens", tokens)
    return float(step_cost(Step(arch, batch=1, length=tokens, train=False, layers=int(layer)), cache_dir).flops)


# --- spread -----------------------------------------------------------------------------------


def summarise(df: pd.DataFrame, value: str, by: str | Sequence[str]) -> pd.DataFrame:
    """Median, min, max and interquartile range (75th less 25th percentile, linear interpolation) of
    ``value`` over the repeats of each group of ``by``: columns ``by``, ``<value>_median``, ``<value>_min``,
    ``<value>_max``, ``<value>_iqr`` and ``repeats`` (the runs in the group), groups in sorted order."""
    by = [by] if isinstance(by, str) else list(by)
    missing = [column for column in [value, *by] if column not in df.columns]
    if missing:
        raise ValueError(f"no column {', '.join(map(repr, missing))} to summarise (columns: {', '.join(df.columns)})")
    if df.empty:
        raise ValueError(f"no rows to summarise {value!r} over")
    groups = df.groupby(by, sort=True)[value]
    out = pd.DataFrame({
        f"{value}_median": groups.median(),
        f"{value}_min": groups.min(),
        f"{value}_max": groups.max(),
        f"{value}_iqr": groups.quantile(0.75) - groups.quantile(0.25),
        "repeats": groups.size(),
    })
    return out.reset_index()
