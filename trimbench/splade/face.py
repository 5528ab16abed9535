"""The SPLADE track's face (trimbench.face.Track): its line of the table of tracks (trimbench.tracks)."""

from __future__ import annotations

from trimbench.face import Miner, Track, evaluated_splits, evaluation_main_metrics, reference_dataset
from trimbench.splade import checks, claims, cost, report, smoke


def used_splits(exp: dict) -> list[tuple[str, str, str]]:
    return evaluated_splits(exp, trained=True)


def substitute_models(exp: dict, substitute, record: list[str]) -> None:
    for variant, spec in exp["variants"].items():
        spec["model"] = substitute(f"variants.{variant}.model", spec["model"])


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
    # sparse vectors: no (layer, dim) cost
    layer_dim_cost=False, pareto_line="variant", grid_variants=False, dense_retrieval=False, pair_trained=False,
    group_trained=False, trains_on_retrieval=True, bm25=True, side_by_side=False)
