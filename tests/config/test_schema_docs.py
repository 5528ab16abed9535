"""The per-key configuration reference (docs/configuration-reference.md) is the generator's output
for the schema as it is, and every key of the schema says what it is for."""

from __future__ import annotations

import copy

from conftest import REPO

from trimbench.config import schema_docs

COMMITTED = REPO / "docs" / "configuration-reference.md"


def test_the_committed_reference_is_current():
    generated = schema_docs.reference(schema_docs.load_schema())
    assert COMMITTED.read_text(encoding="utf-8") == generated, (
        "docs/configuration-reference.md is stale: the schema changed. Regenerate it with `make docs`.")


def test_every_key_of_the_schema_has_a_description():
    assert schema_docs.undescribed(schema_docs.load_schema()) == []


def test_the_reference_lists_every_key_with_its_default_and_values():
    text = COMMITTED.read_text(encoding="utf-8")
    # keys at every depth, reached through $defs, items, additionalProperties and the track routing
    for path, shown in [
        ("`smoke`", "`false`"),
        ("`datasets.<name>.holdout.size`", "number, required"),
        ("`models.<name>.architecture`", "`bert`, `electra`, `distilbert`, `deberta`"),
        ("`experiments.<name>.train.angle.ibn_w`", "`30.0`"),
        ("`experiments.<name>.retrieval.negatives.miner`", "`bm25`, `dense`, `dataset`"),
        ("`experiments.<name>.domain_adaptation.schedule`", "`batches`"),
        ("`experiments.<name>.variants.<name>.lambda_q`", "number, required"),
        ("`experiments.<name>.ensembles.<name>.variants`", "≥ 2 items"),
        ("`experiments.<name>.train.hard_negatives.ce_margin`", "`3.0`"),
    ]:
        (row,) = [line for line in text.splitlines() if line.startswith(f"| {path} |")]
        assert shown in row, (path, row)


def test_a_key_without_description_is_found_at_its_path():
    schema = copy.deepcopy(schema_docs.load_schema())
    del schema["$defs"]["negatives"]["properties"]["keep"]["description"]
    assert schema_docs.undescribed(schema) == ["experiments.<name>.retrieval.negatives.keep",
                                               "experiments.<name>.train.negatives.keep"]


def test_a_changed_schema_changes_the_reference():
    schema = copy.deepcopy(schema_docs.load_schema())
    schema["$defs"]["train"]["properties"]["lr"]["default"] = 1.0e-3
    assert schema_docs.reference(schema) != COMMITTED.read_text(encoding="utf-8")
