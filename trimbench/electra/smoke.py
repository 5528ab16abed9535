"""Smoke mode (``--config smoke=true``, trimbench.config.smoke) for an ELECTRA experiment (light: runs
while Snakemake parses)."""

from __future__ import annotations


def smoke_experiment(exp: dict, settings: dict) -> None:
    """An ELECTRA experiment fine-tunes once per (task, model, k, seed), thousands in a paper
    preset (one job per task and model): smoke mode keeps the first ``max_models`` models, ``max_seeds`` seeds and
    ``max_layers`` cuts (the shallowest configured, or k = 1, 2, ... where every k is) and a few
    steps per epoch."""
    exp["models"] = exp["models"][: settings["max_models"]]
    exp["seeds"] = exp["seeds"][: settings["max_seeds"]]
    exp["layers"] = sorted(exp["layers"] or range(1, settings["max_layers"] + 1))[: settings["max_layers"]]
    exp["layer_step"] = 1  # the cuts are listed now
    for stage in (exp["train"], exp["word_similarity"]):
        if stage:
            stage["epochs"] = min(stage["epochs"], settings["max_epochs"])
            stage["max_samples"] = min(stage["max_samples"] or settings["max_samples"], settings["max_samples"])
            stage["batch_size"] = min(stage["batch_size"], settings["batch_size"])
            stage["max_seq_length"] = min(stage["max_seq_length"] or settings["max_seq_length"],
                                          settings["max_seq_length"])
            stage["logging_steps"] = 1
            stage["precision"] = "fp32"
    adaptation = exp["domain_adaptation"]
    if adaptation:
        adaptation.update(epochs=1, max_samples=settings["max_samples"], gradient_accumulation=1,
                          batch_size=min(adaptation["batch_size"], settings["batch_size"]), logging_steps=1,
                          max_seq_length=min(adaptation["max_seq_length"] or settings["max_seq_length"],
                                             settings["max_seq_length"]),
                          precision="fp32")
