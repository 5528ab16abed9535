"""The ELECTRA track's claims (reference/claims.yaml, checked by trimbench.report.claims): both sides'
views, the per-layer table with each model's role (discriminator, generator, bert, encoder), size word
and full depth, and the checks over them."""

from __future__ import annotations

from itertools import product

import pandas as pd

from trimbench.electra.checks import model_role
from trimbench.face import View, claim_cell

ELECTRA_COLUMNS = ["task", "model", "layer", "value", "role", "size", "depth"]
SIZES = ("small", "base", "large")


def _model_facts(model: str, hub_id: str) -> dict:
    text = f"{model} {hub_id}".lower()
    role = model_role(model, {"id": hub_id})
    if role == "encoder" and "bert" in text.replace("deberta", ""):
        role = "bert"
    return {"role": role, "size": next((s for s in SIZES if s in text), None)}


def electra_view_cells(scores: pd.DataFrame, config: dict, main_metrics: dict[str, str],
                       model_ids: dict[str, str]) -> pd.DataFrame:
    """Our (task, model, layer) test mean over seeds, each model's role (discriminator, generator, bert,
    encoder), size word and full depth."""
    if scores.empty:
        return pd.DataFrame(columns=ELECTRA_COLUMNS)
    from trimbench.electra.report import per_layer  # matplotlib: not while Snakemake parses the table

    table = per_layer(scores, main_metrics).rename(columns={"test_mean": "value"})
    depths = config.get("_depths", {})
    return _with_model_facts(table[["task", "model", "layer", "value"]].dropna(subset=["value"]), model_ids, depths)


def electra_published_cells(published: pd.DataFrame, config: dict, main_metrics: dict[str, str]) -> pd.DataFrame:
    """The work's curves of the published experiments our tasks map to, every model it published; one
    protocol per task (N4), as the claims set models beside each other: the final table's cells (the
    dev-chosen epoch, at each model's best-dev and last layer: the claims' ends, one cell where they
    coincide) where it has every model's deepest layer, else the archive's curves (the last epoch;
    the final table's lone best-dev cells left out)."""
    reference = {task: name for task, name in config["reference"].get("experiments", {}).items()
                 if task in main_metrics}
    from trimbench.electra.report import published_scores  # matplotlib: not while Snakemake parses the table

    table = published_scores(published, reference, main_metrics).rename(columns={"published": "value"})
    if table.empty:
        return _with_model_facts(table, {}, {})
    final = table["epoch"] == "dev-best"
    curve = [table["task"], table["model"]]
    deepest = table["layer"] == table.groupby(curve)["layer"].transform("max")
    covered = (final & deepest).groupby(curve).transform("any")
    from_final_table = covered.groupby(table["task"]).transform("all")
    return _with_model_facts(table[final == from_final_table], {}, {})


def _with_model_facts(table: pd.DataFrame, model_ids: dict[str, str], depths: dict[str, int]) -> pd.DataFrame:
    facts = pd.DataFrame([{"model": m, **_model_facts(m, model_ids.get(m, ""))} for m in table["model"].unique()],
                         columns=["model", "role", "size"])
    table = table.astype({"layer": int, "value": float}).merge(facts, on="model", how="left")
    deepest = table.groupby("model")["layer"].transform("max") if len(table) else table["layer"]
    table["depth"] = [depths.get(m, d) for m, d in zip(table["model"], deepest, strict=True)]
    return table[ELECTRA_COLUMNS]


def _truncation_beats_full(view: View) -> list[dict]:
    rows = []
    for (task, model), group in view.cells[view.cells["role"] == "discriminator"].groupby(["task", "model"]):
        full, cut = group[group["layer"] == group["depth"]], group[group["layer"] < group["depth"]]
        if full.empty or cut.empty:
            continue
        best = cut.loc[cut["value"].idxmax()]
        rows.append(claim_cell(f"{task} {model}", f"k={best['layer']} {best['value']:.4f} vs full "
                          f"k={full['layer'].iloc[0]} {full['value'].iloc[0]:.4f}",
                          best["value"] > full["value"].iloc[0]))
    return rows


def _generator_rivals_bert(view: View) -> list[dict]:
    rows = []
    best = view.cells.groupby(["task", "model", "role", "size"], as_index=False, dropna=False)["value"].max()
    for task, group in best.groupby("task", sort=True):
        generators, berts = group[group["role"] == "generator"], group[group["role"] == "bert"]
        for g, b in product(generators.itertuples(), berts.itertuples()):
            if g.size is None or pd.isna(g.size) or g.size != b.size:
                continue
            rows.append(claim_cell(f"{task} {g.model} vs {b.model}",
                              f"generator {g.value:.4f} vs BERT {b.value:.4f} (±{view.tolerance:g})",
                              g.value >= b.value - view.tolerance - 1e-9))
    return rows


def claim_views(subject: str, configs: dict[str, dict], scores: dict[str, pd.DataFrame], published: pd.DataFrame,
                main_metrics: dict[str, str], model_ids: dict[str, str]) -> tuple[View, View]:
    config = configs[subject]
    tolerance = config["reference"]["tolerance"]
    return (View(electra_view_cells(scores[subject], config, main_metrics, model_ids), (), tolerance),
            View(electra_published_cells(published, config, main_metrics), (), tolerance))


CHECKS = {
    "electra-truncation-beats-full-discriminator": _truncation_beats_full,
    "electra-generator-rivals-bert": _generator_rivals_bert,
}
