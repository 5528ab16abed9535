"""The ELECTRA track's face (trimbench.face.Track): its line of the table of tracks (trimbench.tracks)."""

from __future__ import annotations

from trimbench.electra import checks, claims, cost, smoke
from trimbench.face import (
    Track,
    no_bm25_baseline,
    no_hub_files,
    no_miner,
    no_training_data,
    package_schema,
    substitute_model_list,
)


def used_splits(exp: dict) -> list[tuple[str, str, str]]:
    """Each task's three splits, the domain adaptation's and the word-similarity pretuning's."""
    used = [(task, split, "tasks") for task in exp["tasks"] for split in ("train", "validation", "test")]
    if exp["domain_adaptation"]:
        adaptation = exp["domain_adaptation"]
        used += [(adaptation["dataset"], split, "domain_adaptation.splits") for split in adaptation["splits"]]
    used += [(dataset, split, "word_similarity") for dataset in (exp["word_similarity"] or {}).get("datasets", [])
             for split in ("train", "validation")]
    return used


def models(exp: dict) -> list[str]:
    return list(exp["models"])


def first_task(exp: dict) -> str:
    """The task the headline sets beside the published curve."""
    return exp["tasks"][0]


# The scoreboard's views draw with matplotlib (trimbench.electra.report): imported when called, not
# while Snakemake parses the table.
def comparison(exp):
    from trimbench.electra import scoreboard

    return scoreboard.comparison(exp)


def headline(exp) -> dict:
    from trimbench.electra import scoreboard

    return scoreboard.headline(exp)


ELECTRA = Track(
    name="electra", work="Truncated ELECTRA", check_experiment=checks.check_experiment,
    main_metrics=checks.main_metrics, compared_dataset=first_task, used_splits=used_splits,
    smoke=smoke.smoke_experiment, substitute_models=substitute_model_list, miner=no_miner, comparison=comparison,
    headline=headline, claim_views=claims.claim_views, claim_checks=claims.CHECKS, cost=cost.job_cost,
    experiment_schema=package_schema(__file__, "electra_experiment"), models=models, hub_files=no_hub_files,
    training_data=no_training_data, bm25_settings=no_bm25_baseline, presets={"electra": ("configs/electra.yaml",)},
    # every model is its own line of cuts: the model, not the (one) variant, tells them apart
    layer_dim_cost=True, pareto_line="model", dense_retrieval=False, group_trained=False,
    trains_on_retrieval=False, bm25=False)
