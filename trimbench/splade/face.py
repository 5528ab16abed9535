"""The SPLADE track's face (trimbench.face.Track): its line of the table of tracks (trimbench.tracks)."""

from __future__ import annotations

from trimbench.face import (
    HubFile,
    Miner,
    Track,
    evaluated_splits,
    evaluation_main_metrics,
    package_schema,
    reference_dataset,
    trained_on,
)
from trimbench.splade import checks, claims, cost, report, smoke


def used_splits(exp: dict) -> list[tuple[str, str, str]]:
    return evaluated_splits(exp, trained=True)


def substitute_models(exp: dict, substitute, record: list[str]) -> None:
    for variant, spec in exp["variants"].items():
        spec["model"] = substitute(f"variants.{variant}.model", spec["model"])


def models(exp: dict) -> list[str]:
    """Each variant's model, once, in the variants' order."""
    return list(dict.fromkeys(variant["model"] for variant in exp["variants"].values()))


def hub_files(exp: dict) -> list[HubFile]:
    """Downloaded hard negatives (``train.hard_negatives`` from the hub): their negatives and scores files."""
    hard = exp["train"].get("hard_negatives")
    if not hard or hard["source"] != "hub":
        return []
    return [HubFile(f"train.hard_negatives.{key}", hard["id"], hard["revision"], hard[key],
                    "mine them (train.negatives) instead")
            for key in ("negatives_file", "scores_file")]


def bm25_settings(exp: dict) -> dict:
    """The search depth of its splade section and the evaluation's average over datasets."""
    evaluation = exp["evaluation"]
    return {"top_k": exp["splade"]["top_k"], "average_over": evaluation["average_over"],
            "average_name": evaluation["average_name"]}


def miner(exp: dict) -> Miner | None:
    """Without downloaded hard negatives, ``train.negatives`` mines them (a dense miner pools the
    model's own way and scores by dot product)."""
    train = exp["train"]
    return None if train["hard_negatives"] is not None else Miner(train["negatives"], None, "dot", exp["bm25"])


def comparison(exp):
    return report.comparison(exp.scores, exp.published, exp.config)


def headline(exp) -> dict:
    return report.headline(exp.scores, exp.published, exp.config)


SPLADE = Track(
    name="splade", work="SPLADE", check_experiment=checks.check_experiment, main_metrics=evaluation_main_metrics,
    compared_dataset=reference_dataset, used_splits=used_splits, smoke=smoke.smoke_experiment,
    substitute_models=substitute_models, miner=miner, comparison=comparison, headline=headline,
    claim_views=claims.claim_views, claim_checks=claims.CHECKS, cost=cost.job_cost,
    experiment_schema=package_schema(__file__, "splade_experiment"), models=models, hub_files=hub_files,
    training_data=trained_on, bm25_settings=bm25_settings,
    presets={"splade": ("configs/splade.yaml",),
             "splade-1-epoch": ("configs/splade.yaml", "configs/overlays/splade-1-epoch.yaml")},
    # sparse vectors: no (layer, dim) cost
    layer_dim_cost=False, pareto_line="variant", dense_retrieval=False, group_trained=False,
    trains_on_retrieval=True, bm25=True)
