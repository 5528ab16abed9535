"""The STS grid track (2DMSE-Reproduce "STS v1"): evaluation of one variant on every dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench import scores
from trimbench.data.tables import sts_texts
from trimbench.errors import ArtifactError
from trimbench.jobs.artifacts import describe, reading
from trimbench.metrics import sts_grid


def load_embeddings(folder: Path, dataset: str, n_texts: int) -> tuple[np.ndarray, list[int]]:
    path = folder / f"{dataset}.npy"
    with reading(folder / "manifest.json"):
        manifest = json.loads((folder / "manifest.json").read_text())
    with reading(path):
        array = np.load(path, mmap_mode="r")
    if array.shape[:2] != (len(manifest["layers"]), n_texts):
        raise ArtifactError(f"'{path}' has shape {array.shape}, expected ({len(manifest['layers'])}, {n_texts}, "
                            f"...): it is stale or truncated ({describe(path)})")
    return array, manifest["layers"]


def evaluate_variant(embedding_dir: Path, tables: dict[str, str], meta: dict, layers: list[int],
                     dims: list[int], metrics: list[str], average_name: str) -> pd.DataFrame:
    """Tidy scores of every (layer, dim) on every dataset, plus their mean as ``average_name``.

    ``layers`` selects from the layers the embeddings hold (BERT-S at full depth is scored on
    layer L of the full model's embeddings)."""
    rows = []
    for dataset, table in tables.items():
        frame = pd.read_parquet(table)
        texts, first, second = sts_texts(frame)
        embeddings, held = load_embeddings(embedding_dir, dataset, len(texts))
        missing = sorted(set(layers) - set(held))
        if missing:
            raise ArtifactError(f"'{embedding_dir}' holds layers {held}, not {missing} ({describe(embedding_dir)})")
        slots = [held.index(layer) for layer in layers]
        for row in sts_grid(np.asarray(embeddings[slots]), layers, first, second, frame["score"].to_numpy(),
                            sorted(dims), metrics):
            rows.append({**meta, **row, "dataset": dataset})
    table = pd.DataFrame(rows)
    average = (table.groupby(["layer", "dim", "metric"], as_index=False)["value"].mean()
               .assign(dataset=average_name, **meta))
    if len(tables) > 1 or average_name not in tables:
        table = pd.concat([table, average], ignore_index=True)
    return scores.frame(table.to_dict("records"))
