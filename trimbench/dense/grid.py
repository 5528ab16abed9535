"""The 2DMSE seed's layout (method x layer x dim) as views of the tidy score table: its tables and its
layer figures (:mod:`trimbench.plots.layers`), ours beside the published numbers."""

from __future__ import annotations

import html
from dataclasses import dataclass
from fractions import Fraction

import pandas as pd

from trimbench.dense.variants import seed_label
from trimbench.plots.layers import layer_panels
from trimbench.scores import BASELINE_LABEL, baseline_value

METHOD_ORDER = ["pretrained", "BERT", "BERT-S", "MSE", "2DMSE", "BERT-2DMSE"]


def ours_vs_published(scores: pd.DataFrame, published: pd.DataFrame, reference_variant: str, dataset: str,
                      metric: str) -> pd.DataFrame:
    """Long table (layer, method, dim, ours, published, delta) over every cell either side covers."""
    ours = scores[(scores["dataset"] == dataset) & (scores["metric"] == metric)]
    ours = ours.assign(method=ours["variant"].map(seed_label))[["layer", "method", "dim", "value"]]
    ours = ours.rename(columns={"value": "ours"}).astype({"layer": int, "dim": int})
    pub = published[(published["variant"] == reference_variant) & (published["dataset"] == dataset)
                    & (published["metric"] == metric)]
    pub = pub[["layer", "method", "dim", "value"]].rename(columns={"value": "published"})
    pub = pub.astype({"layer": int, "dim": int})
    merged = ours.merge(pub, on=["layer", "method", "dim"], how="outer")
    merged["delta"] = merged["ours"] - merged["published"]
    merged["method_rank"] = merged["method"].map({m: i for i, m in enumerate(METHOD_ORDER)}).fillna(99)
    merged = merged.sort_values(["layer", "method_rank", "method", "dim"], ascending=[True, True, True, False])
    return merged.drop(columns="method_rank").reset_index(drop=True)


def _with_baseline_row(wide: pd.DataFrame, value: float | None, text=lambda v: v) -> pd.DataFrame:
    """``wide`` (columns layer, method, then dims) and a last row of the baseline, which has no layer
    or dim: its one value under every dim."""
    if value is None:
        return wide
    row = {column: text(value) for column in wide.columns}
    row.update(layer=pd.NA if text(value) == value else "", method=BASELINE_LABEL)
    return pd.concat([wide, pd.DataFrame([row])], ignore_index=True)


def _cells(long: pd.DataFrame, bold) -> pd.DataFrame:
    """Wide cells 'ours (published)' with the best of ours per (layer, dim) emphasised by ``bold``."""
    best = long.groupby(["layer", "dim"])["ours"].transform("max")
    text = []
    for row, best_value in zip(long.itertuples(), best, strict=True):
        ours = "" if pd.isna(row.ours) else f"{row.ours:.4f}"
        if ours and row.ours == best_value:
            ours = bold(ours)
        published = "" if pd.isna(row.published) else f"({row.published:.3f})"
        text.append(" ".join(part for part in (ours, published) if part) or "–")
    wide = long.assign(cell=text).pivot(index=["layer", "method"], columns="dim", values="cell")
    wide = wide[sorted(wide.columns, reverse=True)].fillna("")
    order = {m: i for i, m in enumerate(METHOD_ORDER)}
    wide = wide.reindex(sorted(wide.index, key=lambda key: (key[0], order.get(key[1], 99), key[1])))
    wide.columns = [str(c) for c in wide.columns]
    return wide.reset_index()


def _summary(long: pd.DataFrame, reference_variant: str, dataset: str, metric: str) -> str:
    both = long.dropna(subset=["ours", "published"])
    summary = (f"{metric} on {dataset}; ours, published ({reference_variant}) in parentheses. "
               f"Cells compared: {len(both)}")
    if len(both):
        worst = both.loc[both["delta"].abs().idxmax()]
        summary += (f", mean |Δ| {both['delta'].abs().mean():.4f}, largest |Δ| {abs(worst['delta']):.4f} "
                    f"at layer {worst['layer']}, {worst['method']}, dim {worst['dim']}")
    return summary + "."


def _page(summaries: list[str], table_html: str) -> str:
    paragraphs = "".join(f"<p>{html.escape(line)}</p>" for line in summaries)
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><style>"
            "body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
            "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}</style></head><body>"
            f"{paragraphs}{table_html}</body></html>\n")


def sts_grid_tables(scores: pd.DataFrame, published: pd.DataFrame, reference_variant: str, dataset: str,
                    metric: str, baseline: pd.DataFrame | None = None) -> dict[str, str]:
    """The seed's table layout (rows layer × method, columns dims, best per layer and dim in bold,
    published in parentheses) as Markdown and HTML, the plain wide CSV of ours, and the long
    ours-vs-published table as CSV and HTML (the report's view); ``baseline`` (BM25's scores), a last row of
    its one value."""
    long = ours_vs_published(scores, published, reference_variant, dataset, metric)
    covered = long.dropna(subset=["ours"])
    plain = covered.pivot(index=["layer", "method"], columns="dim", values="ours")
    plain = plain[sorted(plain.columns, reverse=True)].reset_index()
    summary = _summary(long, reference_variant, dataset, metric)
    value = baseline_value(baseline, dataset, metric)
    plain = _with_baseline_row(plain.rename(columns=str), value)
    markdown = summary + "\n\n" + _with_baseline_row(_cells(covered, lambda s: f"**{s}**"), value,
                                                      lambda v: f"{v:.4f}").to_markdown(index=False) + "\n"
    html_table = _with_baseline_row(_cells(covered, lambda s: f"<b>{s}</b>"), value, lambda v: f"{v:.4f}").to_html(
        index=False, escape=False, border=0)
    return {
        "markdown": markdown,
        "html": _page([summary], html_table),
        "csv": plain.to_csv(index=False, float_format="%.6f"),
        "comparison": long.to_csv(index=False, float_format="%.6f"),
        "comparison_html": _page([summary], long.to_html(index=False, border=0, na_rep="–",
                                                         float_format=lambda v: f"{v:.4f}")),
    }


@dataclass(frozen=True)
class VersionBlock:
    """One experiment's column block in the side-by-side table (e.g. the seed's V1 and V2 halves)."""

    label: str
    scores: pd.DataFrame
    published: pd.DataFrame
    reference_variant: str
    dataset: str
    metric: str

    def long(self) -> pd.DataFrame:
        return ours_vs_published(self.scores, self.published, self.reference_variant, self.dataset, self.metric)


def _side_by_side(blocks: list[VersionBlock], cells, fill: str | None = "") -> pd.DataFrame:
    wide = None
    for block in blocks:
        part = cells(block)
        part.columns = [c if c in ("layer", "method") else f"{block.label} {c}" for c in part.columns]
        wide = part if wide is None else wide.merge(part, on=["layer", "method"], how="outer")
    order = {m: i for i, m in enumerate(METHOD_ORDER)}
    wide = wide.assign(rank=wide["method"].map(order).fillna(99)).sort_values(["layer", "rank", "method"])
    wide = wide.drop(columns="rank").reset_index(drop=True)
    return wide if fill is None else wide.fillna(fill)


def sts_versions_tables(blocks: list[VersionBlock]) -> dict[str, str]:
    """The seed's full STS table: one column block per experiment (v1 beside v2), rows layer ×
    method, each block in the single-experiment layout (best per block, layer and dim in bold)."""
    summaries = [f"{b.label}: " + _summary(b.long(), b.reference_variant, b.dataset, b.metric) for b in blocks]

    def covered(block):
        return block.long().dropna(subset=["ours"])

    def plain(block):
        wide = covered(block).pivot(index=["layer", "method"], columns="dim", values="ours")
        return wide[sorted(wide.columns, reverse=True)].rename(columns=str).reset_index()

    markdown = _side_by_side(blocks, lambda b: _cells(covered(b), lambda s: f"**{s}**"))
    html_table = _side_by_side(blocks, lambda b: _cells(covered(b), lambda s: f"<b>{s}</b>"))
    numbers = _side_by_side(blocks, plain, fill=None)
    return {
        "markdown": "\n\n".join(summaries) + "\n\n" + markdown.to_markdown(index=False) + "\n",
        "html": _page(summaries, html_table.to_html(index=False, escape=False, border=0)),
        "csv": numbers.to_csv(index=False, float_format="%.6f"),
    }


def sts_layer_figure(scores: pd.DataFrame, published: pd.DataFrame, reference_variant: str, dataset: str,
                     metric: str, title: str, paths: dict[str, str], depth: int | None = None,
                     baseline: pd.DataFrame | None = None) -> None:
    """One panel per layer, x = dim (log2), y = score, one line per method; published dashed.

    An experiment that shares no cell with the published grid (a toy: another model, depth and
    dataset; ``depth`` its model's layers) shows the published curves in a row of their own below
    ours, on their own y axis, at the same fractions of the depth (our layer k of L beside their
    layer k·L'/L of L'): what the comparison looks like, never a claim that the numbers match.
    ``baseline`` (BM25's scores, no layer or dim): a horizontal line on each panel of ours.
    """
    line = baseline_value(baseline, dataset, metric)
    long = ours_vs_published(scores, published, reference_variant, dataset, metric)
    paper = None
    if depth and long.dropna(subset=["ours", "published"]).empty:
        paper = published_at_depth(published, reference_variant, metric, sorted(set(long.dropna(subset=["ours"])
                                                                                   ["layer"])), depth)
    if paper is None:
        layer_panels(_ours_and_published(long, f"published {reference_variant}"), metric, title, paths,
                     baseline=line, method_order=METHOD_ORDER)
        return
    rows = {"ours": f"ours ({dataset})", "published": f"published {reference_variant} ({paper['dataset'].iloc[0]})"}
    ours = long.dropna(subset=["ours"]).assign(source="ours", score=lambda f: f["ours"], row=rows["ours"],
                                               full_depth=depth)
    paper = paper.assign(source=f"published {reference_variant} (paper scale)", row=rows["published"])
    data = pd.concat([ours, paper], ignore_index=True)
    data["depth"] = [_fraction(layer, full) for layer, full in zip(data["layer"], data["full_depth"], strict=True)]
    titles = {(row, depth_label): f"{'ours' if source == 'ours' else 'published'} · layer {layer} of {full}"
              for row, depth_label, source, layer, full in
              data[["row", "depth", "source", "layer", "full_depth"]].drop_duplicates().itertuples(index=False)}
    layer_panels(data, metric, f"{title}\nbelow: the published curves at the paper's scale (another model and "
                                "data, no cell in common with ours), at the same fractions of the depth", paths,
                 row="row", row_order=list(rows.values()), col="depth", titles=titles, sharey="row", baseline=line,
                 method_order=METHOD_ORDER)


def published_at_depth(published: pd.DataFrame, reference_variant: str, metric: str, layers: list[int],
                       depth: int) -> pd.DataFrame | None:
    """The published cells (columns method, layer, dim, score, dataset, full_depth) at the same
    fractions of their model's depth as ``layers`` of ``depth``; None when there are none. Of
    several published datasets, the one with the most cells (the seed's average)."""
    rows = published[(published["variant"] == reference_variant) & (published["metric"] == metric)]
    if rows.empty:
        return None
    counts = rows["dataset"].value_counts()
    rows = rows[rows["dataset"] == min(counts[counts == counts.max()].index)]
    full = int(rows["layer"].max())
    wanted = {round(layer * full / depth) for layer in layers}
    rows = rows[rows["layer"].isin(wanted)]
    if rows.empty:
        return None
    return (rows[["method", "layer", "dim", "value", "dataset"]].rename(columns={"value": "score"})
            .astype({"layer": int, "dim": int}).assign(full_depth=full))


def _fraction(layer: int, depth: int) -> str:
    share = Fraction(int(layer), int(depth))
    return "full depth" if share == 1 else f"{share} of the depth"


def sts_versions_figure(blocks: list[VersionBlock], title: str, paths: dict[str, str]) -> None:
    """The layer panels with one row per experiment (e.g. v1 above v2), ours solid, published dashed."""
    data = pd.concat([_ours_and_published(b.long(), "published").assign(version=b.label) for b in blocks])
    metrics = " | ".join(dict.fromkeys(b.metric for b in blocks))  # each experiment's main metric, once
    layer_panels(data, metrics, title, paths, row="version", row_order=[b.label for b in blocks],
                 method_order=METHOD_ORDER)


def _ours_and_published(long: pd.DataFrame, published_label: str) -> pd.DataFrame:
    layers = set(long.dropna(subset=["ours"])["layer"])
    data = pd.concat([
        long.dropna(subset=["ours"]).assign(source="ours", score=lambda f: f["ours"]),
        long.dropna(subset=["published"]).assign(source=published_label, score=lambda f: f["published"]),
    ])
    return data[data["layer"].isin(layers)]
