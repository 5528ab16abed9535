"""SPLADE-max with FLOPS on two devices (two CPU ranks, gloo) is the one-device training of the
same global batch: in-batch negatives gathered, FLOPS over the whole batch (see
tests/dense/test_dense_ddp.py for the harness and for the run without gathering that differs)."""

import pytest
from conftest import ddp_training, relative_difference


def test_splade_max_on_two_ranks_trains_as_one_device(one_device, tiny_bert_dir, tmp_path):
    one_losses, one = one_device("splade")
    two_losses, two = ddp_training("splade", tiny_bert_dir, tmp_path / "two", ranks=2)
    assert two_losses[0] == pytest.approx(one_losses[0], rel=1e-5)
    # measured 5.8e-5 (the max-pooled log-saturated weights and FLOPS round more than the dense
    # losses' 1e-6); without gathering 0.42
    assert relative_difference(two, one) < 1e-3


def test_flops_of_one_rank_alone_differs(one_device, tiny_bert_dir, tmp_path):
    """Built as for one device (each rank's half-batch FLOPS and negatives): not the same training."""
    _, one = one_device("splade")
    _, alone = ddp_training("splade", tiny_bert_dir, tmp_path / "alone", ranks=2, built_for_devices=1)
    assert relative_difference(alone, one) > 1e-2
