"""The SPLADE track's views: the seed's table (one row per variant or ensemble; MRR@10, R@1k, DL19
nDCG@10, R@1k, DL20 nDCG@10, R@1k, BEIR, FLOPS in the preset), ours beside published, and the
scoreboard's comparison and headline.

A trained variant is matched with the published row of the same method, model (``published_model``) and
λq, λd; an ensemble with the published variant it names (``ensembles.<name>.published``).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from trimbench.face import reference_dataset
from trimbench.scores import BASELINE_LABEL
from trimbench.splade.checks import table_columns


def row_labels(config: dict) -> pd.DataFrame:
    """One row per trained variant and ensemble: our variant name, the published variant and model, λs."""
    rows = [{"variant": variant, "method": spec["method"], "model": spec["published_model"],
             "lambda_q": spec["lambda_q"], "lambda_d": spec["lambda_d"]}
            for variant, spec in config["variants"].items()]
    rows += [{"variant": name, "method": spec["published"] or f"ensemble {' '.join(spec['variants'])}", "model": None,
              "lambda_q": None, "lambda_d": None} for name, spec in config["ensembles"].items()]
    return pd.DataFrame(rows, columns=["variant", "method", "model", "lambda_q", "lambda_d"])


def published_rows(published: pd.DataFrame, label: pd.Series) -> pd.DataFrame:
    """The published rows of one of our trained variants (same method, model and λs) or ensembles (its name)."""
    cells = published[published["variant"] == label["method"]]
    if not pd.isna(label["model"]):  # a trained variant (an ensemble has no model)
        cells = cells[(cells["model"] == label["model"]) & np.isclose(cells["lambda_q"], label["lambda_q"])
                      & np.isclose(cells["lambda_d"], label["lambda_d"])]
    return cells


def _published_value(published: pd.DataFrame, label: pd.Series, dataset: str, metric: str) -> float | None:
    cells = published_rows(published, label)
    cells = cells[(cells["dataset"] == dataset) & (cells["metric"] == metric)]
    return float(cells["value"].iloc[0]) if len(cells) else None


def comparison(scores: pd.DataFrame, published: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Long table over the table's cells: variant, dataset, metric, ours, published, delta."""
    rows = []
    for _, label in row_labels(config).iterrows():
        mine = scores[scores["variant"] == label["variant"]]
        for dataset, metric in table_columns(config):
            cell = mine[(mine["dataset"] == dataset) & (mine["metric"] == metric)]["value"]
            ours = float(cell.iloc[0]) if len(cell) else None
            theirs = _published_value(published, label, dataset, metric)
            if ours is None and theirs is None:
                continue
            rows.append({"variant": label["variant"], "dataset": dataset, "metric": metric, "ours": ours,
                         "published": theirs})
    long = pd.DataFrame(rows, columns=["variant", "dataset", "metric", "ours", "published"]).astype(
        {"ours": "float64", "published": "float64"})
    long["delta"] = long["ours"] - long["published"]
    return long


def _baseline_long(baseline: pd.DataFrame | None, config: dict) -> pd.DataFrame:
    """The BM25 baseline's cells of the table (no sparsity: it is no SPLADE vector), as comparison's rows."""
    columns = pd.DataFrame(table_columns(config), columns=["dataset", "metric"])
    if baseline is None:
        return columns.iloc[:0].assign(variant="bm25", ours=np.nan, published=np.nan, delta=np.nan)
    cells = columns.merge(baseline[["dataset", "metric", "value"]], on=["dataset", "metric"])
    return cells.rename(columns={"value": "ours"}).assign(variant="bm25", published=np.nan, delta=np.nan)


def splade_tables(scores: pd.DataFrame, published: pd.DataFrame, config: dict,
                  baseline: pd.DataFrame | None = None) -> dict[str, str]:
    """The seed's layout, 'ours (published)' per cell; Markdown, CSV (ours and published) and HTML;
    ``baseline`` (BM25's scores), a last row bm25."""
    extra = _baseline_long(baseline, config)
    long = pd.concat([comparison(scores, published, config), extra[["variant", "dataset", "metric", "ours",
                                                                    "published", "delta"]]], ignore_index=True)
    labels = row_labels(config)
    if len(extra):
        labels = pd.concat([labels, pd.DataFrame([{"variant": "bm25", "method": BASELINE_LABEL}])], ignore_index=True)
    labels = labels.set_index("variant")
    columns = [f"{dataset} {metric}" for dataset, metric in table_columns(config)]
    wide = pd.DataFrame("", index=labels.index, columns=columns)
    for row in long.itertuples():
        ours = "" if pd.isna(row.ours) else f"{row.ours:.3f}" if row.metric != "q_terms" else f"{row.ours:.1f}"
        theirs = "" if pd.isna(row.published) else f"({row.published:.3f})"
        wide.loc[row.variant, f"{row.dataset} {row.metric}"] = " ".join(p for p in (ours, theirs) if p) or "–"
    lambdas = labels[["method", "model", "lambda_q", "lambda_d"]].astype(object).where(labels.notna(), "")
    wide = pd.concat([lambdas, wide], axis=1).reset_index()
    scale = ("paper scale" if config["scale"] == "paper"
             else f"{config['scale']} scale, nothing to compare with the paper")
    summary = (f"{config['description'] or 'SPLADE'} ({scale}); ours (published in parentheses). FLOPS = "
               "Σ_j p_q(j)·p_d(j) over the quantised vectors; q_terms / d_terms: active terms per query / document.")
    return {
        "markdown": f"{summary}\n\n{wide.to_markdown(index=False)}\n",
        "csv": long.to_csv(index=False, float_format="%.6f"),
        "html": ("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                 f"<p>{html.escape(summary)}</p>{wide.to_html(index=False, border=0)}</body></html>\n"),
    }


def headline(scores: pd.DataFrame, published: pd.DataFrame, config: dict) -> dict:
    """The first variant's main metric on the reference dataset, beside its published row's (or, for a
    toy run, the first published splade_max row's on that dataset, named as such)."""
    evaluation = config["evaluation"]
    dataset = reference_dataset(config)
    metric = evaluation["main_metric"]
    variant = next(iter(config["variants"]))
    out = {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
    mine = scores[(scores["variant"] == variant) & (scores["dataset"] == dataset) & (scores["metric"] == metric)]
    if len(mine):
        out.update(ours=float(mine["value"].iloc[0]), ours_cell=f"{variant} {metric} {dataset}")
    label = row_labels(config).iloc[0]
    value = _published_value(published, label, dataset, metric)
    if value is not None:
        out.update(published=value, published_cell=f"{label['method']} {label['model']} λq {label['lambda_q']:g} "
                                                    f"{metric} {dataset}")
        return out
    first = published[(published["variant"] == label["method"]) & (published["metric"] == metric)]
    if len(first):
        top = first.iloc[0]
        cell = f"{top['variant']} {top['model']} λq {top['lambda_q']:g} {metric} {top['dataset']}"
        out.update(published=float(top["value"]), published_cell=cell)
    return out
