"""Cached artifacts that cannot be used: one error naming the file and the rule that makes it.

A truncated array or a model folder with a damaged file otherwise fails deep inside numpy,
safetensors or transformers; :func:`trimbench.jobs.run.run` logs an :class:`ArtifactError` as its one
message, without that stack trace.
"""

from __future__ import annotations

import contextlib
from pathlib import Path, PurePath

from trimbench.errors import ArtifactError

#: where a run's outputs go: a smoke run (``smoke: true``) has a root of its own, so that its tiny
#: random models and stand-in numbers never replace a real run's files, scoreboard or report
RESULTS_ROOT, SMOKE_RESULTS_ROOT = "results", "results-smoke"


def results_root(config: dict) -> str:
    """The folder every output of a run of ``config`` lies under (rules/common.smk's ``RESULTS``)."""
    return SMOKE_RESULTS_ROOT if config["smoke"] else RESULTS_ROOT


# The outputs of rules/*.smk (the layout in the README) and the rules that write them, matched
# from the right, so that absolute paths and --directory work too; under results/ or a smoke run's
# results-smoke/ (trimbench.config.prepare.results_root). Held against the DAG by
# tests/workflow/test_producers.py: every output a later job reads is here, named by its rule.
PRODUCERS = (
    # before results*/data/*/*.parquet, which would match the converted scores too
    ("results*/data/msmarco-hard-negatives/ce-scores.parquet", "convert_ce_scores"),
    ("results*/data/msmarco-hard-negatives/*.gz", "fetch_hard_negatives"),
    ("results*/models/*", "fetch_model"),
    ("results*/data/*/*.parquet", "prepare_data"),
    ("results*/data/*/beir-*", "prepare_retrieval"),
    ("results*/negatives/*/*/*.jsonl", "mine_negatives"),
    ("results*/bm25/*/*/*", "bm25_index"),
    # An experiment's outputs: results/<track>/<experiment>/... (rules/<track family>.smk); the
    # rules that serve one track first, those that serve several after them.
    ("results*/2dmse-retrieval/*/models/*", "train_retriever"),
    ("results*/splade/*/models/*", "train_splade"),
    ("results*/*/*/models/*", "train_model"),
    ("results*/2dmse-sts/*/embeddings/*", "encode_texts"),
    ("results*/*/*/embeddings/*", "encode_corpus"),
    ("results*/2dmse-sts/*/scores/*.parquet", "evaluate_sts"),
    ("results*/splade/*/scores/*.parquet", "splade_scores or splade_ensemble"),
    ("results*/*/*/scores/*.parquet", "retrieval_scores"),
    ("results*/*/*/bm25/*", "bm25_scores"),
    ("results*/*/*/exported/*/L*_d*", "export_model"),
    ("results*/electra/*/adapted/*", "adapt_domain"),
    ("results*/electra/*/pretuned/*/L*", "pretune_word_similarity"),
    ("results*/electra/*/fine-tunings/*/*/scores.parquet", "train_electra"),
    ("results*/electra/*/fine-tunings/*/*/history.json", "train_electra"),
    ("results*/splade/*/triplets/*.parquet", "splade_triplets"),
    ("results*/splade/*/vectors/*", "encode_sparse"),
    ("results*/splade/*/indexes/*", "index_sparse"),
    ("results*/electra/*/fine-tunings/*", "train_electra"),
    ("results*/profile/*/*/*.csv", "profile_model"),
    ("results*/profile/*/*/scores.parquet", "profile_model"),
    ("results*/splade/*/runs/*", "splade_scores or splade_ensemble"),
    ("results*/*/*/runs/*", "retrieval_scores"),
    # the views across experiments and tracks read each experiment's scores and the headline figure
    ("results*/*/*/scores.parquet", "collect_scores"),
    ("results*/scoreboard/pareto/*", "scoreboard_pareto"),
)



def producer(path: str | Path) -> tuple[str, Path] | None:
    """The rule that writes ``path`` and the output ``path`` is (or is inside); None if no rule does."""
    path = Path(path)
    for candidate in (path, *path.parents):
        for pattern, rule in PRODUCERS:
            if PurePath(candidate).match(pattern):
                return rule, candidate
    return None


def describe(path: str | Path) -> str:
    """Where ``path`` comes from and how to rebuild it, for error messages."""
    made = producer(path)
    if made is None:
        return "made by no rule: it is named in the config; check or replace it"
    rule, output = made
    return f"made by rule {rule}; delete '{output}' and re-run snakemake to rebuild it"


@contextlib.contextmanager
def reading(path: str | Path):
    """Turn a failure to read the artifact ``path`` into one :class:`ArtifactError`."""
    try:
        yield
    except (ArtifactError, MemoryError):
        raise
    except Exception as exc:
        raise ArtifactError(f"cannot read '{path}' ({describe(path)}): {type(exc).__name__}: {exc}") from exc
