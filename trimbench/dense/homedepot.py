"""The Home Depot Matryoshka study's views (seed 001: product search with all-MiniLM-L6-v2): its
tables and recall figure, ours beside the published numbers, and the scoreboard's comparison and
headline. The data are built by :mod:`trimbench.data.homedepot`.
"""

from __future__ import annotations

import html

import pandas as pd

from trimbench.dense.variants import HOMEDEPOT_METHOD_LABELS as METHOD_LABELS
from trimbench.plots.figures import plt, reference_line, save, sns
from trimbench.scores import BASELINE_LABEL, baseline_value

# --- views: table, figure and the scoreboard's comparison ---------------------------------------


def ours_table(scores: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Our cells at the deepest layer: model, method (the write-up's), dim, metric, value."""
    ours = scores[scores["layer"] == scores["layer"].max()]
    model = config["reference"].get("model") or config["model"]
    return pd.DataFrame({"model": model, "method": ours["variant"].map(lambda v: METHOD_LABELS.get(v, v)),
                         "dim": ours["dim"].astype(int), "metric": ours["metric"], "value": ours["value"]})


def comparison(scores: pd.DataFrame, published: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Long table (model, method, metric, dim, ours, published, delta) over every cell either side has."""
    ours = ours_table(scores, config).rename(columns={"value": "ours"})
    model = ours["model"].iloc[0] if len(ours) else config["reference"].get("model")
    pub = published[published["model"] == model][["model", "method", "dim", "metric", "value"]]
    pub = pub.rename(columns={"value": "published"}).astype({"dim": int})
    merged = ours.merge(pub, on=["model", "method", "dim", "metric"], how="outer")
    merged["delta"] = merged["ours"] - merged["published"]
    return merged.sort_values(["model", "metric", "method", "dim"], ascending=[True, True, True, False],
                              kind="stable").reset_index(drop=True)


def headline(scores: pd.DataFrame, published: pd.DataFrame, config: dict) -> dict:
    """recall@10 of the last method at the widest dim, ours and published."""
    long = comparison(scores, published, config)
    method = METHOD_LABELS.get(config["methods"][-1], config["methods"][-1])
    cells = long[(long["method"] == method) & (long["metric"] == "recall@10")]
    out = {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
    for side in ("ours", "published"):
        have = cells.dropna(subset=[side])
        if len(have):
            top = have.loc[have["dim"].idxmax()]
            out[side] = float(top[side])
            out[f"{side}_cell"] = f"{top['model']} {method} d{top['dim']} recall@10"
    return out


def _with_baseline(wide: pd.DataFrame, baseline: pd.DataFrame | None, text) -> pd.DataFrame:
    """``wide`` (index model, metric, method; columns dims) and a BM25 row per metric: its one
    value (no dim) under every dim."""
    if baseline is None or wide.empty:
        return wide
    model = wide.index[0][0]
    rows = {(model, metric, BASELINE_LABEL): {column: text(value) for column in wide.columns}
            for metric, value in zip(baseline["metric"], baseline["value"], strict=True)
            if metric in set(wide.index.get_level_values("metric"))}
    extra = pd.DataFrame.from_dict(rows, orient="index")
    extra.index = pd.MultiIndex.from_tuples(extra.index, names=wide.index.names)
    return pd.concat([wide, extra]).sort_index(level="metric", sort_remaining=False, kind="stable")


def tables(scores: pd.DataFrame, published: pd.DataFrame, config: dict,
           baseline: pd.DataFrame | None = None) -> dict[str, str]:
    """Rows method × metric, columns dims: 'ours (published)'; Markdown, CSV (ours) and HTML;
    ``baseline`` (BM25's scores), a row of its one value per metric."""
    long = comparison(scores, published, config)
    text = [" ".join(p for p in ("" if pd.isna(o) else f"{o:.4f}", "" if pd.isna(q) else f"({q:.4f})") if p) or "–"
            for o, q in zip(long["ours"], long["published"], strict=True)]
    wide = long.assign(cell=text).pivot(index=["model", "metric", "method"], columns="dim", values="cell")
    wide = wide[sorted(wide.columns, reverse=True)].fillna("")
    wide.columns = [str(c) for c in wide.columns]
    plain = long.dropna(subset=["ours"]).pivot(index=["model", "metric", "method"], columns="dim", values="ours")
    plain = plain[sorted(plain.columns, reverse=True)]
    plain.columns = [str(c) for c in plain.columns]
    wide, plain = _with_baseline(wide, baseline, lambda v: f"{v:.4f}"), _with_baseline(plain, baseline, float)
    summary = f"Home Depot test, cosine; ours (published in parentheses). {_summary(long)}"
    return {
        "markdown": f"{summary}\n\n{wide.reset_index().to_markdown(index=False)}\n",
        "csv": plain.reset_index().to_csv(index=False, float_format="%.6f"),
        "html": ("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                 f"<p>{html.escape(summary)}</p>{wide.reset_index().to_html(index=False, border=0)}</body></html>\n"),
    }


def _summary(long: pd.DataFrame) -> str:
    both = long.dropna(subset=["ours", "published"])
    if both.empty:
        return "No cell in common with the write-up."
    worst = both.loc[both["delta"].abs().idxmax()]
    return (f"{len(both)} cells in common, largest |Δ| {abs(worst['delta']):.4f} at {worst['method']} "
            f"d{worst['dim']} {worst['metric']}.")


def recall_figure(scores: pd.DataFrame, published: pd.DataFrame, config: dict, title: str,
                  paths: dict[str, str], baseline: pd.DataFrame | None = None) -> None:
    """recall@10 against dim (log2), a line per method; the write-up's cells as crosses; BM25's
    (``baseline``) a horizontal line."""

    long = comparison(scores, published, config)
    long = long[long["metric"] == "recall@10"]
    figure, ax = plt.subplots(figsize=(5.5, 3.6))
    ours = long.dropna(subset=["ours"])
    methods = sorted(set(long["method"]))
    sns.lineplot(data=ours, x="dim", y="ours", hue="method", hue_order=methods, marker="o", ax=ax)
    pub = long.dropna(subset=["published"])
    if len(pub):
        sns.scatterplot(data=pub, x="dim", y="published", hue="method", hue_order=methods, marker="X", s=70,
                        ax=ax, legend=False)
    dims = sorted(set(long["dim"]))
    ax.set_xscale("log", base=2)
    ax.set_xticks(dims, [str(d) for d in dims])
    ax.minorticks_off()
    ax.set_xlabel("dim")
    ax.set_ylabel("recall@10 (crosses: published)")
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=9)
    line = None if baseline is None else baseline_value(baseline, config["evaluation"]["datasets"][0], "recall@10")
    if line is not None:
        reference_line(ax, line, BASELINE_LABEL)
    # Beside the axes: inside, "best" still covered a published cross (the probe).
    ax.legend(fontsize=7, title="method", title_fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1),
              borderaxespad=0, frameon=False)
    save(figure, paths)
