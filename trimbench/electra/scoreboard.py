"""The ELECTRA track on the scoreboard (trimbench.report.scoreboard): its comparison with the published
per-layer curves and its headline. ``exp``: the scoreboard's experiment (name, config, scores,
published, main_metrics)."""

from __future__ import annotations

import pandas as pd

from trimbench.electra.report import PUBLISHED_EPOCHS, dev_choice, layer_table, ours_of_kind, published_scores


def _layers(exp) -> pd.DataFrame:
    return layer_table(exp.scores, exp.published, exp.config["reference"]["experiments"], exp.main_metrics,
                       exp.config["train"]["select"])


def comparison(exp) -> pd.DataFrame:
    """Test mean over seeds per (task, model, layer, epoch) against the published curves, both ways:
    each published cell against ours of its own kind (``epoch``: ``last`` = the last epoch's model,
    ``dev-best`` = the dev-chosen epoch's; :data:`trimbench.electra.report.PUBLISHED_EPOCHS`), our
    cells without a published one as the epoch the experiment keeps."""
    table = _layers(exp)
    select = exp.config["train"]["select"]
    kept = "dev-best" if select == "best" else "last"
    rows = []
    for kind in PUBLISHED_EPOCHS:
        # each cell once: as the published cell's kind, else (no published cell) as the kept epoch
        asked = (table["epoch"] == kind) | (table["epoch"].isna() & (kind == kept))
        ours = ours_of_kind(table, pd.Series(kind, index=table.index), select).where(asked)
        rows.append(table[["task", "model", "layer"]].assign(epoch=kind, ours=ours).dropna(subset=["ours"]))
    ours = pd.concat(rows, ignore_index=True)
    published = published_scores(exp.published, exp.config["reference"]["experiments"], exp.main_metrics)
    published = published[published["model"].isin(exp.config["models"])]
    long = ours.merge(published, on=["task", "model", "layer", "epoch"], how="outer")
    long["delta"] = long["ours"] - long["published"]
    return long.sort_values(["task", "model", "layer", "epoch"]).reset_index(drop=True)


def headline(exp) -> dict:
    """The first task and model: the test score at the layer dev chooses, beside the published
    curve's value at that layer."""
    out = {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
    table = _layers(exp)
    choice = dev_choice(table) if len(table) else table
    if len(choice):
        first = choice[(choice["task"] == exp.config["tasks"][0]) & (choice["model"] == exp.config["models"][0])]
        first = (first if len(first) else choice).iloc[0]
        cell = f"{first['model']} L{first['chosen_layer']} (dev-chosen) {first['task']}"
        out.update(ours=float(first["test_mean"]), ours_cell=cell)
        # the published value of the same kind (the final table's dev-chosen epoch) only
        at = table[(table["task"] == first["task"]) & (table["model"] == first["model"])
                   & (table["layer"] == first["chosen_layer"]) & (table["epoch"] == "dev-best")]
        published = at[at["compared"].notna()]["published"].dropna()
        if len(published):
            out.update(published=float(published.iloc[0]),
                       published_cell=f"{first['model']} L{first['chosen_layer']} {first['task']}")
    return out
