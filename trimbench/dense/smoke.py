"""Smoke mode (``--config smoke=true``, trimbench.config.smoke) for a dense experiment: training capped
to a few steps on short texts, in fp32 on the CPU (light: runs while Snakemake parses)."""

from __future__ import annotations

from trimbench.checks import deepest_cut_off
from trimbench.dense.variants import RETRIEVAL_TRACKS
from trimbench.face import shared_by_devices


def smoke_experiment(exp: dict, settings: dict) -> None:
    """The experiment cut to its smoke stand-ins, in place (``settings``: the config's smoke_settings)."""
    train = exp["train"]
    train["max_steps"] = settings["max_steps"]
    train["max_samples"] = min(train["max_samples"] or settings["max_samples"], settings["max_samples"])
    train["batch_size"] = min(train["batch_size"], settings["batch_size"])
    train["gradient_accumulation"] = 1
    train["max_seq_length"] = min(train["max_seq_length"], settings["max_seq_length"])
    train["warmup_steps"] = min(train["warmup_steps"], 1)
    train["logging_steps"] = 1
    # fp16 needs a GPU; the CPU stand-in runs the same trainer in fp32.
    train["precision"] = "fp32"
    train["precision_by_method"] = {}
    exp["evaluation"]["max_seq_length"] = settings["max_seq_length"]
    # And encodes in fp32: bf16 autocast on a CPU without bf16 units runs about 8x slower (a 12 x 768
    # BERT, 16 texts of 128 tokens, one thread: 4.6 s fp32, 36 s bf16); tests/test_encoding.py holds
    # the bf16 path.
    exp["evaluation"]["precision"] = "fp32"
    if exp["track"] in RETRIEVAL_TRACKS:  # short texts, small groups, few hits
        retrieval = exp["retrieval"]
        retrieval["group_size"] = min(retrieval["group_size"], 2)
        train["batch_size"] = min(train["batch_size"], 4)
        train["gradient_checkpointing"] = False
        for key in ("q_max_length", "p_max_length"):
            retrieval[key] = min(retrieval[key] or settings["max_seq_length"], settings["max_seq_length"])
        # never below a metric's cut-off (trimbench.checks.check_search_depth)
        retrieval["top_k"] = min(retrieval["top_k"], max(100, deepest_cut_off(exp["evaluation"]["metrics"])))
        retrieval["negatives"]["depth"] = min(retrieval["negatives"]["depth"], 20)
    shared_by_devices(train)
