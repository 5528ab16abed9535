"""The dense tracks on the scoreboard (trimbench.report.scoreboard): each one's comparison with the
published numbers and its headline. ``exp``: the scoreboard's experiment (a dataclass with name,
config, scores, published, main_metrics)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from trimbench.dense import homedepot
from trimbench.dense.grid import ours_vs_published
from trimbench.dense.variants import compared_dataset, seed_label


def sts_comparison(exp) -> pd.DataFrame:
    evaluation = exp.config["evaluation"]
    return ours_vs_published(exp.scores, exp.published, exp.config["reference"]["variant"],
                             evaluation["average_name"], evaluation["main_metric"])


def retrieval_comparison(exp) -> pd.DataFrame:
    """Every (dataset, metric) the reference publishes for the experiment's variant on a dataset it
    evaluates (Starbucks: MS MARCO dev MRR@10, DL19 / DL20 and BEIR nDCG@10), one long table with
    dataset and metric as keys; a run evaluating none of them (a toy) is compared on its compared
    dataset as the STS view reads it."""
    variant, evaluated = exp.config["reference"]["variant"], exp.config["evaluation"]["datasets"]
    published = exp.published[(exp.published["variant"] == variant) & exp.published["dataset"].isin(evaluated)]
    pairs = list(dict.fromkeys(zip(published["dataset"], published["metric"], strict=True)))
    if not pairs:
        return sts_comparison(_with_compared_dataset(exp))
    frames = [ours_vs_published(exp.scores, exp.published, variant, dataset, metric)
              .assign(dataset=dataset, metric=metric) for dataset, metric in pairs]
    long = pd.concat(frames, ignore_index=True)
    return long[["dataset", "metric", *(c for c in long.columns if c not in ("dataset", "metric"))]]


def _headline_method(exp) -> str:
    """2DMSE, else the last trained method; of those, the first the reference publishes (the 2DMSE
    retrieval reference holds Starbucks' BERT-2DMSE, not the seed's 2DMSE)."""
    methods = [m for m in exp.config["methods"] if m != "pretrained"] or exp.config["methods"]
    preferred = ["2dmse"] + [m for m in reversed(methods) if m != "2dmse"] if "2dmse" in methods else methods[::-1]
    published = set(exp.published[exp.published["variant"] == exp.config["reference"]["variant"]]["method"])
    return next((m for m in preferred if seed_label(m) in published), preferred[0])


def sts_headline(exp) -> dict:
    """2DMSE (or the method :func:`_headline_method` picks) at the deepest layer and widest dim: ours
    on our grid, the work's on its own grid (a toy run on a small model still shows the paper's number)."""
    evaluation = exp.config["evaluation"]
    method = _headline_method(exp)
    ours = exp.scores[(exp.scores["variant"] == method) & (exp.scores["dataset"] == evaluation["average_name"])
                      & (exp.scores["metric"] == evaluation["main_metric"])]
    out = {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
    if len(ours):
        top = ours[(ours["layer"] == ours["layer"].max())]
        top = top[top["dim"] == top["dim"].max()].iloc[0]
        out["ours"] = float(top["value"])
        out["ours_cell"] = f"{seed_label(method)} L{top['layer']} d{top['dim']} {top['dataset']}"
    pub = exp.published[(exp.published["variant"] == exp.config["reference"]["variant"])
                        & (exp.published["method"] == seed_label(method))
                        & (exp.published["metric"] == evaluation["main_metric"])]
    if evaluation["average_name"] in set(pub["dataset"]):
        pub = pub[pub["dataset"] == evaluation["average_name"]]
    if len(pub):
        top = pub[pub["layer"] == pub["layer"].max()]
        top = top[top["dim"] == top["dim"].max()].iloc[0]
        out["published"] = float(top["value"])
        out["published_cell"] = f"{top['method']} L{top['layer']} d{top['dim']} {top['dataset']}"
    return out


def _with_compared_dataset(exp):
    """A retrieval experiment seen as the STS code reads one: its compared dataset (the reference's,
    else the first evaluated) in place of the STS average."""
    evaluation = exp.config["evaluation"]
    config = {**exp.config, "evaluation": {**evaluation, "average_name": compared_dataset(exp.config)}}
    return replace(exp, config=config)


def retrieval_headline(exp) -> dict:
    """:func:`sts_headline` on the compared dataset."""
    return sts_headline(_with_compared_dataset(exp))


def homedepot_comparison(exp) -> pd.DataFrame:
    return homedepot.comparison(exp.scores, exp.published, exp.config)


def homedepot_headline(exp) -> dict:
    return homedepot.headline(exp.scores, exp.published, exp.config)
