"""The ELECTRA track (truncated encoders): parameter counts, Pareto fronts, layer choice, objectives, config."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from trimbench import scores
from trimbench.config import prepare as tb_config
from trimbench.electra import checks as electra_checks
from trimbench.electra import report as electra_report
from trimbench.errors import ConfigError
from trimbench.plots import pareto

REPO = Path(__file__).resolve().parents[2]


# --- parameter counting ------------------------------------------------------------------------


def bert_block_parameters(hidden: int, intermediate: int) -> int:
    """Q, K, V, output projections with biases, two LayerNorms, the feed-forward pair."""
    return 4 * (hidden * hidden + hidden) + 2 * 2 * hidden + (hidden * intermediate + intermediate) \
        + (intermediate * hidden + hidden)


@pytest.mark.parametrize("k", [0, 1, 3])
def test_parameters_used_is_embeddings_plus_first_k_blocks(tiny_bert_dir, k):
    from trimbench.electra.train import parameters_used
    from trimbench.models import cut_layers, encoder_layers, load_sentence_model

    model = cut_layers(load_sentence_model(tiny_bert_dir, pooling="mean"), k)
    bert = model[0].auto_model
    embeddings = sum(p.numel() for p in bert.embeddings.parameters())
    pooler = sum(p.numel() for p in bert.pooler.parameters())
    assert len(encoder_layers(bert)) == k
    assert parameters_used(model) == sum(p.numel() for p in model.parameters()) - pooler
    assert parameters_used(model) == embeddings + k * bert_block_parameters(32, 37)


def test_parameters_used_leaves_out_electras_embedding_projection(tmp_path, minilm_dir):
    """An ELECTRA whose embeddings are narrower than its blocks projects them up; the paper's
    count_params (embeddings + encoder.layer[:k]) leaves the projection out, so do we."""
    from transformers import BertTokenizerFast, ElectraConfig, ElectraModel

    from trimbench.electra.train import parameters_used
    from trimbench.models import cut_layers, load_sentence_model

    torch.manual_seed(0)
    config = ElectraConfig(vocab_size=1000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=40, max_position_embeddings=64)
    ElectraModel(config).save_pretrained(tmp_path)
    BertTokenizerFast.from_pretrained(str(minilm_dir)).save_pretrained(tmp_path)
    model = cut_layers(load_sentence_model(tmp_path, pooling="mean"), 1)
    electra = model[0].auto_model
    projection = sum(p.numel() for p in electra.embeddings_project.parameters())
    assert projection == 16 * 32 + 32
    expected = sum(p.numel() for p in electra.embeddings.parameters()) + bert_block_parameters(32, 40)
    assert parameters_used(model) == expected == sum(p.numel() for p in model.parameters()) - projection


def test_parameters_used_by_a_cut_deberta_are_its_embeddings_and_blocks(tiny_deberta_dir):
    """As count_params: embeddings + encoder.layer[:k]; the encoder's shared relative-position
    embeddings and their LayerNorm are left out (the paper's Pareto has no DeBERTa; the rule is its)."""
    from trimbench.electra.train import parameters_used
    from trimbench.models import cut_layers, encoder_layers, load_sentence_model

    model = cut_layers(load_sentence_model(tiny_deberta_dir, pooling="mean"), 2)
    deberta = model[0].auto_model
    relative = sum(p.numel() for p in deberta.encoder.rel_embeddings.parameters()) + 2 * 32
    assert relative == 512 * 32 + 2 * 32  # 256 buckets either side, then LayerNorm weight and bias
    blocks = sum(p.numel() for p in encoder_layers(deberta).parameters())
    assert parameters_used(model) == sum(p.numel() for p in deberta.embeddings.parameters()) + blocks
    assert parameters_used(model) == sum(p.numel() for p in model.parameters()) - relative


# --- Pareto front ------------------------------------------------------------------------------


def test_pareto_mask_on_hand_made_points():
    #         a    b    c    d    e     f    g
    cost = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 4.0]
    good = [0.5, 0.7, 0.6, 0.7, 0.9, 0.8, 0.9]
    # a: cheapest. b: beats a. c: same cost as b, worse. d: costlier than b, no better.
    # e, g: the same point twice, best quality: both on the front. f: dominated by e.
    assert pareto.pareto_mask(cost, good).tolist() == [True, True, False, False, True, False, True]


def test_pareto_mask_ignores_nan_and_handles_empty():
    assert pareto.pareto_mask([1, 2, np.nan], [np.nan, 0.5, 0.9]).tolist() == [False, True, False]
    assert pareto.pareto_mask([], []).tolist() == []


def test_pareto_front_sorted_cheapest_first():
    frame = pd.DataFrame({"parameters": [30, 10, 20, 40], "score": [0.8, 0.5, 0.4, 0.79]})
    front = pareto.pareto_front(frame, "parameters", "score")
    assert front["parameters"].tolist() == [10, 30]


# --- per-layer summaries and the layer dev chooses ---------------------------------------------


def hand_made_scores() -> pd.DataFrame:
    """Two models, layers 0..2, two seeds; dev picks layer 1 for 'disc' and ties 0/2 for 'gen'."""
    dev = {("disc", 0): [0.50, 0.52], ("disc", 1): [0.80, 0.78], ("disc", 2): [0.60, 0.62],
           ("gen", 0): [0.70, 0.70], ("gen", 1): [0.60, 0.62], ("gen", 2): [0.71, 0.69]}
    test = {("disc", 0): [0.40, 0.44], ("disc", 1): [0.75, 0.73], ("disc", 2): [0.65, 0.61],
            ("gen", 0): [0.66, 0.64], ("gen", 1): [0.55, 0.57], ("gen", 2): [0.80, 0.82]}
    rows = []
    for (model, layer), values in dev.items():
        for seed in (0, 1):
            meta = {"experiment": "x", "track": "electra", "variant": "cut", "model": model, "layer": layer,
                    "dim": 8, "dataset": "stsb", "seed": seed}
            rows += [{**meta, "split": "validation", "metric": "spearman_cosine", "value": values[seed]},
                     {**meta, "split": "test", "metric": "spearman_cosine", "value": test[(model, layer)][seed]},
                     {**meta, "split": "test", "metric": "pearson_cosine", "value": 0.0},
                     {**meta, "split": None, "metric": "parameters", "value": 1000.0 + 100 * layer}]
    return scores.frame(rows)


def test_per_layer_means_and_sample_sd():
    table = electra_report.per_layer(hand_made_scores(), {"stsb": "spearman_cosine"})
    row = table[(table["model"] == "disc") & (table["layer"] == 2)].iloc[0]
    assert row["dev_mean"] == pytest.approx(0.61) and row["test_mean"] == pytest.approx(0.63)
    assert row["test_sd"] == pytest.approx(np.std([0.65, 0.61], ddof=1))
    assert row["test_seeds"] == 2 and row["parameters"] == 1200
    assert len(table) == 6


def test_dev_choice_picks_best_mean_dev_layer_shallower_on_ties():
    choice = electra_report.dev_choice(electra_report.per_layer(hand_made_scores(), {"stsb": "spearman_cosine"}))
    by_model = choice.set_index("model")
    assert by_model.loc["disc", "chosen_layer"] == 1
    assert by_model.loc["disc", "test_mean"] == pytest.approx(0.74)
    assert by_model.loc["disc", "gain"] == pytest.approx(0.74 - 0.63)
    # gen: layers 0 and 2 both average 0.70 on dev: the shallower, cheaper one wins.
    assert by_model.loc["gen", "chosen_layer"] == 0
    assert by_model.loc["gen", "full_layer"] == 2 and by_model.loc["gen", "full_test_mean"] == pytest.approx(0.81)


def test_layer_table_joins_published_on_model_experiment_layer():
    from trimbench.electra.report import choice_table, layer_table, layer_tables

    published = pd.DataFrame({"model": ["disc", "disc", "gen", "disc"], "experiment": ["stsb", "stsb", "stsb", "other"],
                              "layer": [1, 2, 2, 1], "dataset": "stsb-test", "metric": "spearman_cosine",
                              "epoch": "dev-best", "value": [0.70, 0.60, 0.85, 0.10]})
    table = layer_table(hand_made_scores(), published, {"stsb": "stsb"}, {"stsb": "spearman_cosine"})
    row = table[(table["model"] == "disc") & (table["layer"] == 1)].iloc[0]
    assert row["published"] == 0.70 and row["delta"] == pytest.approx(0.04) and row["chosen"]
    assert table["published"].notna().sum() == 3
    choice = choice_table(table).set_index("model")
    assert choice.loc["disc", "published_chosen"] == 0.70 and choice.loc["disc", "published_full"] == 0.60
    assert choice.loc["disc", "parameter_share"] == pytest.approx(1100 / 1200)
    markdown = layer_tables(table)["markdown"]
    assert "**0.7400 ± 0.0141** (0.7000)" in markdown


def test_published_cells_meet_ours_of_their_own_epoch():
    """N4: the archive's last-epoch cells are set beside our last epoch's score, the final table's
    beside the dev-chosen epoch's; never one kind beside the other (tables, the dev-choice view)."""
    from trimbench.electra.report import choice_table, layer_table, layer_tables

    last_epoch = hand_made_scores().query("split == 'test' and metric == 'spearman_cosine'")
    with_last = scores.frame(pd.concat([hand_made_scores(), last_epoch.assign(split="test-last-epoch",
                                                                              value=last_epoch["value"] - 0.1)])
                             .to_dict("records"))
    published = pd.DataFrame({"model": ["disc", "disc", "gen"], "experiment": "stsb", "layer": [1, 2, 2],
                              "dataset": "stsb-test", "metric": "spearman_cosine",
                              "epoch": ["dev-best", "last", "last"], "value": [0.70, 0.52, 0.60]})
    table = layer_table(with_last, published, {"stsb": "stsb"}, {"stsb": "spearman_cosine"})
    cell = table.set_index(["model", "layer"])
    assert cell.loc[("disc", 1), "compared"] == pytest.approx(0.74)          # dev-chosen epoch
    assert cell.loc[("disc", 2), "compared"] == pytest.approx(0.63 - 0.1)    # last epoch
    assert cell.loc[("disc", 2), "delta"] == pytest.approx(0.01)
    assert cell.loc[("gen", 2), "delta"] == pytest.approx(0.11)
    assert cell.loc[("disc", 2), "last_seeds"] == 2
    markdown = layer_tables(table)["markdown"]
    assert "**0.7400 ± 0.0141** (0.7000)" in markdown
    assert "0.6300 ± 0.0283; last epoch 0.5300 ± 0.0283 (0.5200)" in markdown
    choice = choice_table(table).set_index("model")
    # disc: chosen layer 1 (the final table's kind) shown; full depth 2 is the archive's: not shown
    assert choice.loc["disc", "published_chosen"] == 0.70 and pd.isna(choice.loc["disc", "published_full"])
    # an experiment that keeps the last epoch has no score of the final table's kind
    kept_last = layer_table(with_last, published, {"stsb": "stsb"}, {"stsb": "spearman_cosine"}, select="last")
    assert pd.isna(kept_last.set_index(["model", "layer"]).loc[("disc", 1), "compared"])
    assert pd.isna(choice_table(kept_last).set_index("model").loc["disc", "published_chosen"])
    with pytest.raises(ValueError, match="column 'epoch' must be one of"):
        layer_table(with_last, published.drop(columns="epoch"), {"stsb": "stsb"}, {"stsb": "spearman_cosine"})


def test_layer_figure_legend_holds_the_star_titles_read_level_and_panels_fill_the_width(monkeypatch):
    """The probe: electra-toy's layers.png had the dev-chosen star outside the legend, its task label
    rotated at the right edge, and a third of its width empty (a legend as tall as the panels)."""
    from trimbench.electra import report

    kept = {}
    monkeypatch.setattr(report, "save", lambda figure, paths: kept.setdefault("figure", figure))
    scores = hand_made_scores()
    table = report.layer_table(scores, pd.DataFrame(columns=["model", "experiment", "layer", "dataset", "metric",
                                                             "value"]), {"stsb": "stsb"}, {"stsb": "spearman_cosine"})
    title = "electra-toy: Truncated all-MiniLM-L6-v2 at toy scale: cut at k = 0..6, fine-tuned on Lee similarity pairs"
    report.layer_figure(scores, table, {"disc": "discriminator", "gen": "generator"}, {"stsb": "spearman_cosine"},
                        title, {})
    figure = kept["figure"]
    (legend,) = figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    assert labels[-1] == "chosen by dev" and {"disc", "gen", "discriminator", "generator"} <= set(labels)
    assert legend.legend_handles[-1].get_paths()[0] is not None and \
        legend.legend_handles[-1].get_facecolor()[0][:3].tolist() == [0.0, 0.0, 0.0]  # the black star
    (ax,) = figure.axes
    assert ax.get_title() == "stsb · ours"
    assert all(text.get_rotation() == 0 for text in ax.texts)  # no margin title at the right edge
    renderer = figure.canvas.get_renderer()
    panels, key = ax.get_window_extent(renderer), legend.get_window_extent(renderer)
    drawn = figure.get_tightbbox(renderer).transformed(figure.dpi_scale_trans)
    assert key.y1 <= panels.y0  # under the panels, not beside them
    assert figure._suptitle.get_window_extent(renderer).y0 >= ax.title.get_window_extent(renderer).y1
    assert panels.width >= 0.75 * drawn.width  # the saved figure's width is the panels'


# --- objectives and their scores -----------------------------------------------------------------


def test_objective_follows_dataset_kind_and_labels():
    assert electra_checks.objective({"kind": "sts", "num_labels": 2}) == "cosine_mse"
    assert electra_checks.objective({"kind": "pair-class", "num_labels": 2}) == "cosine_bce"
    assert electra_checks.objective({"kind": "pair-class", "num_labels": 3}) == "softmax"


def test_binary_scores_use_the_threshold_given():
    from trimbench.electra.train import f1_threshold, threshold_scores

    cosines = np.array([0.9, 0.8, 0.4, 0.3, 0.2])
    labels = np.array([1, 1, 0, 1, 0])
    threshold = f1_threshold(cosines, labels)
    assert 0.2 < threshold <= 0.3  # taking all three positives beats precision 1 at recall 2/3
    assert threshold_scores(cosines, labels, threshold) == pytest.approx({"f1": 6 / 7, "accuracy": 0.8})
    assert threshold_scores(cosines, labels, 0.85) == pytest.approx({"f1": 0.5, "accuracy": 0.6})
    # A cosine equal to the threshold is not a paraphrase (evaluators.py:164-169 compares with >).
    assert threshold_scores(cosines, labels, 0.3) == pytest.approx({"f1": 2 / 3, "accuracy": 0.6})


def test_binary_threshold_is_chosen_on_validation_and_applied_to_test(monkeypatch):
    """The paper's protocol: the F1 threshold best on validation (between 0.6 and 0.2) is applied to
    test, where it misses a positive (F1 2/3); a threshold chosen on test would give it 1."""
    from types import SimpleNamespace

    from trimbench.electra import train

    monkeypatch.setattr(train, "cosines", lambda frame, model, batch_size: frame["cosine"].to_numpy())
    frames = {"validation": pd.DataFrame({"cosine": [0.9, 0.6, 0.2], "label": [1, 1, 0]}),
              "test": pd.DataFrame({"cosine": [0.5, 0.3, 0.35], "label": [1, 0, 1]})}
    rows = train.score_splits("cosine_bce", SimpleNamespace(model=None), frames, batch_size=2)
    f1 = {r["split"]: r["value"] for r in rows if r["metric"] == "f1"}
    assert f1 == pytest.approx({"validation": 1.0, "test": 2 / 3})


def test_macro_f1_counts_every_class():
    from trimbench.electra.train import class_scores

    predicted = np.array([0, 0, 1, 1, 2, 0])
    labels = np.array([0, 1, 1, 1, 2, 2])
    f1 = [0.5, 0.8, 2 / 3]  # 2 tp / (predicted + true): class 0: 2 / (3 + 1), 1: 4 / (2 + 3), 2: 2 / (1 + 2)
    assert class_scores(predicted, labels, 3) == pytest.approx({"macro_f1": np.mean(f1), "accuracy": 4 / 6})
    assert class_scores(np.array([0, 0]), np.array([0, 0]), 3)["macro_f1"] == pytest.approx(1 / 3)


def test_best_epoch_restores_the_best_weights_and_last_keeps_the_last():
    from trimbench.electra.train import BestEpoch

    class State:
        def __init__(self, epoch):
            self.epoch, self.global_step = epoch, epoch * 10

    for select, expected_weight, expected_epoch in (("best", 2.0, 2), ("last", 3.0, 3)):
        module = torch.nn.Linear(1, 1)
        callback = BestEpoch(module, "eval_dev_x", select)
        for epoch, value in ((1, 0.1), (2, 0.9), (3, 0.5)):
            torch.nn.init.constant_(module.weight, float(epoch))
            callback.on_evaluate(None, State(epoch), None, metrics={"eval_dev_x": value})
        callback.on_train_end(None, State(3), None)
        assert module.weight.item() == expected_weight and callback.best_epoch == expected_epoch
        # the last epoch's weights are kept for its own score (N4) when another epoch's were restored
        assert (None if callback.last_state is None else callback.last_state["weight"].item()) == (
            3.0 if select == "best" else None)
        assert [h["eval_dev_x"] for h in callback.history] == [0.1, 0.9, 0.5]


# --- configuration -----------------------------------------------------------------------------


@pytest.fixture
def tiny_config() -> dict:
    return yaml.safe_load((REPO / "tests" / "configs" / "tiny_electra.yaml").read_text())


def prepare(cfg):
    return tb_config.prepare(cfg, REPO)


def test_tiny_config_expands_into_runs(tiny_config):
    cfg = prepare(tiny_config)
    exp = cfg["experiments"]["tiny-cut"]
    assert exp["_depths"] == {"tiny-electra-discriminator": 3, "tiny-electra-generator": 2}
    assert exp["train"]["warmup_ratio"] == 0.1 and exp["train"]["select"] == "best"
    assert len(electra_checks.fine_tunings(exp)) == 2 * 2 * 2
    assert electra_checks.variant_name(cfg["experiments"]["tiny-stages"]) == "cut+dapt-mlm+wordsim"


def test_default_layers_are_every_k_from_zero_to_depth():
    cfg = prepare(yaml.safe_load((REPO / "config.yaml").read_text()))
    exp = cfg["experiments"]["electra-toy"]
    assert electra_checks.layers(exp, "minilm") == [0, 1, 2, 3, 4, 5, 6]


def test_layer_step_thins_every_k_and_keeps_each_models_depth(tiny_config):
    tiny_config["experiments"]["tiny-cut"].update(layers=None, layer_step=2)
    exp = prepare(tiny_config)["experiments"]["tiny-cut"]
    assert electra_checks.layers(exp, "tiny-electra-discriminator") == [0, 2, 3]
    assert electra_checks.layers(exp, "tiny-electra-generator") == [0, 2]


def test_layer_step_beside_a_list_of_layers_names_both_keys(tiny_config):
    tiny_config["experiments"]["tiny-cut"].update(layers=[0, 1], layer_step=2)
    with pytest.raises(ConfigError, match=r"experiments\.tiny-cut\.layer_step: .*experiments\.tiny-cut\.layers lists"):
        prepare(tiny_config)


def test_layer_beyond_a_models_depth_names_key_and_model(tiny_config):
    tiny_config["experiments"]["tiny-cut"]["layers"] = [0, 3]
    with pytest.raises(ConfigError, match=r"experiments\.tiny-cut\.layers: layer 3 is beyond model "
                                          r"'tiny-electra-generator', which has 2 layers"):
        prepare(tiny_config)


def test_unknown_model_in_the_list_is_named(tiny_config):
    tiny_config["experiments"]["tiny-cut"]["models"].append("tiny-electra-generatr")
    with pytest.raises(ConfigError, match=r"experiments\.tiny-cut\.models: unknown model 'tiny-electra-generatr' "
                                          r"\(did you mean 'tiny-electra-generator'\?\)"):
        prepare(tiny_config)


@pytest.mark.parametrize("change, message", [
    (lambda e: e["tiny-cut"].update(tasks=["lee-ict"]),
     r"experiments\.tiny-cut\.tasks: dataset 'lee-ict' is of kind 'pairs'"),
    (lambda e: e["tiny-cut"].update(tasks=["stsb"]), r"experiments\.tiny-cut\.tasks: unknown dataset 'stsb'"),
    (lambda e: e["tiny-stages"]["word_similarity"].update(datasets=["lee-ict"]),
     r"experiments\.tiny-stages\.word_similarity\.datasets: dataset 'lee-ict' is of kind 'pairs'"),
    (lambda e: e["tiny-cut"]["reference"].update(experiments={"mrpc-like": "stsb"}),
     r"experiments\.tiny-cut\.reference\.experiments: 'mrpc-like' is not one of the experiment's tasks"),
    (lambda e: e["tiny-cut"]["reference"].update(file="reference/nowhere.csv"),
     r"experiments\.tiny-cut\.reference\.file: 'reference/nowhere.csv' does not exist"),
    (lambda e: e["tiny-cut"]["train"].update(selct="best"),
     r"experiments\.tiny-cut\.train: unknown key 'selct' \(did you mean 'select'\?\)"),
    (lambda e: e["tiny-stages"]["domain_adaptation"].update(epoch=3),
     r"experiments\.tiny-stages\.domain_adaptation: unknown key 'epoch' \(did you mean 'epochs'\?\)"),
    (lambda e: e["tiny-cut"].update(layers=[-1]), r"experiments\.tiny-cut\.layers\.0: -1 is less than the minimum"),
])
def test_bad_electra_configs_name_the_key(tiny_config, change, message):
    change(tiny_config["experiments"])
    with pytest.raises(ConfigError, match=message):
        prepare(tiny_config)


def test_smoke_mode_caps_models_seeds_layers_and_epochs():
    raw = yaml.safe_load((REPO / "configs" / "electra.yaml").read_text())
    paper, smoke = prepare(copy.deepcopy(raw)), prepare({**raw, "smoke": True})
    exp, small = paper["experiments"]["electra-stsb"], smoke["experiments"]["electra-stsb"]
    assert len(exp["models"]) == 13 and len(electra_checks.fine_tunings(exp)) == 875
    assert small["models"] == exp["models"][:1] and small["seeds"] == [0] and small["layers"] == [1]
    assert small["train"]["epochs"] == 2 and small["train"]["max_samples"] == 32
    assert smoke["datasets"]["mrpc"]["holdout"]["size"] == 0.25
    assert smoke["experiments"]["electra-stsb-dapt"]["domain_adaptation"]["epochs"] == 1
    wider = prepare({**raw, "smoke": True, "smoke_settings": {"max_layers": 3}})
    assert wider["experiments"]["electra-stsb"]["layers"] == [1, 2, 3]


def test_domain_adaptation_resumes_from_its_checkpoint(tiny_bert_dir, tmp_path, monkeypatch, caplog):
    """Killed after its first checkpoint, a re-run resumes there, trains only the steps left and
    cleans its checkpoints up (masks after a resume are drawn anew: equivalent, not bit-identical)."""
    from trimbench.electra.train import adapt_domain
    from trimbench.jobs import faults

    texts = [f"sentence number {i} about the weather and the markets" for i in range(12)]
    stage = {"epochs": 1, "batch_size": 4, "gradient_accumulation": 1, "lr": 1e-3, "weight_decay": 0.01,
             "warmup_ratio": 0.1, "mlm_probability": 0.15, "max_seq_length": 16, "precision": "fp32", "seed": 0,
             "logging_steps": 1, "checkpoint_steps": 1, "head": "frozen", "schedule": "batches"}

    class Killed(BaseException):
        pass

    def kill_at_checkpoint(point):
        raise Killed(point)

    monkeypatch.setattr(faults, "hold", kill_at_checkpoint)
    with pytest.raises(Killed):
        adapt_domain(tiny_bert_dir, texts, stage, tmp_path / "adapted", tmp_path / "adapted.ckpt", "f")
    assert (tmp_path / "adapted.ckpt" / "trainer" / "checkpoint-1").is_dir()
    assert not (tmp_path / "adapted").exists()
    monkeypatch.undo()
    caplog.set_level("INFO", logger="trimbench")
    steps = []
    monkeypatch.setattr(faults, "hold", lambda point: steps.append(point))
    metrics = adapt_domain(tiny_bert_dir, texts, stage, tmp_path / "adapted", tmp_path / "adapted.ckpt", "f")
    assert "resuming from checkpoint" in caplog.text and "checkpoint-1" in caplog.text
    # 12 texts / batch 4 = 3 steps, a checkpoint after each: the resumed run trains steps 2 and 3 only.
    assert steps == ["checkpoint", "checkpoint"] and metrics["epoch"] == pytest.approx(1.0)
    assert (tmp_path / "adapted" / "model.safetensors").is_file() and not (tmp_path / "adapted.ckpt").exists()
    assert (tmp_path / "adapted" / "tokenizer_config.json").is_file()  # each cut loads its tokenizer from here
    # Other settings never continue from these checkpoints.
    stale = tmp_path / "other.ckpt" / "trainer" / "checkpoint-1"
    stale.mkdir(parents=True)
    (tmp_path / "other.ckpt" / "fingerprint.sha256").write_text("old settings")
    caplog.clear()
    adapt_domain(tiny_bert_dir, texts, stage, tmp_path / "other", tmp_path / "other.ckpt", "f")
    assert "discarding" in caplog.text and "resuming" not in caplog.text


def test_domain_adaptation_texts_are_every_sentence_of_every_split_and_label():
    """dapt.py:65-71 adds sentence1 and sentence2 of every AllNLI row (all labels, all splits) to a
    set: the preset reads AllNLI's pair-class config over train, dev and test, and each distinct
    sentence is kept once, whichever column, split or label it comes from."""
    from trimbench.electra.train import unique_texts

    raw = yaml.safe_load((REPO / "configs" / "electra.yaml").read_text())
    nli = raw["datasets"]["all-nli"]
    assert (nli["config"], nli["kind"], nli["splits"]) == ("pair-class", "pair-class", {"validation": "dev"})
    for name in ("electra-stsb-dapt", "electra-stsb-dapt-deberta"):
        assert raw["experiments"][name]["domain_adaptation"]["splits"] == ["train", "validation", "test"]
    splits = [pd.DataFrame({"sentence1": ["A man sleeps.", "A dog runs."], "sentence2": ["He rests.", "A cat."],
                            "label": [0, 2]}),
              pd.DataFrame({"sentence1": ["A dog runs."], "sentence2": ["A man sleeps."], "label": [1]})]
    texts = unique_texts(pd.concat(splits, ignore_index=True), "pair-class", None, 0)
    assert sorted(texts) == sorted(["A man sleeps.", "A dog runs.", "He rests.", "A cat."])


DAPT_STAGE = {"epochs": 2, "batch_size": 4, "gradient_accumulation": 4, "lr": 1e-3, "weight_decay": 0.01,
              "warmup_ratio": 0.1, "mlm_probability": 0.15, "max_seq_length": 16, "precision": "fp32", "seed": 0,
              "logging_steps": 1, "checkpoint_steps": 0, "head": "frozen", "schedule": "batches"}
DAPT_TEXTS = [f"sentence number {i} about the weather and the markets" for i in range(40)]


@pytest.mark.parametrize("architecture", ["bert", "electra-generator", "deberta"])
def test_domain_adaptation_moves_the_encoder_and_leaves_the_fresh_head_as_initialised(
        tiny_bert_dir, tiny_deberta_dir, minilm_dir, tmp_path, architecture):
    """dapt.py's optimiser holds the encoder only: after training steps the head's transform,
    LayerNorm and bias are what they were, the encoder and the tied decoder weight (= the word
    embeddings) are not. The ELECTRA generator's head (embeddings wider than the blocks) starts as
    dapt.py's nn.Linear: a uniform bias within 1/sqrt(fan_in), not zeros."""
    from transformers import BertTokenizerFast, ElectraConfig, ElectraModel

    from trimbench.electra.train import masked_lm_trainer

    folder = tiny_deberta_dir if architecture == "deberta" else tiny_bert_dir
    if architecture == "electra-generator":
        folder = tmp_path / "electra"
        torch.manual_seed(0)
        ElectraModel(ElectraConfig(vocab_size=30522, embedding_size=48, hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=4, intermediate_size=40)).save_pretrained(folder)
        BertTokenizerFast.from_pretrained(str(minilm_dir)).save_pretrained(folder)
    trainer = masked_lm_trainer(folder, DAPT_TEXTS[:8], {**DAPT_STAGE, "epochs": 1, "gradient_accumulation": 1,
                                                          "warmup_ratio": 0.0}, tmp_path / "trainer")
    mlm = trainer.model
    encoder = {id(p) for p in mlm.base_model.parameters()}
    before = {name: p.detach().clone() for name, p in mlm.named_parameters()}
    head = [name for name, p in mlm.named_parameters() if id(p) not in encoder]
    assert head and all(not dict(mlm.named_parameters())[name].requires_grad for name in head)
    bias = mlm.get_output_embeddings().bias
    if architecture == "electra-generator":
        assert 0 < bias.abs().max() <= 1 / 48 ** 0.5
    else:
        assert not bias.any()
    trainer.train()  # 2 steps at lr 1e-3
    after = dict(mlm.named_parameters())
    for name in head:
        assert torch.equal(after[name], before[name]), name
    embeddings = mlm.get_input_embeddings().weight
    assert mlm.get_output_embeddings().weight is embeddings
    name = next(n for n, p in after.items() if p is embeddings)
    assert not torch.equal(embeddings, before[name])
    moved = [n for n in after if id(after[n]) in encoder and not torch.equal(after[n], before[n])]
    assert any(".layer.1." in n for n in moved)  # the top block learns too


def test_seed_head_redraws_the_head_transform_as_torchs_default_not_the_models_init(tiny_bert_dir):
    """dapt.py builds the head from plain modules: its transform is nn.Linear's default draw
    (uniform within 1/sqrt(32): sd 0.10, a non-zero bias), not BERT's _init_weights (sd 0.02, bias 0)
    that transformers gives the head a checkpoint lacks."""
    from transformers import AutoModelForMaskedLM

    from trimbench.electra.train import seed_head

    mlm = AutoModelForMaskedLM.from_pretrained(str(tiny_bert_dir))
    dense = mlm.cls.predictions.transform.dense
    assert dense.weight.std().item() < 0.03 and not dense.bias.any()  # the premise: transformers' init
    torch.manual_seed(0)
    seed_head(mlm)
    assert 0.08 < dense.weight.std().item() < 0.12 and dense.weight.abs().max().item() <= 1 / 32 ** 0.5
    assert 0 < dense.bias.abs().max().item() <= 1 / 32 ** 0.5


def test_domain_adaptation_schedule_is_counted_in_batches_as_the_paper_steps_it(tiny_bert_dir, tmp_path):
    """dapt.py:91-95: 40 texts in batches of 4 for 2 epochs = 20 batches, warm-up int(0.1 * 20) = 2,
    but the scheduler steps once per 4 batches: 3 optimizer steps an epoch (the last on the
    epoch's 2 remaining batches), 6 in all, never reaching the schedule's end."""
    from trimbench.electra.train import masked_lm_trainer

    lrs = {}
    for schedule in ("batches", "steps"):
        trainer = masked_lm_trainer(tiny_bert_dir, DAPT_TEXTS, {**DAPT_STAGE, "schedule": schedule},
                                    tmp_path / schedule)
        trainer.create_optimizer_and_scheduler(num_training_steps=6)
        lrs[schedule] = []
        for _ in range(6):
            lrs[schedule].append(trainer.lr_scheduler.get_last_lr()[0])
            trainer.optimizer.step()
            trainer.lr_scheduler.step()
    by_hand = [0.0, 0.5, 18 / 18, 17 / 18, 16 / 18, 15 / 18]
    assert lrs["batches"] == pytest.approx([1e-3 * f for f in by_hand])
    assert lrs["steps"] == pytest.approx([0.0, 1e-3, 0.8e-3, 0.6e-3, 0.4e-3, 0.2e-3])  # 1 warm-up step of 6


def test_random_init_redraws_every_encoder_weight_by_the_runs_seed(tiny_bert_dir):
    """--random_init: AutoModel.from_config after torch.manual_seed(seed): the same seed gives the same
    encoder, another seed another one; no pretrained weight survives; the tokenizer is untouched."""
    from trimbench.electra.train import reinitialise
    from trimbench.models import load_sentence_model

    def weights(model):
        return {name: p.detach().clone() for name, p in model[0].auto_model.named_parameters()}

    pretrained = weights(load_sentence_model(tiny_bert_dir))
    first, again, other = (weights(reinitialise(load_sentence_model(tiny_bert_dir), seed)) for seed in (0, 0, 1))
    model = reinitialise(load_sentence_model(tiny_bert_dir), 0)
    assert all(torch.equal(first[n], again[n]) for n in first)
    drawn = [n for n in first if "LayerNorm" not in n and not n.endswith("bias")]
    assert all(not torch.equal(first[n], other[n]) and not torch.equal(first[n], pretrained[n]) for n in drawn)
    # the architecture's own initialisation: N(0, 0.02) matrices, LayerNorm at (1, 0)
    assert first["embeddings.word_embeddings.weight"].std().item() == pytest.approx(0.02, rel=0.05)
    assert torch.equal(first["encoder.layer.0.output.LayerNorm.weight"], torch.ones(32))
    assert model.tokenizer("a cat")["input_ids"] == load_sentence_model(tiny_bert_dir).tokenizer("a cat")["input_ids"]


def test_random_init_with_an_adaptation_stage_is_a_config_error(tiny_config):
    tiny_config["experiments"]["tiny-stages"]["random_init"] = True
    with pytest.raises(ConfigError, match=r"tiny-stages\.random_init: a randomly initialised encoder"):
        prepare(tiny_config)


def test_a_job_cut_short_resumes_after_its_last_finished_run(tmp_path, monkeypatch):
    """fine_tune_cuts keeps each finished (k, seed) at once: killed during its third run, a re-run
    trains only the runs left; other settings (fingerprint) start from scratch."""
    from trimbench.electra import train as electra_train
    from trimbench.jobs import faults

    trained = []

    def fake_fine_tune_cut(model, k, objective, num_labels, kind, tables, settings, seed, eval_batch_size):
        trained.append((k, seed))
        if len(trained) == 3 and settings.get("kill"):
            raise KeyboardInterrupt
        return [{"split": "test", "metric": "spearman_cosine", "value": k + seed / 10}], {"model": model}

    monkeypatch.setattr(electra_train, "fine_tune_cut", fake_fine_tune_cut)
    monkeypatch.setattr(faults, "hold", lambda point: None)
    runs = [(0, 0), (0, 1), (2, 0), (2, 1)]

    def train(settings, fingerprint):
        return electra_train.fine_tune_cuts(lambda k, seed: f"start-{k}", runs, "cosine_mse", 2, "sts", {}, settings, 8,
                                           tmp_path / "unfinished", fingerprint)

    with pytest.raises(KeyboardInterrupt):
        train({"kill": True}, "a")
    assert sorted(p.name for p in (tmp_path / "unfinished").glob("L*")) == ["L0-seed0.json", "L0-seed1.json"]
    trained.clear()
    finished = train({}, "a")
    assert trained == [(2, 0), (2, 1)]
    assert [(k, seed, rows[0]["value"], history["model"]) for k, seed, rows, history in finished] == [
        (0, 0, 0.0, "start-0"), (0, 1, 0.1, "start-0"), (2, 0, 2.0, "start-2"), (2, 1, 2.1, "start-2")]
    trained.clear()
    train({}, "b")
    assert trained == runs


def test_fine_tunings_under_their_former_folder_name_stop_the_run_saying_how_to_keep_them(tmp_path):
    from trimbench.errors import ConfigError

    electra_checks.check_former_layout(tmp_path)  # a fresh experiment folder
    (tmp_path / "runs" / "stsb").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"runs: an ELECTRA experiment keeps its fine-tunings in .*fine-tunings now.*"
                                          r"\(mv .*runs .*fine-tunings\)"):
        electra_checks.check_former_layout(tmp_path)
    (tmp_path / "fine-tunings").mkdir()  # renamed already (or both): nothing to say
    electra_checks.check_former_layout(tmp_path)


def test_the_config_check_stops_on_fine_tunings_under_their_former_folder_name(tiny_config, tmp_path):
    """Through the experiment's own check (trimbench.config.prepare), before any job: the finished
    fine-tunings of results/electra/<experiment>/runs/ are named, not trained again."""
    import copy

    from trimbench.errors import ConfigError

    tb_config.prepare(copy.deepcopy(tiny_config), tmp_path)
    (tmp_path / "results" / "electra" / "tiny-cut" / "runs" / "stsb").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"results/electra/tiny-cut/runs: an ELECTRA experiment keeps its "):
        tb_config.prepare(tiny_config, tmp_path)


# --- the dev-choice tables and the Pareto figure (their values, not their style) ----------------

CHOICE_SUMMARY = ("The layer chosen by the mean dev score over seeds (ties: the shallower), its test score "
                  "against the full-depth model's; gain = chosen − full. Published: the final table's values "
                  "(scored at the dev-chosen epoch, as ours) only.")


def test_choice_tables_cells_are_the_chosen_and_full_depth_scores_beside_the_published():
    """hand_made_scores: disc's dev picks k=1 (0.79), gen's ties k=0 and k=2 and takes k=0; both
    stop at L=2. gen has no parameter rows: its share is blank, never "nan%"."""
    import html

    from trimbench.electra.report import _page, choice_tables, layer_table

    ours = hand_made_scores()
    ours = scores.frame(ours[~((ours["model"] == "gen") & (ours["metric"] == "parameters"))].to_dict("records"))
    published = pd.DataFrame({"model": ["disc", "disc", "gen"], "experiment": "stsb", "layer": [1, 2, 2],
                              "dataset": "stsb-test", "metric": "spearman_cosine", "epoch": "dev-best",
                              "value": [0.70, 0.60, 0.85]})
    tables = choice_tables(layer_table(ours, published, {"stsb": "stsb"}, {"stsb": "spearman_cosine"}))
    view = pd.DataFrame({
        "task": ["stsb", "stsb"], "model": ["disc", "gen"], "metric": ["spearman_cosine"] * 2,
        "chosen k": [1, 0], "dev": ["0.7900", "0.7000"],
        "test at chosen k": ["0.7400 ± 0.0141", "0.6500 ± 0.0141"], "full depth L": [2, 2],
        "test at L": ["0.6300 ± 0.0283", "0.8100 ± 0.0141"], "gain": ["+0.1100", "-0.1600"],
        "published at k / L": ["0.7000 / 0.6000", "– / 0.8500"], "parameters kept": ["91.7%", ""]})
    assert tables["markdown"] == CHOICE_SUMMARY + "\n\n" + view.to_markdown(index=False) + "\n"
    assert tables["html"] == _page(f"<p>{html.escape(CHOICE_SUMMARY)}</p>" + view.to_html(index=False, border=0))
    lines = tables["csv"].splitlines()
    assert lines[0].split(",")[:4] == ["task", "model", "metric", "chosen_layer"]  # no index column
    csv = pd.read_csv(__import__("io").StringIO(tables["csv"])).set_index("model")
    assert csv.loc["disc", "published_full"] == 0.6 and pd.isna(csv.loc["gen", "published_chosen"])
    assert csv.loc["gen", "gain"] == pytest.approx(-0.16) and pd.isna(csv.loc["gen", "parameter_share"])
    assert lines[1].startswith("stsb,disc,spearman_cosine,1,0.790000,0.740000,")  # six decimals


def pareto_table() -> pd.DataFrame:
    """Two tasks; gen listed first (hue and style follow a sorted order, not the frame's). stsb's
    front: gen k0 (1000, 0.65), disc k1 (1100, 0.74), gen k2 (1200, 0.81); disc k3 has no parameter
    count and gen k1 no test score: neither is drawn, though disc k3 would top the front."""
    rows = [("stsb", "gen", 0, 1000, 0.65, True), ("stsb", "gen", 1, 1100, np.nan, False),
            ("stsb", "gen", 2, 1200, 0.81, False), ("stsb", "disc", 0, 1000, 0.42, False),
            ("stsb", "disc", 1, 1100, 0.74, True), ("stsb", "disc", 2, 1200, 0.63, False),
            ("stsb", "disc", 3, None, 0.90, False), ("mrpc", "disc", 1, 1100, 0.50, True),
            ("mrpc", "gen", 0, 1000, 0.60, True)]
    table = pd.DataFrame(rows, columns=["task", "model", "layer", "parameters", "test_mean", "chosen"])
    return table.assign(metric=lambda f: np.where(f["task"] == "stsb", "spearman_cosine", "f1"), published=np.nan,
                        parameters=table["parameters"].astype("Int64"))


def test_electra_pareto_figure_draws_each_tasks_points_rings_the_chosen_and_steps_the_front(monkeypatch):
    from trimbench.electra import report

    saved = {}
    monkeypatch.setattr(report, "save", lambda figure, paths: saved.update(figure=figure, paths=paths))
    paths = {"png": "x.png"}
    report.electra_pareto_figure(pareto_table(), {"disc": "discriminator", "gen": "generator"}, "the title", paths)
    figure = saved["figure"]
    assert saved["paths"] is paths and figure._suptitle.get_text() == "the title"
    assert [ax.get_title() for ax in figure.axes] == ["mrpc", "stsb"]
    expected = {"mrpc": ({(1100, 0.50), (1000, 0.60)}, {(1100, 0.50), (1000, 0.60)}, [(1000, 0.60)]),
                "stsb": ({(1000, 0.65), (1200, 0.81), (1000, 0.42), (1100, 0.74), (1200, 0.63)},
                         {(1000, 0.65), (1100, 0.74)}, [(1000, 0.65), (1100, 0.74), (1200, 0.81)])}
    for ax in figure.axes:
        points, chosen, front = expected[ax.get_title()]
        assert ax.get_xscale() == "log"
        dots, = (c for c in ax.collections if c.get_label() != "chosen by dev")
        ring, = (c for c in ax.collections if c.get_label() == "chosen by dev")
        assert {tuple(p) for p in dots.get_offsets().tolist()} == points
        assert {tuple(p) for p in ring.get_offsets().tolist()} == chosen
        # a hollow black ring over the dot, wider than it
        assert ring.get_facecolor().size == 0 or ring.get_facecolor()[0][3] == 0
        assert ring.get_edgecolor()[0].tolist() == [0.0, 0.0, 0.0, 1.0]
        assert ring.get_sizes()[0] > dots.get_sizes()[0] and ring.get_zorder() > dots.get_zorder()
        line, = (line for line in ax.lines if line.get_label() == "Pareto front")
        assert list(zip(line.get_xdata(), line.get_ydata(), strict=True)) == pytest.approx(front)
        labels = [text.get_text() for text in ax.get_legend().get_texts()]
        assert labels == ["model", "disc", "gen", "role", "discriminator", "generator", "chosen by dev",
                          "Pareto front"]
        # the style follows the role: each role its own marker
        by_role = {}
        for handle, label in zip(ax.get_legend().legend_handles, labels, strict=True):
            if label in ("discriminator", "generator"):
                by_role[label] = handle.get_paths()[0].vertices.round(3).tolist() if hasattr(handle, "get_paths") \
                    else handle.get_marker()
        assert by_role["discriminator"] != by_role["generator"]


def test_read_layer_table_reads_the_score_table_and_the_reference_file(tmp_path):
    from trimbench.electra.report import layer_table, read_layer_table

    ours = hand_made_scores()
    published = pd.DataFrame({"model": ["disc", "gen"], "experiment": "stsb", "layer": [1, 2],
                              "dataset": "stsb-test", "metric": "spearman_cosine", "epoch": ["dev-best", "last"],
                              "value": [0.70, 0.85]})
    scores.write(ours, tmp_path / "scores.parquet")
    published.to_csv(tmp_path / "electra.csv", index=False)
    for select in ("best", "last"):
        read = read_layer_table(tmp_path / "scores.parquet", tmp_path / "electra.csv", {"stsb": "stsb"},
                                {"stsb": "spearman_cosine"}, select)
        pd.testing.assert_frame_equal(read, layer_table(ours, published, {"stsb": "stsb"},
                                                        {"stsb": "spearman_cosine"}, select))
    # select defaults to the kept best epoch: disc k=1's published dev-best value meets our test mean
    default = read_layer_table(tmp_path / "scores.parquet", tmp_path / "electra.csv", {"stsb": "stsb"},
                               {"stsb": "spearman_cosine"}).set_index(["model", "layer"])
    assert default.loc[("disc", 1), "compared"] == pytest.approx(0.74)
    assert default.loc[("disc", 1), "delta"] == pytest.approx(0.04)


# --- the fine-tuning's pieces: embeddings, scores, evaluators, the optimisation -----------------


class ListedEncoder:
    """A stand-in sentence model: each text's vector from a table; as sentence-transformers' encode,
    numpy only when ``convert_to_numpy`` is set (else a list of tensors). Records each call."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors, self.calls = vectors, []

    def encode(self, texts, batch_size=32, convert_to_numpy=False, show_progress_bar=None):
        self.calls.append((list(texts), batch_size))
        rows = [np.asarray(self.vectors[t], dtype=np.float32) for t in texts]
        return np.stack(rows) if convert_to_numpy else [torch.from_numpy(r) for r in rows]


def test_cosines_encode_each_text_once_and_a_zero_vector_has_cosine_zero():
    from trimbench.electra.train import cosines

    model = ListedEncoder({"a": [1, 0], "b": [0, 2], "c": [3, 3], "d": [-1, -1], "z": [0, 0], "s": [0.3, 0.4]})
    frame = pd.DataFrame({"sentence1": ["a", "a", "c", "z", "c", "s"], "sentence2": ["c", "b", "c", "a", "d", "a"]})
    # s·a: norms 0.5 × 1, below 1, still a cosine
    assert cosines(frame, model, batch_size=3) == pytest.approx([2 ** -0.5, 0.0, 1.0, 0.0, -1.0, 0.6])
    assert model.calls == [(["a", "c", "z", "s", "b", "d"], 3)]  # unique texts, first-appearance order


def test_pair_embeddings_are_each_sides_text_encoded(tiny_bert_dir):
    from trimbench.electra.train import pair_embeddings
    from trimbench.models import load_sentence_model

    model = load_sentence_model(tiny_bert_dir, pooling="mean")
    frame = pd.DataFrame({"sentence1": ["a red car", "the cat", "a red car"], "sentence2": ["the cat", "dogs", "sun"]})
    left, right = pair_embeddings(model, frame, batch_size=2)
    alone = {t: model.encode([t], convert_to_numpy=True)[0] for t in ["a red car", "the cat", "dogs", "sun"]}
    assert np.allclose(left, [alone[t] for t in frame["sentence1"]], atol=1e-5)
    assert np.allclose(right, [alone[t] for t in frame["sentence2"]], atol=1e-5)


def test_build_loss_is_each_objectives_papers_loss(tiny_bert_dir):
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss, SoftmaxLoss

    from trimbench.electra.train import build_loss
    from trimbench.models import load_sentence_model

    model = load_sentence_model(tiny_bert_dir, pooling="mean")
    mse, bce, softmax = (build_loss(model, objective, 3) for objective in ("cosine_mse", "cosine_bce", "softmax"))
    assert isinstance(mse, CosineSimilarityLoss) and isinstance(mse.loss_fct, torch.nn.MSELoss)
    # MRPC's: the cosine is the logit of "paraphrase"
    assert isinstance(bce, CosineSimilarityLoss) and isinstance(bce.loss_fct, torch.nn.BCEWithLogitsLoss)
    assert isinstance(softmax, SoftmaxLoss) and softmax.model is model and softmax.num_labels == 3
    assert softmax.classifier.in_features == 3 * 32 and softmax.classifier.out_features == 3  # [u; v; |u - v|]


PAIRS = pd.DataFrame({"sentence1": ["a red car", "the cat sleeps", "sun and moon", "a dog runs", "trees grow",
                                    "the cat sleeps"],
                      "sentence2": ["a blue car", "a dog runs", "moon and sun", "the cat sleeps", "rivers flow",
                                    "the cat sleeps"],
                      "score": [0.9, 0.1, 0.8, 0.3, 0.2, 1.0], "label": [1, 0, 2, 1, 0, 2]})


def softmax_loss(tiny_bert_dir):
    from trimbench.electra.train import build_loss
    from trimbench.models import load_sentence_model

    torch.manual_seed(3)
    return build_loss(load_sentence_model(tiny_bert_dir, pooling="mean"), "softmax", 3)


def training_logits(loss, frame) -> np.ndarray:
    """The classifier's output as SoftmaxLoss computes it in training (its forward without labels)."""
    loss.eval()
    with torch.no_grad():
        features = [loss.model.tokenize(frame[c].tolist()) for c in ("sentence1", "sentence2")]
        return loss(features, None)[1].numpy()


def test_classify_is_the_training_classifiers_argmax(tiny_bert_dir):
    from trimbench.electra.train import classify

    loss = softmax_loss(tiny_bert_dir)
    logits = training_logits(loss, PAIRS)
    assert len(set(logits.argmax(axis=1))) > 1  # the case tells the classes apart
    assert classify(loss, PAIRS, batch_size=4).tolist() == logits.argmax(axis=1).tolist()


def test_pair_classifier_evaluator_reports_macro_f1_and_accuracy_under_its_name(tiny_bert_dir):
    from trimbench.electra.train import PairClassifierEvaluator, class_scores

    loss = softmax_loss(tiny_bert_dir)
    predicted = training_logits(loss, PAIRS).argmax(axis=1)
    expected = class_scores(predicted, PAIRS["label"].to_numpy(), 3)
    evaluator = PairClassifierEvaluator(loss, PAIRS, "dev", batch_size=4)
    stored = []
    evaluator.store_metrics_in_model_card_data = lambda *args: stored.append(args)
    metrics = evaluator(loss.model, epoch=2, steps=5)
    assert metrics == pytest.approx({"dev_macro_f1": expected["macro_f1"], "dev_accuracy": expected["accuracy"]})
    assert stored == [(loss.model, metrics, 2, 5)] and evaluator.primary_metric == "dev_macro_f1"


def test_dev_evaluators_score_the_dev_pairs_by_each_objectives_metric(tiny_bert_dir, tmp_path):
    """The trainer logs eval_dev_<metric>: Spearman of the cosines against the scores (STS), the
    best-threshold F1 of the cosines (binary), macro-F1 of the classifier (SICK); no CSV is written."""
    from scipy.stats import spearmanr

    from trimbench.electra.train import EVALUATOR_METRIC, PairClassifierEvaluator, dev_evaluator

    loss = softmax_loss(tiny_bert_dir)
    model = loss.model
    left, right = (model.encode(PAIRS[c].tolist(), convert_to_numpy=True) for c in ("sentence1", "sentence2"))
    cosine = (left * right).sum(1) / np.linalg.norm(left, axis=1) / np.linalg.norm(right, axis=1)
    binary = PAIRS.assign(label=[1, 0, 1, 0, 0, 1])
    best_f1 = max(2 * ((cosine >= t) & (binary["label"] == 1)).sum() / ((cosine >= t).sum() + 3) for t in cosine)
    expected = {"cosine_mse": spearmanr(cosine, PAIRS["score"]).statistic, "cosine_bce": best_f1}
    for objective, frame in (("cosine_mse", PAIRS), ("cosine_bce", binary), ("softmax", PAIRS)):
        evaluator = dev_evaluator(objective, loss, frame, batch_size=4)
        metrics = evaluator(model, output_path=str(tmp_path))
        key = f"dev_{EVALUATOR_METRIC[objective]}"
        assert evaluator.batch_size == 4 and key in metrics
        if objective != "cosine_bce":  # the binary evaluator's primary is AP; BestEpoch reads the F1
            assert evaluator.primary_metric == key
        if objective == "softmax":
            assert isinstance(evaluator, PairClassifierEvaluator) and evaluator.loss is loss
            assert set(metrics) == {"dev_macro_f1", "dev_accuracy"}
        else:
            assert metrics[key] == pytest.approx(expected[objective], abs=1e-6)
            assert not any("dot" in k or "euclidean" in k or "manhattan" in k for k in metrics)  # cosine only
    assert list(tmp_path.iterdir()) == []


TRAIN_SETTINGS = {"epochs": 2, "batch_size": 4, "lr": 1e-3, "weight_decay": 0.01, "max_grad_norm": 0.5,
                  "warmup_ratio": 0.1, "max_samples": None, "max_seq_length": 16, "precision": "fp32",
                  "logging_steps": 1, "tf32": False, "select": "best"}


def test_training_arguments_are_the_papers_optimisation(tmp_path):
    """AdamW at lr with a linear schedule warmed up over warmup_ratio of the steps, clipped at
    max_grad_norm, every epoch's dev evaluation, the seed for the weights and the data order, all
    epochs (no step cap), one batch a step, nothing saved."""
    from trimbench.electra.train import training_arguments

    args = training_arguments(TRAIN_SETTINGS, 7, tmp_path)
    assert (args.output_dir, args.num_train_epochs, args.max_steps) == (str(tmp_path), 2, -1)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (4, 1)
    assert (args.learning_rate, args.weight_decay, args.max_grad_norm) == (1e-3, 0.01, 0.5)
    assert args.warmup_steps == 0.1 and args.lr_scheduler_type == "linear"
    assert args.eval_strategy == "epoch" and args.save_strategy == "no" and not args.gradient_checkpointing
    assert (args.seed, args.data_seed) == (7, 7) and args.batch_sampler == "batch_sampler"


def test_fine_tune_cut_trains_the_cut_on_the_seeds_rows_and_scores_validation_test_and_the_last_epoch(
        tiny_bert_dir, monkeypatch):
    """k=1: the cut model trains on max_samples rows drawn by the seed (the kind's columns), selects
    on validation; validation and test are scored with the kept weights, test again with the last
    epoch's when another epoch was kept (else the kept rows are the last epoch's); the parameter
    count closes the rows."""
    from trimbench.electra import train
    from trimbench.models import encoder_layers, load_sentence_model
    from trimbench.training import training_rows

    class Loss:
        state = "kept"

        def load_state_dict(self, state):
            self.state = state

    calls = {}

    def fake_fine_tune_pairs(model, objective, num_labels, train_frame, dev_frame, settings, seed, batch_size):
        calls["pairs"] = (model, objective, num_labels, train_frame, dev_frame, settings, seed, batch_size)
        calls["scored"] = []
        return calls["loss"], {"kept_epoch": 1}, calls["last_state"]

    def fake_score_splits(objective, loss, frames, batch_size):
        calls["scored"].append((objective, loss.state, {s: f.copy() for s, f in frames.items()}, batch_size))
        return [{"split": s, "metric": "spearman_cosine", "value": len(f) + (0.5 if loss.state == "last" else 0)}
                for s, f in frames.items()]

    monkeypatch.setattr(train, "fine_tune_pairs", fake_fine_tune_pairs)
    monkeypatch.setattr(train, "score_splits", fake_score_splits)
    words = [f"word{i}" for i in range(12)]
    table = pd.DataFrame({"sentence1": words, "sentence2": words[::-1], "score": np.linspace(0, 1, 12), "id": 7})
    tables = {"train": table, "validation": table.iloc[:4], "test": table.iloc[4:7]}
    columns = ["sentence1", "sentence2", "score"]
    settings = {**TRAIN_SETTINGS, "max_samples": 6}
    for last_state, last_value in (("last", 3.5), (None, 3.0)):
        calls.update(loss=Loss(), last_state=last_state)
        model = load_sentence_model(tiny_bert_dir, pooling="mean")
        rows, history = train.fine_tune_cut(model, 1, "cosine_mse", 2, "sts", tables, settings, 1, 5)
        count = sum(p.numel() for p in model[0].auto_model.embeddings.parameters()) + bert_block_parameters(32, 37)
        assert len(encoder_layers(model[0].auto_model)) == 1
        trained, objective, num_labels, train_frame, dev_frame, passed, seed, batch_size = calls["pairs"]
        assert (trained, objective, num_labels, passed, seed, batch_size) == (model, "cosine_mse", 2, settings, 1, 5)
        pd.testing.assert_frame_equal(train_frame, training_rows(table, "sts", 6, 1))
        assert len(train_frame) == 6 and not train_frame.equals(training_rows(table, "sts", 6, 2))
        pd.testing.assert_frame_equal(dev_frame, table.iloc[:4][columns])
        objective, state, frames, batch_size = calls["scored"][0]
        assert (objective, state, batch_size, list(frames)) == ("cosine_mse", "kept", 5, ["validation", "test"])
        pd.testing.assert_frame_equal(frames["test"], table.iloc[4:7][columns])
        assert [state for _, state, _, _ in calls["scored"]] == (["kept", "last"] if last_state else ["kept"])
        assert rows == [{"split": "validation", "metric": "spearman_cosine", "value": 4},
                        {"split": "test", "metric": "spearman_cosine", "value": 3},
                        {"split": "test-last-epoch", "metric": "spearman_cosine", "value": last_value},
                        {"split": None, "metric": "parameters", "value": float(count)}]
        assert history == {"kept_epoch": 1, "parameters": count}


def pair_cosines(model, frame) -> np.ndarray:
    """Each pair's cosine, both sides encoded alone (the reference the scorers must meet)."""
    left, right = (model.encode(frame[c].tolist(), convert_to_numpy=True) for c in ("sentence1", "sentence2"))
    return (left * right).sum(1) / np.linalg.norm(left, axis=1) / np.linalg.norm(right, axis=1)


def test_fine_tune_pairs_keeps_the_best_dev_epoch_and_hands_back_the_last(tiny_bert_dir):
    """Trained against the dev scores (train score = 1 - dev score), the dev Spearman falls epoch
    after epoch: epoch 1 is kept (its weights restored in the model, their dev score the one the
    history records), the last epoch's weights come back beside it."""
    from scipy.stats import spearmanr

    from trimbench.electra.train import fine_tune_pairs
    from trimbench.models import cut_layers, load_sentence_model

    model = cut_layers(load_sentence_model(tiny_bert_dir, pooling="mean", max_seq_length=16), 1)
    words = ["cat", "dog", "car", "tree", "house", "river", "sun", "moon"]
    pairs = [(a, b) for i, a in enumerate(words) for b in words[i + 1:]][:12]
    dev = pd.DataFrame(pairs, columns=["sentence1", "sentence2"]).assign(score=np.random.default_rng(0).random(12))
    train_frame = dev.assign(score=1 - dev["score"])
    loss, history, last_state = fine_tune_pairs(model, "cosine_mse", 2, train_frame, dev,
                                                TRAIN_SETTINGS, 0, 4)
    epochs = history["epochs"]
    assert [(e["epoch"], e["step"]) for e in epochs] == [(1, 3), (2, 6)]  # 12 rows, batches of 4, 2 epochs
    values = [e["eval_dev_spearman_cosine"] for e in epochs]
    assert values[0] > values[1] and history["kept_epoch"] == 1
    assert (history["select"], history["train_rows"], history["train_metrics"]["epoch"]) == ("best", 12, 2.0)
    assert loss.model is model and last_state is not None
    assert spearmanr(pair_cosines(model, dev), dev["score"]).statistic == pytest.approx(values[0])
    loss.load_state_dict(last_state)
    assert spearmanr(pair_cosines(model, dev), dev["score"]).statistic == pytest.approx(values[1])


def test_fine_tune_pairs_trains_sicks_classifier_in_the_loss_and_writes_nothing_to_the_cwd(tiny_bert_dir, tmp_path,
                                                                                          monkeypatch):
    """The softmax objective: SoftmaxLoss' classifier (3 labels, drawn after the seed) is what the
    trainer optimises, the dev macro-F1 each epoch is that classifier's, and the trainer's scratch
    folder is a temporary one (the working folder stays empty)."""
    from transformers import set_seed

    from trimbench.electra.train import build_loss, class_scores, classify, fine_tune_pairs
    from trimbench.models import cut_layers, load_sentence_model

    def tiny():
        return cut_layers(load_sentence_model(tiny_bert_dir, pooling="mean", max_seq_length=16), 1)

    monkeypatch.chdir(tmp_path)
    labelled = PAIRS[["sentence1", "sentence2", "label"]]
    model = tiny()
    loss, history, last_state = fine_tune_pairs(model, "softmax", 3, pd.concat([labelled] * 2, ignore_index=True),
                                                labelled, {**TRAIN_SETTINGS, "select": "last"}, 0, 4)
    assert loss.num_labels == 3 and loss.model is model and last_state is None
    fresh = tiny()
    set_seed(0)
    drawn = build_loss(fresh, "softmax", 3).classifier.weight
    assert drawn.shape == loss.classifier.weight.shape == (3, 3 * model.get_embedding_dimension())
    assert not torch.allclose(drawn, loss.classifier.weight)  # trained from the seeded draw
    last = history["epochs"][-1]["eval_dev_macro_f1"]
    assert last == pytest.approx(class_scores(classify(loss, labelled, 4), labelled["label"].to_numpy(), 3)["macro_f1"])
    assert list(tmp_path.iterdir()) == []


# --- training and claims, value by value: splits' rows, epochs kept, the claims' cells ---------


def test_score_splits_rows_are_each_splits_own_metrics_of_the_kept_model(tiny_bert_dir):
    """One row per (split, metric) in the frames' order: STS's Pearson and Spearman of the cosines
    against the scores (cosine only), the binary F1 and accuracy at the validation threshold,
    SICK's macro-F1 and accuracy of the classifier; each split scored on its own pairs."""
    from scipy.stats import pearsonr, spearmanr

    from trimbench.electra.train import class_scores, f1_threshold, score_splits, threshold_scores

    loss = softmax_loss(tiny_bert_dir)
    model = loss.model
    test = pd.DataFrame({"sentence1": ["rivers flow", "a blue car", "dogs bark", "sun and moon", "the cat"],
                         "sentence2": ["trees grow", "a red car", "the cat sleeps", "a dog runs", "moon and sun"],
                         "score": [0.4, 0.9, 0.2, 0.1, 0.7], "label": [0, 1, 2, 1, 2]})
    frames = {"validation": PAIRS, "test": test}
    cosine = {split: pair_cosines(model, frame) for split, frame in frames.items()}

    rows = score_splits("cosine_mse", loss, frames, batch_size=2)
    assert [(r["split"], r["metric"]) for r in rows] == [
        ("validation", "pearson_cosine"), ("validation", "spearman_cosine"),
        ("test", "pearson_cosine"), ("test", "spearman_cosine")]
    expected = [f(cosine[s], frames[s]["score"]).statistic for s in frames for f in (pearsonr, spearmanr)]
    assert [r["value"] for r in rows] == pytest.approx(expected, abs=1e-5)
    assert all(type(r["value"]) is float for r in rows)

    binary = {s: f.assign(label=(f["score"] > 0.5).astype(int)) for s, f in frames.items()}
    threshold = f1_threshold(cosine["validation"], binary["validation"]["label"].to_numpy())
    rows = score_splits("cosine_bce", loss, binary, batch_size=2)
    expected = {s: threshold_scores(cosine[s], binary[s]["label"].to_numpy(), threshold) for s in frames}
    assert [(r["split"], r["metric"]) for r in rows] == [(s, m) for s in frames for m in ("f1", "accuracy")]
    assert [r["value"] for r in rows] == pytest.approx([expected[s][m] for s in frames for m in ("f1", "accuracy")])

    rows = score_splits("softmax", loss, frames, batch_size=2)
    expected = {s: class_scores(training_logits(loss, f).argmax(axis=1), f["label"].to_numpy(), 3)
                for s, f in frames.items()}
    assert expected["validation"] != expected["test"]  # the case tells the splits apart
    assert [(r["split"], r["metric"]) for r in rows] == [(s, m) for s in frames for m in ("macro_f1", "accuracy")]
    values = [expected[s][m] for s in frames for m in ("macro_f1", "accuracy")]
    assert [r["value"] for r in rows] == pytest.approx(values)


def test_threshold_scores_of_pairs_with_no_paraphrase_predicted_nor_labelled():
    """No positive predicted and none labelled: F1 of the positive class 0 (no 0/0), every pair right."""
    from trimbench.electra.train import threshold_scores

    assert threshold_scores(np.array([0.1, 0.4]), np.array([0, 0]), 0.5) == {"f1": 0.0, "accuracy": 1.0}


def test_best_epoch_keeps_the_first_of_tied_epochs_and_the_history_of_each_evaluation():
    """A later epoch only as good as the best is not kept (strictly better, as the paper's copy of
    its best model); an evaluation before any epoch counts as epoch 0; when the kept epoch is the
    last, no separate last-epoch weights are kept."""
    from types import SimpleNamespace

    from trimbench.electra.train import BestEpoch

    module = torch.nn.Linear(1, 1)
    callback = BestEpoch(module, "eval_dev_x", "best")
    for epoch, step, value in ((None, 0, 0.2), (1.0, 3, 0.9), (2.0, 6, 0.9)):
        torch.nn.init.constant_(module.weight, float(step))
        callback.on_evaluate(None, SimpleNamespace(epoch=epoch, global_step=step), None, metrics={"eval_dev_x": value})
    callback.on_train_end(None, SimpleNamespace(epoch=2.0, global_step=6), None)
    assert callback.history == [{"epoch": 0, "step": 0, "eval_dev_x": 0.2}, {"epoch": 1, "step": 3, "eval_dev_x": 0.9},
                                {"epoch": 2, "step": 6, "eval_dev_x": 0.9}]
    assert (callback.best_epoch, callback.best_value, module.weight.item()) == (1, 0.9, 3.0)
    assert callback.last_state["weight"].item() == 6.0

    module = torch.nn.Linear(1, 1)
    callback = BestEpoch(module, "eval_dev_x", "best")
    for epoch, value in ((1.0, 0.1), (2.0, 0.7)):
        torch.nn.init.constant_(module.weight, epoch)
        callback.on_evaluate(None, SimpleNamespace(epoch=epoch, global_step=0), None, metrics={"eval_dev_x": value})
    callback.on_train_end(None, SimpleNamespace(epoch=2.0, global_step=0), None)
    assert (callback.best_epoch, module.weight.item(), callback.last_state) == (2, 2.0, None)


def test_unique_texts_leave_out_the_scores_and_draw_max_samples_by_the_seed():
    """STS's score is no text; at most max_samples texts, drawn by the seed (the same seed the
    same texts), all of them in first-appearance order when there are no more than max_samples."""
    from trimbench.electra.train import unique_texts

    frame = pd.DataFrame({"sentence1": ["a", "b", "c", "a", None], "sentence2": ["d", "e", "a", "f", "g"],
                          "score": [0.5, 1.0, 0.5, 2.0, 3.0]})
    every = ["a", "b", "c", "d", "e", "f", "g"]
    assert unique_texts(frame, "sts", None, 0) == every
    assert unique_texts(frame, "sts", 7, 0) == every
    drawn = {seed: unique_texts(frame, "sts", 3, seed) for seed in range(4)}
    assert all(len(texts) == 3 and set(texts) < set(every) for texts in drawn.values())
    assert drawn[0] == unique_texts(frame, "sts", 3, 0) == pd.Series(every).sample(n=3, random_state=0).tolist()
    assert len({tuple(texts) for texts in drawn.values()}) > 1


def test_fine_tune_cuts_hands_each_fine_tuning_its_task_and_start_model(tmp_path, monkeypatch):
    """Every (k, seed) gets the job's objective, labels, kind, tables, settings and evaluation batch
    size, the start model load_model gives for that very (k, seed), and passes the fault hold."""
    from trimbench.electra import train as electra_train
    from trimbench.jobs import faults

    calls, held = [], []
    monkeypatch.setattr(electra_train, "fine_tune_cut", lambda *args: calls.append(args) or ([], {}))
    monkeypatch.setattr(faults, "hold", held.append)
    tables, settings = {"train": "T"}, {"epochs": 1}
    electra_train.fine_tune_cuts(lambda k, seed: f"start-{k}-{seed}", [(1, 0), (2, 3)], "softmax", 3, "pair-class",
                                 tables, settings, 16, tmp_path / "work", "f")
    assert calls == [("start-1-0", 1, "softmax", 3, "pair-class", tables, settings, 0, 16),
                     ("start-2-3", 2, "softmax", 3, "pair-class", tables, settings, 3, 16)]
    # commit, committed: the atomic write's own holds
    assert [point for point in held if not point.startswith("commit")] == ["fine_tuning", "fine_tuning"]


# --- the report on a hand-made seeded grid: per-layer means, dev choice, tables, figure ----------


#: (task, model, layer) -> seeds' scores per split; dev picks stsb disc k=1, stsb gen k=0 (an exact tie
#: with k=2: the shallower), mrpc disc k=1 (its full depth), mrpc gen k=0 (one seed only).
SEEDED = {
    ("stsb", "gen", 0): {"validation": [0.70, 0.70], "test": [0.66, 0.64], "test-last-epoch": [0.60, 0.62]},
    ("stsb", "gen", 1): {"validation": [0.60, 0.62], "test": [0.55, 0.57], "test-last-epoch": [0.50, 0.54]},
    ("stsb", "gen", 2): {"validation": [0.70, 0.70], "test": [0.80, 0.82], "test-last-epoch": [0.78, 0.74]},
    ("stsb", "disc", 0): {"validation": [0.50, 0.52], "test": [0.40, 0.44], "test-last-epoch": [0.30, 0.36]},
    ("stsb", "disc", 1): {"validation": [0.80, 0.78], "test": [0.75, 0.73], "test-last-epoch": [0.72, 0.70]},
    ("stsb", "disc", 2): {"validation": [0.60, 0.62], "test": [0.65, 0.61], "test-last-epoch": [0.64, 0.58]},
    ("mrpc", "disc", 0): {"validation": [0.60, 0.64], "test": [0.58, 0.62], "test-last-epoch": [0.50, 0.52]},
    ("mrpc", "disc", 1): {"validation": [0.70, 0.66], "test": [0.66, 0.70], "test-last-epoch": [0.61, 0.65]},
    ("mrpc", "gen", 0): {"validation": [0.81], "test": [0.79], "test-last-epoch": [0.77]},
    ("mrpc", "gen", 1): {"validation": [0.75, 0.79], "test": [0.72, 0.76], "test-last-epoch": [0.70, 0.74]},
}
SEEDED_METRICS = {"stsb": "spearman_cosine", "mrpc": "f1"}
#: parameters kept by a cut at k: disc's blocks twice gen's
SEEDED_PARAMETERS = {"disc": (1000, 100), "gen": (500, 50)}


def seeded_scores() -> pd.DataFrame:
    """SEEDED's rows, beside rows the report must leave out: another metric of each task, another
    dataset with the same metrics; and each cut's parameter count (once per seed and task)."""
    rows = []
    for (task, model, layer), splits in SEEDED.items():
        for split, values in splits.items():
            for seed, value in enumerate(values):
                meta = {"experiment": "x", "track": "electra", "variant": "cut", "model": model, "layer": layer,
                        "dim": 8, "seed": seed, "split": split}
                rows += [{**meta, "dataset": task, "metric": SEEDED_METRICS[task], "value": value},
                         {**meta, "dataset": task, "metric": "accuracy", "value": 0.99},
                         {**meta, "dataset": "other", "metric": SEEDED_METRICS[task], "value": 0.11}]
                base, block = SEEDED_PARAMETERS[model]
                rows.append({**meta, "split": None, "dataset": task, "metric": "parameters",
                             "value": float(base + block * layer)})
    return scores.frame(rows)


def seeded_stats(task, model, layer, split) -> tuple[float, float, int]:
    values = SEEDED[(task, model, layer)][split]
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else np.nan, len(values)


def test_per_layer_is_each_tasks_main_metric_per_model_and_layer_over_seeds():
    """Mean, sample sd and seed count per split, from plain numpy over SEEDED; sorted by task, model,
    layer; the other metric and the other dataset left out; each cut's own parameter count."""
    table = electra_report.per_layer(seeded_scores(), SEEDED_METRICS)
    expected = []
    for task, model, layer in sorted(SEEDED):
        row = {"task": task, "metric": SEEDED_METRICS[task], "model": model, "layer": layer}
        for prefix, split in (("dev", "validation"), ("test", "test"), ("last", "test-last-epoch")):
            row[f"{prefix}_mean"], row[f"{prefix}_sd"], row[f"{prefix}_seeds"] = seeded_stats(task, model, layer,
                                                                                             split)
        base, block = SEEDED_PARAMETERS[model]
        expected.append({**row, "parameters": base + block * layer})
    expected = pd.DataFrame(expected)
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)
    assert table["layer"].dtype == "int64" and table["parameters"].dtype == "Int64"
    assert table["test_seeds"].dtype == "int64"
    # a cut without a parameter count keeps its scores, its count blank
    ours = seeded_scores()
    uncounted = ours[~((ours["model"] == "gen") & (ours["metric"] == "parameters"))]
    table = electra_report.per_layer(uncounted, SEEDED_METRICS)
    pd.testing.assert_frame_equal(table.drop(columns="parameters"), expected.drop(columns="parameters"),
                                  check_dtype=False)
    assert table["parameters"].isna().tolist() == (expected["model"] == "gen").tolist()


def test_dev_choice_reads_each_groups_layers_in_depth_order_whatever_the_rows_order():
    """Rows given deepest first, models and tasks reversed: the choice is by dev mean, the exact tie
    (stsb gen, k=0 and k=2) goes to the shallower, the full depth is the deepest layer."""
    table = electra_report.per_layer(seeded_scores(), SEEDED_METRICS).iloc[::-1].reset_index(drop=True)
    choice = electra_report.dev_choice(table)
    sd = lambda values: float(np.std(values, ddof=1))  # noqa: E731
    expected = pd.DataFrame([
        ("mrpc", "disc", "f1", 1, 0.68, 0.68, sd([0.66, 0.70]), 1, 0.68, sd([0.66, 0.70]), 0.0, 1100, 1100),
        ("mrpc", "gen", "f1", 0, 0.81, 0.79, np.nan, 1, 0.74, sd([0.72, 0.76]), 0.05, 500, 550),
        ("stsb", "disc", "spearman_cosine", 1, 0.79, 0.74, sd([0.75, 0.73]), 2, 0.63, sd([0.65, 0.61]), 0.11,
         1100, 1200),
        ("stsb", "gen", "spearman_cosine", 0, 0.70, 0.65, sd([0.66, 0.64]), 2, 0.81, sd([0.80, 0.82]), -0.16,
         500, 600)],
        columns=["task", "model", "metric", "chosen_layer", "dev_mean", "test_mean", "test_sd", "full_layer",
                 "full_test_mean", "full_test_sd", "gain", "parameters", "full_parameters"])
    pd.testing.assert_frame_equal(choice, expected, check_dtype=False)


def seeded_published() -> pd.DataFrame:
    """Published cells: two experiments mapped to our tasks, rows of another metric and of an
    experiment no task maps to (left out), a cell of a layer we did not run."""
    return pd.DataFrame([("stsb-paper", "disc", 1, "spearman_cosine", "dev-best", 0.70),
                         ("stsb-paper", "disc", 2, "spearman_cosine", "last", 0.52),
                         ("stsb-paper", "disc", 2, "pearson_cosine", "last", 0.99),
                         ("mrpc-paper", "gen", 0, "f1", "dev-best", 0.75),
                         ("mrpc-paper", "disc", 1, "f1", "last", 0.60),
                         ("mrpc-paper", "disc", 1, "accuracy", "last", 0.98),
                         ("mrpc-paper", "gen", 5, "f1", "dev-best", 0.90),
                         ("other-paper", "disc", 0, "spearman_cosine", "dev-best", 0.10),
                         ("other-paper", "gen", 0, "f1", "last", 0.20)],
                        columns=["experiment", "model", "layer", "metric", "epoch", "value"])


def test_published_scores_are_the_mapped_experiments_main_metric_cells():
    published = electra_report.published_scores(seeded_published(), {"stsb": "stsb-paper", "mrpc": "mrpc-paper"},
                                                SEEDED_METRICS)
    expected = pd.DataFrame([("stsb", "disc", 1, "dev-best", 0.70), ("stsb", "disc", 2, "last", 0.52),
                             ("mrpc", "gen", 0, "dev-best", 0.75), ("mrpc", "disc", 1, "last", 0.60),
                             ("mrpc", "gen", 5, "dev-best", 0.90)],
                            columns=["task", "model", "layer", "epoch", "published"])
    pd.testing.assert_frame_equal(published, expected)
    # no task mapped to a published experiment: an empty frame of the same columns and types
    empty = electra_report.published_scores(seeded_published(), {}, SEEDED_METRICS)
    assert empty.columns.tolist() == ["task", "model", "layer", "epoch", "published"] and len(empty) == 0
    assert empty["layer"].dtype == "int64" and empty["published"].dtype == "float64"


def test_published_scores_name_the_unknown_epoch_kinds():
    bad = seeded_published().assign(epoch=["best", "dev-best", "last", "final", "last", "last", "last", "last",
                                           "last"])
    with pytest.raises(ValueError, match=re.escape(
            "the ELECTRA reference's column 'epoch' must be one of ['dev-best', 'last'] (which epoch's model each "
            "cell scored); found ['best', 'final']")):
        electra_report.published_scores(bad, {"stsb": "stsb-paper"}, SEEDED_METRICS)
    with pytest.raises(ValueError, match=re.escape("found ['None']")):
        electra_report.published_scores(seeded_published().drop(columns="epoch"), {"stsb": "stsb-paper"},
                                        SEEDED_METRICS)


def test_ours_of_kind_takes_the_kept_epochs_or_the_last_epochs_mean_by_row():
    table = pd.DataFrame({"test_mean": [0.1, 0.2, 0.3, 0.4], "last_mean": [0.5, 0.6, 0.7, 0.8]}, index=[7, 8, 9, 10])
    epochs = pd.Series(["dev-best", "last", np.nan, "last"], index=table.index)
    best = electra_report.ours_of_kind(table, epochs, "best")
    pd.testing.assert_series_equal(best, pd.Series([0.1, 0.6, np.nan, 0.8], index=table.index))
    # an experiment that keeps its last epoch has no dev-best score; its last epoch's still meet "last"
    last = electra_report.ours_of_kind(table, epochs, "last")
    pd.testing.assert_series_equal(last, pd.Series([np.nan, 0.6, np.nan, 0.8], index=table.index))


def test_layer_table_sets_each_published_cell_beside_ours_of_its_kind_and_marks_devs_choice():
    reference = {"stsb": "stsb-paper", "mrpc": "mrpc-paper"}
    table = electra_report.layer_table(seeded_scores(), seeded_published(), reference, SEEDED_METRICS)
    layers = electra_report.per_layer(seeded_scores(), SEEDED_METRICS)
    assert table.columns.tolist() == [*layers.columns, "epoch", "published", "compared", "delta", "chosen"]
    pd.testing.assert_frame_equal(table[layers.columns], layers, check_dtype=False)  # every layer kept
    cells = table.set_index(["task", "model", "layer"])
    # stsb disc k=1: the final table's value beside our kept epoch's test mean
    assert cells.loc[("stsb", "disc", 1), ["epoch", "published"]].tolist() == ["dev-best", 0.70]
    assert cells.loc[("stsb", "disc", 1), "compared"] == pytest.approx(0.74)
    assert cells.loc[("stsb", "disc", 1), "delta"] == pytest.approx(0.74 - 0.70)
    # the archives' last-epoch values beside our last epoch's
    assert cells.loc[("stsb", "disc", 2), "compared"] == pytest.approx(0.61)
    assert cells.loc[("stsb", "disc", 2), "delta"] == pytest.approx(0.61 - 0.52)
    assert cells.loc[("mrpc", "disc", 1), "delta"] == pytest.approx(0.63 - 0.60)
    assert cells.loc[("mrpc", "gen", 0), "delta"] == pytest.approx(0.79 - 0.75)
    assert table["published"].notna().sum() == 4 and table["compared"].notna().sum() == 4
    assert cells["published"].isna().equals(cells["compared"].isna()) and cells["delta"].isna().sum() == 6
    chosen = sorted(cells.index[cells["chosen"]])
    assert chosen == [("mrpc", "disc", 1), ("mrpc", "gen", 0), ("stsb", "disc", 1), ("stsb", "gen", 0)]
    assert table["chosen"].dtype == bool
    # an experiment keeping its last epoch: the final table's cells meet nothing of ours
    kept_last = electra_report.layer_table(seeded_scores(), seeded_published(), reference, SEEDED_METRICS,
                                           "last").set_index(["task", "model", "layer"])
    assert pd.isna(kept_last.loc[("stsb", "disc", 1), "compared"])
    # no score of any task's main metric yet: an empty table with the same columns, no error
    scored = seeded_scores()
    none = electra_report.layer_table(scored[scored["metric"] == "parameters"], seeded_published(), reference,
                                      SEEDED_METRICS)
    assert none.empty and none.columns.tolist() == table.columns.tolist()
    assert kept_last.loc[("stsb", "disc", 2), "compared"] == pytest.approx(0.61)


def test_layer_figure_plots_each_tasks_means_per_source_and_stars_devs_choice(monkeypatch):
    """A panel per source: ours at the kept and the last epoch, the published by the epoch it scored; a
    line per model at its mean over seeds per layer (hue in the models' sorted order, the discriminator
    solid, the generator dashed); the star on the dev-chosen layers in the "ours" panel only. One task
    (a row of four panels, the cheaper figure): the other task's scores stay out."""
    import textwrap

    import seaborn as sns

    from trimbench.electra import report

    saved = {}
    monkeypatch.setattr(report, "save", lambda figure, paths: saved.update(figure=figure, paths=paths))
    ours = seeded_scores()
    stsb = {"stsb": "spearman_cosine"}
    # a last-epoch cell at k=0, the first published row: the dev-chosen epoch's panel still comes first
    published = pd.concat([seeded_published(), pd.DataFrame(
        [("stsb-paper", "disc", 0, "spearman_cosine", "last", 0.35)], columns=seeded_published().columns)])
    table = report.layer_table(ours, published, {"stsb": "stsb-paper"}, stsb)
    title = ("electra-paper: truncated ELECTRA discriminators and generators cut at every layer k, fine-tuned per "
             "seed on STS-B and MRPC, the layer chosen by the mean dev score, beside the published per-layer curves")
    paths = {"png": "layers.png"}
    report.layer_figure(ours, table, {"gen": "generator", "disc": "discriminator"}, stsb, title, paths)
    figure = saved["figure"]
    assert saved["paths"] is paths
    sources = ["ours", "ours, last epoch", "published, dev-chosen epoch", "published, last epoch"]
    assert [ax.get_title() for ax in figure.axes] == [f"stsb · {source}" for source in sources]

    def mean(task, model, layer, split):
        return seeded_stats(task, model, layer, split)[0]

    disc, gen = (tuple(colour) for colour in sns.color_palette()[:2])  # sorted: disc, then gen
    expected = {}
    for task, layers in (("stsb", [0, 1, 2]),):
        for source, split in (("ours", "test"), ("ours, last epoch", "test-last-epoch")):
            expected[(task, source)] = {
                (disc, "-", tuple(layers), tuple(mean(task, "disc", k, split) for k in layers)),
                (gen, "--", tuple(layers), tuple(mean(task, "gen", k, split) for k in layers))}
    expected[("stsb", "published, dev-chosen epoch")] = {(disc, "-", (1,), (0.70,))}
    expected[("stsb", "published, last epoch")] = {(disc, "-", (0, 2), (0.35, 0.52))}
    stars = {"stsb": {(1, 0.74), (0, 0.65)}}
    for ax in figure.axes:
        task, source = ax.get_title().split(" · ")
        lines = {(tuple(line.get_color()), line.get_linestyle(), tuple(line.get_xdata()),
                  tuple(np.round(line.get_ydata(), 6))) for line in ax.lines if len(line.get_xdata())}
        assert lines == {(c, s, x, tuple(np.round(y, 6))) for c, s, x, y in expected[(task, source)]}, ax.get_title()
        star = [c for c in ax.collections if c.get_label() == "chosen by dev"]
        if source == "ours":
            assert {(x, round(y, 6)) for x, y in star[0].get_offsets().tolist()} == stars[task]
        else:
            assert not star
        assert all(float(tick).is_integer() for tick in ax.get_xticks())  # layers are whole numbers
    assert [ax.get_xlabel() for ax in figure.axes] == ["layer k (0 = embedding output)"] * 4
    assert [ax.get_ylabel() for ax in figure.axes] == ["test score"] + [""] * 3
    # the title wrapped at 9 characters per inch of the figure's width, set just above the panels
    assert figure._suptitle.get_text() == textwrap.fill(title, int(figure.get_figwidth() * 9))
    assert figure._suptitle.get_position()[1] == 1.0 and figure._suptitle.get_va() == "bottom"
    (legend,) = figure.legends
    renderer = figure.canvas.get_renderer()
    key = legend.get_window_extent(renderer)
    assert (key.x0 + key.x1) / 2 == pytest.approx(figure.bbox.width / 2, abs=2)  # centred under the panels


def test_layer_figure_draws_the_published_cells_of_a_single_seed_run(monkeypatch):
    """One seed leaves every sd empty: the published cells are still drawn (only a missing published
    value keeps a row out of their panels)."""
    from trimbench.electra import report

    saved = {}
    monkeypatch.setattr(report, "save", lambda figure, paths: saved.update(figure=figure))
    scored = seeded_scores()
    one_seed = scored[scored["seed"] == 0]
    stsb = {"stsb": "spearman_cosine"}
    table = report.layer_table(one_seed, seeded_published(), {"stsb": "stsb-paper"}, stsb)
    assert table["test_sd"].isna().all() and table["published"].notna().any()
    report.layer_figure(one_seed, table, {"gen": "generator", "disc": "discriminator"}, stsb, "t", {"png": "f.png"})
    titles = [ax.get_title() for ax in saved["figure"].axes]
    assert [t for t in titles if "published" in t] == ["stsb · published, dev-chosen epoch",
                                                        "stsb · published, last epoch"]


def test_layer_figure_shares_each_tasks_axes_along_its_row_only(monkeypatch):
    """STS-B's scores (0.30..0.82) and MRPC's F1 shifted down by 0.5: a row's panels share their y axis,
    the two rows do not."""
    from trimbench.electra import report

    saved = {}
    monkeypatch.setattr(report, "save", lambda figure, paths: saved.update(figure=figure))
    scored = seeded_scores()
    is_f1 = scored["metric"] == "f1"
    scored.loc[is_f1, "value"] = scored.loc[is_f1, "value"] - 0.5
    reference = {"stsb": "stsb-paper", "mrpc": "mrpc-paper"}
    table = report.layer_table(scored, seeded_published(), reference, SEEDED_METRICS)
    report.layer_figure(scored, table, {"gen": "generator", "disc": "discriminator"}, SEEDED_METRICS, "t",
                        {"png": "f.png"})
    limits = {}
    for ax in saved["figure"].axes:
        limits.setdefault(ax.get_title().split(" · ")[0], set()).add(ax.get_ylim())
    assert len(limits["stsb"]) == 1 and len(limits["mrpc"]) == 1 and limits["stsb"] != limits["mrpc"]


def layer_heading(task: str, metric: str, seeds: int) -> str:
    return (f"{task}: test {metric} per layer k (0 = embedding output), mean ± sd over {seeds} seed(s); published "
            f"in parentheses, beside ours of its kind (the archives' last-epoch values beside our last epoch's); "
            f"the layer chosen by dev emphasised")


def test_layer_tables_render_one_wide_table_per_task_in_task_order():
    """SEEDED's long table, rows reversed, with cells the runs can leave: a layer without a test
    score ("–"; beside a last-epoch published value, only our last epoch's), one model short of a
    layer (blank), a published value without a score of its kind (an experiment keeping the last
    epoch: no parentheses), one seed (no sd)."""
    import html

    from trimbench.electra.report import _page, layer_table, layer_tables

    table = layer_table(seeded_scores(), seeded_published(), {"stsb": "stsb-paper", "mrpc": "mrpc-paper"},
                        SEEDED_METRICS)
    cell = table.set_index(["task", "model", "layer"]).index
    table = table[cell != ("mrpc", "gen", 1)].reset_index(drop=True)
    cell = table.set_index(["task", "model", "layer"]).index
    table.loc[cell.isin([("stsb", "gen", 1), ("stsb", "disc", 2)]), "test_mean"] = np.nan
    table.loc[cell == ("stsb", "disc", 1), "compared"] = np.nan
    stsb = pd.DataFrame({"layer": [0, 1, 2],
                         "disc": ["0.4200 ± 0.0283", "{0.7400 ± 0.0141}", "last epoch 0.6100 ± 0.0424 (0.5200)"],
                         "gen": ["{0.6500 ± 0.0141}", "–", "0.8100 ± 0.0141"]})
    mrpc = pd.DataFrame({"layer": [0, 1],
                         "disc": ["0.6000 ± 0.0283", "{0.6800 ± 0.0283}; last epoch 0.6300 ± 0.0283 (0.6000)"],
                         "gen": ["{0.7900} (0.7500)", ""]})
    sections = [(layer_heading("mrpc", "f1", 2), mrpc), (layer_heading("stsb", "spearman_cosine", 2), stsb)]

    def bold(view, before, after):
        return view.assign(**{c: view[c].str.replace("{", before).str.replace("}", after) for c in ("disc", "gen")})

    tables = layer_tables(table.iloc[::-1])
    assert tables["markdown"] == "\n".join(f"### {heading}\n\n{bold(view, '**', '**').to_markdown(index=False)}\n"
                                           for heading, view in sections)
    assert tables["html"] == _page("".join(
        f"<h3>{html.escape(heading)}</h3>{bold(view, '<b>', '</b>').to_html(index=False, escape=False, border=0)}"
        for heading, view in sections))
    lines = layer_tables(table)["csv"].splitlines()
    assert lines[0].split(",") == [*table.columns]
    assert lines[1] == "mrpc,f1,disc,0,0.620000,0.028284,2,0.600000,0.028284,2,0.510000,0.014142,2,1000,,,,,False"
    # a task of one row: its heading still names its metric
    one = table[(table["task"] == "mrpc") & (table["model"] == "gen")]
    assert layer_tables(one)["markdown"].startswith(f"### {layer_heading('mrpc', 'f1', 1)}\n\n")


def test_page_is_a_utf8_html_document_around_the_body():
    from trimbench.electra.report import _page

    page = _page("<p>body</p>")
    assert page.startswith("<!DOCTYPE html><html><head><meta charset='utf-8'><style>")
    assert page.endswith("</style></head><body><p>body</p></body></html>\n")
    style = page[page.index("<style>") + len("<style>"):page.index("</style>")]
    assert re.findall(r"([^{}]+)\{", style) == ["body", "table", "td,th"]


def test_claims_view_cells_are_the_seed_mean_test_score_with_each_models_role_size_and_depth():
    """Our side of the ELECTRA claims: per (task, model, layer) the test score's mean over seeds (a
    layer without a test score left out); the role from the name and hub id (a DeBERTa is no BERT,
    a BERT is one in any case), the size word, the depth from the config or else the model's
    deepest layer scored."""
    from trimbench.electra.claims import ELECTRA_COLUMNS, electra_view_cells

    ids = {"disc": "google/electra-base-discriminator", "gen": "google/electra-small-generator",
           "bert": "google-bert/bert-large-cased", "deb": "microsoft/deberta-v3-base", "TinyBERT": ""}
    rows = []
    for task, model, layer, value in [("stsb", "disc", 0, 0.2), ("stsb", "disc", 2, 0.6), ("stsb", "gen", 1, 0.5),
                                      ("stsb", "gen", 3, 0.4), ("stsb", "bert", 2, 0.7), ("sick", "deb", 1, 0.3),
                                      ("sick", "TinyBERT", 1, 0.1), ("sick", "TinyBERT", 4, 0.8)]:
        for seed, shift in ((0, -0.05), (1, 0.05)):
            rows.append({"dataset": task, "model": model, "layer": layer, "split": "test", "seed": seed,
                         "metric": "spearman_cosine", "value": value + shift})
    rows.append({"dataset": "sick", "model": "deb", "layer": 5, "split": "validation", "seed": 0,
                 "metric": "spearman_cosine", "value": 0.9})  # no test score at k=5: no cell
    rows.append({"dataset": "stsb", "model": "disc", "layer": 2, "split": "test", "seed": 0,
                 "metric": "pearson_cosine", "value": 0.0})  # not the main metric
    cells = electra_view_cells(pd.DataFrame(rows), {"_depths": {"disc": 12}},
                               {"stsb": "spearman_cosine", "sick": "spearman_cosine"}, ids)
    expected = pd.DataFrame(
        [("sick", "TinyBERT", 1, 0.1, "bert", None, 4), ("sick", "TinyBERT", 4, 0.8, "bert", None, 4),
         ("sick", "deb", 1, 0.3, "encoder", "base", 1),
         ("stsb", "bert", 2, 0.7, "bert", "large", 2),
         ("stsb", "disc", 0, 0.2, "discriminator", "base", 12), ("stsb", "disc", 2, 0.6, "discriminator", "base", 12),
         ("stsb", "gen", 1, 0.5, "generator", "small", 3), ("stsb", "gen", 3, 0.4, "generator", "small", 3)],
        columns=ELECTRA_COLUMNS)
    assert list(cells.columns) == ELECTRA_COLUMNS
    pd.testing.assert_frame_equal(cells.reset_index(drop=True), expected, check_dtype=False)
    assert cells["layer"].dtype == int and cells["value"].dtype == float

    undeclared = electra_view_cells(pd.DataFrame(rows), {}, {"stsb": "spearman_cosine"}, ids)  # no _depths
    assert list(undeclared["depth"]) == [2, 2, 2, 3, 3]  # each model's deepest layer scored
    empty = electra_view_cells(pd.DataFrame(), {}, {"stsb": "spearman_cosine"}, ids)
    assert empty.empty and list(empty.columns) == ELECTRA_COLUMNS


def electra_cells(rows) -> pd.DataFrame:
    """View cells from (task, model, layer, value, role, size, depth) tuples."""
    from trimbench.electra.claims import ELECTRA_COLUMNS

    return pd.DataFrame(rows, columns=ELECTRA_COLUMNS)


def test_truncation_claim_compares_the_best_cut_layer_with_the_full_depth_of_each_discriminator():
    """Per (task, discriminator): the best k below the depth against the full depth; a curve without
    its full depth (or without a cut) is no cell and does not end the check."""
    from trimbench.electra.claims import CHECKS
    from trimbench.face import View

    cells = electra_cells([("sick", "disc", 1, 0.5, "discriminator", "base", 3),  # no full depth: no cell
                           ("stsb", "disc", 1, 0.7, "discriminator", "base", 3),
                           ("stsb", "disc", 2, 0.6, "discriminator", "base", 3),
                           ("stsb", "disc", 3, 0.8, "discriminator", "base", 3),
                           ("stsb", "gen", 1, 0.9, "generator", "base", 3),
                           ("stsb", "gen", 3, 0.1, "generator", "base", 3),
                           ("stsb", "big", 0, 0.9, "discriminator", "large", 2),
                           ("stsb", "big", 2, 0.4, "discriminator", "large", 2)])
    rows = CHECKS["electra-truncation-beats-full-discriminator"](View(cells))
    assert rows == [{"cell": "stsb big", "evidence": "k=0 0.9000 vs full k=2 0.4000", "holds": True},
                    {"cell": "stsb disc", "evidence": "k=1 0.7000 vs full k=3 0.8000", "holds": False}]


def test_generator_claim_pairs_each_generator_with_the_bert_of_its_size_within_the_tolerance():
    """Per task, each generator's best layer against each BERT of its size: holds when within the
    tolerance (its very edge included); a generator without a BERT of its size, or without a size
    word, is no cell and does not end the check."""
    from trimbench.electra.claims import CHECKS
    from trimbench.face import View

    edge = 0.8 - 0.05 - 1e-9  # the comparison's own float slack: still within
    cells = electra_cells([("stsb", "a-gen", 2, 0.9, "generator", "small", 3),   # no small BERT
                           ("stsb", "b-gen", 1, 0.6, "generator", "base", 3), ("stsb", "b-gen", 2, edge, "generator",
                                                                                 "base", 3),
                           ("stsb", "bert", 2, 0.8, "bert", "base", 3), ("stsb", "bert", 3, 0.7, "bert", "base", 3),
                           ("stsb", "c-gen", 1, 0.5, "generator", None, 3), ("stsb", "tiny", 1, 0.9, "bert", None, 3),
                           ("sick", "b-gen", 1, 0.5, "generator", "base", 3),
                           ("sick", "bert", 1, 0.7, "bert", "base", 3)])
    rows = CHECKS["electra-generator-rivals-bert"](View(cells, (), 0.05))
    assert rows == [{"cell": "sick b-gen vs bert", "evidence": "generator 0.5000 vs BERT 0.7000 (±0.05)",
                     "holds": False},
                    {"cell": "stsb b-gen vs bert", "evidence": f"generator {edge:.4f} vs BERT 0.8000 (±0.05)",
                     "holds": True}]


def test_claim_views_are_both_sides_cells_at_the_experiments_tolerance():
    from trimbench.electra.claims import claim_views

    config = {"_depths": {"disc": 2}, "reference": {"tolerance": 0.05}}
    scores = pd.DataFrame([{"dataset": "stsb", "model": "disc", "layer": k, "split": "test", "seed": 0,
                            "metric": "spearman_cosine", "value": 0.5} for k in (1, 2)])
    ours, theirs = claim_views("el", {"el": config}, {"el": scores}, pd.DataFrame(columns=["experiment", "metric"]),
                               {"stsb": "spearman_cosine"}, {"disc": "google/electra-base-discriminator"})
    assert (ours.ablations, ours.tolerance, theirs.ablations, theirs.tolerance) == ((), 0.05, (), 0.05)
    assert list(ours.cells["layer"]) == [1, 2] and theirs.cells.empty  # no experiment mapped: no published cell


def published_curve(epochs_by_layer: dict[int, list[str]]) -> pd.DataFrame:
    return pd.DataFrame([{"model": "google-electra-base-discriminator", "experiment": "stsb", "layer": k,
                          "dataset": "stsb-test", "metric": "spearman_cosine", "epoch": epoch,
                          "value": k / 10 + (0.05 if epoch == "dev-best" else 0.0)}
                         for k, epochs in epochs_by_layer.items() for epoch in epochs])


@pytest.mark.parametrize(("epochs_by_layer", "kept"), [
    # the final table holds the deepest layer (and another): its cells only
    ({0: ["last"], 1: ["last", "dev-best"], 2: ["last", "dev-best"]}, [(1, "dev-best"), (2, "dev-best")]),
    # the final table holds the deepest layer alone: that one cell
    ({0: ["last"], 1: ["last"], 2: ["last", "dev-best"]}, [(2, "dev-best")]),
    # the final table lacks the deepest layer: the archive's curve
    ({0: ["last", "dev-best"], 1: ["last"], 2: ["last"]}, [(0, "last"), (1, "last"), (2, "last")]),
])
def test_published_cells_take_the_final_table_only_where_it_holds_the_deepest_layer(epochs_by_layer, kept):
    from trimbench.electra.claims import electra_published_cells

    config = {"reference": {"experiments": {"lee": "stsb"}}}
    published = published_curve(epochs_by_layer)
    cells = electra_published_cells(published, config, {"lee": "spearman_cosine"})
    assert list(zip(cells["layer"], cells["value"], strict=True)) == pytest.approx(
        [(k, k / 10 + (0.05 if epoch == "dev-best" else 0.0)) for k, epoch in kept])
    assert set(cells["role"]) == {"discriminator"} and set(cells["depth"]) == {2}
    assert electra_published_cells(published, {"reference": {}}, {"lee": "spearman_cosine"}).empty


def test_the_last_epochs_test_rows_are_scored_as_the_kept_ones(monkeypatch):
    """When another epoch was kept, the last epoch's weights are loaded and scored on the same
    splits, by the same objective and batch size as the kept model's; its test rows only come back,
    under the last-epoch split."""
    from trimbench.electra import train

    class Loss:
        state = "kept"

        def load_state_dict(self, state):
            self.state = state

    loss, scored = Loss(), []

    def fake_score_splits(objective, loss, frames, batch_size):
        scored.append((objective, loss.state, {s: f.index.tolist() for s, f in frames.items()}, batch_size))
        return [{"split": s, "metric": "f1", "value": 0.5 if loss.state == "last" else 0.25} for s in frames]

    monkeypatch.setattr(train, "score_splits", fake_score_splits)
    monkeypatch.setattr(train, "fine_tune_pairs", lambda *args: (loss, {}, "last"))
    monkeypatch.setattr(train, "cut_layers", lambda model, k: model)
    monkeypatch.setattr(train, "parameters_used", lambda model: 10)
    table = pd.DataFrame({"sentence1": list("abcdef"), "sentence2": list("ghijkl"), "label": [0, 1] * 3})
    tables = {"train": table, "validation": table.iloc[:2], "test": table.iloc[2:5]}
    rows, _ = train.fine_tune_cut("model", 1, "cosine_bce", 2, "pair-class", tables, TRAIN_SETTINGS, 0, 7)
    splits = {"validation": [0, 1], "test": [2, 3, 4]}
    assert scored == [("cosine_bce", "kept", splits, 7), ("cosine_bce", "last", splits, 7)]
    assert rows == [{"split": "validation", "metric": "f1", "value": 0.25},
                    {"split": "test", "metric": "f1", "value": 0.25},
                    {"split": "test-last-epoch", "metric": "f1", "value": 0.5},
                    {"split": None, "metric": "parameters", "value": 10.0}]


def test_the_cosine_losses_train_the_model_given_and_every_module_after_the_transformer_is_counted(tiny_bert_dir):
    """Both cosine objectives wrap the model being fine-tuned; the parameter count takes every
    module after the transformer, the first one included (here a projection, 32 × 8 + 8)."""
    from sentence_transformers import SentenceTransformer

    from trimbench.electra.train import build_loss, parameters_used
    from trimbench.models import load_sentence_model

    model = load_sentence_model(tiny_bert_dir, pooling="mean")
    assert all(build_loss(model, objective, 2).model is model for objective in ("cosine_mse", "cosine_bce"))
    transformer = model[0]
    encoder = parameters_used(model)  # Pooling has no parameters
    projected = SentenceTransformer(modules=[transformer, torch.nn.Linear(32, 8)], device="cpu")
    assert parameters_used(projected) == encoder + 32 * 8 + 8


def test_classify_casts_the_features_to_the_classifiers_dtype(tiny_bert_dir):
    """The pair features follow the classifier's weights (dtype and device: a float64 or GPU head),
    so the labels are the same as the float32 head's."""
    from trimbench.electra.train import classify

    loss = softmax_loss(tiny_bert_dir)
    labels = classify(loss, PAIRS, batch_size=4).tolist()
    loss.classifier.double()
    assert classify(loss, PAIRS, batch_size=4).tolist() == labels


def test_seed_head_draws_the_generators_bias_over_its_whole_range_freezes_the_head_only_and_refuses_an_untied_one():
    """ELECTRA generator (embeddings 48 wide, blocks 32): the decoder bias is nn.Linear's draw,
    uniform over (-1/sqrt(48), 1/sqrt(48)), both signs and near both ends over 500 words; the
    encoder's weights are untouched; the frozen names are the head's. An untied decoder is refused
    naming the model class."""
    from transformers import BertConfig, BertForMaskedLM, ElectraConfig, ElectraForMaskedLM

    from trimbench.electra.train import seed_head

    torch.manual_seed(0)
    mlm = ElectraForMaskedLM(ElectraConfig(vocab_size=500, embedding_size=48, hidden_size=32, num_hidden_layers=1,
                                           num_attention_heads=4, intermediate_size=40))
    encoder = {name: p.detach().clone() for name, p in mlm.base_model.named_parameters()}
    frozen = seed_head(mlm)
    bound = 1 / 48 ** 0.5
    bias = mlm.get_output_embeddings().bias
    assert bias.abs().max() <= bound and bias.min() < -0.8 * bound and bias.max() > 0.8 * bound
    assert all(torch.equal(p, encoder[name]) for name, p in mlm.base_model.named_parameters())
    encoder_ids = {id(p) for p in mlm.base_model.parameters()}
    assert frozen == [name for name, p in mlm.named_parameters() if id(p) not in encoder_ids]
    assert "generator_predictions.dense.weight" in frozen

    untied = BertForMaskedLM(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                        intermediate_size=37, tie_word_embeddings=False))
    with pytest.raises(RuntimeError, match="^BertForMaskedLM: the MLM decoder is not tied to the word embeddings$"):
        seed_head(untied)


def test_the_binary_dev_evaluator_scores_cosines_whatever_similarity_the_model_declares(tiny_bert_dir):
    """MRPC's objective is on the cosine: a model saved with another similarity (dot) is still
    evaluated on its cosines, the F1 BestEpoch reads."""
    from trimbench.electra.train import dev_evaluator

    loss = softmax_loss(tiny_bert_dir)
    loss.model.similarity_fn_name = "dot"
    metrics = dev_evaluator("cosine_bce", loss, PAIRS.assign(label=[1, 0, 1, 0, 0, 1]), batch_size=4)(loss.model)
    assert "dev_cosine_f1" in metrics and not any("dot" in key for key in metrics)


def test_best_epoch_without_any_evaluation_keeps_no_epoch():
    from types import SimpleNamespace

    from trimbench.electra.train import BestEpoch

    module = torch.nn.Linear(1, 1)
    for select in ("best", "last"):
        callback = BestEpoch(module, "eval_dev_x", select)
        callback.on_train_end(None, SimpleNamespace(epoch=0, global_step=0), None)
        kept = (callback.best_epoch, callback.best_value, callback.last_state, callback.history)
        assert kept == (None, None, None, [])


def test_domain_adaptation_trainer_reads_the_texts_cut_at_max_seq_length_on_the_encoders_weights(
        tiny_bert_dir, tmp_path, monkeypatch):
    """dapt.py tokenises the texts with truncation at max_seq_length and no other column, masks them at
    the stage's probability, and trains by epochs (no max_steps, no gradient checkpointing) from the
    encoder's own weights; an encoder lacking weights the masked-LM model needs is one error naming
    the model and the weights."""
    import transformers
    from transformers import AutoModel, BertTokenizerFast

    from trimbench.electra.train import masked_lm_trainer

    texts = ["a short one", " ".join(f"word{i}" for i in range(30))]
    stage = {**DAPT_STAGE, "max_seq_length": 8, "mlm_probability": 0.3}
    trainer = masked_lm_trainer(tiny_bert_dir, texts, stage, tmp_path / "trainer")
    tokenizer = BertTokenizerFast.from_pretrained(str(tiny_bert_dir))
    short_ids = tokenizer("a short one")["input_ids"]
    assert len(short_ids) < 8 < len(tokenizer(texts[1])["input_ids"])  # the premise: only the long one is cut
    assert trainer.train_dataset.column_names == ["input_ids", "token_type_ids", "attention_mask"]
    cut = tokenizer(texts[1])["input_ids"][:7] + [tokenizer.sep_token_id]
    assert trainer.train_dataset["input_ids"] == [short_ids, cut]
    assert trainer.data_collator.mlm and trainer.data_collator.mlm_probability == 0.3
    assert trainer.args.max_steps == -1 and trainer.args.num_train_epochs == stage["epochs"]
    assert not trainer.args.gradient_checkpointing
    encoder = AutoModel.from_pretrained(str(tiny_bert_dir)).state_dict()
    loaded = trainer.model.base_model.state_dict()
    assert loaded and set(loaded) <= set(encoder)  # the masked-LM encoder has no weight of its own
    assert all(torch.equal(loaded[name], weight) for name, weight in encoder.items() if name in loaded)

    real = transformers.AutoModel.from_pretrained

    def lacking_a_layer(*args, **kwargs):
        model = real(*args, **kwargs)
        full = model.state_dict
        model.state_dict = lambda *a, **k: {n: w for n, w in full(*a, **k).items() if ".layer.1." not in n}
        return model

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", lacking_a_layer)
    named = rf"masked-LM model of '{re.escape(str(tiny_bert_dir))}' lacks encoder weights \[.*layer\.1\."
    with pytest.raises(RuntimeError, match=named):
        masked_lm_trainer(tiny_bert_dir, texts, stage, tmp_path / "lacking")
