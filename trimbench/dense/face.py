"""The dense tracks' faces (trimbench.face.Track): 2DMSE on STS, 2DMSE retrieval (Starbucks), Home
Depot's Matryoshka product search; their lines of the table of tracks (trimbench.tracks)."""

from __future__ import annotations

from trimbench.dense import checks, claims, smoke
from trimbench.dense.cost import job_cost
from trimbench.dense.variants import (
    GROUP_TRAINED_TRACKS,
    PAIR_TRAINED_TRACKS,
    RETRIEVAL_TRACKS,
    SIDE_BY_SIDE_TRACKS,
    TRAINED_METHODS,
    compared_dataset,
)
from trimbench.face import Miner, Track, evaluated_splits, evaluation_main_metrics


def used_splits(exp: dict) -> list[tuple[str, str, str]]:
    return evaluated_splits(exp, trained=bool(set(exp["methods"]) & set(TRAINED_METHODS)))


def substitute_models(exp: dict, substitute, record: list[str]) -> None:
    exp["model"] = substitute("model", exp["model"])


def miner(exp: dict) -> Miner | None:
    """A group-trained experiment mines its negatives as ``retrieval.negatives`` says, a dense miner
    pooling and scoring the experiment's way."""
    if exp["track"] not in GROUP_TRAINED_TRACKS:
        return None
    retrieval = exp["retrieval"]
    return Miner(retrieval["negatives"], exp["pooling"], retrieval["similarity"], exp["bm25"])


# The scoreboard's views draw with matplotlib (trimbench.dense.scoreboard): imported when called, not
# while Snakemake parses the table.
def sts_comparison(exp):
    from trimbench.dense import scoreboard

    return scoreboard.sts_comparison(exp)


def sts_headline(exp) -> dict:
    from trimbench.dense import scoreboard

    return scoreboard.sts_headline(exp)


def retrieval_comparison(exp):
    from trimbench.dense import scoreboard

    return scoreboard.retrieval_comparison(exp)


def retrieval_headline(exp) -> dict:
    from trimbench.dense import scoreboard

    return scoreboard.retrieval_headline(exp)


def homedepot_comparison(exp):
    from trimbench.dense import scoreboard

    return scoreboard.homedepot_comparison(exp)


def homedepot_headline(exp) -> dict:
    from trimbench.dense import scoreboard

    return scoreboard.homedepot_headline(exp)


def _dense_track(name: str, work: str, comparison, headline, claim_views, claim_checks: dict) -> Track:
    """A dense track's line; the dense package's tuples (trimbench.dense.variants) say what it trains and scores."""
    return Track(
        name=name, work=work, check_experiment=checks.check_experiment, main_metrics=evaluation_main_metrics,
        compared_dataset=compared_dataset, used_splits=used_splits, smoke=smoke.smoke_experiment,
        substitute_models=substitute_models, miner=miner, comparison=comparison,
        headline=headline, claim_views=claim_views, claim_checks=claim_checks, cost=job_cost,
        layer_dim_cost=True, pareto_line="variant", grid_variants=True, dense_retrieval=name in RETRIEVAL_TRACKS,
        pair_trained=name in PAIR_TRAINED_TRACKS, group_trained=name in GROUP_TRAINED_TRACKS,
        trains_on_retrieval=name in GROUP_TRAINED_TRACKS, bm25=name in RETRIEVAL_TRACKS,
        side_by_side=name in SIDE_BY_SIDE_TRACKS)


STS = _dense_track("2dmse-sts", "2DMSE STS {variant}", sts_comparison, sts_headline, claims.sts_claim_views,
                   claims.GRID_CHECKS)
RETRIEVAL = _dense_track("2dmse-retrieval", "2DMSE retrieval", retrieval_comparison, retrieval_headline,
                         claims.retrieval_claim_views, claims.RETRIEVAL_CHECKS)
HOMEDEPOT = _dense_track("homedepot", "Home Depot", homedepot_comparison, homedepot_headline,
                         claims.homedepot_claim_views, claims.HOMEDEPOT_CHECKS)
