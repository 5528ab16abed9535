"""The SPLADE track's claims (reference/claims.yaml, checked by trimbench.report.claims): both sides'
trained variants by their identity (method, model, λq, λd), and the checks over them."""

from __future__ import annotations

from itertools import combinations, product

import pandas as pd

from trimbench.face import View, claim_cell
from trimbench.splade.report import row_labels

SPLADE_RUN_COLUMNS = ["method", "model", "lambda_q", "lambda_d"]


def splade_view_cells(scores: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Our trained variants (not ensembles) by identity (method, model, λq, λd): dataset, metric, value
    (mean over seeds)."""
    labels = row_labels(config).dropna(subset=["model"])
    cells = scores.drop(columns="model").merge(labels, on="variant")
    return cells.groupby([*SPLADE_RUN_COLUMNS, "dataset", "metric"], as_index=False)["value"].mean()


def splade_published_cells(published: pd.DataFrame) -> pd.DataFrame:
    runs = published.dropna(subset=["model"]).rename(columns={"variant": "method"})
    return runs[[*SPLADE_RUN_COLUMNS, "dataset", "metric", "value"]].reset_index(drop=True)


def _run_values(view: View, metric: str) -> pd.Series:
    cells = view.cells[view.cells["metric"] == metric]
    return cells.set_index([*SPLADE_RUN_COLUMNS, "dataset"])["value"]


def _larger_lambda_sparser(view: View) -> list[dict]:
    flops, mrr = _run_values(view, "flops"), _run_values(view, "mrr@10")
    both = sorted(set(flops.index) & set(mrr.index))  # the cells in method, model, λ order
    rows = []
    for a, b in combinations(both, 2):
        (method, model, *lambdas_a, dataset), (method_b, model_b, *lambdas_b, dataset_b) = sorted(
            (a, b), key=lambda key: (key[2], key[3]))
        if (method, model, dataset) != (method_b, model_b, dataset_b) or not all(
                x < y for x, y in zip(lambdas_a, lambdas_b, strict=True)):
            continue
        low, high = (method, model, *lambdas_a, dataset), (method, model, *lambdas_b, dataset)
        flops_fall = (flops[low] - flops[high]) / flops[low]
        mrr_fall = (mrr[low] - mrr[high]) / mrr[low]
        rows.append(claim_cell(f"{method} {model} {dataset} λq {lambdas_a[0]:g}→{lambdas_b[0]:g}",
                          f"FLOPS {flops[low]:.3f}→{flops[high]:.3f} ({_signed(-flops_fall, '.0%')}), MRR@10 "
                          f"{mrr[low]:.4f}→{mrr[high]:.4f} ({_signed(-mrr_fall, '.1%')})",
                          flops[high] < flops[low] and mrr_fall < flops_fall))
    return rows


def _signed(change: float, spec: str) -> str:
    """A relative change with its sign, the minus typeset (−63%, +2%); one that rounds to nothing
    has none (0%, not −0%)."""
    if format(abs(change), spec) == format(0.0, spec):
        return format(0.0, spec)
    return format(change, "+" + spec).replace("-", "−")


def _distillation_beats_max(view: View) -> list[dict]:
    rows = []
    for metric in ("mrr@10", "ndcg@10"):
        values = _run_values(view, metric)
        runs = values.reset_index()
        for (model, dataset), group in runs.groupby(["model", "dataset"], sort=True):
            distil, plain = group[group["method"] == "distil_splade"], group[group["method"] == "splade_max"]
            for d, m in product(distil.itertuples(), plain.itertuples()):
                rows.append(claim_cell(f"{model} {dataset} {metric}: distil λq {d.lambda_q:g} vs max λq {m.lambda_q:g}",
                                  f"DistilSPLADE-max {d.value:.4f} vs SPLADE-max {m.value:.4f}", d.value > m.value))
    return rows


def claim_views(subject: str, configs: dict[str, dict], scores: dict[str, pd.DataFrame], published: pd.DataFrame,
                main_metrics: dict[str, str], model_ids: dict[str, str]) -> tuple[View, View]:
    config = configs[subject]
    tolerance = config["reference"]["tolerance"]
    return (View(splade_view_cells(scores[subject], config), (), tolerance),
            View(splade_published_cells(published), (), tolerance))


CHECKS = {
    "splade-larger-lambda-sparser": _larger_lambda_sparser,
    "splade-distillation-beats-max": _distillation_beats_max,
}
