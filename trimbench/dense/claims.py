"""The dense tracks' claims (reference/claims.yaml, checked by trimbench.report.claims): 2DMSE's on the
(method, layer, dim) grid in the seed's method labels (BERT = full fine-tuning, BERT-S = separately
trained, MSE = Matryoshka), the 2DMSE retrieval ablations', Home Depot's in its write-up's labels; both
sides' views and the checks over them. The deepest layer and the widest dim a side scores stand for its
full model."""

from __future__ import annotations

import pandas as pd

from trimbench.dense.ablations import ablation_groups, changed_switches
from trimbench.dense.variants import HOMEDEPOT_METHOD_LABELS, compared_dataset, seed_label
from trimbench.face import View, claim_cell

# --- 2DMSE (STS and retrieval) -----------------------------------------------------------------------------------

def dense_view_cells(scores: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Our (method, layer, dim, value) on the compared dataset and main metric, mean over seeds; methods
    by the seed's labels (BERT = full fine-tuning, BERT-S = separately trained, MSE = Matryoshka)."""
    ours = scores[(scores["dataset"] == compared_dataset(config))
                  & (scores["metric"] == config["evaluation"]["main_metric"])]
    ours = ours.assign(method=ours["variant"].map(seed_label))
    return _dense_mean(ours)


def _dense_mean(cells: pd.DataFrame) -> pd.DataFrame:
    cells = cells.astype({"layer": int, "dim": int, "value": float})
    return cells.groupby(["method", "layer", "dim"], as_index=False)["value"].mean()


def dense_published_cells(published: pd.DataFrame, config: dict) -> pd.DataFrame:
    """The work's (method, layer, dim, value) of the reference variant and main metric; on the compared
    dataset when the reference has it, else on the one it publishes (the seed's sts-avg7)."""
    rows = published[(published["variant"] == config["reference"]["variant"])
                      & (published["metric"] == config["evaluation"]["main_metric"])]
    if compared_dataset(config) in set(rows["dataset"]):
        rows = rows[rows["dataset"] == compared_dataset(config)]
    elif rows["dataset"].nunique() > 1:
        return pd.DataFrame(columns=["method", "layer", "dim", "value"])
    return _dense_mean(rows)


def _pairs(cells: pd.DataFrame, first: str, second: str) -> pd.DataFrame:
    """Cells (layer, dim) that both methods cover, with the side's full depth and width."""
    a = cells[cells["method"] == first][["layer", "dim", "value"]]
    b = cells[cells["method"] == second][["layer", "dim", "value"]]
    pairs = a.merge(b, on=["layer", "dim"], suffixes=("_a", "_b"))
    return pairs.assign(depth=cells["layer"].max() if len(cells) else 0, width=cells["dim"].max() if len(cells) else 0)


def _compare(pairs: pd.DataFrame, first: str, second: str, holds) -> list[dict]:
    return [claim_cell(f"L{row.layer} d{row.dim}", f"{first} {row.value_a:.4f} vs {second} {row.value_b:.4f}",
                  holds(row.value_a, row.value_b))
            for row in pairs.sort_values(["layer", "dim"]).itertuples()]


def _beats_mse_on_sub_dims(view: View) -> list[dict]:
    pairs = _pairs(view.cells, "2DMSE", "MSE")
    pairs = pairs[pairs["dim"] < pairs["width"]]
    return _compare(pairs, "2DMSE", "MSE", lambda a, b: a > b)


def _beats_full_on_sub_layers(view: View) -> list[dict]:
    pairs = _pairs(view.cells, "2DMSE", "BERT")
    pairs = pairs[pairs["layer"] < pairs["depth"]]
    return _compare(pairs, "2DMSE", "BERT", lambda a, b: a > b)


def _not_above_separate(view: View) -> list[dict]:
    return _compare(_pairs(view.cells, "2DMSE", "BERT-S"), "2DMSE", "BERT-S", lambda a, b: a <= b)


def ablation_pairs(subject: str, configs: dict[str, dict], cells: dict[str, pd.DataFrame]) -> tuple:
    """The 2DMSE retrieval ablations ``subject`` takes part in: (member, base, changed switches, member
    cells, base cells), the base's with every member, a member's with its base."""
    pairs = []
    for members in ablation_groups(configs).values():
        base = members[0]
        for member in members[1:]:
            if subject in (base, member):
                changed = frozenset(changed_switches(configs[member], configs[base]))
                pairs.append((member, base, changed, cells[member], cells[base]))
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


def _ablation_cells(view: View, applies, holds) -> list[dict]:
    rows = []
    for member, base, changed, member_cells, base_cells in view.ablations:
        if not applies(changed, member, base):
            continue
        pairs = member_cells[member_cells["method"] == "2DMSE"].merge(
            base_cells[base_cells["method"] == "2DMSE"], on=["layer", "dim"], suffixes=("_a", "_b"))
        rows += [claim_cell(f"{member} vs {base} L{row.layer} d{row.dim}",
                       f"{member} {row.value_a:.4f} vs {base} {row.value_b:.4f}", holds(row.value_a, row.value_b))
                 for row in pairs.sort_values(["layer", "dim"]).itertuples()]
    return rows


def _full_dim_loss_helps(view: View) -> list[dict]:
    return _ablation_cells(view, lambda changed, *_: changed == {"sub_layer_full_dim"}, lambda a, b: a > b)


def _more_target_dims_help(view: View) -> list[dict]:
    return _ablation_cells(view, lambda changed, *_: changed == {"target_dims"}, lambda a, b: a > b)


def _fixed_doc_no_gain(view: View) -> list[dict]:
    return _ablation_cells(view, lambda changed, *_: changed == {"passage_to_last_layer"}, lambda a, b: a <= b)


# --- Home Depot ----------------------------------------------------------------------------------------------------

HD_FT, HD_MRL, HD_PRE = (HOMEDEPOT_METHOD_LABELS[m] for m in ("full", "matryoshka", "pretrained"))


def homedepot_view_cells(scores: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Our (model, method, dim, metric, value) at the deepest layer, mean over seeds, in the write-up's labels."""
    from trimbench.dense import homedepot  # matplotlib: not while Snakemake parses the table

    return homedepot.ours_table(scores, config).groupby(["model", "method", "dim", "metric"], as_index=False)[
        "value"].mean()


def _per_model_metric(view: View):
    for (model, metric), cells in view.cells.groupby(["model", "metric"], sort=True):
        yield model, metric, cells.set_index(["method", "dim"])["value"]


def _loses_less_when_cut(view: View) -> list[dict]:
    rows = []
    for model, metric, value in _per_model_metric(view):
        dims = [sorted({d for m, d in value.index if m == method}) for method in (HD_FT, HD_MRL)]
        common = sorted(set(dims[0]) & set(dims[1]))
        if len(common) < 2:
            continue
        small, full = common[0], common[-1]
        loss = {m: (value[(m, full)] - value[(m, small)]) / value[(m, full)] for m in (HD_FT, HD_MRL)}
        rows.append(claim_cell(f"{model} {metric} d{full}→d{small}",
                          f"Matryoshka −{loss[HD_MRL]:.1%} vs fine-tuned −{loss[HD_FT]:.1%}",
                          loss[HD_MRL] < loss[HD_FT]))
    return rows


def _full_dim_cells(view: View, methods: tuple[str, ...]):
    for model, metric, value in _per_model_metric(view):
        present = [d for m, d in value.index if m in methods]
        full = max(present) if present else None
        if full is not None and all((m, full) in value.index for m in methods):
            yield f"{model} {metric} d{full}", {m: value[(m, full)] for m in methods}


def _fine_tuning_beats_pretrained(view: View) -> list[dict]:
    return [claim_cell(cell, f"fine-tuned {v[HD_FT]:.4f} vs pretrained {v[HD_PRE]:.4f}", v[HD_FT] > v[HD_PRE])
            for cell, v in _full_dim_cells(view, (HD_FT, HD_PRE))]


def _matryoshka_costs_little(view: View) -> list[dict]:
    return [claim_cell(cell, f"pretrained {v[HD_PRE]:.4f} < Matryoshka {v[HD_MRL]:.4f} < fine-tuned {v[HD_FT]:.4f}",
                  v[HD_PRE] < v[HD_MRL] < v[HD_FT])
            for cell, v in _full_dim_cells(view, (HD_PRE, HD_MRL, HD_FT))]


# --- each dense track's views and checks ---------------------------------------------------------------------------

def _grid_views(subject: str, configs: dict[str, dict], scores: dict[str, pd.DataFrame], published: pd.DataFrame,
                with_ablations: bool) -> tuple[View, View]:
    config = configs[subject]
    tolerance = config["reference"]["tolerance"]
    cells = {name: dense_view_cells(scores[name], configs[name]) for name in configs}
    ablations = ablation_pairs(subject, configs, cells) if with_ablations else ()
    return (View(cells[subject], ablations, tolerance), View(dense_published_cells(published, config), (), tolerance))


def sts_claim_views(subject, configs, scores, published, main_metrics, model_ids) -> tuple[View, View]:
    return _grid_views(subject, configs, scores, published, with_ablations=False)


def retrieval_claim_views(subject, configs, scores, published, main_metrics, model_ids) -> tuple[View, View]:
    """The grid, and the ablations ``subject`` takes part in (the ablation claims compare experiments)."""
    return _grid_views(subject, configs, scores, published, with_ablations=True)


def homedepot_claim_views(subject, configs, scores, published, main_metrics, model_ids) -> tuple[View, View]:
    config = configs[subject]
    tolerance = config["reference"]["tolerance"]
    return (View(homedepot_view_cells(scores[subject], config), (), tolerance),
            View(published[["model", "method", "dim", "metric", "value"]], (), tolerance))


GRID_CHECKS = {
    "2dmse-beats-mse-on-sub-dims": _beats_mse_on_sub_dims,
    "2dmse-beats-full-on-sub-layers": _beats_full_on_sub_layers,
    "2dmse-not-above-separate": _not_above_separate,
}
RETRIEVAL_CHECKS = {
    **GRID_CHECKS,
    "retrieval-full-dim-loss-helps": _full_dim_loss_helps,
    "retrieval-more-target-dims-help": _more_target_dims_help,
    "retrieval-fixed-doc-no-gain": _fixed_doc_no_gain,
}
HOMEDEPOT_CHECKS = {
    "homedepot-matryoshka-loses-less-when-cut": _loses_less_when_cut,
    "homedepot-fine-tuning-beats-pretrained": _fine_tuning_beats_pretrained,
    "homedepot-matryoshka-costs-little": _matryoshka_costs_little,
}
