"""What a track's cost may ask (trimbench.cost.work.CostContext), answered from a prepared config:
row counts (trimbench.data.sizes), token lengths (trimbench.cost.lengths) and model facts
(trimbench.cost.architecture)."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

from trimbench.cost.architecture import Architecture, architecture
from trimbench.cost.lengths import padded_length, text_lengths
from trimbench.cost.work import CostContext, Count
from trimbench.data import sizes
from trimbench.models import position_limit


class PlanContext(CostContext):
    def __init__(self, config: dict, workdir: Path, cache_dir: Path | None = None):
        self.config = config
        self.cache_dir = cache_dir
        self.datasets = config["datasets"]
        self.models = config["models"]
        self.workdir = Path(workdir)
        #: each (dataset, split, column) -> where its length came from: the plan's per-dataset record
        self.length_sources: dict[tuple, str] = {}

    def rows(self, dataset: str, split: str) -> Count:
        return sizes.split_rows(dataset, self.datasets[dataset], split, self.workdir)

    def corpus(self, dataset: str) -> Count:
        return sizes.corpus_rows(dataset, self.datasets[dataset], self.workdir)

    def queries(self, dataset: str, split: str) -> Count:
        return sizes.query_rows(dataset, self.datasets[dataset], split, self.workdir)

    def padded_length(self, dataset: str, split: str, column: str, model: str, max_length: int,
                      batch: int) -> tuple[int, str]:
        max_length = min(max_length, self.max_length(model))
        length, source = _padded_length(self, dataset, split, column, model, max_length, batch)
        self.length_sources[(dataset, split, column)] = source
        return length, source

    def architecture(self, model: str) -> Architecture:
        return _architecture(self, model)

    def layers(self, model: str) -> int:
        return self.architecture(model).num_hidden_layers

    def hidden(self, model: str) -> int:
        return self.architecture(model).hidden_size

    def max_length(self, model: str) -> int:
        arch = self.architecture(model)
        limit = position_limit({"model_type": arch.model_type, "max_position_embeddings": arch.max_position_embeddings,
                                **arch.extra})
        return limit[0] if limit else arch.max_position_embeddings

    def parameters(self, model: str, layers: int | None = None, head: str = "encoder") -> int:
        return _parameters(self, model, layers, head)

    def __hash__(self) -> int:
        return id(self)


@cache
def _architecture(context: PlanContext, model: str) -> Architecture:
    entry = context.models[model]
    facts = entry.get("architecture_facts") or {}
    if entry["source"] == "tiny" and "vocab_size" not in facts:
        # a tiny model's vocabulary is the registry model's it is built with (trimbench.models.build_tiny_model)
        vocabulary = _architecture(context, entry["vocab_from"]).vocab_size
        entry = {**entry, "architecture_facts": {**facts, "vocab_size": vocabulary}}
    return architecture(model, entry, context.workdir)


@cache
def _parameters(context: PlanContext, model: str, layers: int | None, head: str) -> int:
    """Parameters of the model as saved, from the counted parameter bytes (fp32: 4 a parameter) of a
    one-token forward, extended from one and two blocks to the depth (trimbench.plan.price.step_cost)."""
    from trimbench.cost.step import Step, step_cost

    step = Step(context.architecture(model), 1, 1, train=False, layers=layers, head=head)
    return step_cost(step, context.cache_dir).parameter_bytes // 4


@cache
def _lengths(context: PlanContext, dataset: str, split: str, column: str, model: str, max_length: int):
    from trimbench.jobs.artifacts import results_root

    return text_lengths(dataset, context.datasets[dataset], split, column, max_length, model=model,
                        model_entry=context.models.get(model), workdir=context.workdir,
                        results=results_root(context.config), registry=context.models)


def _padded_length(context: PlanContext, dataset: str, split: str, column: str, model: str, max_length: int,
                   batch: int) -> tuple[int, str]:
    """The expected padded length of a batch of ``batch`` texts, from the texts' lengths measured on a
    copy here, else recorded in the dataset's contract, else the maximum length as an upper bound
    (trimbench.cost.lengths, which says which)."""
    lengths = _lengths(context, dataset, split, column, model, max_length)
    return max(1, math.ceil(padded_length(lengths, batch))), lengths.source
