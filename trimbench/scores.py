"""The one tidy score table: every number the project reports is one row of it."""

from __future__ import annotations

import pandas as pd

from trimbench.jobs.artifacts import reading

COLUMNS = ["experiment", "track", "variant", "model", "layer", "dim", "dataset", "split", "metric", "value", "seed"]
KEY = [c for c in COLUMNS if c != "value"]
_DTYPES = {"layer": "Int64", "dim": "Int64", "seed": "Int64", "value": "float64"}


def frame(rows: list[dict]) -> pd.DataFrame:
    """A score table from rows; missing columns are null, order and types fixed."""
    table = pd.DataFrame(rows)
    for column in COLUMNS:
        if column not in table:
            table[column] = None
    table = table[COLUMNS].astype({c: _DTYPES.get(c, "string") for c in COLUMNS})
    return table


def concat(tables: list[pd.DataFrame]) -> pd.DataFrame:
    table = pd.concat(tables, ignore_index=True) if tables else frame([])
    return sort(table)


def sort(table: pd.DataFrame) -> pd.DataFrame:
    """Rows in one canonical order, so rebuilt tables and figures are byte-identical."""
    return table.sort_values(KEY, na_position="first", kind="stable").reset_index(drop=True)


def write(table: pd.DataFrame, path) -> None:
    sort(frame(table.to_dict("records"))).to_parquet(path, index=False)


def read(path) -> pd.DataFrame:
    with reading(path):
        rows = pd.read_parquet(path).to_dict("records")
    return frame(rows)


#: the label of the BM25 baseline's row in the tables and its line on the figures
BASELINE_LABEL = "BM25"


def baseline_value(baseline: pd.DataFrame | None, dataset: str, metric: str) -> float | None:
    """The BM25 baseline's score (rule bm25_scores: one row per dataset and metric), if given."""
    if baseline is None:
        return None
    cell = baseline[(baseline["dataset"] == dataset) & (baseline["metric"] == metric)]["value"]
    return float(cell.iloc[0]) if len(cell) else None


def baseline_of(inputs) -> pd.DataFrame | None:
    """The BM25 baseline's scores: a view's input ``baseline`` (one file, or none when the
    experiment's bm25 is off)."""
    paths = getattr(inputs, "baseline", [])
    paths = [paths] if isinstance(paths, str) else list(paths)
    return read(paths[0]) if paths else None
