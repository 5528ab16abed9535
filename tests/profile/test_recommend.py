"""The recommended cut and the Pareto fronts on hand-made profiles whose answer is known."""

from __future__ import annotations

import pandas as pd
import pytest

from trimbench.errors import ConfigError
from trimbench.profile.recommend import check_tolerances, family_front, model_card, recommend


def _cells(values: dict, seconds: dict, width: int = 8) -> pd.DataFrame:
    """values: (dataset, layer, dim, precision) -> value; seconds: layer -> encode seconds per text."""
    bytes_of = {"float32": 4, "int8": 1}
    return pd.DataFrame([{"model": "m", "dataset": dataset, "layer": layer, "dim": dim, "precision": precision,
                          "value": value, "encode_seconds": seconds[layer], "bytes": dim * bytes_of[precision]}
                         for (dataset, layer, dim, precision), value in values.items()])


VALUES = {
    # full model: 0.80 on a, 0.50 on b
    ("a", 2, 8, "float32"): 0.80, ("b", 2, 8, "float32"): 0.50,
    ("a", 2, 4, "float32"): 0.795, ("b", 2, 4, "float32"): 0.497,   # within 1 % on both
    ("a", 2, 8, "int8"): 0.799, ("b", 2, 8, "int8"): 0.4995,         # within 1 %, 8 bytes
    ("a", 1, 8, "float32"): 0.79, ("b", 1, 8, "float32"): 0.47,     # 1.25 % and 6 % lost: b decides
    ("a", 1, 4, "float32"): 0.78, ("b", 1, 4, "float32"): 0.485,    # 2.5 % and 3 % lost
}
SECONDS = {1: 0.5, 2: 1.0}


def test_the_cheapest_cell_within_each_tolerance_on_every_dataset():
    picks = recommend(_cells(VALUES, SECONDS), [0.01, 0.03, 0.05, 0.07]).set_index("tolerance")
    # 1 %: only layer 2 qualifies; of its cells the int8 (8 bytes) beats d4 float32 (16 bytes)
    assert picks.loc[0.01, ["layer", "dim", "precision"]].tolist() == [2, 8, "int8"]
    assert picks.loc[0.01, "size_ratio"] == pytest.approx(32 / 8) and picks.loc[0.01, "speedup"] == 1
    # 3 %: layer 1 at d4 loses 3 % on b (its worst), within; layer 1 d8 loses 6 % on b, not
    assert picks.loc[0.03, ["layer", "dim", "precision"]].tolist() == [1, 4, "float32"]
    assert picks.loc[0.03, "speedup"] == pytest.approx(2.0)
    assert picks.loc[0.03, "worst_relative"] == pytest.approx(0.485 / 0.5)
    # 7 %: both layer-1 cells qualify; the fewer bytes win
    assert picks.loc[0.07, ["layer", "dim"]].tolist() == [1, 4]


def test_the_full_model_is_the_answer_when_nothing_else_is_within():
    values = {key: (value if key[1:] == (2, 8, "float32") else value * 0.5) for key, value in VALUES.items()}
    pick = recommend(_cells(values, SECONDS), [0.01]).iloc[0]
    assert (pick["layer"], pick["dim"], pick["precision"]) == (2, 8, "float32")
    assert pick["speedup"] == 1 and pick["size_ratio"] == 1


def test_a_cell_missing_on_one_dataset_is_never_recommended():
    values = {key: value for key, value in VALUES.items() if key != ("b", 1, 4, "float32")}
    pick = recommend(_cells(values, SECONDS), [0.05]).iloc[0]
    assert (pick["layer"], pick["dim"]) != (1, 4)


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.01, "0.01", True])
def test_a_tolerance_outside_zero_one_is_named_with_its_key(bad):
    with pytest.raises(ConfigError, match=rf"experiments\.p\.tolerances: tolerance {bad!r} is outside \(0, 1\)"):
        check_tolerances([0.01, bad], "experiments.p.tolerances")


def test_no_tolerance_at_all_is_refused():
    with pytest.raises(ConfigError, match="experiments.p.tolerances: give at least one"):
        check_tolerances([], "experiments.p.tolerances")


def test_the_front_of_each_model_against_encode_time_and_bytes():
    cells = _cells(VALUES, SECONDS)
    by_time = family_front(cells, "encode_seconds").set_index(["layer", "dim", "precision"])
    # mean values: L2d8f .65, L2d4f .646, L2d8i .64925, L1d8f .63, L1d4f .6325
    assert by_time["on_front"].to_dict() == {(1, 4, "float32"): True, (1, 8, "float32"): False,
                                             (2, 4, "float32"): False, (2, 8, "float32"): True,
                                             (2, 8, "int8"): False}
    by_bytes = family_front(cells, "bytes").set_index(["layer", "dim", "precision"])
    assert by_bytes["on_front"].to_dict() == {(1, 4, "float32"): False, (1, 8, "float32"): False,
                                              (2, 4, "float32"): False, (2, 8, "float32"): True,
                                              (2, 8, "int8"): True}


def test_the_model_card_states_the_cut_and_the_full_models_measures():
    pick = recommend(_cells(VALUES, SECONDS), [0.03]).iloc[0]
    per_dataset = pd.DataFrame({"dataset": ["a", "b"], "metric": ["ndcg@10", "spearman_cosine"],
                                "cut": [0.78, 0.485], "full": [0.80, 0.50]})
    card = model_card("m-L1-d4", "org/m", pick, per_dataset)
    assert "org/m cut to 1 layers, 4 dims, float32" in card and "within 3% of the full" in card
    assert "| b | spearman_cosine | 0.4850 | 0.5000 | 97.0% |" in card
    assert "| encode time per text (s) | 0.5 | 1 | 2.00× faster |" in card
    assert "| bytes per embedding | 16 | 32 | 2.0× smaller |" in card


def test_a_full_model_scoring_zero_gives_no_ratio_and_no_division_by_zero():
    """A random stand-in (smoke mode) can score nDCG 0: a cell as good counts as keeping it, a card says "–"."""
    values = {key: (0.0 if key[0] == "b" else value) for key, value in VALUES.items()}
    pick = recommend(_cells(values, SECONDS), [0.01]).iloc[0]
    assert (pick["layer"], pick["dim"], pick["precision"]) == (2, 8, "int8")
    per_dataset = pd.DataFrame({"dataset": ["b"], "metric": ["ndcg@10"], "cut": [0.0], "full": [0.0]})
    assert "| b | ndcg@10 | 0.0000 | 0.0000 | – |" in model_card("m", "org/m", pick, per_dataset)
