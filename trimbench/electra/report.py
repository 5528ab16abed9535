"""Tables and figures of the ELECTRA track (truncated encoders): views of the tidy score table, ours beside
the published per-layer curves (``reference/electra.csv``)."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd
from matplotlib.ticker import MaxNLocator

from trimbench import scores as score_table
from trimbench.electra.checks import LAST_EPOCH_SPLIT, PARAMETERS
from trimbench.plots.figures import fitted_title, plt, save, sns
from trimbench.plots.pareto import plot_front

ROLES = ["discriminator", "generator", "encoder"]
#: our column prefix -> the split it summarises (``last``: the last epoch's model on test)
SPLITS = {"dev": "validation", "test": "test", "last": LAST_EPOCH_SPLIT}
#: the reference's ``epoch`` column: which epoch's model a published cell scored -> our column of
#: that kind (``dev-best``: the final table's, ``training.py``; ``last``: the archives',
#: ``training_stsbenchmark_hf.py@4b995f6:101,142``). ``dev-best`` is ours only when the
#: experiment keeps the best dev epoch (``train.select: best``).
PUBLISHED_EPOCHS = {"dev-best": "test_mean", "last": "last_mean"}


def per_layer(scores: pd.DataFrame, main_metrics: dict[str, str]) -> pd.DataFrame:
    """Mean, sample sd and count over seeds of each (task, model, layer)'s main metric on dev and
    test, with the cut model's parameter count. ``main_metrics``: task -> metric."""
    frames = []
    for task, metric in main_metrics.items():
        ours = scores[(scores["dataset"] == task) & (scores["metric"] == metric)]
        columns = []
        for name, split in SPLITS.items():
            stats = ours[ours["split"] == split].groupby(["model", "layer"])["value"].agg(["mean", "std", "count"])
            columns.append(stats.rename(columns=lambda c, name=name: f"{name}_{c}"))
        frames.append(pd.concat(columns, axis=1).reset_index().assign(task=task, metric=metric))
    counts = (scores[scores["metric"] == PARAMETERS].groupby(["model", "layer"])["value"].first()
              .rename(PARAMETERS).reset_index())
    table = pd.concat(frames, ignore_index=True).merge(counts, on=["model", "layer"], how="left")
    table = table.rename(columns={"dev_std": "dev_sd", "test_std": "test_sd", "last_std": "last_sd",
                                  "dev_count": "dev_seeds", "test_count": "test_seeds", "last_count": "last_seeds"})
    table = table.astype({"layer": int, PARAMETERS: "Int64"})
    order = ["task", "metric", "model", "layer", "dev_mean", "dev_sd", "dev_seeds", "test_mean", "test_sd",
             "test_seeds", "last_mean", "last_sd", "last_seeds", PARAMETERS]
    return table[order].sort_values(["task", "model", "layer"]).reset_index(drop=True)


DEV_CHOICE_COLUMNS = ["task", "model", "metric", "chosen_layer", "dev_mean", "test_mean", "test_sd", "full_layer",
                      "full_test_mean", "full_test_sd", "gain", PARAMETERS, "full_parameters"]


def dev_choice(layer_table: pd.DataFrame) -> pd.DataFrame:
    """Per (task, model): the layer whose mean dev score is highest (ties: the shallower, cheaper
    one), beside the full-depth model."""
    rows = []
    for (task, model), group in layer_table.groupby(["task", "model"], sort=True):
        group = group.sort_values("layer")
        best = group.loc[group["dev_mean"].idxmax()]
        full = group.iloc[-1]
        rows.append({"task": task, "model": model, "metric": best["metric"], "chosen_layer": int(best["layer"]),
                     "dev_mean": best["dev_mean"], "test_mean": best["test_mean"], "test_sd": best["test_sd"],
                     "full_layer": int(full["layer"]), "full_test_mean": full["test_mean"],
                     "full_test_sd": full["test_sd"], "gain": best["test_mean"] - full["test_mean"],
                     PARAMETERS: best.get(PARAMETERS), "full_parameters": full.get(PARAMETERS)})
    return pd.DataFrame(rows, columns=DEV_CHOICE_COLUMNS)  # the columns also when no task has scores


def published_scores(published: pd.DataFrame, reference_experiments: dict[str, str],
                     main_metrics: dict[str, str]) -> pd.DataFrame:
    """Published (task, model, layer, epoch, published) for the tasks mapped to a published experiment;
    ``epoch``: which epoch's model the cell scored (:data:`PUBLISHED_EPOCHS`)."""
    unknown = set(published.get("epoch", pd.Series([None] * len(published))).unique()) - set(PUBLISHED_EPOCHS)
    if unknown:
        raise ValueError(f"the ELECTRA reference's column 'epoch' must be one of {sorted(PUBLISHED_EPOCHS)} "
                         f"(which epoch's model each cell scored); found {sorted(map(str, unknown))}")
    frames = []
    for task, published_experiment in reference_experiments.items():
        rows = published[(published["experiment"] == published_experiment)
                         & (published["metric"] == main_metrics[task])]
        frames.append(rows.assign(task=task).reindex(columns=["task", "model", "layer", "epoch", "value"]))
    columns = ["task", "model", "layer", "epoch", "published"]
    if not frames:
        return pd.DataFrame(columns=columns).astype({"layer": int, "published": float})
    return pd.concat(frames, ignore_index=True).rename(columns={"value": "published"}).astype({"layer": int})


def ours_of_kind(table: pd.DataFrame, epochs: pd.Series, select: str) -> pd.Series:
    """Per row of a :func:`per_layer` table, our test mean of the kind ``epochs`` names (``last`` /
    ``dev-best``); NaN for ``dev-best`` when the experiment keeps the last epoch (no such score)."""
    ours = pd.Series(float("nan"), index=table.index)
    for kind, column in PUBLISHED_EPOCHS.items():
        if kind == "dev-best" and select != "best":
            continue
        ours = ours.mask(epochs == kind, table[column])
    return ours


def layer_table(scores: pd.DataFrame, published: pd.DataFrame, reference_experiments: dict[str, str],
                main_metrics: dict[str, str], select: str = "best") -> pd.DataFrame:
    """Long table: per (task, model, layer) dev, test and last-epoch test mean ± sd over seeds,
    parameters, published and its ``epoch`` kind, ``compared`` = ours of that kind
    (:func:`ours_of_kind`; ``select``: the experiment's ``train.select``), delta = compared −
    published, and whether dev chose the layer."""
    table = per_layer(scores, main_metrics)
    table = table.merge(published_scores(published, reference_experiments, main_metrics),
                        on=["task", "model", "layer"], how="left")
    table["compared"] = ours_of_kind(table, table["epoch"], select)
    table["delta"] = table["compared"] - table["published"]
    chosen = dev_choice(table)[["task", "model", "chosen_layer"]]
    table = table.merge(chosen, on=["task", "model"], how="left")
    table["chosen"] = table["layer"] == table.pop("chosen_layer")
    return table


def read_layer_table(scores: str | Path, reference: str | Path, reference_experiments: dict[str, str],
                     main_metrics: dict, select: str = "best") -> pd.DataFrame:
    """:func:`layer_table` of an experiment's score table and reference file."""
    return layer_table(score_table.read(scores), pd.read_csv(reference), reference_experiments, main_metrics,
                       select)


def _mean_sd(mean, sd) -> str:
    if pd.isna(mean):
        return ""
    return f"{mean:.4f}" if pd.isna(sd) else f"{mean:.4f} ± {sd:.4f}"


def _wide(table: pd.DataFrame, bold) -> pd.DataFrame:
    """Rows layer, columns model: 'mean ± sd (published)', the dev-chosen layer emphasised; a
    published last-epoch value stands beside our last epoch's, never beside the kept epoch's."""
    cells = []
    for row in table.itertuples():
        text = _mean_sd(row.test_mean, row.test_sd)
        if text and row.chosen:
            text = bold(text)
        if not pd.isna(row.published) and not pd.isna(row.compared):
            if row.epoch == "last":
                text = f"{text}; last epoch {_mean_sd(row.last_mean, row.last_sd) or '–'}".strip("; ")
            text = f"{text} ({row.published:.4f})".strip()
        cells.append(text or "–")
    wide = table.assign(cell=cells).pivot(index="layer", columns="model", values="cell").fillna("")
    wide.columns = [str(c) for c in wide.columns]
    return wide.reset_index()


def _page(body: str) -> str:
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><style>"
            "body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse;margin-bottom:1em}"
            "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}</style></head><body>"
            f"{body}</body></html>\n")


def _sections(table: pd.DataFrame, render) -> list[tuple[str, str]]:
    """(heading, rendered table) per task."""
    out = []
    for task, part in table.groupby("task", sort=True):
        seeds = part["test_seeds"].max()
        heading = (f"{task}: test {part['metric'].iloc[0]} per layer k (0 = embedding output), mean ± sd over "
                   f"{int(seeds)} seed(s); published in parentheses, beside ours of its kind (the archives' "
                   f"last-epoch values beside our last epoch's); the layer chosen by dev emphasised")
        out.append((heading, render(part)))
    return out


def layer_tables(table: pd.DataFrame) -> dict[str, str]:
    """Markdown and HTML (one wide table per task) and the long CSV."""
    markdown = "\n".join(f"### {heading}\n\n{text}\n" for heading, text in
                         _sections(table, lambda p: _wide(p, lambda s: f"**{s}**").to_markdown(index=False)))
    body = "".join(f"<h3>{html.escape(heading)}</h3>{text}" for heading, text in
                   _sections(table, lambda p: _wide(p, lambda s: f"<b>{s}</b>").to_html(
                       index=False, escape=False, border=0)))
    return {"markdown": markdown, "html": _page(body), "csv": table.to_csv(index=False, float_format="%.6f")}


def choice_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per (task, model): the dev-chosen layer's test score against the full-depth model's, with
    the published values at both and the share of parameters the cut keeps."""
    choice = dev_choice(table)
    # the dev-chosen epoch's scores: beside published values of that kind only (the final table's)
    kept_epoch = (table["epoch"] == "dev-best") & table["compared"].notna()
    published = table[kept_epoch].set_index(["task", "model", "layer"])["published"]

    def lookup(task, model, layer):
        return published.get((task, model, layer), float("nan"))

    choice["published_chosen"] = [lookup(t, m, k) for t, m, k in
                                  zip(choice["task"], choice["model"], choice["chosen_layer"], strict=True)]
    choice["published_full"] = [lookup(t, m, k) for t, m, k in
                                zip(choice["task"], choice["model"], choice["full_layer"], strict=True)]
    choice["parameter_share"] = choice[PARAMETERS] / choice["full_parameters"]
    return choice


def choice_tables(table: pd.DataFrame) -> dict[str, str]:
    choice = choice_table(table)
    view = pd.DataFrame({
        "task": choice["task"], "model": choice["model"], "metric": choice["metric"],
        "chosen k": choice["chosen_layer"], "dev": choice["dev_mean"].map(lambda v: f"{v:.4f}"),
        "test at chosen k": [_mean_sd(m, s) for m, s in zip(choice["test_mean"], choice["test_sd"], strict=True)],
        "full depth L": choice["full_layer"],
        "test at L": [_mean_sd(m, s) for m, s in zip(choice["full_test_mean"], choice["full_test_sd"], strict=True)],
        "gain": choice["gain"].map(lambda v: f"{v:+.4f}"),
        "published at k / L": [" / ".join("–" if pd.isna(v) else f"{v:.4f}" for v in pair)
                               for pair in zip(choice["published_chosen"], choice["published_full"], strict=True)],
        "parameters kept": choice["parameter_share"].map(lambda v: "" if pd.isna(v) else f"{v:.1%}"),
    })
    summary = ("The layer chosen by the mean dev score over seeds (ties: the shallower), its test score "
               "against the full-depth model's; gain = chosen − full. Published: the final table's values "
               "(scored at the dev-chosen epoch, as ours) only.")
    return {"markdown": summary + "\n\n" + view.to_markdown(index=False) + "\n",
            "html": _page(f"<p>{html.escape(summary)}</p>" + view.to_html(index=False, border=0)),
            "csv": choice.to_csv(index=False, float_format="%.6f")}


# --- figures -----------------------------------------------------------------------------------


def layer_figure(scores: pd.DataFrame, table: pd.DataFrame, roles: dict[str, str], main_metrics: dict[str, str],
                 title: str, paths: dict[str, str]) -> None:
    """Test score per layer, one line per model (style: discriminator / generator / encoder), one
    row of panels per task: ours (mean over seeds, sd band) at the kept epoch and at the last epoch,
    and, where published, the paper's by the epoch it scored (:data:`PUBLISHED_EPOCHS`)."""

    data = []
    for split, source in (("test", "ours"), (LAST_EPOCH_SPLIT, "ours, last epoch")):
        ours = pd.concat([scores[(scores["dataset"] == task) & (scores["metric"] == metric)
                                 & (scores["split"] == split)] for task, metric in main_metrics.items()])
        ours = ours.rename(columns={"dataset": "task", "value": "score"})[["task", "model", "layer", "score"]]
        if len(ours):
            data.append(ours.assign(source=source))
    published = table.dropna(subset=["published"])
    for kind, part in published.groupby("epoch", sort=True):
        data.append(part.rename(columns={"published": "score"})[["task", "model", "layer", "score"]]
                    .assign(source=f"published, {'last epoch' if kind == 'last' else 'dev-chosen epoch'}"))
    data = pd.concat(data, ignore_index=True).astype({"layer": int, "score": float})
    data["role"] = data["model"].map(roles)
    style_order = [r for r in ROLES if r in set(data["role"])]
    grid = sns.relplot(data=data, x="layer", y="score", hue="model", hue_order=sorted(data["model"].unique()),
                       style="role", style_order=style_order, row="task", col="source", kind="line",
                       errorbar="sd", marker="o", markersize=4, height=2.8, aspect=1.4,
                       facet_kws={"sharey": "row", "sharex": "row"})
    chosen = table[table["chosen"]]
    for (task, source), ax in grid.axes_dict.items():
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if source == "ours":
            picks = chosen[chosen["task"] == task]
            ax.scatter(picks["layer"], picks["test_mean"], marker="*", s=90, color="black", zorder=3,
                       label=CHOSEN_LABEL)
    # Each panel names its task and source above it (a margin title sits rotated at the right edge).
    grid.set_titles(template="{row_name} · {col_name}")
    grid.set_axis_labels("layer k (0 = embedding output)", "test score")
    _legend_below(grid)
    # Wrapped to the panels' width: one line of a long title widened the saved figure past them.
    grid.figure.suptitle(fitted_title(title, grid.figure.get_figwidth()), y=1.0, va="bottom")
    save(grid.figure, paths)


#: the legend entry of the dev-chosen layer's star
CHOSEN_LABEL = "chosen by dev"


def _legend_below(grid) -> None:
    """The relplot legend (models, roles) and the dev-chosen star, under the panels: at the right, a
    legend as tall as the panels takes a third of a one-column figure's width."""
    handles = {}
    for ax in grid.axes.flat:  # seaborn's proxies (its titles "model", "role" among them), the star
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    grid.legend.remove()
    grid.figure.tight_layout()
    grid.figure.legend(handles.values(), handles.keys(), loc="upper center", bbox_to_anchor=(0.5, 0),
                       ncol=3, frameon=False, fontsize=8, handlelength=3)


def electra_pareto_figure(table: pd.DataFrame, roles: dict[str, str], title: str, paths: dict[str, str]) -> None:
    """Parameters used (embeddings + first k layers) against the test score (mean over seeds) of
    every (model, k), one panel per task; the dev-chosen k ringed, the Pareto front drawn."""

    tasks = sorted(table["task"].unique())
    figure, axes = plt.subplots(1, len(tasks), figsize=(7 * len(tasks), 3.8), squeeze=False)
    data = table.dropna(subset=["test_mean", PARAMETERS]).assign(role=lambda f: f["model"].map(roles))
    style_order = [r for r in ROLES if r in set(data["role"])]
    for ax, task in zip(axes[0], tasks, strict=True):
        part = data[data["task"] == task]
        sns.scatterplot(data=part, x=PARAMETERS, y="test_mean", hue="model", hue_order=sorted(part["model"].unique()),
                        style="role", style_order=style_order, s=36, ax=ax, zorder=2)
        picks = part[part["chosen"]]
        ax.scatter(picks[PARAMETERS], picks["test_mean"], s=140, facecolors="none", edgecolors="black",
                   linewidths=1.2, zorder=3, label="chosen by dev")
        plot_front(ax, part, PARAMETERS, "test_mean")
        ax.set_xscale("log")
        ax.set_xlabel("parameters used (embeddings + first k layers)")
        ax.set_ylabel(f"test {part['metric'].iloc[0]}" if len(part) else "test score")
        ax.set_title(task)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    figure.suptitle(fitted_title(title, figure.get_figwidth()))
    save(figure, paths)
