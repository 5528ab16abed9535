"""Smoke mode (``--config smoke=true``, trimbench.config.smoke) for a SPLADE experiment (light: it runs
while Snakemake parses)."""

from __future__ import annotations

from trimbench.checks import deepest_cut_off
from trimbench.face import shared_by_devices


def smoke_experiment(exp: dict, settings: dict) -> None:
    """A SPLADE preset trains a dozen models and searches every one on 16 datasets: smoke mode keeps
    the first ``max_variants`` variants (and the ensembles of kept ones, else one of them all), the first
    two evaluation datasets plus one averaged one, generated hard negatives and a few steps."""
    kept = list(exp["variants"])[: settings["max_variants"]]
    exp["variants"] = {name: exp["variants"][name] for name in kept}
    ensembles = {name: e for name, e in exp["ensembles"].items() if set(e["variants"]) <= set(kept)}
    if not ensembles and exp["ensembles"] and len(kept) > 1:
        name, first = next(iter(exp["ensembles"].items()))
        ensembles = {name: {**first, "variants": kept}}
    exp["ensembles"] = ensembles
    evaluation = exp["evaluation"]
    averaged = [ds for ds in evaluation["datasets"] if ds in (evaluation["average_over"] or [])][:1]
    datasets = list(dict.fromkeys(evaluation["datasets"][:2] + averaged))
    evaluation["datasets"] = datasets
    evaluation["average_over"] = [ds for ds in evaluation["average_over"] or [] if ds in datasets] or None
    named = datasets + ([evaluation["average_name"]] if evaluation["average_over"] else [])
    if evaluation["table"]:
        evaluation["table"] = [column for column in evaluation["table"] if column[0] in named] or None
    train = exp["train"]
    train.update(max_steps=settings["max_steps"], batch_size=min(train["batch_size"], settings["batch_size"]),
                 max_samples=min(train["max_samples"] or settings["max_samples"], settings["max_samples"]),
                 max_seq_length=min(train["max_seq_length"] or settings["max_seq_length"], settings["max_seq_length"]),
                 warmup_steps=min(train["warmup_steps"], 1), gradient_accumulation=1, logging_steps=1,
                 precision="fp32")
    shared_by_devices(train)
    if train["hard_negatives"] is not None:
        train["hard_negatives"]["source"] = "standin"
    train["negatives"]["depth"] = min(train["negatives"]["depth"], 20)
    splade = exp["splade"]
    # top_k never below a metric's cut-off (trimbench.checks.check_search_depth)
    splade.update(top_k=min(splade["top_k"], max(100, deepest_cut_off(exp["evaluation"]["metrics"]))),
                  q_max_terms=min(splade["q_max_terms"] or 16, 16),
                  d_max_terms=min(splade["d_max_terms"] or 64, 64))
