"""Tables as views of the tidy score table, ours beside the published numbers."""

from __future__ import annotations

import html

import pandas as pd

from trimbench.config import SEED_METHOD_LABELS

METHOD_ORDER = ["pretrained", "BERT", "BERT-S", "MSE", "2DMSE"]


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


def sts_grid_tables(scores: pd.DataFrame, published: pd.DataFrame, reference_variant: str, dataset: str,
                    metric: str) -> dict[str, str]:
    """The seed's table layout (rows layer × method, columns dims, best per layer and dim in bold,
    published in parentheses) as Markdown and HTML, the plain wide CSV of ours, and the long
    ours-vs-published CSV."""
    long = ours_vs_published(scores, published, reference_variant, dataset, metric)
    covered = long.dropna(subset=["ours"])
    plain = covered.pivot(index=["layer", "method"], columns="dim", values="ours")
    plain = plain[sorted(plain.columns, reverse=True)].reset_index()
    both = long.dropna(subset=["ours", "published"])
    summary = (f"{metric} on {dataset}; ours, published ({reference_variant}) in parentheses. "
               f"Cells compared: {len(both)}")
    if len(both):
        worst = both.loc[both["delta"].abs().idxmax()]
        summary += (f", mean |Δ| {both['delta'].abs().mean():.4f}, largest |Δ| {abs(worst['delta']):.4f} "
                    f"at layer {worst['layer']}, {worst['method']}, dim {worst['dim']}")
    summary += "."
    markdown = summary + "\n\n" + _cells(covered, lambda s: f"**{s}**").to_markdown(index=False) + "\n"
    html_table = _cells(covered, lambda s: f"<b>{s}</b>").to_html(index=False, escape=False, border=0)
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><style>"
            "body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
            "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}</style></head><body>"
            f"<p>{html.escape(summary)}</p>{html_table}</body></html>\n")
    return {
        "markdown": markdown,
        "html": page,
        "csv": plain.to_csv(index=False, float_format="%.6f"),
        "comparison": long.to_csv(index=False, float_format="%.6f"),
    }
