"""The dense tracks' faces (trimbench.face.Track): 2DMSE on STS, 2DMSE retrieval (Starbucks), Home
Depot's Matryoshka product search; their lines of the table of tracks (trimbench.tracks)."""

from __future__ import annotations

from trimbench.dense import checks, claims, smoke
from trimbench.dense.cost import job_cost
from trimbench.dense.variants import (
    GROUP_TRAINED_TRACKS,
    RETRIEVAL_TRACKS,
    TRAINED_METHODS,
    compared_dataset,
)
from trimbench.face import (
    Miner,
    Track,
    evaluated_splits,
    evaluation_main_metrics,
    no_hub_files,
    package_schema,
    trained_on,
)

#: the dense tracks' experiment shape: trimbench/dense/experiment.schema.yaml's ``experiment``
SCHEMA = package_schema(__file__, "experiment")


def trains(exp: dict) -> bool:
    """Whether any of its methods is trained (a grid of pretrained or BM25 methods only is not)."""
    return bool(set(exp["methods"]) & set(TRAINED_METHODS))


def used_splits(exp: dict) -> list[tuple[str, str, str]]:
    return evaluated_splits(exp, trained=trains(exp))


def models(exp: dict) -> list[str]:
    return [exp["model"]]


def training_data(exp: dict) -> tuple[str, str] | None:
    return trained_on(exp) if trains(exp) else None


def bm25_settings(exp: dict) -> dict:
    """The retrieval section's search depth and average over datasets, which the BM25 baseline shares."""
    retrieval = exp["retrieval"]
    return {"top_k": retrieval["top_k"], "average_over": retrieval["average_over"],
            "average_name": retrieval["average_name"]}


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


def _dense_track(name: str, work: str, comparison, headline, claim_views, claim_checks: dict,
                 presets: dict) -> Track:
    """A dense track's line; the dense package's tuples (trimbench.dense.variants) say what it trains and
    scores (what only the dense rule files ask, grid_variants, pair_trained_tracks and side_by_side, is there)."""
    return Track(
        name=name, work=work, check_experiment=checks.check_experiment, main_metrics=evaluation_main_metrics,
        compared_dataset=compared_dataset, used_splits=used_splits, smoke=smoke.smoke_experiment,
        substitute_models=substitute_models, miner=miner, comparison=comparison,
        headline=headline, claim_views=claim_views, claim_checks=claim_checks, experiment_schema=SCHEMA,
        models=models, hub_files=no_hub_files, training_data=training_data, bm25_settings=bm25_settings,
        presets=presets, cost=job_cost,
        layer_dim_cost=True, pareto_line="variant", dense_retrieval=name in RETRIEVAL_TRACKS,
        group_trained=name in GROUP_TRAINED_TRACKS, trains_on_retrieval=name in GROUP_TRAINED_TRACKS,
        bm25=name in RETRIEVAL_TRACKS)


STS = _dense_track("2dmse-sts", "2DMSE STS {variant}", sts_comparison, sts_headline, claims.sts_claim_views,
                   claims.GRID_CHECKS, {"2dmse-sts": ("configs/2dmse-sts.yaml",),
                                        "2dmse-sts-v2": ("configs/2dmse-sts-v2.yaml",)})
RETRIEVAL = _dense_track("2dmse-retrieval", "2DMSE retrieval", retrieval_comparison, retrieval_headline,
                         claims.retrieval_claim_views, claims.RETRIEVAL_CHECKS,
                         {"2dmse-retrieval": ("configs/2dmse-retrieval.yaml",),
                          "2dmse-retrieval-ablations": ("configs/2dmse-retrieval-ablations.yaml",)})
HOMEDEPOT = _dense_track("homedepot", "Home Depot", homedepot_comparison, homedepot_headline,
                         claims.homedepot_claim_views, claims.HOMEDEPOT_CHECKS,
                         {"homedepot": ("configs/homedepot.yaml",)})
