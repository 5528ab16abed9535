"""What a track's cost may ask (trimbench.cost.work.CostContext), answered from a prepared config:
row counts (trimbench.data.sizes), token lengths (trimbench.cost.lengths) and model facts
(trimbench.cost.architecture)."""

from __future__ import annotations

import math
from pathlib import Path

from trimbench.cost.architecture import Architecture, architecture
from trimbench.cost.lengths import padded_length, text_lengths
from trimbench.cost.step import Step, step_cost
from trimbench.cost.work import CostContext, Count
from trimbench.data import sizes
from trimbench.jobs.artifacts import results_root
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
        #: each lengths source -> the longest text it records (after truncation): a phase's longest batch
        #: (trimbench.plan.price.longest_length)
        self.longest: dict[str, int] = {}
        # what many jobs of a run ask again, answered once a run
        self._architectures: dict[str, Architecture] = {}
        self._parameters: dict[tuple, int] = {}
        self._lengths: dict[tuple, object] = {}
        #: each job's work, as trimbench.plan.price.job_work asked its track
        self.works: dict[tuple, object] = {}

    def rows(self, dataset: str, split: str) -> Count:
        return sizes.split_rows(dataset, self.datasets[dataset], split, self.workdir)

    def corpus(self, dataset: str, split: str) -> Count:
        return sizes.corpus_rows(dataset, self.datasets[dataset], self.workdir, split)

    def queries(self, dataset: str, split: str) -> Count:
        return sizes.query_rows(dataset, self.datasets[dataset], split, self.workdir)

    def padded_length(self, dataset: str, split: str, column: str, model: str, max_length: int,
                      batch: int) -> tuple[int, str]:
        """The expected padded length of a batch of ``batch`` texts, from the texts' lengths measured on
        a copy here, else recorded in the dataset's contract, else the maximum length as an upper
        bound (trimbench.cost.lengths, which says which)."""
        max_length = min(max_length, self.max_length(model))
        key = (dataset, split, column, model, max_length)
        if key not in self._lengths:
            self._lengths[key] = text_lengths(
                dataset, self.datasets[dataset], split, column, max_length, model=model,
                model_entry=self.models.get(model), workdir=self.workdir, results=results_root(self.config),
                registry=self.models)
        lengths = self._lengths[key]
        self.length_sources[(dataset, split, column)] = lengths.source
        self.longest[lengths.source] = max(self.longest.get(lengths.source, 0), lengths.max)
        return max(1, math.ceil(padded_length(lengths, batch))), lengths.source

    def architecture(self, model: str) -> Architecture:
        if model not in self._architectures:
            entry = self.models[model]
            facts = entry.get("architecture_facts") or {}
            if entry["source"] == "tiny" and "vocab_size" not in facts:
                # a tiny model's vocabulary is its vocab_from model's (trimbench.models.build_tiny_model)
                vocabulary = self.architecture(entry["vocab_from"]).vocab_size
                entry = {**entry, "architecture_facts": {**facts, "vocab_size": vocabulary}}
            self._architectures[model] = architecture(model, entry, self.workdir)
        return self._architectures[model]

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
        """Parameters of the model as saved: the counted parameter bytes (fp32: 4 a parameter) of a
        one-token forward, extended from one and two blocks to the depth (trimbench.cost.step.step_cost)."""
        key = (model, layers, head)
        if key not in self._parameters:
            step = Step(self.architecture(model), 1, 1, train=False, layers=layers, head=head)
            self._parameters[key] = step_cost(step, self.cache_dir).parameter_bytes // 4
        return self._parameters[key]
