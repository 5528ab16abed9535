"""trimbench.cost.step.step_cost at the depths the presets' models have: every model of more than two
blocks is counted on its one- and two-block models and extended to its depth, so the extension is held
here to a full count and to a hand count of a bert-base-shaped encoder (12 x 768, 110 M parameters).

FakeTensorMode's time does not grow with the shapes (tests/cost/test_step.py), so a bert-base-sized
step counts in seconds.
"""

from __future__ import annotations

import pytest

from trimbench.cost.architecture import Architecture
from trimbench.cost.step import Step, counted_steps, measure, step_cost

#: bert-base-uncased's shape (its config.json): what every 2DMSE preset trains
L = 12
BERT_BASE = Architecture("bert", num_hidden_layers=L, hidden_size=768, num_attention_heads=12,
                         intermediate_size=3072, vocab_size=30522, max_position_embeddings=512, source="hand-made")
#: the mutation review's hand-made 4-block BERT, 64 wide
FOUR_BLOCKS = Architecture("bert", num_hidden_layers=4, hidden_size=64, num_attention_heads=2, intermediate_size=256,
                           vocab_size=1000, max_position_embeddings=512, source="hand-made")


def encoder_forward_flops(arch: Architecture, layers: int, batch: int, length: int) -> int:
    """A BERT encoder's forward by hand: per token and block, Q, K, V and the output projection
    (4 d^2) and the feed-forward (2 d FF) as multiply-adds (2 FLOPs each), QK^T and attention x V
    (2 x 2 s d); the pooler's d^2 per sequence. The embedding lookups count nothing."""
    d, ff, tokens = arch.hidden_size, arch.intermediate_size, batch * length
    return 2 * tokens * layers * (4 * d * d + 2 * d * ff) + 4 * tokens * layers * length * d + 2 * batch * d * d


def test_a_deep_model_is_counted_on_one_and_two_blocks_and_extended_to_its_depth():
    step = Step(BERT_BASE, 256, 128, train=False)
    assert [each.layers for each in counted_steps(step)] == [1, 2]
    # the review's check (plan-2026-11-28.md, FLOPs): 5.7212 TFLOP, equal to the hand count; one
    # block too many would be 13/12 of the blocks' work
    assert step_cost(step, None).flops == encoder_forward_flops(BERT_BASE, L, 256, 128) == 5_721_198_428_160
    cut = Step(BERT_BASE, 256, 128, train=False, layers=6)
    assert step_cost(cut, None).flops == encoder_forward_flops(BERT_BASE, 6, 256, 128)


@pytest.mark.parametrize("train", [False, True])
def test_the_extension_equals_the_full_count_of_a_four_block_model(train):
    """A model of more depth than the two counted: the extension is the full model's own count (one
    block too many would be +25 % of the blocks' work here), its FLOPs, parameters and peak (a
    training keeps every block's activations; an encoding only its live block's, so past two blocks
    its peak grows by a block's weights)."""
    step = Step(FOUR_BLOCKS, 32, 64, train=train)
    extended, full = step_cost(step, None), measure(step)
    assert extended.flops == full.flops
    assert extended.parameter_bytes == full.parameter_bytes
    assert extended.peak_bytes == pytest.approx(full.peak_bytes, rel=0.01)
    if not train:
        assert extended.flops == encoder_forward_flops(FOUR_BLOCKS, 4, 32, 64) == 939_786_240
