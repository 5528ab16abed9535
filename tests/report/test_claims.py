"""The works' claims as checks over hand-made score tables: each claim holds, fails and is partly true
for the reason it states; cells a run lacks are "not covered"; every claim cites its source."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd
import pytest

from trimbench import scores
from trimbench.face import View
from trimbench.report import claims
from trimbench.report.claims import FAILS, HOLDS, NOT_COVERED, PARTLY, claims_outputs, experiment_views
from trimbench.tracks import TRACKS

#: the claims rule's input (rules/report.smk); the module reads it only when given
CLAIMS_FILE = Path(__file__).resolve().parents[2] / "reference" / "claims.yaml"
CLAIMS = claims.load_claims(CLAIMS_FILE)
CLAIM = {claim.id: claim for claim in CLAIMS}


def _table(rows: list[dict], **shared) -> pd.DataFrame:
    return scores.frame([{**shared, **row} for row in rows])


def _verdict(claim_id: str, subject: str, configs: dict, tables: dict, published=None, main_metrics=None,
             model_ids=None):
    ours, theirs = experiment_views(subject, configs, tables, pd.DataFrame() if published is None else published,
                                    main_metrics or {}, model_ids or {})
    return CLAIM[claim_id].evaluate(ours), CLAIM[claim_id].evaluate(theirs)


# --- 2DMSE STS: hand-made grids of layers 2, 4 (deepest) and dims 8, 16 (widest) -------------------------------

STS_CONFIG = {"track": "2dmse-sts", "evaluation": {"average_name": "sts-avg", "main_metric": "spearman_cosine",
                                                   "datasets": ["lee"]},
              "reference": {"variant": "v1", "tolerance": 0.01}}


def sts_scores(values: dict) -> pd.DataFrame:
    """(variant, layer, dim) -> value, or a list of values: one per seed."""
    rows = []
    for (variant, layer, dim), value in values.items():
        for seed, v in enumerate(value if isinstance(value, list) else [value]):
            rows.append({"variant": variant, "layer": layer, "dim": dim, "value": v, "seed": seed})
    # A second dataset and metric the claims must not read.
    rows += [{**row, "dataset": "lee", "metric": "spearman_cosine", "value": 9.0} for row in rows[:1]]
    rows += [{**row, "metric": "pearson_cosine", "value": 9.0} for row in rows[:1]]
    return _table(rows, experiment="e", track="2dmse-sts", model="m", dataset="sts-avg", split="test",
                  metric="spearman_cosine")


DENSE_REFERENCE = ["variant", "method", "layer", "dim", "dataset", "metric", "value"]


def sts_verdict(claim_id: str, values: dict, published=None):
    published = pd.DataFrame(columns=DENSE_REFERENCE) if published is None else published
    return _verdict(claim_id, "e", {"e": STS_CONFIG}, {"e": sts_scores(values)}, published)


def grid(method: str, values: dict) -> dict:
    return {(method, layer, dim): value for (layer, dim), value in values.items()}


@pytest.mark.parametrize(("mse", "outcome", "held"), [
    ({(2, 8): 0.50, (4, 8): 0.60}, HOLDS, 2),
    ({(2, 8): 0.50, (4, 8): 0.80}, PARTLY, 1),   # the last layer: MSE's own
    ({(2, 8): 0.70, (4, 8): 0.80}, FAILS, 0),
])
def test_2dmse_beats_mse_on_sub_dims(mse, outcome, held):
    # At the widest dim MSE is better everywhere: those cells are not sub-dims, so they never count.
    values = {**grid("2dmse", {(2, 8): 0.6, (4, 8): 0.7, (2, 16): 0.1, (4, 16): 0.1}),
              **grid("matryoshka", {**mse, (2, 16): 0.9, (4, 16): 0.9})}
    ours, _ = sts_verdict("2dmse-beats-mse-on-sub-dims", values)
    assert (ours.outcome, ours.held, ours.covered) == (outcome, held, 2)
    assert list(ours.cells["cell"]) == ["L2 d8", "L4 d8"]


@pytest.mark.parametrize(("full", "outcome", "held"), [
    ({(2, 8): 0.1, (2, 16): 0.2}, HOLDS, 2),
    ({(2, 8): 0.1, (2, 16): 0.9}, PARTLY, 1),
    ({(2, 8): 0.8, (2, 16): 0.9}, FAILS, 0),
])
def test_2dmse_beats_full_fine_tuning_on_sub_layers(full, outcome, held):
    # At the deepest layer full fine-tuning wins: not a sub-layer, never counted.
    values = {**grid("2dmse", {(2, 8): 0.5, (2, 16): 0.6, (4, 8): 0.1, (4, 16): 0.1}),
              **grid("full", {**full, (4, 8): 0.9, (4, 16): 0.9})}
    ours, _ = sts_verdict("2dmse-beats-full-on-sub-layers", values)
    assert (ours.outcome, ours.held, ours.covered) == (outcome, held, 2)


@pytest.mark.parametrize(("separate", "outcome"), [
    ({(2, 8): 0.6, (4, 16): 0.8}, HOLDS),   # equal counts as not above
    ({(2, 8): 0.6, (4, 16): 0.7}, PARTLY),
    ({(2, 8): 0.5, (4, 16): 0.7}, FAILS),
])
def test_2dmse_not_above_separately_trained(separate, outcome):
    values = {**grid("2dmse", {(2, 8): 0.6, (4, 16): 0.8}), **grid("separate", separate)}
    ours, _ = sts_verdict("2dmse-not-above-separate", values)
    assert (ours.outcome, ours.covered) == (outcome, 2)


def test_seeds_are_averaged_and_absent_methods_are_not_covered():
    # Seeds 0.4 and 0.8 average 0.6 > MSE 0.55; a single seed of 0.4 would fail.
    values = {("2dmse", 4, 8): [0.4, 0.8], ("matryoshka", 4, 8): 0.55, ("2dmse", 4, 16): 0.9,
              ("matryoshka", 4, 16): 0.9}
    ours, published = sts_verdict("2dmse-beats-mse-on-sub-dims", values)
    assert (ours.outcome, ours.covered) == (HOLDS, 1)
    assert published.outcome == NOT_COVERED
    # No BERT-S in the run: not covered, not a failure.
    ours, _ = sts_verdict("2dmse-not-above-separate", values)
    assert (ours.outcome, ours.covered, ours.share) == (NOT_COVERED, 0, None)


def test_published_numbers_are_read_on_the_works_grid_and_dataset():
    # The seed publishes sts-avg7 on its own 12-layer grid while the run scores sts-avg: the published
    # side reads the work's grid (its deepest layer is 12, not ours), variant v1 only.
    published = pd.DataFrame(
        [{"variant": "v1", "method": m, "layer": layer, "dim": 768, "dataset": "sts-avg7",
          "metric": "spearman_cosine", "value": v}
         for m, layer, v in [("2DMSE", 6, 0.7), ("BERT", 6, 0.5), ("2DMSE", 12, 0.8), ("BERT", 12, 0.9),
                             ("2DMSE", 8, 0.6)]]
        + [{"variant": "v2", "method": "BERT", "layer": 8, "dim": 768, "dataset": "sts-avg7",
            "metric": "spearman_cosine", "value": 0.99}])
    _, theirs = sts_verdict("2dmse-beats-full-on-sub-layers", grid("2dmse", {(4, 16): 0.5}), published)
    assert (theirs.outcome, list(theirs.cells["cell"])) == (HOLDS, ["L6 d768"])


# --- 2DMSE retrieval ablations: experiments compared with the plain 2DMSE one -------------------------------------

def retrieval_config(**switches) -> dict:
    retrieval = {"score_align": False, "compare_to_last_layer": False, "sub_layer_full_dim": False,
                 "target_dims": [128], "passage_to_last_layer": False, **switches}
    return {"track": "2dmse-retrieval", "methods": ["2dmse"], "model": "bert", "grid": {"layers": [2, 4]},
            "retrieval": retrieval, "evaluation": {"datasets": ["marco"], "main_metric": "mrr@10"},
            "reference": {"variant": "starbucks", "dataset": None, "tolerance": 0.01}}


ABLATIONS = {"base": retrieval_config(), "sub-full": retrieval_config(sub_layer_full_dim=True),
             "dims": retrieval_config(target_dims=[32, 128]), "fixed-doc": retrieval_config(passage_to_last_layer=True),
             # two switches at once: no claim reads it
             "dims-full": retrieval_config(target_dims=[32, 128], sub_layer_full_dim=True)}


def retrieval_scores(name: str, values: list[float]) -> pd.DataFrame:
    rows = [{"layer": layer, "dim": dim, "value": v} for (layer, dim), v in zip([(2, 64), (4, 64)], values,
                                                                                strict=True)]
    return _table(rows, experiment=name, track="2dmse-retrieval", variant="2dmse", model="bert", dataset="marco",
                  split="dev", metric="mrr@10", seed=1)


def ablation_verdict(claim_id: str, member: str, member_values: list[float], subject: str):
    tables = {name: retrieval_scores(name, [0.3, 0.4]) for name in ABLATIONS}
    tables[member] = retrieval_scores(member, member_values)
    return _verdict(claim_id, subject, ABLATIONS, tables, pd.DataFrame(columns=DENSE_REFERENCE))


@pytest.mark.parametrize(("claim_id", "member"), [("retrieval-full-dim-loss-helps", "sub-full"),
                                                  ("retrieval-more-target-dims-help", "dims")])
@pytest.mark.parametrize(("values", "outcome"), [([0.35, 0.45], HOLDS), ([0.35, 0.35], PARTLY),
                                                 ([0.3, 0.35], FAILS)])
def test_ablations_that_should_help(claim_id, member, values, outcome):
    for subject in ("base", member):  # the base's claims file and the member's
        ours, published = ablation_verdict(claim_id, member, values, subject)
        assert (ours.outcome, ours.covered) == (outcome, 2)
        assert all(cell.startswith(f"{member} vs base") for cell in ours.cells["cell"])
        assert published.outcome == NOT_COVERED


@pytest.mark.parametrize(("values", "outcome"), [([0.3, 0.35], HOLDS), ([0.35, 0.35], PARTLY),
                                                 ([0.35, 0.45], FAILS)])
def test_fixing_the_document_encoder_does_not_help(values, outcome):
    ours, _ = ablation_verdict("retrieval-fixed-doc-no-gain", "fixed-doc", values, "fixed-doc")
    assert (ours.outcome, ours.covered) == (outcome, 2)


def test_an_ablation_claim_is_not_covered_by_an_unrelated_experiment():
    # dims-full changes two switches, sub-full is not its base: neither one's claims file covers another's.
    ours, _ = ablation_verdict("retrieval-full-dim-loss-helps", "sub-full", [0.9, 0.9], "dims-full")
    assert ours.outcome == NOT_COVERED
    ours, _ = ablation_verdict("retrieval-more-target-dims-help", "dims", [0.9, 0.9], "fixed-doc")
    assert ours.outcome == NOT_COVERED


# --- Home Depot ----------------------------------------------------------------------------------------------------

HD_CONFIG = {"track": "homedepot", "model": "minilm", "reference": {"model": "all-MiniLM-L6-v2", "tolerance": 0.01}}


def homedepot_scores(values: dict) -> pd.DataFrame:
    """(variant, metric, dim) -> value, at layer 6 (a shallower layer must not be read)."""
    rows = [{"variant": v, "metric": metric, "dim": dim, "value": value, "layer": 6}
            for (v, metric, dim), value in values.items()]
    rows += [{**row, "layer": 3, "value": 0.0} for row in rows]
    return _table(rows, experiment="hd", track="homedepot", model="minilm", dataset="hd", split="test", seed=1)


def hd_verdict(claim_id: str, values: dict):
    return _verdict(claim_id, "hd", {"hd": HD_CONFIG}, {"hd": homedepot_scores(values)},
                    published=pd.DataFrame(columns=["model", "method", "dim", "metric", "value"]))


def hd_values(matryoshka_48: dict, **extra) -> dict:
    values = {}
    for metric in ("recall@10", "mrr@10"):
        values |= {("full", metric, 384): 0.66, ("full", metric, 48): 0.58,           # −12.1 %
                   ("matryoshka", metric, 384): 0.65, ("matryoshka", metric, 48): matryoshka_48[metric],
                   ("pretrained", metric, 384): 0.57}
    return values | extra


@pytest.mark.parametrize(("matryoshka_48", "outcome"), [
    ({"recall@10": 0.62, "mrr@10": 0.62}, HOLDS),     # −4.6 %
    ({"recall@10": 0.62, "mrr@10": 0.55}, PARTLY),    # −15.4 % on MRR@10
    ({"recall@10": 0.57, "mrr@10": 0.55}, FAILS),
])
def test_matryoshka_loses_less_when_cut(matryoshka_48, outcome):
    ours, _ = hd_verdict("homedepot-matryoshka-loses-less-when-cut", hd_values(matryoshka_48))
    assert (ours.outcome, ours.covered) == (outcome, 2)
    assert set(ours.cells["cell"]) == {"all-MiniLM-L6-v2 recall@10 d384→d48", "all-MiniLM-L6-v2 mrr@10 d384→d48"}


@pytest.mark.parametrize(("pretrained", "matryoshka", "outcome", "beats"), [
    (0.57, 0.65, HOLDS, (PARTLY, 1)), (0.70, 0.65, FAILS, (FAILS, 0)),
    (0.57, 0.70, FAILS, (PARTLY, 1)),  # Matryoshka above fine-tuned (0.66): not "pretrained < MRL < fine-tuned"
])
def test_fine_tuning_beats_pretrained_and_matryoshka_costs_little(pretrained, matryoshka, outcome, beats):
    values = hd_values({"recall@10": 0.6, "mrr@10": 0.6})
    values |= {("pretrained", m, 384): pretrained for m in ("recall@10", "mrr@10")}
    values |= {("matryoshka", m, 384): matryoshka for m in ("recall@10", "mrr@10")}
    ours, _ = hd_verdict("homedepot-matryoshka-costs-little", values)
    assert (ours.outcome, ours.covered) == (outcome, 2)
    values[("pretrained", "mrr@10", 384)] = 0.80   # above fine-tuned on one metric only
    ours, _ = hd_verdict("homedepot-fine-tuning-beats-pretrained", values)
    assert (ours.outcome, ours.held) == beats


# --- SPLADE --------------------------------------------------------------------------------------------------------

def splade_config(runs: dict) -> dict:
    return {"track": "splade", "reference": {"tolerance": 0.01},
            "variants": {name: {"method": method, "published_model": model, "lambda_q": lq, "lambda_d": lq * 0.8}
                         for name, (method, model, lq) in runs.items()},
            "ensembles": {"ens": {"variants": list(runs), "published": None}}}


def splade_verdict(claim_id: str, runs: dict, values: dict, published=None):
    rows = [{"variant": run, "metric": metric, "value": value} for (run, metric), value in values.items()]
    # The ensemble's row: not a run, no λ; it must not join any pair.
    rows += [{"variant": "ens", "metric": metric, "value": 99.0} for metric in ("flops", "mrr@10", "ndcg@10")]
    table = _table(rows, experiment="s", track="splade", model="tiny", dataset="dev", split="dev", seed=1)
    empty = pd.DataFrame(columns=["variant", "model", "lambda_q", "lambda_d", "dataset", "metric", "value"])
    return _verdict(claim_id, "s", {"s": splade_config(runs)}, {"s": table},
                    published=empty if published is None else published)


LAMBDA_RUNS = {"a": ("splade_max", "m", 0.001), "b": ("splade_max", "m", 0.01), "c": ("splade_max", "m", 0.1),
               "other": ("splade_max", "other-model", 1.0)}


@pytest.mark.parametrize(("values", "outcome", "held"), [
    # FLOPS fall 75 %, MRR@10 2.8 %: a small cost
    ({("a", "flops"): 2.0, ("a", "mrr@10"): 0.36, ("b", "flops"): 0.5, ("b", "mrr@10"): 0.35}, HOLDS, 1),
    # FLOPS rise
    ({("a", "flops"): 2.0, ("a", "mrr@10"): 0.36, ("b", "flops"): 2.5, ("b", "mrr@10"): 0.37}, FAILS, 0),
    # a→b holds; c is sparser still, but its MRR@10 falls by a larger share than its FLOPS (not small)
    ({("a", "flops"): 2.0, ("a", "mrr@10"): 0.36, ("b", "flops"): 0.5, ("b", "mrr@10"): 0.35,
      ("c", "flops"): 0.4, ("c", "mrr@10"): 0.05}, PARTLY, 1),
])
def test_larger_lambda_sparser_at_a_small_cost(values, outcome, held):
    values = {**values, ("other", "flops"): 0.01, ("other", "mrr@10"): 0.9}   # another model: never paired
    ours, _ = splade_verdict("splade-larger-lambda-sparser", LAMBDA_RUNS, values)
    assert (ours.outcome, ours.held) == (outcome, held)
    assert ours.covered == (3 if ("c", "flops") in values else 1)


def test_a_rise_in_flops_reads_as_a_rise():
    values = {("a", "flops"): 2.0, ("a", "mrr@10"): 0.36, ("b", "flops"): 2.5, ("b", "mrr@10"): 0.37}
    ours, _ = splade_verdict("splade-larger-lambda-sparser", LAMBDA_RUNS, values)
    assert ours.cells["evidence"].tolist() == ["FLOPS 2.000→2.500 (+25%), MRR@10 0.3600→0.3700 (+2.8%)"]


@pytest.mark.parametrize(("distil", "outcome"), [((0.38, 0.70), HOLDS), ((0.38, 0.60), PARTLY),
                                                 ((0.30, 0.60), FAILS)])
def test_distillation_beats_splade_max(distil, outcome):
    runs = {"max": ("splade_max", "m", 0.001), "distil": ("distil_splade", "m", 0.01),
            "distil-other": ("distil_splade", "other-model", 0.01)}
    values = {("max", "mrr@10"): 0.36, ("max", "ndcg@10"): 0.65, ("distil", "mrr@10"): distil[0],
              ("distil", "ndcg@10"): distil[1], ("distil-other", "mrr@10"): 0.0}
    ours, _ = splade_verdict("splade-distillation-beats-max", runs, values)
    assert (ours.outcome, ours.covered) == (outcome, 2)


def test_splade_published_runs_are_read_by_identity():
    published = pd.DataFrame([
        {"variant": "splade_max", "model": "m", "lambda_q": 0.001, "lambda_d": 0.0008, "dataset": "msmarco-dev",
         "metric": "flops", "value": 3.0},
        {"variant": "splade_max", "model": "m", "lambda_q": 0.001, "lambda_d": 0.0008, "dataset": "msmarco-dev",
         "metric": "mrr@10", "value": 0.37},
        {"variant": "splade_max", "model": "m", "lambda_q": 0.01, "lambda_d": 0.008, "dataset": "msmarco-dev",
         "metric": "flops", "value": 1.0},
        {"variant": "splade_max", "model": "m", "lambda_q": 0.01, "lambda_d": 0.008, "dataset": "msmarco-dev",
         "metric": "mrr@10", "value": 0.36},
        {"variant": "ensemble A B", "model": None, "lambda_q": None, "lambda_d": None, "dataset": "msmarco-dev",
         "metric": "flops", "value": 0.1},
    ])
    ours, theirs = splade_verdict("splade-larger-lambda-sparser", {"a": ("splade_max", "m", 0.001)},
                                  {("a", "flops"): 1.0, ("a", "mrr@10"): 0.3}, published)
    assert ours.outcome == NOT_COVERED   # one run: no pair
    assert (theirs.outcome, theirs.covered) == (HOLDS, 1)


# --- ELECTRA (truncated encoders) ----------------------------------------------------------------------------------

ELECTRA_IDS = {"disc": "google/electra-base-discriminator", "gen": "google/electra-base-generator",
               "bert": "google-bert/bert-base-cased", "small-gen": "google/electra-small-generator"}


def electra_verdict(claim_id: str, curves: dict, published=None, reference=None):
    """curves: (task, model) -> test score per k = 0..3 (the models' depth is 3)."""
    rows = []
    for (task, model), values in curves.items():
        for layer, value in enumerate(values):
            for split, v in (("test", value), ("validation", 0.5)):
                rows.append({"model": model, "layer": layer, "dataset": task, "split": split, "value": v})
    table = _table(rows, experiment="el", track="electra", variant="cut", dim=8, metric="spearman_cosine", seed=0)
    config = {"track": "electra", "_depths": dict.fromkeys(ELECTRA_IDS, 3),
              "reference": {"tolerance": 0.01, "experiments": reference or {}}}
    tasks = {task for task, _ in curves} | set(reference or {})
    return _verdict(claim_id, "el", {"el": config}, {"el": table}, published=published,
                    main_metrics=dict.fromkeys(tasks, "spearman_cosine"), model_ids=ELECTRA_IDS)


@pytest.mark.parametrize(("second_task", "outcome"), [([0.3, 0.8, 0.7, 0.5], HOLDS), ([0.3, 0.4, 0.5, 0.6], PARTLY)])
def test_truncation_beats_the_full_discriminator(second_task, outcome):
    curves = {("stsb", "disc"): [0.3, 0.8, 0.7, 0.5], ("sick", "disc"): second_task,
              ("stsb", "bert"): [0.3, 0.4, 0.5, 0.9]}   # not a discriminator: never read
    ours, _ = electra_verdict("electra-truncation-beats-full-discriminator", curves)
    assert (ours.outcome, ours.covered) == (outcome, 2)
    ours, _ = electra_verdict("electra-truncation-beats-full-discriminator", {("stsb", "disc"): [0.3, 0.4, 0.5, 0.6]})
    assert ours.outcome == FAILS


@pytest.mark.parametrize(("generator", "outcome"), [(0.795, HOLDS), (0.78, FAILS)])
def test_generator_rivals_bert_within_the_tolerance(generator, outcome):
    curves = {("stsb", "gen"): [0.3, generator, 0.5, 0.4], ("stsb", "bert"): [0.3, 0.5, 0.6, 0.80],
              ("stsb", "small-gen"): [0.1, 0.1, 0.1, 0.1]}   # no small BERT: never paired
    ours, _ = electra_verdict("electra-generator-rivals-bert", curves)
    assert (ours.outcome, ours.covered) == (outcome, 1)
    curves[("sick", "gen")], curves[("sick", "bert")] = [0.8] * 4, [0.5] * 4
    ours, _ = electra_verdict("electra-generator-rivals-bert", curves)
    assert ours.outcome == (PARTLY if outcome == FAILS else HOLDS)


def test_electra_published_curves_of_the_mapped_experiment():
    published = pd.DataFrame(
        [{"model": "google-electra-base-discriminator", "experiment": "stsb", "layer": k, "dataset": "stsb-test",
          "metric": "spearman_cosine", "epoch": "last", "value": v} for k, v in enumerate([0.5, 0.8, 0.6])]
        + [{"model": "google-electra-base-discriminator", "experiment": "stsb-de", "layer": k,
            "dataset": "stsb-de-test", "metric": "spearman_cosine", "epoch": "last", "value": v}
           for k, v in enumerate([0.5, 0.6, 0.9])])
    ours, theirs = electra_verdict("electra-truncation-beats-full-discriminator", {("lee", "disc"): [0.1] * 4},
                                   published=published, reference={"lee": "stsb"})
    assert (theirs.outcome, list(theirs.cells["evidence"])) == (HOLDS, ["k=1 0.8000 vs full k=2 0.6000"])
    assert ours.outcome == FAILS
    # a curve of both protocols: the final table's cells (dev-chosen epoch) only, never an archive's
    # last-epoch cell beside them (N4)
    mixed = published.assign(epoch=["last", "dev-best", "dev-best"] + ["last"] * 3,
                             value=[0.9, 0.7, 0.6, 0.5, 0.6, 0.9])
    _, theirs = electra_verdict("electra-truncation-beats-full-discriminator", {("lee", "disc"): [0.1] * 4},
                                published=mixed, reference={"lee": "stsb"})
    assert list(theirs.cells["evidence"]) == ["k=1 0.7000 vs full k=2 0.6000"]


# --- verdicts, citations and the outputs ---------------------------------------------------------------------------

@pytest.mark.parametrize(("holds", "outcome"), [([], NOT_COVERED), ([True, True], HOLDS), ([True, False], PARTLY),
                                                ([False], FAILS)])
def test_verdict_outcomes(holds, outcome):
    verdict = claims.Verdict(pd.DataFrame({"cell": ["c"] * len(holds), "evidence": "", "holds": holds}))
    assert verdict.outcome == outcome


#: where a claim may be stated: a paper's arXiv id, or a seed repository's file
SOURCE = re.compile(r"arXiv:\d{4}\.\d{4,5}|[\w.-]+/[\w.-]+ [\w/]*(README|report)\.md|README\.md")


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda claim: claim.id)
def test_every_claim_cites_where_it_is_stated(claim):
    assert SOURCE.search(claim.citation), f"{claim.id}: no source in {claim.citation!r}"
    assert '"' in claim.statement, f"{claim.id}: the statement quotes no words of the work"
    assert claim.reading and claim.tracks and claim.work


def test_every_track_has_claims():
    """Each track of the table that reproduces a work (all but the trim profile, which has no claims:
    tests/test_tracks.py) checks some claim of reference/claims.yaml, and no claim names another."""
    assert {track for claim in CLAIMS for track in claim.tracks} == set(TRACKS) - {"profile"}
    assert len({claim.id for claim in CLAIMS}) == len(CLAIMS)


def test_outputs_name_each_claim_its_source_and_both_sides():
    values = {**grid("2dmse", {(2, 8): 0.6, (4, 8): 0.7, (2, 16): 0.65, (4, 16): 0.8}),
              **grid("matryoshka", {(2, 8): 0.5, (4, 8): 0.75, (2, 16): 0.6, (4, 16): 0.8})}
    published = pd.DataFrame([{"variant": "v1", "method": m, "layer": 12, "dim": d, "dataset": "sts-avg7",
                               "metric": "spearman_cosine", "value": v}
                              for m, d, v in [("2DMSE", 8, 0.7), ("MSE", 8, 0.6), ("2DMSE", 768, 0.8)]])
    outputs = claims_outputs("e", {"e": STS_CONFIG}, {"e": sts_scores(values)}, published, {}, {}, CLAIMS)
    summary = pd.read_csv(io.StringIO(outputs["csv"])).set_index("claim")
    assert list(summary.index) == [c.id for c in claims.track_claims("2dmse-sts", CLAIMS)]
    row = summary.loc["2dmse-beats-mse-on-sub-dims"]
    assert (row["ours"], row["ours_held"], row["ours_covered"]) == (PARTLY, 1, 2)
    assert (row["published"], row["published_held"], row["published_covered"]) == (HOLDS, 1, 1)
    assert summary.loc["2dmse-not-above-separate", "ours"] == NOT_COVERED
    for claim in claims.track_claims("2dmse-sts", CLAIMS):
        for text in (outputs["markdown"], outputs["html"]):
            assert claim.id in text
        assert claim.citation in outputs["markdown"]
        assert claim.citation.replace('"', "&quot;") in outputs["html"]
    assert "L4 d8: 2DMSE 0.7000 vs MSE 0.7500 (does not hold)" in outputs["markdown"]
    assert outputs["html"].startswith("<!DOCTYPE html>")


def test_the_claims_page_lists_every_claim():
    page = (Path(__file__).resolve().parents[2] / "docs" / "claims.md").read_text()
    assert [claim.id for claim in CLAIMS if f"`{claim.id}`" not in page] == []


def test_claims_file_and_checks_agree_and_a_gap_is_named(tmp_path):
    text = CLAIMS_FILE.read_text()
    # A claim whose check is gone, a check whose claim is gone, a claim without its citation.
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text(text.replace("id: splade-distillation-beats-max", "id: splade-distillation-wins"))
    with pytest.raises(ValueError, match=r"without a check: \['splade-distillation-wins'\].*"
                                         r"without a claim: \['splade-distillation-beats-max'\]"):
        claims.load_claims(renamed)
    uncited = tmp_path / "uncited.yaml"
    uncited.write_text(re.sub(r"(id: electra-generator-rivals-bert\n(?:.*\n)*?)    citation: .*\n(?:      .*\n)*",
                              r"\1", text))
    with pytest.raises(ValueError, match="'electra-generator-rivals-bert' lacks citation"):
        claims.load_claims(uncited)


def test_a_claim_of_a_track_whose_face_does_not_check_it_is_named(tmp_path):
    moved = tmp_path / "moved.yaml"
    claim = "id: splade-larger-lambda-sparser\n    tracks:"
    moved.write_text(CLAIMS_FILE.read_text().replace(f"{claim} [splade]", f"{claim} [homedepot]"))
    with pytest.raises(ValueError, match=r"'splade-larger-lambda-sparser' names tracks \['homedepot'\]"):
        claims.load_claims(moved)


def test_the_claims_are_read_from_the_file_the_rule_gives(tmp_path):
    """Nothing read at import (the rule passes reference/claims.yaml as an input): the outputs carry
    the statements of the file given."""
    assert not hasattr(claims, "CLAIMS")
    reworded = tmp_path / "reworded.yaml"
    reworded.write_text(CLAIMS_FILE.read_text().replace("both versions achieve higher", "both versions reach higher"))
    outputs = claims_outputs("e", {"e": STS_CONFIG}, {"e": sts_scores(grid("2dmse", {(2, 8): 0.6}))},
                             pd.DataFrame(columns=DENSE_REFERENCE), {}, {},
                             claims.load_claims(reworded))
    assert "both versions reach higher" in outputs["markdown"]
    assert "both versions achieve higher" not in outputs["markdown"]


# --- Home Depot's checks on a view built by hand: each cell, its evidence and its verdict at a tie ----------------

def hd_view(rows) -> View:
    return View(pd.DataFrame(rows, columns=["model", "method", "dim", "metric", "value"]))


FT, MRL, PRE = "fine-tuned", "fine-tuned-matryoshka", "pretrained"


def test_homedepot_cut_loss_compares_the_widest_and_narrowest_dims_both_methods_have():
    from trimbench.dense.claims import _loses_less_when_cut

    rows = [("m", FT, 384, "r", 0.8), ("m", FT, 96, "r", 0.7), ("m", FT, 48, "r", 0.6),
            ("m", MRL, 384, "r", 0.8), ("m", MRL, 96, "r", 0.7), ("m", MRL, 24, "r", 0.1),
            ("m", MRL, 48, "r", 0.6),  # ties fine-tuned's loss at d48: not less
            ("m", FT, 384, "s", 0.5), ("m", MRL, 48, "s", 0.4),  # no two dims in common: no cell
            ("n", FT, 384, "r", 0.5), ("n", FT, 48, "r", 0.25), ("n", MRL, 384, "r", 0.5), ("n", MRL, 48, "r", 0.3),
            ("n", PRE, 24, "r", 0.2)]  # a third method's dims are not the two methods' own
    expected = [
        {"cell": "m r d384→d48", "evidence": "Matryoshka −25.0% vs fine-tuned −25.0%", "holds": False},
        {"cell": "n r d384→d48", "evidence": "Matryoshka −40.0% vs fine-tuned −50.0%", "holds": True}]
    assert _loses_less_when_cut(hd_view(rows)) == expected
    assert _loses_less_when_cut(hd_view(rows[::-1])) == expected  # in model order, whatever the rows' order


def test_homedepot_full_dim_checks_read_each_models_widest_dim_and_count_a_tie_as_not_holding():
    from trimbench.dense.claims import _fine_tuning_beats_pretrained, _matryoshka_costs_little

    rows = [("m", FT, 384, "r", 0.6), ("m", PRE, 384, "r", 0.6), ("m", MRL, 384, "r", 0.6),
            ("m", FT, 48, "r", 0.9), ("m", PRE, 48, "r", 0.1), ("m", MRL, 48, "r", 0.5),
            ("n", FT, 384, "r", 0.7), ("n", PRE, 384, "r", 0.5), ("n", MRL, 384, "r", 0.6),
            ("o", FT, 384, "r", 0.7), ("o", PRE, 768, "r", 0.5), ("o", MRL, 768, "r", 0.6),  # no common widest
            ("p", MRL, 384, "r", 0.5)]  # Matryoshka alone
    assert _fine_tuning_beats_pretrained(hd_view(rows)) == [
        {"cell": "m r d384", "evidence": "fine-tuned 0.6000 vs pretrained 0.6000", "holds": False},
        {"cell": "n r d384", "evidence": "fine-tuned 0.7000 vs pretrained 0.5000", "holds": True}]
    assert _matryoshka_costs_little(hd_view(rows)) == [
        {"cell": "m r d384", "evidence": "pretrained 0.6000 < Matryoshka 0.6000 < fine-tuned 0.6000", "holds": False},
        {"cell": "n r d384", "evidence": "pretrained 0.5000 < Matryoshka 0.6000 < fine-tuned 0.7000", "holds": True}]
    ties = [("m", FT, 384, "r", 0.7), ("m", PRE, 384, "r", 0.5), ("m", MRL, 384, "r", 0.7),
            ("n", FT, 384, "r", 0.7), ("n", PRE, 384, "r", 0.6), ("n", MRL, 384, "r", 0.6)]
    assert [c["holds"] for c in _matryoshka_costs_little(hd_view(ties))] == [False, False]


def test_each_claim_has_one_check_and_two_tracks_checking_one_claim_differently_is_named(monkeypatch):
    """CHECKS, from the tracks' faces: a claim two tracks list with the same check is one entry; with
    two different checks it is an error naming the claim and the second track."""
    from types import SimpleNamespace

    def shared(view):
        return []

    def own(view):
        return []

    def other(view):
        return []

    tracks = {"a": SimpleNamespace(name="a", claim_checks={"shared": shared, "own": own}),
              "b": SimpleNamespace(name="b", claim_checks={"shared": shared})}
    monkeypatch.setattr(claims, "TRACKS", tracks)
    assert claims._checks() == {"shared": shared, "own": own}
    monkeypatch.setattr(claims, "TRACKS", {**tracks, "c": SimpleNamespace(name="c", claim_checks={"shared": other})})
    with pytest.raises(ValueError, match=r"^claim 'shared' has two checks \(c's and another track's\)$"):
        claims._checks()


def test_loaded_claims_carry_the_files_words_and_its_errors_name_the_file(tmp_path):
    """Each claim as the file words it (work, tracks, statement, citation, reading); a key given twice,
    a claim without id and citation or on a track that does not check it: an error naming the file."""
    import yaml

    from trimbench.errors import ConfigError

    text = CLAIMS_FILE.read_text()
    entries = yaml.safe_load(text)["claims"]
    loaded = claims.load_claims(CLAIMS_FILE)
    assert [(c.id, c.work, c.tracks, c.statement, c.citation, c.reading) for c in loaded] == [
        (e["id"], e["work"], tuple(e["tracks"]), e["statement"], e["citation"], e["reading"]) for e in entries]
    assert all(c.check is claims.CHECKS[c.id] for c in loaded)
    twice = tmp_path / "twice.yaml"
    twice.write_text(text.replace("    tracks: [2dmse-sts, 2dmse-retrieval]\n",
                                  "    tracks: [2dmse-sts, 2dmse-retrieval]\n    tracks: [2dmse-sts]\n", 1))
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(twice))}: key '.*tracks' is given twice"):
        claims.load_claims(twice)
    anonymous = tmp_path / "anonymous.yaml"
    first, *rest = entries
    anonymous.write_text(yaml.safe_dump({"claims": [{k: v for k, v in first.items() if k not in ("id", "citation")},
                                                    *rest]}))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(anonymous))}: claim '\?' lacks id, citation$"):
        claims.load_claims(anonymous)
    moved = tmp_path / "moved.yaml"
    claim = "id: splade-larger-lambda-sparser\n    tracks:"
    moved.write_text(text.replace(f"{claim} [splade]", f"{claim} [splade, electra]"))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(moved))}: claim 'splade-larger-lambda-sparser' names "
                                         r"tracks \['electra'\], whose faces \(trimbench\.tracks\) do not check it$"):
        claims.load_claims(moved)


def test_claims_pages_word_for_word_on_a_hand_made_summary():
    """The Markdown and HTML of one claim partly held on our side (1 of 2 cells) and not covered on the
    published side: its outcome with the counts, its words escaped, each cell with its verdict."""
    from trimbench.report.claims import claims_html, claims_markdown

    summary = pd.DataFrame([{"claim": "c1", "work": "W", "statement": 'says "x" <y>', "citation": "paper §1",
                             "reading": "a > b", "ours": PARTLY, "ours_held": 1, "ours_covered": 2,
                             "published": NOT_COVERED, "published_held": 0, "published_covered": 0}])
    cells = pd.DataFrame([{"claim": "c1", "side": "ours", "cell": "L2 d8", "evidence": "0.6 > 0.5", "holds": True},
                          {"claim": "c1", "side": "ours", "cell": "L2 d16", "evidence": "0.4 > 0.5", "holds": False}])
    lines = claims_markdown("e", summary, cells).split("\n")
    assert lines[:4] == ["# Claims: e", "", "Each claim of the reproduced work, checked on our scores and on the "
                         "published numbers: holds (every covered cell), partly, fails (no cell), or not covered "
                         "(none of its cells in that table).", ""]
    assert [cell.strip() for cell in lines[6].strip("|").split("|")] == ["c1", "partly (1/2)", "not covered"]
    assert lines[7:] == ["", "## c1", "", 'W: says "x" <y>', "", "Source: paper §1.", "", "Checked as: a > b.", "",
                         "ours: partly (1/2)", "- L2 d8: 0.6 > 0.5 (holds)", "- L2 d16: 0.4 > 0.5 (does not hold)", "",
                         "published: not covered", ""]
    page = claims_html("e <1>", summary, cells)
    assert "<h2>Claims: e &lt;1&gt;</h2>\n<table class='claims'><tr><th>claim</th><th>as stated</th><th>source</th>" \
           "<th>checked as</th><th>ours</th><th>published</th></tr><tr><td>c1</td><td>says &quot;x&quot; &lt;y&gt;" \
           "</td><td>paper §1</td><td>a &gt; b</td><td>partly (1/2)</td><td>not covered</td></tr></table>\n<h3>c1" \
           "</h3><table class=\"dataframe\">" in page
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*</tr>",
                      page[page.index("<h3>c1</h3>"):])
    assert rows == [("ours", "L2 d8", "0.6 &gt; 0.5", "yes"), ("ours", "L2 d16", "0.4 &gt; 0.5", "no")]
    assert [cell.strip() for cell in lines[4].strip("|").split("|")] == ["claim", "ours", "published"]
    # two claims: both rows, each claim's cells under its heading in the summary's order (not sorted)
    second = summary.assign(claim="a2", ours=HOLDS, ours_held=1, ours_covered=1)
    both = pd.concat([summary, second], ignore_index=True)
    page = claims_html("e", both, pd.concat([cells, cells.iloc[:1].assign(claim="a2")], ignore_index=True))
    assert "</tr><tr><td>c1</td>" in page and "</tr><tr><td>a2</td>" in page and "</td></tr><tr><td>a2</td>" in page
    assert page.index("<h3>c1</h3>") < page.index("<h3>a2</h3>")
    empty = summary.iloc[:0]
    assert claims_markdown("e", empty, cells.iloc[:0]).endswith("table).\n\nNo claim of this track is checked.\n")
    assert "<h2>Claims: e</h2><p>No claim of this track is checked.</p></body>" in claims_html("e", empty, cells)


# --- SPLADE's claims on hand-made runs: view cells, λ pairs, distillation ---------------------


SPLADE_COLUMNS = ["method", "model", "lambda_q", "lambda_d", "dataset", "metric", "value"]


def test_splade_view_cells_are_each_trained_variants_identity_and_its_mean_over_seeds():
    from trimbench.splade.claims import claim_views, splade_published_cells, splade_view_cells

    config = {"reference": {"tolerance": 0.02},
              "variants": {"b": {"method": "splade_max", "published_model": "m", "lambda_q": 0.1, "lambda_d": 0.08},
                           "a": {"method": "distil_splade", "published_model": "m", "lambda_q": 0.01,
                                 "lambda_d": 0.008}},
              "ensembles": {"ens": {"variants": ["a", "b"], "published": None}}}
    scores = pd.DataFrame([
        ("b", "tiny", "dev", "mrr@10", 1, 0.30), ("b", "tiny", "dev", "mrr@10", 2, 0.40),
        ("b", "tiny", "dev", "flops", 1, 2.0), ("a", "tiny", "dl19", "ndcg@10", 1, 0.6),
        ("ens", "tiny", "dev", "mrr@10", 1, 0.9),  # an ensemble: no identity, not a cell
    ], columns=["variant", "model", "dataset", "metric", "seed", "value"])
    cells = splade_view_cells(scores, config)
    expected = pd.DataFrame([("distil_splade", "m", 0.01, 0.008, "dl19", "ndcg@10", 0.6),
                             ("splade_max", "m", 0.1, 0.08, "dev", "flops", 2.0),
                             ("splade_max", "m", 0.1, 0.08, "dev", "mrr@10", 0.35)], columns=SPLADE_COLUMNS)
    pd.testing.assert_frame_equal(cells, expected, check_dtype=False)
    published = pd.DataFrame([
        ("src", "splade_max", "m", 0.1, 0.08, "dev", "flops", 1.5),
        ("src", "ensemble A B", None, None, None, "dev", "flops", 0.1),   # an ensemble: not a run
        ("src", "distil_splade", "m", 0.01, 0.008, "dev", "mrr@10", 0.36),
    ], columns=["source", "variant", *SPLADE_COLUMNS[1:]])
    theirs = splade_published_cells(published)
    pd.testing.assert_frame_equal(theirs, pd.DataFrame([("splade_max", "m", 0.1, 0.08, "dev", "flops", 1.5),
                                                        ("distil_splade", "m", 0.01, 0.008, "dev", "mrr@10", 0.36)],
                                                       columns=SPLADE_COLUMNS), check_dtype=False)
    ours_view, their_view = claim_views("s", {"s": config, "other": {}}, {"s": scores}, published, {}, {})
    pd.testing.assert_frame_equal(ours_view.cells, cells)
    pd.testing.assert_frame_equal(their_view.cells, theirs)
    assert (ours_view.ablations, ours_view.tolerance) == (their_view.ablations, their_view.tolerance) == ((), 0.02)


def _splade_view(rows: list[tuple]) -> View:
    return View(pd.DataFrame(rows, columns=SPLADE_COLUMNS))


def test_larger_lambda_sparser_pairs_runs_of_one_method_model_dataset_whose_lambdas_both_rise():
    from trimbench.splade.claims import _larger_lambda_sparser

    low, high = ("splade_max", "m", 2.0, 0.5), ("splade_max", "m", 10.0, 0.8)   # "10.0" sorts before "2.0" as text
    rows = []
    for dataset, (f_low, f_high, m_low, m_high) in {
            "d1": (4.0, 1.0, 0.40, 0.38),     # FLOPS −75 %, MRR@10 −5 %: holds
            "d2": (2.0, 1.0, 0.40, 0.20),     # both fall by half: the cost is not smaller than the gain
            "d3": (2.0, 2.0, 0.40, 0.50)}.items():   # FLOPS the same: not sparser
        rows += [(*low, dataset, "flops", f_low), (*low, dataset, "mrr@10", m_low),
                 (*high, dataset, "flops", f_high), (*high, dataset, "mrr@10", m_high)]
    # not paired with those: λq up but λd down; another method, model or dataset; no MRR@10
    rows += [(*run, dataset, metric, value) for run, dataset in [
        (("splade_max", "m", 20.0, 0.1), "d1"), (("distil_splade", "m", 30.0, 0.9), "d1"),
        (("splade_max", "n", 30.0, 0.9), "d1"), (("splade_max", "m", 30.0, 0.9), "d9")]
        for metric, value in (("flops", 0.1), ("mrr@10", 0.1))]
    rows += [("splade_max", "m", 40.0, 1.0, "d1", "flops", 0.01), ("splade_max", "m", 40.0, 1.0, "d1", "ndcg@10", 0.4),
             # λd up, λq the same as the low run's: not both larger
             ("splade_max", "m", 2.0, 0.9, "d1", "flops", 0.01), ("splade_max", "m", 2.0, 0.9, "d1", "mrr@10", 0.4)]
    cells = _larger_lambda_sparser(_splade_view(rows))
    assert cells[:2] == [
        {"cell": "splade_max m d1 λq 2→10", "evidence": "FLOPS 4.000→1.000 (−75%), MRR@10 0.4000→0.3800 (−5.0%)",
         "holds": True},
        {"cell": "splade_max m d2 λq 2→10", "evidence": "FLOPS 2.000→1.000 (−50%), MRR@10 0.4000→0.2000 (−50.0%)",
         "holds": False}]
    assert (cells[2]["cell"], cells[2]["holds"], len(cells)) == ("splade_max m d3 λq 2→10", False, 3)


def test_larger_lambda_sparser_lists_its_cells_in_numeric_lambda_order():
    from trimbench.splade.claims import _larger_lambda_sparser

    rows = [("splade_max", "m", lq, lq, "d", metric, value)
            for lq, flops in ((0.1, 1.0), (1e-05, 4.0), (0.001, 2.0))
            for metric, value in (("flops", flops), ("mrr@10", 0.4))]
    assert [cell["cell"] for cell in _larger_lambda_sparser(_splade_view(rows))] == [
        "splade_max m d λq 1e-05→0.001", "splade_max m d λq 1e-05→0.1", "splade_max m d λq 0.001→0.1"]


def test_distillation_beats_max_compares_every_pair_of_one_model_and_dataset_per_metric():
    from trimbench.splade.claims import _distillation_beats_max, _signed

    distil, plain = ("distil_splade", "m", 0.01, 0.008), ("splade_max", "m", 0.1, 0.08)
    wider, other_model = ("splade_max", "m", 0.5, 0.4), ("a", 0.01, 0.008, "dev", "mrr@10")
    rows = [(*distil, "dev", "mrr@10", 0.38), (*plain, "dev", "mrr@10", 0.38), (*wider, "dev", "mrr@10", 0.30),
            (*distil, "dev", "ndcg@10", 0.7), (*plain, "dev", "ndcg@10", 0.6),
            ("distil_splade", *other_model, 0.1), ("splade_max", "a", 0.1, 0.08, "dev", "mrr@10", 0.2),
            (*plain, "dev", "flops", 9.0), (*distil, "dev", "flops", 1.0), (*distil, "dl19", "ndcg@10", 0.9)]
    cells = _distillation_beats_max(_splade_view(rows))
    assert [(c["cell"], c["evidence"], c["holds"]) for c in cells] == [
        ("a dev mrr@10: distil λq 0.01 vs max λq 0.1", "DistilSPLADE-max 0.1000 vs SPLADE-max 0.2000", False),
        ("m dev mrr@10: distil λq 0.01 vs max λq 0.1", "DistilSPLADE-max 0.3800 vs SPLADE-max 0.3800", False),
        ("m dev mrr@10: distil λq 0.01 vs max λq 0.5", "DistilSPLADE-max 0.3800 vs SPLADE-max 0.3000", True),
        ("m dev ndcg@10: distil λq 0.01 vs max λq 0.1", "DistilSPLADE-max 0.7000 vs SPLADE-max 0.6000", True)]
    assert (_signed(-0.634, ".0%"), _signed(0.021, ".1%"), _signed(0.0, ".0%")) == ("−63%", "+2.1%", "0%")
    assert (_signed(-0.004, ".0%"), _signed(-0.0004, ".1%"), _signed(-0.006, ".0%")) == ("0%", "0.0%", "−1%")


# --- the claims table and the claims rule's outputs ---------------------------------------------


def test_claims_table_rows_per_claim_of_the_track_and_cells_per_side():
    """Hand-made claims over stand-in views: only the track's claims, each side's outcome, share, held
    and covered counts; the cells one table in claim/side order, renumbered, holds as booleans."""
    rows = {"ours": [{"cell": "a", "evidence": "x", "holds": 1}, {"cell": "b", "evidence": "y", "holds": 0}],
            "published": [{"cell": "a", "evidence": "z", "holds": 1}]}

    def split(view):
        return rows[view]

    def nothing(view):
        return []

    def claim(claim_id, tracks, check):
        return claims.Claim(claim_id, f"W {claim_id}", tracks, f"says {claim_id}", f"cites {claim_id}",
                            f"reads {claim_id}", check)

    given = (claim("c1", ("t",), split), claim("c2", ("other",), split), claim("c3", ("u", "t"), nothing))
    summary, cells = claims.claims_table("subj", "t", "ours", "published", given)
    assert list(summary.columns) == ["experiment", "claim", "work", "statement", "citation", "reading", "ours",
                                     "ours_share", "ours_held", "ours_covered", "published", "published_share",
                                     "published_held", "published_covered"]
    assert summary.drop(columns=["ours_share", "published_share"]).values.tolist() == [
        ["subj", "c1", "W c1", "says c1", "cites c1", "reads c1", PARTLY, 1, 2, HOLDS, 1, 1],
        ["subj", "c3", "W c3", "says c3", "cites c3", "reads c3", NOT_COVERED, 0, 0, NOT_COVERED, 0, 0]]
    assert summary["ours_share"].tolist()[0] == 0.5 and summary["published_share"].tolist()[0] == 1.0
    assert summary[["ours_share", "published_share"]].iloc[1].isna().all()
    assert list(cells.columns) == ["claim", "side", "cell", "evidence", "holds"]
    assert cells.index.tolist() == [0, 1, 2]
    assert cells.values.tolist() == [["c1", "ours", "a", "x", True], ["c1", "ours", "b", "y", False],
                                     ["c1", "published", "a", "z", True]]
    assert cells["holds"].dtype == bool
    # a claim evaluated on no view covers nothing; a track with no claim: empty tables, the cells' columns still
    assert claim("c1", ("t",), split).evaluate(None).outcome == NOT_COVERED
    assert list(claim("c3", ("t",), nothing).evaluate("ours").cells.columns) == ["cell", "evidence", "holds"]
    summary, cells = claims.claims_table("subj", "t", "ours", "published", given[1:2])
    assert summary.empty and cells.empty and list(cells.columns) == ["claim", "side", "cell", "evidence", "holds"]


def test_claims_outputs_of_an_electra_run_read_its_main_metrics_and_model_ids():
    """The claims rule's three texts for an ELECTRA run: its views read through the run's main metrics
    and model ids (a discriminator is known by its id), the CSV without an index and with six decimals."""
    curves = {("stsb", "disc"): [0.3, 0.8, 0.7, 0.5], ("sick", "disc"): [0.3, 0.4, 0.5, 0.6]}
    rows = [{"model": model, "layer": layer, "dataset": task, "split": split, "value": v}
            for (task, model), values in curves.items() for layer, value in enumerate(values)
            for split, v in (("test", value), ("validation", 0.5))]
    table = _table(rows, experiment="el", track="electra", variant="cut", dim=8, metric="spearman_cosine", seed=0)
    config = {"track": "electra", "_depths": dict.fromkeys(ELECTRA_IDS, 3),
              "reference": {"tolerance": 0.01, "experiments": {}}}
    outputs = claims_outputs("el", {"el": config}, {"el": table}, pd.DataFrame(),
                             {"stsb": "spearman_cosine", "sick": "spearman_cosine"}, ELECTRA_IDS, CLAIMS)
    lines = outputs["csv"].splitlines()
    assert lines[0].startswith("experiment,claim,work,statement,")
    summary = pd.read_csv(io.StringIO(outputs["csv"])).set_index("claim")
    row = summary.loc["electra-truncation-beats-full-discriminator"]
    assert (row["experiment"], row["ours"], row["ours_held"], row["ours_covered"]) == ("el", PARTLY, 1, 2)
    line = next(line for line in lines if line.startswith("el,electra-truncation-beats-full-discriminator,"))
    assert ",partly,0.500000,1,2,not covered,," in line
    assert outputs["markdown"].startswith("# Claims: el\n")
    assert "<h2>Claims: el</h2>" in outputs["html"]


# --- 2DMSE's claims on hand-made grids: views, grid checks, ablations ----------------------------


def dense_cells(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["method", "layer", "dim", "value"])


def test_dense_views_average_the_compared_datasets_seeds_in_the_seeds_labels():
    from trimbench.dense.claims import dense_published_cells, dense_view_cells

    values = {("full", 2, 8): [0.25, 0.75], ("2dmse", 4, 16): 0.7, ("separate", 2, 8): 0.4}
    ours = dense_view_cells(sts_scores(values), STS_CONFIG)  # beside rows of another dataset and metric
    assert ours.to_dict("records") == [{"method": "2DMSE", "layer": 4, "dim": 16, "value": 0.7},
                                       {"method": "BERT", "layer": 2, "dim": 8, "value": 0.5},
                                       {"method": "BERT-S", "layer": 2, "dim": 8, "value": 0.4}]
    assert [str(t) for t in ours.dtypes[1:]] == ["int64", "int64", "float64"]

    def cell(dataset, value, variant="v1", metric="spearman_cosine", layer=2):
        return {"variant": variant, "method": "BERT", "layer": str(layer), "dim": "8", "dataset": dataset,
                "metric": metric, "value": value}

    others = [cell("sts-avg7", 0.9), cell("sts-avg", 0.1, variant="v2"), cell("sts-avg", 0.2, metric="pearson")]
    # The compared dataset published: its cells (duplicates averaged), not another dataset's.
    published = pd.DataFrame([cell("sts-avg", 0.3), cell("sts-avg", 0.5), *others])
    assert dense_published_cells(published, STS_CONFIG).to_dict("records") == [
        {"method": "BERT", "layer": 2, "dim": 8, "value": 0.4}]
    # Not published: the one dataset the work publishes, else nothing (which of several is unknown).
    one = pd.DataFrame([cell("sts-avg7", 0.9, layer=12), cell("sts-avg", 0.1, variant="v2")])
    assert dense_published_cells(one, STS_CONFIG).to_dict("records") == [
        {"method": "BERT", "layer": 12, "dim": 8, "value": 0.9}]
    two = pd.DataFrame([cell("sts-avg7", 0.9), cell("sts-b", 0.8), cell("sts-avg", 0.1, variant="v2")])
    none = dense_published_cells(two, STS_CONFIG)
    assert none.empty and list(none.columns) == ["method", "layer", "dim", "value"]


#: a grid of layers 2, 4, 6 (6 only BERT's: the side's depth) and dims 8, 16, 32 (32 only BERT's: its width)
GRID_CELLS = dense_cells([
    ("2DMSE", 4, 16, 0.8), ("2DMSE", 2, 8, 0.6), ("2DMSE", 4, 8, 0.7), ("2DMSE", 2, 16, 0.65),
    ("MSE", 2, 8, 0.5), ("MSE", 4, 8, 0.75), ("MSE", 2, 16, 0.65), ("MSE", 4, 16, 0.7), ("MSE", 3, 8, 0.1),
    ("BERT", 4, 16, 0.9), ("BERT", 2, 8, 0.55), ("BERT", 2, 16, 0.65), ("BERT", 6, 32, 0.95),
    ("BERT-S", 2, 8, 0.6), ("BERT-S", 4, 16, 0.75)])


def test_dense_grid_checks_compare_the_cells_both_methods_cover_below_the_sides_full_model():
    from trimbench.dense.claims import _beats_full_on_sub_layers, _beats_mse_on_sub_dims, _not_above_separate

    view = View(GRID_CELLS)
    # Every dim is below the side's width (32): 2DMSE > MSE strictly; MSE's lone layer 3 has no pair.
    assert _beats_mse_on_sub_dims(view) == [
        {"cell": "L2 d8", "evidence": "2DMSE 0.6000 vs MSE 0.5000", "holds": True},
        {"cell": "L2 d16", "evidence": "2DMSE 0.6500 vs MSE 0.6500", "holds": False},
        {"cell": "L4 d8", "evidence": "2DMSE 0.7000 vs MSE 0.7500", "holds": False},
        {"cell": "L4 d16", "evidence": "2DMSE 0.8000 vs MSE 0.7000", "holds": True}]
    assert _beats_full_on_sub_layers(view) == [
        {"cell": "L2 d8", "evidence": "2DMSE 0.6000 vs BERT 0.5500", "holds": True},
        {"cell": "L2 d16", "evidence": "2DMSE 0.6500 vs BERT 0.6500", "holds": False},  # equal is not above
        {"cell": "L4 d16", "evidence": "2DMSE 0.8000 vs BERT 0.9000", "holds": False}]
    assert _not_above_separate(view) == [  # equal is not above
        {"cell": "L2 d8", "evidence": "2DMSE 0.6000 vs BERT-S 0.6000", "holds": True},
        {"cell": "L4 d16", "evidence": "2DMSE 0.8000 vs BERT-S 0.7500", "holds": False}]
    # Without BERT's layer 6 and dim 32 the side's full model is layer 4, dim 16: those cells drop out.
    narrow = View(GRID_CELLS[GRID_CELLS["layer"] < 6])
    assert [c["cell"] for c in _beats_mse_on_sub_dims(narrow)] == ["L2 d8", "L4 d8"]
    assert [c["cell"] for c in _beats_full_on_sub_layers(narrow)] == ["L2 d8", "L2 d16"]
    assert _beats_mse_on_sub_dims(View(dense_cells([]))) == []


def test_ablation_pairs_and_cells_compare_2dmse_cells_of_each_member_with_its_base():
    from trimbench.dense.claims import (
        _fixed_doc_no_gain,
        _full_dim_loss_helps,
        _more_target_dims_help,
        ablation_pairs,
    )

    def cells(value):
        return dense_cells([("2DMSE", 4, 64, value), ("2DMSE", 2, 64, value - 0.1), ("BERT", 2, 64, 0.0),
                            ("2DMSE", 2, 32, 0.9)])

    tables = {"base": cells(0.4), "sub-full": cells(0.5), "dims": cells(0.3), "fixed-doc": cells(0.4),
              "dims-full": cells(0.6)}
    tables["base"] = tables["base"][tables["base"]["dim"] == 64]  # d32: the base lacks it, no pair
    pairs = ablation_pairs("base", ABLATIONS, tables)
    assert [(m, b, set(c)) for m, b, c, *_ in pairs] == [
        ("dims", "base", {"target_dims"}), ("dims-full", "base", {"target_dims", "sub_layer_full_dim"}),
        ("fixed-doc", "base", {"passage_to_last_layer"}), ("sub-full", "base", {"sub_layer_full_dim"})]
    assert all(member is tables[m] and base is tables[b] for m, b, _, member, base in pairs)
    assert [pair[:2] for pair in ablation_pairs("dims", ABLATIONS, tables)] == [("dims", "base")]
    view = View(dense_cells([]), pairs)
    assert _full_dim_loss_helps(view) == [
        {"cell": "sub-full vs base L2 d64", "evidence": "sub-full 0.4000 vs base 0.3000", "holds": True},
        {"cell": "sub-full vs base L4 d64", "evidence": "sub-full 0.5000 vs base 0.4000", "holds": True}]
    assert _more_target_dims_help(view) == [
        {"cell": "dims vs base L2 d64", "evidence": "dims 0.2000 vs base 0.3000", "holds": False},
        {"cell": "dims vs base L4 d64", "evidence": "dims 0.3000 vs base 0.4000", "holds": False}]
    assert [c["holds"] for c in _fixed_doc_no_gain(view)] == [True, True]  # equal: no gain
    dims = ("dims", "base", frozenset({"target_dims"}), dense_cells([("2DMSE", 2, 64, 0.5), ("2DMSE", 4, 64, 0.4)]),
            tables["base"])
    assert [c["holds"] for c in _more_target_dims_help(View(dense_cells([]), (dims,)))] == [True, False]  # a tie
    # Two members of one claim: the cells of both.
    second = ("sub-full-b", "base", frozenset({"sub_layer_full_dim"}), cells(0.4), tables["base"])
    both = _full_dim_loss_helps(View(dense_cells([]), (*pairs, second)))
    assert [(c["cell"], c["holds"]) for c in both] == [  # sub-full-b ties its base: no help
        ("sub-full vs base L2 d64", True), ("sub-full vs base L4 d64", True),
        ("sub-full-b vs base L2 d64", False), ("sub-full-b vs base L4 d64", False)]


def test_dense_claim_views_carry_the_subjects_cells_tolerance_and_ablations():
    from trimbench.dense.claims import homedepot_claim_views, retrieval_claim_views, sts_claim_views

    config = {**STS_CONFIG, "reference": {"variant": "v1", "tolerance": 0.05}}
    published = pd.DataFrame([{"variant": "v1", "method": "BERT", "layer": 12, "dim": 768, "dataset": "sts-avg",
                               "metric": "spearman_cosine", "value": 0.8}])
    ours, theirs = sts_claim_views("e", {"e": config, "f": STS_CONFIG},
                                   {"e": sts_scores({("full", 2, 8): 0.5}), "f": sts_scores({("full", 2, 8): 0.1})},
                                   published, {}, {})
    assert ours.cells.to_dict("records") == [{"method": "BERT", "layer": 2, "dim": 8, "value": 0.5}]
    assert theirs.cells.to_dict("records") == [{"method": "BERT", "layer": 12, "dim": 768, "value": 0.8}]
    assert (ours.tolerance, theirs.tolerance, ours.ablations, theirs.ablations) == (0.05, 0.05, (), ())

    configs = {name: {**config, "reference": {**config["reference"], "tolerance": 0.03}}
               for name, config in ABLATIONS.items()}
    tables = {name: retrieval_scores(name, [0.3, 0.4]) for name in ABLATIONS}
    ours, theirs = retrieval_claim_views("sub-full", configs, tables, pd.DataFrame(columns=DENSE_REFERENCE), {}, {})
    assert [(m, b) for m, b, *_ in ours.ablations] == [("sub-full", "base")] and theirs.ablations == ()
    assert ours.ablations[0][3].to_dict("records") == [{"method": "2DMSE", "layer": 2, "dim": 64, "value": 0.3},
                                                       {"method": "2DMSE", "layer": 4, "dim": 64, "value": 0.4}]
    assert (ours.tolerance, theirs.tolerance) == (0.03, 0.03)

    hd_published = pd.DataFrame([{"source": "s", "model": "m", "method": FT, "dim": 384, "metric": "r", "value": 0.6}])
    hd = {**HD_CONFIG, "reference": {**HD_CONFIG["reference"], "tolerance": 0.04}}
    ours, theirs = homedepot_claim_views("hd", {"hd": hd}, {"hd": homedepot_scores({("full", "r", 384): 0.7})},
                                         hd_published, {}, {})
    assert theirs.cells.to_dict("records") == [{"model": "m", "method": FT, "dim": 384, "metric": "r", "value": 0.6}]
    assert ours.cells[["method", "dim", "metric", "value"]].to_dict("records") == [
        {"method": FT, "dim": 384, "metric": "r", "value": 0.7}]
    assert (ours.tolerance, theirs.tolerance, ours.ablations, theirs.ablations) == (0.04, 0.04, (), ())
