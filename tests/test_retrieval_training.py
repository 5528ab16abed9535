"""2DMSE retrieval training: the loss terms, their weights, the ablation flags and their config checks."""

from __future__ import annotations

import copy
import math

import pandas as pd
import pytest
import torch
from conftest import REPO

from trimbench.beir import RetrievalSplit
from trimbench.config import ConfigError, load_file, prepare, variants
from trimbench.retrieval import GroupedContrastiveLoss, layer_weight, training_groups, truncate_features

SETTINGS = {"q_max_length": 16, "p_max_length": 32, "scale": 1.0, "score_align": False,
            "compare_to_last_layer": False, "sub_layer_full_dim": False, "passage_to_last_layer": False,
            "kl_temperature": 1.0}
TEXTS = [["what is a falcon", "how do rivers form", "copper wire uses"],
         ["a falcon is a bird of prey", "rivers form from rain", "copper conducts electricity"],
         ["engines burn fuel", "violins have strings", "gardens need water"]]


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    from trimbench.models import load_sentence_model

    return load_sentence_model(tiny_bert_dir, pooling="cls")


def _features(model):
    return [model.tokenize(column) for column in TEXTS]


def _ce(model, features, layer, dim, passage_layer=None):
    from trimbench.encoding import hidden_states_kept, pool_layer

    def embed(f, at):
        with hidden_states_kept(model[0]):
            out = model[0](dict(f))
        return pool_layer(list(model)[1:], out, at)

    q = embed(truncate_features(features[0], 16, model.tokenizer.sep_token_id), layer)
    p = torch.stack([embed(f, passage_layer or layer) for f in features[1:]], 1).flatten(0, 1)
    scores = q[:, :dim] @ p[:, :dim].T
    return torch.nn.functional.cross_entropy(scores, torch.arange(3) * 2)


def test_layer_weights():
    assert layer_weight(1) == 1.0
    assert layer_weight(3) == pytest.approx(1 / (1 + math.log(3)))


def test_full_equals_mnrl_with_hard_negatives_at_scale_one(tiny):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.util import dot_score

    torch.manual_seed(0)
    ours = GroupedContrastiveLoss(tiny, "full", [16], SETTINGS)(_features(tiny), None)
    mnrl = MultipleNegativesRankingLoss(tiny, scale=1.0, similarity_fct=dot_score)(_features(tiny), None)
    assert ours.item() == pytest.approx(mnrl.item(), rel=1e-5)


def test_2dmse_is_the_weighted_sum_of_its_terms(tiny):
    features = _features(tiny)
    got = GroupedContrastiveLoss(tiny, "2dmse", [16, 8], SETTINGS)(features, None).item()
    want = _ce(tiny, features, 3, 32)
    for dim in (16, 8):
        want = want + _ce(tiny, features, 3, dim)
        for layer in (1, 2):
            want = want + layer_weight(layer) * _ce(tiny, features, layer, dim)
    assert got == pytest.approx(want.item(), rel=1e-5)
    # sub_layer_full_dim adds w_l CE(l, full); fixed-doc takes passages from the last layer
    flags = {**SETTINGS, "sub_layer_full_dim": True}
    extra = sum(layer_weight(layer) * _ce(tiny, features, layer, 32) for layer in (1, 2))
    got = GroupedContrastiveLoss(tiny, "2dmse", [16, 8], flags)(features, None).item()
    assert got == pytest.approx((want + extra).item(), rel=1e-5)
    fixed = {**SETTINGS, "passage_to_last_layer": True}
    got = GroupedContrastiveLoss(tiny, "matryoshka", [8], fixed)(features, None).item()
    assert got == pytest.approx((_ce(tiny, features, 3, 32) + _ce(tiny, features, 3, 8)).item(), rel=1e-5)
    got = GroupedContrastiveLoss(tiny, "2dmse", [8], fixed)(features, None).item()
    fixed_want = _ce(tiny, features, 3, 32) + _ce(tiny, features, 3, 8)
    fixed_want = fixed_want + sum(layer_weight(k) * _ce(tiny, features, k, 8, passage_layer=3) for k in (1, 2))
    assert got == pytest.approx(fixed_want.item(), rel=1e-5)


def test_score_align_adds_a_nonnegative_term_and_trains(tiny):
    features = _features(tiny)
    plain = GroupedContrastiveLoss(tiny, "2dmse", [8], SETTINGS)(features, None)
    aligned = GroupedContrastiveLoss(tiny, "2dmse", [8], {**SETTINGS, "score_align": True})(features, None)
    last = GroupedContrastiveLoss(tiny, "2dmse", [8], {**SETTINGS, "score_align": True,
                                                       "compare_to_last_layer": True})(features, None)
    assert aligned.item() > plain.item() and last.item() > plain.item() and aligned.item() != last.item()
    aligned.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in tiny.parameters())
    tiny.zero_grad()


def test_query_truncation_keeps_sep_last(tiny):
    features = tiny.tokenize(["one two three four five six seven eight nine ten eleven twelve", "short"])
    cut = truncate_features(features, 6, tiny.tokenizer.sep_token_id)
    assert cut["input_ids"].shape[1] == 6
    assert cut["input_ids"][0, -1].item() == tiny.tokenizer.sep_token_id
    assert cut["input_ids"][1].tolist() == features["input_ids"][1, :6].tolist()


def test_training_groups_exclude_positives_and_fill_the_group():
    corpus = pd.DataFrame({"doc_id": ["a", "b", "c"], "title": "", "text": ["A", "B", "C"]})
    split = RetrievalSplit(corpus, pd.DataFrame({"query_id": ["q"], "text": ["Q"]}),
                           pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]}))
    mined = [{"query_id": "q", "positives": ["a"], "negatives": [{"doc_id": "c", "score": 1.0}]}]
    frame = training_groups(split, mined, group_size=4, seed=0)
    assert list(frame.columns) == ["query", "positive", "negative_1", "negative_2", "negative_3"]
    assert frame.iloc[0].tolist() == ["Q", "A", "C", "C", "C"]


def _config():
    return copy.deepcopy(load_file(REPO / "config.yaml", workdir=REPO))


def _raw():
    import yaml

    return yaml.safe_load((REPO / "config.yaml").read_text())


def test_ablation_flags_are_checked_at_parse_time():
    raw = _raw()
    raw["experiments"]["retrieval"]["retrieval"]["compare_to_last_layer"] = True
    with pytest.raises(ConfigError, match="retrieval.compare_to_last_layer: needs retrieval.score_align"):
        prepare(raw, REPO)
    raw = _raw()
    raw["experiments"]["retrieval"]["retrieval"]["target_dims"] = [512]
    with pytest.raises(ConfigError, match="retrieval.target_dims: dim 512 is larger"):
        prepare(raw, REPO)
    raw = _raw()
    raw["experiments"]["retrieval"]["evaluation"]["metrics"] = ["spearman_cosine"]
    raw["experiments"]["retrieval"]["evaluation"]["main_metric"] = "spearman_cosine"
    with pytest.raises(ConfigError, match="not retrieval metrics"):
        prepare(raw, REPO)
    raw = _raw()
    raw["experiments"]["retrieval"]["evaluation"]["datasets"] = ["lee-sim"]
    with pytest.raises(ConfigError, match="needs kind 'retrieval'"):
        prepare(raw, REPO)


def test_retrieval_bert_s_is_one_model_per_cell():
    raw = _raw()
    exp = raw["experiments"]["retrieval"]
    exp["methods"] = ["full", "separate"]
    exp["grid"] = {"layers": [2, 6], "dims": [384, 32]}
    exp["retrieval"]["separate_cells"] = [[2, 32], [6, 384]]
    config = prepare(raw, REPO)["experiments"]["retrieval"]
    found = {v.name: (v.cut_layers, v.cut_dim, v.model_variant) for v in variants(config, config["_depth"])}
    assert found == {"full": (None, None, "full"), "separate-L2-d32": (2, 32, "separate-L2-d32"),
                     "separate-L6-d384": (6, 384, "full")}
    exp["retrieval"]["separate_cells"] = [[3, 32]]
    with pytest.raises(ConfigError, match="separate_cells: \\[3, 32\\] is not a"):
        prepare(raw, REPO)


def test_ablation_groups_are_found_from_the_preset():
    from trimbench.ablations import ablation_groups, label

    config = load_file(REPO / "configs" / "2dmse-retrieval-ablations.yaml", {"smoke": True}, REPO)
    toy = load_file(REPO / "config.yaml", workdir=REPO)["experiments"]["retrieval"]
    groups = ablation_groups(config["experiments"])
    # The toy experiment of another model and grid joins no group when the configs are combined.
    assert ablation_groups({**config["experiments"], "retrieval": toy}) == groups
    # members in the validated config's (sorted) order
    assert groups == {
        "loss": ["ablation-base", "ablation-align-last", "ablation-score-align", "ablation-sub-full"],
        "dims": ["ablation-base", "ablation-dims-2", "ablation-dims-4", "ablation-dims-6"],
        "doc": ["ablation-base", "ablation-fixed-doc"],
    }
    assert label(config["experiments"]["ablation-align-last"]) == "2DMSE +align to (L, full) dims 128"
