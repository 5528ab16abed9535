"""Tables as views of the tidy score table, ours beside the published numbers."""

from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd

from trimbench.config import SEED_METHOD_LABELS

METHOD_ORDER = ["pretrained", "BERT", "BERT-S", "MSE", "2DMSE", "BERT-2DMSE"]


def seed_label(method: str) -> str:
    return SEED_METHOD_LABELS.get(method, method)


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
                    metric: str) -> dict[str, str]:
    """The seed's table layout (rows layer × method, columns dims, best per layer and dim in bold,
    published in parentheses) as Markdown and HTML, the plain wide CSV of ours, and the long
    ours-vs-published CSV."""
    long = ours_vs_published(scores, published, reference_variant, dataset, metric)
    covered = long.dropna(subset=["ours"])
    plain = covered.pivot(index=["layer", "method"], columns="dim", values="ours")
    plain = plain[sorted(plain.columns, reverse=True)].reset_index()
    summary = _summary(long, reference_variant, dataset, metric)
    markdown = summary + "\n\n" + _cells(covered, lambda s: f"**{s}**").to_markdown(index=False) + "\n"
    html_table = _cells(covered, lambda s: f"<b>{s}</b>").to_html(index=False, escape=False, border=0)
    return {
        "markdown": markdown,
        "html": _page([summary], html_table),
        "csv": plain.to_csv(index=False, float_format="%.6f"),
        "comparison": long.to_csv(index=False, float_format="%.6f"),
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
