"""The profile track's face (trimbench.face.Track): its line of the table of tracks (trimbench.tracks).

Its score table holds the float32 cells of every profiled model (``variant`` = the registry model); the
"published" side is MTEB's score of a model on a dataset (reference/mteb.csv), joined on the full-model
cell through ``reference.models`` (registry name -> the id MTEB publishes it under). Nothing is trained,
mined or claimed.
"""

from __future__ import annotations

import pandas as pd

from trimbench.face import (
    Track,
    no_bm25_baseline,
    no_hub_files,
    no_miner,
    no_training_data,
    package_schema,
    substitute_model_list,
)
from trimbench.profile import checks


def full_model_cells(scores: pd.DataFrame) -> pd.DataFrame:
    """Each model's full-model cells (its deepest layer, its whole width): model, dataset, metric, value."""
    rows = []
    for _model, own in scores.groupby("variant", sort=False):
        full = own[(own["layer"] == own["layer"].max()) & (own["dim"] == own["dim"].max())]
        rows.append(full[["variant", "dataset", "metric", "value"]].rename(columns={"variant": "model"}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["model", "dataset", "metric", "value"])


def comparison(experiment) -> pd.DataFrame:
    """The full-model cells beside MTEB's published scores of the same model and dataset."""
    ours = full_model_cells(experiment.scores).rename(columns={"value": "ours"})
    ids = experiment.config["reference"]["models"]
    published = experiment.published.rename(columns={"value": "published", "model": "mteb_id"})
    published = published[published["mteb_id"].isin(ids.values())]
    published = published.assign(model=published["mteb_id"].map({v: k for k, v in ids.items()}))
    long = ours.merge(published[["model", "dataset", "metric", "published"]], on=["model", "dataset", "metric"],
                      how="outer")
    long = long.astype({"model": str, "dataset": str, "metric": str, "ours": "float64", "published": "float64"})
    long["delta"] = long["ours"] - long["published"]
    return long


def headline(experiment) -> dict:
    """The first model's full-model cell on the compared dataset, beside MTEB's where it has one."""
    long = comparison(experiment)
    dataset = checks_compared(experiment.config)
    rows = long[(long["dataset"] == dataset) & long["ours"].notna()]
    out = {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
    if not rows.empty:
        row = rows.iloc[0]
        out.update(ours=float(row["ours"]), ours_cell=f"{row['model']} full model {row['metric']} {dataset}")
        if pd.notna(row["published"]):
            out.update(published=float(row["published"]), published_cell=f"MTEB {row['metric']} {dataset}")
    return out


def checks_compared(exp: dict) -> str:
    """The dataset the status row leads with: the first profiled one."""
    return exp["evaluation"]["datasets"][0]


def used_splits(exp: dict) -> list[tuple[str, str, str]]:
    """Each profiled dataset's split (``evaluation.split``, or its own in ``evaluation.splits``)."""
    return [(dataset, checks.split_of(exp, dataset),
             f"evaluation.splits.{dataset}" if dataset in exp["evaluation"]["splits"] else "evaluation.split")
            for dataset in exp["evaluation"]["datasets"]]


def smoke(exp: dict, settings: dict) -> None:
    """Stand-ins' numbers mean nothing: one repeat, a few texts timed."""
    exp["repeats"] = 1
    exp["speed_texts"] = min(exp["speed_texts"], 16)


def no_claim_views(subject, configs, scores, published, main_metrics, model_ids) -> tuple:
    return None, None


def no_gpu_work(rule, wildcards, exp, context) -> None:
    """The profile runs its models for minutes, on whatever device the node has: no GPU job to price."""
    return None


def models(exp: dict) -> list:
    """The registry models it profiles, in the config's order."""
    return list(exp["models"])


PROFILE = Track(
    name="profile", work="MTEB (full model)", check_experiment=checks.check_experiment,
    main_metrics=checks.main_metrics, compared_dataset=checks_compared, used_splits=used_splits, smoke=smoke,
    substitute_models=substitute_model_list, miner=no_miner, comparison=comparison, headline=headline,
    claim_views=no_claim_views, claim_checks={}, cost=no_gpu_work,
    experiment_schema=package_schema(__file__, "profile_experiment"), models=models, hub_files=no_hub_files,
    training_data=no_training_data, bm25_settings=no_bm25_baseline, presets={"profile": ("configs/profile.yaml",)},
    # its cells have their own measured costs and figures (the profile's Pareto fronts), not the
    # cross-track figures' parameter counts
    layer_dim_cost=False, pareto_line="variant", dense_retrieval=False, group_trained=False,
    trains_on_retrieval=False, bm25=False)
