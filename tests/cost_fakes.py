"""A hand-made trimbench.cost.work.CostContext for the tracks' cost tests: row counts, lengths and
parameters from small tables the test writes, every padded-length question recorded."""

from __future__ import annotations

from trimbench.config.schema import validate_schema
from trimbench.cost.work import CostContext, Count

#: the fake's parameters: embeddings, each block, an MLM head's transform and bias
EMBEDDING_PARAMETERS, BLOCK_PARAMETERS, MLM_HEAD_PARAMETERS = 1_000_000, 100_000, 50_000


class TableContext(CostContext):
    """``rows``/``queries``: {(dataset, split): n}, ``corpora``: {dataset or (dataset, split): n} (a missing entry is
    unknown); ``base_lengths``: {column: tokens}, padded to ``base + batch`` tokens (at most the
    max length), so a test can tell which batch a phase was padded at; ``depths``: {model: layers}."""

    def __init__(self, datasets: dict, models: dict, rows=None, queries=None, corpora=None, base_lengths=None,
                 depths=None, max_lengths=None):
        self.datasets, self.models = datasets, models
        self._rows, self._queries, self._corpora = rows or {}, queries or {}, corpora or {}
        self.base_lengths, self.depths, self.max_lengths = base_lengths or {}, depths or {}, max_lengths or {}
        self.padded = []  # every padded_length question: (dataset, split, column, model, max_length, batch)

    @staticmethod
    def _count(table: dict, key, what: str) -> Count:
        return Count(table[key], f"table {what}") if key in table else Count(None, f"no count of {what}")

    def rows(self, dataset, split):
        return self._count(self._rows, (dataset, split), f"{dataset} {split}")

    def queries(self, dataset, split):
        return self._count(self._queries, (dataset, split), f"{dataset} {split} queries")

    def corpus(self, dataset, split):
        """A split's own corpus where the table has one (``(dataset, split): n``), else the dataset's."""
        key = (dataset, split) if (dataset, split) in self._corpora else dataset
        return self._count(self._corpora, key, f"{dataset} corpus")

    def padded_length(self, dataset, split, column, model, max_length, batch):
        self.padded.append((dataset, split, column, model, max_length, batch))
        return min(max_length, self.base_lengths[column] + batch), f"fake {column} at batch {batch}"

    def layers(self, model):
        return self.depths[model]

    def hidden(self, model):
        return 32

    def max_length(self, model):
        return self.max_lengths[model]

    def parameters(self, model, layers=None, head="encoder"):
        blocks = self.depths[model] if layers is None else layers
        return EMBEDDING_PARAMETERS + blocks * BLOCK_PARAMETERS + (MLM_HEAD_PARAMETERS if head == "mlm" else 0)


def shapes(phase) -> list[tuple]:
    """(batch, length, max_length) of each forward of a phase's step."""
    return [(forward.batch, forward.length, forward.max_length) for forward in phase.forwards]


def experiment(config: dict, name: str) -> dict:
    """An experiment of ``config`` with the schema's defaults filled, as the rules see it (the keys
    prepare adds are the test's to set)."""
    return validate_schema(config)["experiments"][name]
