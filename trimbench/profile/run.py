"""One model's profile on its datasets: one encoder pass per text set gives every (layer, dim) cell,
scored at every precision (:mod:`~trimbench.profile.quality`), the funnel's rows on each retrieval set
(:mod:`~trimbench.profile.funnel`), and the measured cost of each cut (:mod:`~trimbench.profile.cost`).
The rule ``profile_model`` (scripts/profile_model.py) calls :func:`profile_model`; the rule
``profile_answer`` calls :func:`cells_with_costs` and the recommendation on its tables.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from trimbench.data.io import RetrievalSplit, doc_texts
from trimbench.data.tables import sts_texts
from trimbench.encoding import encode_layers
from trimbench.profile import cost
from trimbench.profile.funnel import funnel_rows
from trimbench.profile.quality import RESCORED, retrieval_cells, sts_cells

log = logging.getLogger(__name__)

#: the metric of each task family, MTEB's main score for it
METRICS = {"sts": "spearman_cosine", "retrieval": "ndcg@10"}


@dataclass
class Settings:
    """What a profile measures (the experiment's keys, docs/profile.md)."""

    layers: list[int]
    dims: list[int]
    precisions: list[str]
    rescore_multiplier: int
    funnel: list[tuple[int, int]]
    repeats: int
    batch_size: int
    speed_texts: int
    ignore_identical_ids: dict = field(default_factory=dict)


def speed_sample(texts: list[str], count: int) -> list[str]:
    """``count`` of ``texts`` spread evenly over the dataset (every n-th), so the throughput is measured at
    its real lengths without encoding all of it once per layer and repeat."""
    if len(texts) <= count:
        return list(texts)
    return [texts[i] for i in np.linspace(0, len(texts) - 1, count).round().astype(int)]


def profile_sts(model, frame: pd.DataFrame, settings: Settings) -> tuple[pd.DataFrame, list[str]]:
    """Every cell of one STS dataset (a table of sentence1, sentence2, score), and its texts."""
    texts, first, second = sts_texts(frame)
    embeddings = encode_layers(model, texts, settings.layers, settings.batch_size, max_dim=max(settings.dims),
                               show_progress=False)
    table = sts_cells(embeddings, settings.layers, first, second, frame["score"].to_numpy(), settings.dims,
                      settings.precisions)
    return table, texts


def profile_retrieval(model, split: RetrievalSplit, settings: Settings, ignore_identical_ids: bool):
    """Every cell of one retrieval dataset, its funnel rows (at full depth), its search speed at each
    (dim, precision) of the full-depth embeddings, and its documents' texts."""
    texts = doc_texts(split.corpus)
    width = max(settings.dims)
    docs = encode_layers(model, texts, settings.layers, settings.batch_size, max_dim=width, show_progress=False)
    queries = encode_layers(model, list(split.queries["text"]), settings.layers, settings.batch_size,
                            max_dim=width, show_progress=False)
    doc_ids, query_ids = list(split.corpus["doc_id"]), list(split.queries["query_id"])
    table = retrieval_cells(docs, queries, settings.layers, doc_ids, query_ids, split.qrels, settings.dims,
                            settings.precisions, ignore_identical_ids, settings.rescore_multiplier)
    full_docs, full_queries = docs[-1], queries[-1]
    funnel = funnel_rows(full_docs, full_queries, doc_ids, query_ids, split.qrels, settings.funnel,
                         ignore_identical_ids, settings.repeats) if settings.funnel else pd.DataFrame()
    speeds = []
    for dim in sorted(settings.dims):
        for precision in settings.precisions:
            multipliers = [0] + ([settings.rescore_multiplier] if settings.rescore_multiplier
                                 and precision != "float32" else [])
            for multiplier in multipliers:
                rows = cost.search_speed(full_docs[:, :dim], full_queries[:, :dim], precision, k=10,
                                         repeats=settings.repeats, rescore_multiplier=multiplier or None)
                speeds.append(rows.assign(precision=precision + (RESCORED if multiplier else "")))
    return table, funnel, pd.concat(speeds, ignore_index=True), texts


def profile_model(model, model_folder, sts: dict[str, pd.DataFrame], retrieval: dict[str, RetrievalSplit],
                  settings: Settings) -> dict[str, pd.DataFrame]:
    """The tables of one model's profile: ``quality`` (family, dataset, layer, dim, precision, metric,
    value), ``encode`` (encode_speed's rows, per dataset), ``search`` (search_speed's rows per retrieval
    dataset), ``funnel`` and ``flops`` (FLOPs per text at each layer, at each dataset's mean length)."""
    quality, encode, search, funnel = [], [], [], []
    texts_of = {}
    for name, frame in sts.items():
        table, texts_of[name] = profile_sts(model, frame, settings)
        quality.append(table.assign(family="sts", dataset=name))
        log.info("profiled STS %s: %d cells", name, len(table))
    for name, split in retrieval.items():
        table, rows, speeds, texts_of[name] = profile_retrieval(model, split, settings,
                                                                settings.ignore_identical_ids.get(name, False))
        quality.append(table.assign(family="retrieval", dataset=name))
        if not rows.empty:
            funnel.append(rows.assign(dataset=name))
        search.append(speeds.assign(dataset=name))
        log.info("profiled retrieval %s: %d cells", name, len(table))
    for name, texts in texts_of.items():
        rows = cost.encode_speed(model, speed_sample(texts, settings.speed_texts), settings.layers,
                                 settings.batch_size, settings.repeats)
        encode.append(rows.assign(dataset=name))
    encode_table = pd.concat(encode, ignore_index=True)
    lengths = encode_table.groupby("dataset")["tokens_per_text_mean"].first()
    flops = [{"dataset": name, "layer": layer, "tokens": int(round(tokens)),
              "flops_per_text": cost.flops_per_text(model_folder, layer, int(round(tokens)))}
             for name, tokens in lengths.items() for layer in settings.layers]
    return {"quality": pd.concat(quality, ignore_index=True), "encode": encode_table,
            "search": pd.concat(search, ignore_index=True) if search else pd.DataFrame(),
            "funnel": pd.concat(funnel, ignore_index=True) if funnel else pd.DataFrame(),
            "flops": pd.DataFrame(flops)}


def cells_with_costs(quality: pd.DataFrame, encode: pd.DataFrame) -> pd.DataFrame:
    """``quality`` with each cell's ``encode_seconds`` (median seconds per text of the model cut at its
    layer on its dataset) and ``bytes`` (of one embedding at its dim and precision): recommend's input."""
    speed = cost.summarise(encode.assign(seconds_per_text=1 / encode["texts_per_second"]), "seconds_per_text",
                           ["dataset", "layer"])
    seconds = speed.set_index(["dataset", "layer"])["seconds_per_text_median"]
    cells = quality.copy()
    cells["encode_seconds"] = [seconds[(d, layer)] for d, layer in zip(cells["dataset"], cells["layer"], strict=True)]
    cells["bytes"] = [cost.embedding_bytes(int(dim), precision.removesuffix(RESCORED))
                      for dim, precision in zip(cells["dim"], cells["precision"], strict=True)]
    return cells


def cell_folder(pick) -> str:
    """An exported cell's folder name: L<layer>_d<dim>_<precision>."""
    return f"L{int(pick['layer'])}_d{int(pick['dim'])}_{pick['precision'].replace('+', '-')}"


def export_recommended(model_folder, name: str, picks: pd.DataFrame, cells: pd.DataFrame, out) -> list:
    """Each distinct recommended cell of ``picks`` as a standalone sentence-transformers folder under ``out``
    (:func:`trimbench.export.save_trimmed`: the first k layers, ``truncate_dim`` d), with its model card
    (:func:`~trimbench.profile.recommend.model_card`) at the loosest tolerance that picked it."""
    from trimbench.export import save_trimmed
    from trimbench.models import load_sentence_model
    from trimbench.profile.recommend import full_cell, model_card

    full_layer, full_dim, _ = full_cell(cells)
    written = []
    for _, pick in picks.sort_values("tolerance", ascending=False).iterrows():
        folder = out / cell_folder(pick)
        if folder in written:
            continue
        save_trimmed(load_sentence_model(model_folder, device="cpu"), int(pick["layer"]), int(pick["dim"]), folder,
                     model_folder)
        cut = cells[(cells["layer"] == pick["layer"]) & (cells["dim"] == pick["dim"])
                    & (cells["precision"] == pick["precision"])]
        full = cells[(cells["layer"] == full_layer) & (cells["dim"] == full_dim) & (cells["precision"] == "float32")]
        per_dataset = cut[["dataset", "metric", "value"]].rename(columns={"value": "cut"}).merge(
            full[["dataset", "value"]].rename(columns={"value": "full"}), on="dataset")
        (folder / "README.md").write_text(model_card(folder.name, name, pick, per_dataset))
        written.append(folder)
    return written
