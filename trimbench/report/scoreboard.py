"""The reproduction scoreboard: how close each experiment is to the work it reproduces.

Per experiment, every cell that both we and the work cover is compared (ours, published, Δ); the
summary counts cells within the experiment's tolerance, names the largest |Δ|, and counts the cells
only one side covers. The status table has one row per experiment with its headline number beside
the published one, so a toy run (no cell in common with the paper's grid) still says where it is.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import pandas as pd

from trimbench import scores as score_table
from trimbench.config.smoke import SMOKE_SCALE
from trimbench.face import reference_dataset
from trimbench.tracks import TRACKS


@dataclass(frozen=True)
class Experiment:
    """What the scoreboard needs of one experiment: its scores, the published numbers and config."""

    name: str
    config: dict
    scores: pd.DataFrame
    published: pd.DataFrame
    #: each dataset the experiment is scored on -> its main metric
    main_metrics: dict = field(default_factory=dict)

    @property
    def track(self) -> str:
        return self.config["track"]

    @property
    def work(self) -> str:
        """The reference's ``work``, else its track's (the STS track's names its version: v1 / v2)."""
        reference = self.config["reference"]
        return reference.get("work") or TRACKS[self.track].work.format(**reference)

    @property
    def tolerance(self) -> float:
        return self.config["reference"]["tolerance"]

    @property
    def judged(self) -> bool:
        """Whether its cells get a within-tolerance verdict: not a smoke run's (tiny random models
        on stand-ins compare with nothing published)."""
        return self.config["scale"] != SMOKE_SCALE


def experiments(names: list[str], configs: list[dict], main_metrics: list[dict], scores: list[str],
                references: list[str]) -> list[Experiment]:
    """The experiments of a scoreboard or Pareto job, read from their score tables and reference files."""
    return [Experiment(name, config, score_table.read(path), pd.read_csv(reference), metrics)
            for name, config, metrics, path, reference in zip(names, configs, main_metrics, scores, references,
                                                              strict=True)]


#: the BM25 baselines' row of the status table: the work their numbers come from (reference/bm25.csv)
BM25_WORK = "BM25 (pyserini two-click reproductions)"
#: BM25 is deterministic: the published numbers have four decimals, a corpus or tokenisation that
#: differs from BEIR's moves them by more
BM25_TOLERANCE = 0.001


def bm25_experiments(names: list[str], configs: list[dict], scores: list[str], reference: str,
                     published_datasets: list[list[str]]) -> list[Experiment]:
    """Each experiment's BM25 baseline as an experiment of its own for the scoreboard, compared with
    pyserini's published BM25 of the same index layout (``bm25.fields``) on ``published_datasets``
    only: its datasets on the collection pyserini published on
    (:func:`trimbench.config.prepare.on_pyserinis_bm25_corpus`). A dataset of the same name over
    another collection (Tevatron's titled MS MARCO for TREC DL) keeps its cells ours only."""
    published = pd.read_csv(reference)
    return [Experiment(f"{name} bm25", {**config, "track": BM25,
                                        "reference": {"work": BM25_WORK, "tolerance": BM25_TOLERANCE}},
                       score_table.read(path), published[published["dataset"].isin(same_collection)])
            for name, config, path, same_collection in zip(names, configs, scores, published_datasets, strict=True)]


def _bm25_comparison(exp: Experiment) -> pd.DataFrame:
    """Every (dataset, metric) of ours or of pyserini's for the same index layout on a dataset the
    experiment evaluates: dataset, metric, ours, published, delta."""
    evaluated = exp.config["evaluation"]["datasets"]
    ours = exp.scores[exp.scores["dataset"].isin(evaluated)][["dataset", "metric", "value"]]
    published = exp.published[(exp.published["variant"] == exp.config["bm25"]["fields"])
                               & exp.published["dataset"].isin(evaluated)][["dataset", "metric", "value"]]
    long = ours.rename(columns={"value": "ours"}).merge(published.rename(columns={"value": "published"}),
                                                        on=["dataset", "metric"], how="outer")
    long = long.astype({"dataset": str, "metric": str, "ours": "float64", "published": "float64"})
    long["delta"] = long["ours"] - long["published"]
    return long.sort_values(["dataset", "metric"], kind="stable").reset_index(drop=True)


def _bm25_headline(exp: Experiment) -> dict:
    """The main metric on the compared dataset, ours and pyserini's."""
    dataset, metric = reference_dataset(exp.config), exp.config["evaluation"]["main_metric"]
    cell = _bm25_comparison(exp).query("dataset == @dataset and metric == @metric")
    out = {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
    for side in ("ours", "published"):
        if len(cell) and not pd.isna(cell[side].iloc[0]):
            out.update({side: float(cell[side].iloc[0]),
                        f"{side}_cell": f"BM25 {exp.config['bm25']['fields']} {metric} {dataset}"})
    return out


#: the BM25 baselines' rows: experiments of their own beside the tracks' (trimbench.tracks)
BM25 = "bm25"


def comparison(exp: Experiment) -> pd.DataFrame:
    """Long table over every cell either side covers: key columns, then ours, published, delta."""
    return _bm25_comparison(exp) if exp.track == BM25 else TRACKS[exp.track].comparison(exp)


def headline(exp: Experiment) -> dict:
    """The status table's numbers: ours, ours_cell, published, published_cell."""
    return _bm25_headline(exp) if exp.track == BM25 else TRACKS[exp.track].headline(exp)


def _cell_name(row: pd.Series, keys: list[str]) -> str:
    return ", ".join(f"{key} {row[key]}" for key in keys)


def summarise(long: pd.DataFrame, tolerance: float) -> dict:
    """Cells compared and within ±tolerance, the largest |Δ| and where, one-sided cells."""
    keys = [c for c in long.columns if c not in ("ours", "published", "delta")]
    both = long.dropna(subset=["ours", "published"])
    summary = {
        "compared": len(both),
        # A hair of slack: published numbers have three decimals, ours are floats.
        "within": int((both["delta"].abs() <= tolerance + 1e-9).sum()),
        "ours_only": int((long["ours"].notna() & long["published"].isna()).sum()),
        "published_only": int((long["ours"].isna() & long["published"].notna()).sum()),
        "largest_abs_delta": None,
        "largest_at": "",
    }
    if len(both):
        worst = both.loc[both["delta"].abs().idxmax()]
        summary["largest_abs_delta"] = float(abs(worst["delta"]))
        summary["largest_at"] = _cell_name(worst, keys)
    return summary


#: what a smoke run's row says where a real run's gives its verdict
NO_VERDICT = "no verdict: a smoke run (tiny random models, stand-in data)"


def status_row(exp: Experiment) -> dict:
    summary = summarise(comparison(exp), exp.tolerance)
    if not exp.judged:
        summary.update(within=None, largest_abs_delta=None, largest_at="")
    compared = summary["compared"]
    return {
        "work": exp.work,
        "experiment": exp.name,
        "scale": exp.config["scale"],
        "tolerance": exp.tolerance,
        "compared": compared,
        "within": summary["within"],
        "within_fraction": summary["within"] / compared if compared and exp.judged else None,
        "largest_abs_delta": summary["largest_abs_delta"],
        "largest_at": summary["largest_at"],
        "ours_only": summary["ours_only"],
        "published_only": summary["published_only"],
        **{f"headline_{k}": v for k, v in headline(exp).items()},
        # local_copies: what was read or run instead of the hub's (trimbench.config.local)
        **({"local_copies": "; ".join(exp.config["_local_copies"])} if exp.config.get("_local_copies") else {}),
    }


def status_table(experiments: list[Experiment]) -> pd.DataFrame:
    rows = [status_row(exp) for exp in experiments]
    table = pd.DataFrame(rows).sort_values(["work", "experiment"], kind="stable").reset_index(drop=True)
    # a count, also beside a smoke row's missing one (float64 would write "2.0")
    return table.astype({"within": "Int64"})


def _fmt(value, digits: int = 4) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def readable_status(status: pd.DataFrame) -> pd.DataFrame:
    """The status table as people read it: one line per experiment."""
    rows = []
    local = "local_copies" in status.columns
    for row in status.itertuples():
        judged = row.scale != SMOKE_SCALE
        within = (NO_VERDICT if not judged else f"{row.within}/{row.compared} ({row.within_fraction:.0%})"
                  if row.compared else "no common cell")
        rows.append({
            "work": row.work,
            "experiment": row.experiment,
            "scale": row.scale,
            "within ±tolerance": within,
            "largest |Δ|": f"{_fmt(row.largest_abs_delta)} ({row.largest_at})" if row.compared and judged else "–",
            "ours": f"{_fmt(row.headline_ours)} ({row.headline_ours_cell})" if row.headline_ours_cell else "–",
            "published": (f"{_fmt(row.headline_published, 3)} ({row.headline_published_cell})"
                          if row.headline_published_cell else "–"),
            **({"run on local copies": row.local_copies if isinstance(row.local_copies, str) else "–"}
               if local else {}),
        })
    return pd.DataFrame(rows)


def summary_line(exp: Experiment, long: pd.DataFrame | None = None) -> str:
    """``long``: the experiment's :func:`comparison`, when the caller has it already."""
    s = summarise(comparison(exp) if long is None else long, exp.tolerance)
    line = f"{exp.work} ({exp.name}, {exp.config['scale']} scale): {s['compared']} cells compared"
    if not exp.judged:
        line += f" ({NO_VERDICT})"
    elif s["compared"]:
        line += (f", {s['within']} within ±{exp.tolerance:g}, largest |Δ| {s['largest_abs_delta']:.4f} at "
                 f"{s['largest_at']}")
    return line + (f"; {s['ours_only']} cells ours only, {s['published_only']} published only.")


STYLE = ("body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse;margin:6px 0}"
         "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}")


def standalone_page(body: str) -> str:
    """A standalone page: the report shows each HTML result in a frame of its own."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"
            + body + "</body></html>\n")


def status_html(status: pd.DataFrame, figure_uri: str | None = None, figure_caption: str = "") -> str:
    """The report's first result: the status table and, when given, the headline Pareto figure."""
    table = readable_status(status).to_html(index=False, border=0, classes="reproduction-status")
    parts = ['<div id="reproduction-status">', "<h2>Reproduction status</h2>", table]
    if figure_uri:
        parts.append(f'<figure><img id="status-figure" alt="{html.escape(figure_caption)}" src="{figure_uri}" '
                     f'style="max-width:100%"><figcaption>{html.escape(figure_caption)}</figcaption></figure>')
    parts.append("</div>")
    return standalone_page("\n".join(parts))


def comparisons_html(experiments: list[Experiment]) -> str:
    """Every experiment's cells that both sides cover: ours, published, Δ, and whether within."""
    sections = []
    for exp in experiments:
        long = comparison(exp)
        both = long.dropna(subset=["ours", "published"]).copy()
        if exp.judged:
            both["within"] = (both["delta"].abs() <= exp.tolerance + 1e-9).map({True: "yes", False: "no"})
        table = (both.to_html(index=False, border=0, float_format=lambda v: f"{v:.4f}")
                 if len(both) else "<p>No cell in common with the published grid.</p>")
        sections.append(f"<h3>{html.escape(exp.name)}</h3><p>{html.escape(summary_line(exp, long))}</p>{table}")
    return standalone_page("".join(sections))


#: Costs a Pareto figure can put on x (names in config.PARETO_COSTS), from what each score cell
#: ran: layers kept × width, and the bytes one document's embedding takes at float32.
COSTS = {
    "layers_x_dim": ("layers kept × embedding dim", lambda cells: cells["layer"] * cells["dim"]),
    "bytes_per_doc": ("bytes per document (float32)", lambda cells: cells["dim"] * 4),
}


#: a Pareto points file's columns, in one order whether it has points or not
POINT_COLUMNS = ["experiment", "track", "variant", "layer", "dim", "cost", "score"]


def pareto_points(experiments: list[Experiment], dataset: str, cost: str) -> pd.DataFrame:
    """Every variant cell of every experiment scored on ``dataset`` with the experiment's main
    metric (mean over seeds), and its cost: columns experiment, track, variant, layer, dim, cost,
    score."""
    frames = []
    for exp in experiments:
        if dataset not in exp.main_metrics or not TRACKS[exp.track].layer_dim_cost:
            continue
        split = exp.config["evaluation"].get("split", "test")
        cells = exp.scores[(exp.scores["dataset"] == dataset) & (exp.scores["metric"] == exp.main_metrics[dataset])
                           & (exp.scores["split"] == split)]
        if cells.empty:
            continue
        # the column its track tells a figure's lines apart by (ELECTRA's: every model is a line of cuts)
        cells = cells.assign(variant=cells[TRACKS[exp.track].pareto_line])
        cells = (cells.groupby(["experiment", "track", "variant", "layer", "dim"], as_index=False)["value"].mean()
                 .rename(columns={"value": "score"}))
        frames.append(cells.assign(cost=COSTS[cost][1](cells).astype(float)))
    if not frames:
        return pd.DataFrame(columns=POINT_COLUMNS)
    points = pd.concat(frames, ignore_index=True)[POINT_COLUMNS]
    return points.sort_values(["experiment", "variant", "layer", "dim"], kind="stable").reset_index(drop=True)
