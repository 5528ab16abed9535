"""The reproduced works' qualitative claims, checked over a score table: ours beside the published numbers.

Each :class:`Claim` is written as its work states it, cites where, says how it is read on the
score table, and is a function over one side's cells (a :class:`View`: ours, or the work's own
published numbers) returning the cells it covers, each holding or not. A claim holds when every
covered cell holds, fails when none does, is partly true otherwise, and is "not covered" when the
side has none of its cells (a run without the methods it compares is no evidence against it).

The views read the same joins as the scoreboard: the seed's method labels of the 2DMSE tracks,
Home Depot's write-up labels, SPLADE's run identity (method, model, λq, λd), the ELECTRA track's
per-layer table and its model roles. The deepest layer and the widest dim a side scores stand for
its full model.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations, product
from pathlib import Path

import pandas as pd

from trimbench.config.prepare import compared_dataset
from trimbench.config.schema import read_yaml
from trimbench.dense import homedepot
from trimbench.dense.ablations import ablation_groups, changed_switches
from trimbench.dense.variants import SEED_METHOD_LABELS
from trimbench.electra.checks import model_role
from trimbench.electra.report import per_layer, published_scores
from trimbench.report.scoreboard import standalone_page
from trimbench.splade.report import row_labels

HOLDS, FAILS, PARTLY, NOT_COVERED = "holds", "fails", "partly", "not covered"
CELL_COLUMNS = ["cell", "evidence", "holds"]


@dataclass(frozen=True)
class View:
    """One side's numbers in the shape its track's claims read (see the ``*_view`` functions)."""

    cells: pd.DataFrame
    #: 2DMSE retrieval ablations: (member, base, switches the member changes, member cells, base cells)
    ablations: tuple = ()
    #: how close two scores are to count as comparable (the experiment's reference tolerance)
    tolerance: float = 0.01


@dataclass(frozen=True)
class Verdict:
    cells: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CELL_COLUMNS))

    @property
    def covered(self) -> int:
        return len(self.cells)

    @property
    def held(self) -> int:
        return int(self.cells["holds"].sum()) if self.covered else 0

    @property
    def share(self) -> float | None:
        return self.held / self.covered if self.covered else None

    @property
    def outcome(self) -> str:
        if not self.covered:
            return NOT_COVERED
        return HOLDS if self.held == self.covered else FAILS if self.held == 0 else PARTLY


@dataclass(frozen=True)
class Claim:
    id: str
    work: str
    tracks: tuple[str, ...]
    #: the claim as its work states it (quoted where the words are the work's)
    statement: str
    #: where it is stated: repository, file and line, or paper and section
    citation: str
    #: how the claim is read on the score table: the cells it covers and when one holds
    reading: str
    check: Callable[[View], list[dict]]

    def evaluate(self, view: View | None) -> Verdict:
        if view is None:
            return Verdict()
        rows = self.check(view)
        return Verdict(pd.DataFrame(rows, columns=CELL_COLUMNS).astype({"holds": bool}))


def _cell(cell: str, evidence: str, holds) -> dict:
    return {"cell": cell, "evidence": evidence, "holds": bool(holds)}


# --- 2DMSE (STS and retrieval): view and claims -----------------------------------------------------------------

def dense_view_cells(scores: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Our (method, layer, dim, value) on the compared dataset and main metric, mean over seeds; methods
    by the seed's labels (BERT = full fine-tuning, BERT-S = separately trained, MSE = Matryoshka)."""
    ours = scores[(scores["dataset"] == compared_dataset(config))
                  & (scores["metric"] == config["evaluation"]["main_metric"])]
    ours = ours.assign(method=ours["variant"].map(lambda v: SEED_METHOD_LABELS.get(v, v)))
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
    return [_cell(f"L{row.layer} d{row.dim}", f"{first} {row.value_a:.4f} vs {second} {row.value_b:.4f}",
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
        rows += [_cell(f"{member} vs {base} L{row.layer} d{row.dim}",
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

HD_FT, HD_MRL, HD_PRE = (homedepot.METHOD_LABELS[m] for m in ("full", "matryoshka", "pretrained"))


def homedepot_view_cells(scores: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Our (model, method, dim, metric, value) at the deepest layer, mean over seeds, in the write-up's labels."""
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
        rows.append(_cell(f"{model} {metric} d{full}→d{small}",
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
    return [_cell(cell, f"fine-tuned {v[HD_FT]:.4f} vs pretrained {v[HD_PRE]:.4f}", v[HD_FT] > v[HD_PRE])
            for cell, v in _full_dim_cells(view, (HD_FT, HD_PRE))]


def _matryoshka_costs_little(view: View) -> list[dict]:
    return [_cell(cell, f"pretrained {v[HD_PRE]:.4f} < Matryoshka {v[HD_MRL]:.4f} < fine-tuned {v[HD_FT]:.4f}",
                  v[HD_PRE] < v[HD_MRL] < v[HD_FT])
            for cell, v in _full_dim_cells(view, (HD_PRE, HD_MRL, HD_FT))]


# --- SPLADE --------------------------------------------------------------------------------------------------------

SPLADE_RUN_COLUMNS = ["method", "model", "lambda_q", "lambda_d"]


def splade_view_cells(scores: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Our runs (not ensembles) by identity (method, model, λq, λd): dataset, metric, value (mean over seeds)."""
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
    both = sorted(set(flops.index) & set(mrr.index), key=str)
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
        rows.append(_cell(f"{method} {model} {dataset} λq {lambdas_a[0]:g}→{lambdas_b[0]:g}",
                          f"FLOPS {flops[low]:.3f}→{flops[high]:.3f} ({_signed(-flops_fall, '.0%')}), MRR@10 "
                          f"{mrr[low]:.4f}→{mrr[high]:.4f} ({_signed(-mrr_fall, '.1%')})",
                          flops[high] < flops[low] and mrr_fall < flops_fall))
    return rows


def _signed(change: float, spec: str) -> str:
    """A relative change with its sign, the minus typeset (−63%, +2%)."""
    return format(change, "+" + spec).replace("-", "−")


def _distillation_beats_max(view: View) -> list[dict]:
    rows = []
    for metric in ("mrr@10", "ndcg@10"):
        values = _run_values(view, metric)
        runs = values.reset_index()
        for (model, dataset), group in runs.groupby(["model", "dataset"], sort=True):
            distil, plain = group[group["method"] == "distil_splade"], group[group["method"] == "splade_max"]
            for d, m in product(distil.itertuples(), plain.itertuples()):
                rows.append(_cell(f"{model} {dataset} {metric}: distil λq {d.lambda_q:g} vs max λq {m.lambda_q:g}",
                                  f"DistilSPLADE-max {d.value:.4f} vs SPLADE-max {m.value:.4f}", d.value > m.value))
    return rows


# --- ELECTRA (truncated encoders) ----------------------------------------------------------------------------------

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
        rows.append(_cell(f"{task} {model}", f"k={best['layer']} {best['value']:.4f} vs full "
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
            rows.append(_cell(f"{task} {g.model} vs {b.model}",
                              f"generator {g.value:.4f} vs BERT {b.value:.4f} (±{view.tolerance:g})",
                              g.value >= b.value - view.tolerance - 1e-9))
    return rows


# --- the claims ----------------------------------------------------------------------------------------------------

#: the claims' text: statement, citation, how each is read (reference/claims.yaml); their checks below
CLAIMS_FILE = Path(__file__).resolve().parents[2] / "reference" / "claims.yaml"

CHECKS = {
    "2dmse-beats-mse-on-sub-dims": _beats_mse_on_sub_dims,
    "2dmse-beats-full-on-sub-layers": _beats_full_on_sub_layers,
    "2dmse-not-above-separate": _not_above_separate,
    "retrieval-full-dim-loss-helps": _full_dim_loss_helps,
    "retrieval-more-target-dims-help": _more_target_dims_help,
    "retrieval-fixed-doc-no-gain": _fixed_doc_no_gain,
    "homedepot-matryoshka-loses-less-when-cut": _loses_less_when_cut,
    "homedepot-fine-tuning-beats-pretrained": _fine_tuning_beats_pretrained,
    "homedepot-matryoshka-costs-little": _matryoshka_costs_little,
    "splade-larger-lambda-sparser": _larger_lambda_sparser,
    "splade-distillation-beats-max": _distillation_beats_max,
    "electra-truncation-beats-full-discriminator": _truncation_beats_full,
    "electra-generator-rivals-bert": _generator_rivals_bert,
}
CLAIM_KEYS = ("id", "tracks", "work", "statement", "citation", "reading")


def load_claims(path: str | Path = CLAIMS_FILE) -> tuple[Claim, ...]:
    """The claims of ``path``, each with its check; a claim without a check, a check without a claim
    or a missing field is an error naming it."""
    entries = read_yaml(Path(path).read_text(encoding="utf-8"), str(path))["claims"]
    for entry in entries:
        missing = [key for key in CLAIM_KEYS if not entry.get(key)]
        if missing:
            raise ValueError(f"{path}: claim {entry.get('id', '?')!r} lacks {', '.join(missing)}")
    ids = [entry["id"] for entry in entries]
    if sorted(ids) != sorted(CHECKS):
        raise ValueError(f"{path}: claims without a check: {sorted(set(ids) - set(CHECKS))}; "
                         f"checks without a claim: {sorted(set(CHECKS) - set(ids))}")
    return tuple(Claim(entry["id"], entry["work"], tuple(entry["tracks"]), entry["statement"], entry["citation"],
                       entry["reading"], CHECKS[entry["id"]]) for entry in entries)


CLAIMS = load_claims()


def track_claims(track: str, claims: tuple[Claim, ...] = CLAIMS) -> tuple[Claim, ...]:
    return tuple(claim for claim in claims if track in claim.tracks)


# --- one experiment: views of both sides, the table and its renderings --------------------------------------------

def experiment_views(subject: str, configs: dict[str, dict], scores: dict[str, pd.DataFrame],
                     published: pd.DataFrame, main_metrics: dict[str, str],
                     model_ids: dict[str, str]) -> tuple[View, View]:
    """Ours and the published side of ``subject``; ``configs`` and ``scores`` hold every experiment of its
    track (the ablation claims compare experiments)."""
    config = configs[subject]
    track, tolerance = config["track"], config["reference"]["tolerance"]
    if track in ("2dmse-sts", "2dmse-retrieval"):
        cells = {name: dense_view_cells(scores[name], configs[name]) for name in configs}
        ablations = ablation_pairs(subject, configs, cells) if track == "2dmse-retrieval" else ()
        return (View(cells[subject], ablations, tolerance),
                View(dense_published_cells(published, config), (), tolerance))
    if track == "homedepot":
        return (View(homedepot_view_cells(scores[subject], config), (), tolerance),
                View(published[["model", "method", "dim", "metric", "value"]], (), tolerance))
    if track == "splade":
        return (View(splade_view_cells(scores[subject], config), (), tolerance),
                View(splade_published_cells(published), (), tolerance))
    if track == "electra":
        return (View(electra_view_cells(scores[subject], config, main_metrics, model_ids), (), tolerance),
                View(electra_published_cells(published, config, main_metrics), (), tolerance))
    raise ValueError(f"no claims view for track '{track}'")


def claims_table(subject: str, track: str, ours: View, published: View,
                 claims: tuple[Claim, ...] = CLAIMS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary (one row per claim of the track) and cells (one row per claim, side and cell)."""
    rows, cells = [], []
    for claim in track_claims(track, claims):
        row = {"experiment": subject, "claim": claim.id, "work": claim.work, "statement": claim.statement,
               "citation": claim.citation, "reading": claim.reading}
        for side, view in (("ours", ours), ("published", published)):
            verdict = claim.evaluate(view)
            row.update({side: verdict.outcome, f"{side}_share": verdict.share, f"{side}_held": verdict.held,
                        f"{side}_covered": verdict.covered})
            cells.append(verdict.cells.assign(claim=claim.id, side=side))
        rows.append(row)
    cell_table = pd.concat(cells, ignore_index=True) if cells else pd.DataFrame(columns=CELL_COLUMNS)
    return pd.DataFrame(rows), cell_table.reindex(columns=["claim", "side", *CELL_COLUMNS])


def _outcome(row, side: str) -> str:
    outcome = row[side]
    return outcome if outcome == NOT_COVERED else f"{outcome} ({row[f'{side}_held']}/{row[f'{side}_covered']})"


def claims_markdown(subject: str, summary: pd.DataFrame, cells: pd.DataFrame) -> str:
    lines = [f"# Claims: {subject}", "",
             "Each claim of the reproduced work, checked on our scores and on the published numbers: holds (every "
             "covered cell), partly, fails (no cell), or not covered (none of its cells in that table).", ""]
    if summary.empty:
        return "\n".join([*lines, "No claim of this track is checked.", ""])
    readable = pd.DataFrame({"claim": summary["claim"], "ours": [_outcome(r, "ours") for _, r in summary.iterrows()],
                             "published": [_outcome(r, "published") for _, r in summary.iterrows()]})
    lines += [readable.to_markdown(index=False), ""]
    for _, row in summary.iterrows():
        lines += [f"## {row['claim']}", "", f"{row['work']}: {row['statement']}", "", f"Source: {row['citation']}.",
                  "", f"Checked as: {row['reading']}.", ""]
        for side in ("ours", "published"):
            mine = cells[(cells["claim"] == row["claim"]) & (cells["side"] == side)]
            lines.append(f"{side}: {_outcome(row, side)}")
            lines += [f"- {c.cell}: {c.evidence} ({'holds' if c.holds else 'does not hold'})"
                      for c in mine.itertuples()]
            lines.append("")
    return "\n".join(lines)


def claims_html(subject: str, summary: pd.DataFrame, cells: pd.DataFrame) -> str:
    parts = [f"<h2>Claims: {html.escape(subject)}</h2>"]
    if summary.empty:
        return standalone_page(parts[0] + "<p>No claim of this track is checked.</p>")
    head = "<tr><th>claim</th><th>as stated</th><th>source</th><th>checked as</th><th>ours</th><th>published</th></tr>"
    body = "".join(
        f"<tr><td>{html.escape(r['claim'])}</td><td>{html.escape(r['statement'])}</td>"
        f"<td>{html.escape(r['citation'])}</td><td>{html.escape(r['reading'])}</td>"
        f"<td>{html.escape(_outcome(r, 'ours'))}</td><td>{html.escape(_outcome(r, 'published'))}</td></tr>"
        for _, r in summary.iterrows())
    parts.append(f"<table class='claims'>{head}{body}</table>")
    shown = cells.assign(holds=cells["holds"].map({True: "yes", False: "no"}))
    for claim, mine in shown.groupby("claim", sort=False):
        parts.append(f"<h3>{html.escape(claim)}</h3>" + mine.drop(columns="claim").to_html(index=False, border=0))
    return standalone_page("\n".join(parts))


def claims_outputs(subject: str, configs: dict[str, dict], scores: dict[str, pd.DataFrame], published: pd.DataFrame,
                   main_metrics: dict[str, str], model_ids: dict[str, str],
                   claims: tuple[Claim, ...] = CLAIMS) -> dict[str, str]:
    """The texts of the claims rule's outputs: markdown, csv (the summary), html."""
    ours, theirs = experiment_views(subject, configs, scores, published, main_metrics, model_ids)
    summary, cells = claims_table(subject, configs[subject]["track"], ours, theirs, claims)
    return {"markdown": claims_markdown(subject, summary, cells),
            "csv": summary.to_csv(index=False, float_format="%.6f"),
            "html": claims_html(subject, summary, cells)}
