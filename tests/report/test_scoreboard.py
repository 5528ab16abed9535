"""The reproduction scoreboard and the cross-track Pareto points, on hand-made scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from trimbench import scores
from trimbench.report.scoreboard import (
    NO_VERDICT,
    Experiment,
    comparison,
    comparisons_html,
    pareto_points,
    readable_status,
    status_table,
    summarise,
    summary_line,
)

PUBLISHED = pd.DataFrame([
    {"variant": "v1", "method": m, "layer": layer, "dim": dim, "dataset": "sts-avg7",
     "metric": "spearman_cosine", "value": v}
    for m, layer, dim, v in [("BERT", 2, 8, 0.500), ("BERT", 2, 16, 0.600), ("2DMSE", 2, 8, 0.700),
                             ("2DMSE", 12, 768, 0.800), ("MSE", 2, 8, 0.9)]
])


def experiment(values: dict, scale="paper", tolerance=0.01, dataset="sts-avg7") -> Experiment:
    rows = [{"experiment": "e", "track": "2dmse-sts", "variant": variant, "model": "m", "layer": layer, "dim": dim,
             "dataset": dataset, "split": "test", "metric": "spearman_cosine", "value": value}
            for (variant, layer, dim), value in values.items()]
    config = {"track": "2dmse-sts", "scale": scale, "methods": ["full", "2dmse"],
              "evaluation": {"average_name": dataset, "main_metric": "spearman_cosine", "split": "test"},
              "reference": {"variant": "v1", "tolerance": tolerance, "work": None}}
    return Experiment("e", config, scores.frame(rows), PUBLISHED, {dataset: "spearman_cosine"})


def test_summary_counts_within_largest_and_one_sided():
    exp = experiment({("full", 2, 8): 0.505, ("full", 2, 16): 0.630, ("2dmse", 2, 8): 0.690,
                      ("2dmse", 4, 8): 0.75})
    row = status_table([exp]).iloc[0]
    assert (row.compared, row.within) == (3, 2)  # |0.005|, |0.03|, |0.01| against tolerance 0.01
    assert row.largest_abs_delta == pytest.approx(0.03) and row.largest_at == "layer 2, method BERT, dim 16"
    assert (row.ours_only, row.published_only) == (1, 2)
    assert row.work == "2DMSE STS v1" and row.tolerance == 0.01
    assert list(status_table([exp]).columns[:3]) == ["work", "experiment", "scale"]  # the CSV's first columns
    # Headline: 2DMSE at our deepest layer and widest dim, beside the work's (layer 12, dim 768).
    assert row.headline_ours == pytest.approx(0.75) and row.headline_ours_cell == "2DMSE L4 d8 sts-avg7"
    assert row.headline_published == pytest.approx(0.8) and row.headline_published_cell == "2DMSE L12 d768 sts-avg7"
    assert "3 cells compared, 2 within ±0.01, largest |Δ| 0.0300" in summary_line(exp)


def test_comparisons_page_says_within_by_the_tolerance():
    """|Δ| 0.005 and 0.03 at tolerance 0.01: "yes" and "no" on the page, as the summary counts them."""
    import re

    page = comparisons_html([experiment({("full", 2, 8): 0.505, ("full", 2, 16): 0.630})])
    header = re.findall(r"<th>([^<]*)</th>", page)
    rows = [dict(zip(header, re.findall(r"<td>([^<]*)</td>", row), strict=True))
            for row in re.findall(r"<tr>(.*?)</tr>", page, flags=re.S)]
    assert sorted((row["dim"], row["delta"], row["within"]) for row in rows) == [("16", "0.0300", "no"),
                                                                                  ("8", "0.0050", "yes")]


def test_tolerance_is_the_experiments():
    exp = experiment({("full", 2, 8): 0.505, ("full", 2, 16): 0.630}, tolerance=0.05)
    assert summarise(comparison(exp), 0.05)["within"] == 2 == status_table([exp]).iloc[0].within


def test_toy_run_without_common_cells_still_has_a_headline():
    exp = experiment({("2dmse", 6, 384): 0.5}, scale="toy", dataset="sts-avg")
    row = status_table([exp]).iloc[0]
    assert row.compared == 0 and pd.isna(row.within_fraction)
    assert pd.isna(row.largest_abs_delta) and row.largest_at == ""
    assert row.headline_ours == pytest.approx(0.5) and row.headline_published == pytest.approx(0.8)


def test_a_smoke_runs_row_says_smoke_and_gives_no_verdict():
    """The probe: a homedepot smoke run's rows said scale "toy", "0/36 within tolerance, largest |Δ|
    0.6725": a verdict on random tiny models."""
    cells = {("full", 2, 8): 0.505, ("full", 2, 16): 0.630, ("2dmse", 2, 8): 0.690}
    smoke = experiment(cells, scale="smoke")
    row = status_table([smoke]).iloc[0]
    assert row.scale == "smoke" and row.compared == 3
    assert pd.isna(row.within) and pd.isna(row.within_fraction) and pd.isna(row.largest_abs_delta)
    assert row.largest_at == ""  # the status CSV names no cell either
    shown = readable_status(status_table([smoke])).iloc[0]
    assert shown["scale"] == "smoke" and shown["within ±tolerance"].startswith("no verdict: a smoke run")
    assert shown["largest |Δ|"] == "–"
    assert "within" not in summary_line(smoke).split("(no verdict")[0] and "largest" not in summary_line(smoke)
    assert "<th>within</th>" not in comparisons_html([smoke])
    # ... while the same cells of a real run are judged.
    real = readable_status(status_table([experiment(cells)])).iloc[0]
    assert real["within ±tolerance"] == "2/3 (67%)" and "<th>within</th>" in comparisons_html([experiment(cells)])
    # in one table with a smoke row (whose missing count makes the column float), still a count
    mixed = readable_status(status_table([smoke, experiment(cells)]))
    assert mixed["within ±tolerance"].tolist()[1] == "2/3 (67%)"


def test_pareto_points_cost_and_seed_mean():
    rows = [{"experiment": "e", "track": "2dmse-sts", "variant": "full", "model": "m", "layer": 2, "dim": 8,
             "dataset": "d", "split": "test", "metric": "spearman_cosine", "value": v, "seed": s}
            for s, v in ((1, 0.4), (2, 0.6))]
    rows.append({**rows[0], "metric": "pearson_cosine", "value": 0.9})
    exp = Experiment("e", {"track": "2dmse-sts", "evaluation": {"main_metric": "spearman_cosine", "split": "test"}},
                     scores.frame(rows), PUBLISHED, {"d": "spearman_cosine"})
    points = pareto_points([exp], "d", "layers_x_dim")
    assert len(points) == 1 and points.score.iloc[0] == pytest.approx(0.5) and points.cost.iloc[0] == 16
    assert pareto_points([exp], "d", "bytes_per_doc").cost.iloc[0] == 32
    assert pareto_points([exp], "other", "bytes_per_doc").empty
    # one column order, with points or without (the points file's header)
    assert list(points.columns) == list(pareto_points([exp], "other", "layers_x_dim").columns) == [
        "experiment", "track", "variant", "layer", "dim", "cost", "score"]


ELECTRA_PUBLISHED = pd.DataFrame([
    {"model": "m-disc", "experiment": "stsb", "layer": layer, "dataset": "stsb-test", "metric": "spearman_cosine",
     "epoch": "dev-best", "value": value} for layer, value in ((0, 0.50), (1, 0.70), (2, 0.66), (3, 0.60))
])


def electra_experiment(published: pd.DataFrame = ELECTRA_PUBLISHED, select: str = "best") -> Experiment:
    rows = []
    for layer, dev, test in ((0, 0.40, 0.45), (1, 0.80, 0.705), (2, 0.75, 0.62)):
        for seed, shift in ((0, -0.01), (1, 0.01)):
            # the last epoch's model scores 0.1 below the kept one's
            for split, value in (("validation", dev), ("test", test), ("test-last-epoch", test - 0.1)):
                rows.append({"experiment": "el", "track": "electra", "variant": "truncated", "model": "m-disc",
                             "layer": layer, "dim": 64, "dataset": "sts-task", "split": split,
                             "metric": "spearman_cosine", "value": value + shift, "seed": seed})
        rows.append({"experiment": "el", "track": "electra", "variant": "truncated", "model": "m-disc",
                     "layer": layer, "dim": 64, "dataset": "sts-task", "split": "test", "metric": "parameters",
                     "value": 1000 * (layer + 1), "seed": 0})
    config = {"track": "electra", "scale": "paper", "models": ["m-disc"], "tasks": ["sts-task"],
              "evaluation": {"batch_size": 8}, "train": {"select": select},
              "reference": {"file": "x", "experiments": {"sts-task": "stsb"}, "tolerance": 0.01, "work": None}}
    return Experiment("el", config, scores.frame(rows), published, {"sts-task": "spearman_cosine"})


def test_electra_status_compares_layer_curves_and_dev_choice():
    row = status_table([electra_experiment()]).iloc[0]
    assert row.work == "Truncated ELECTRA"
    # Layers 0, 1, 2 both sides (deltas -0.05, +0.005, -0.04); layer 3 published only.
    assert (row.compared, row.within, row.published_only, row.ours_only) == (3, 1, 1, 0)
    assert row.largest_abs_delta == pytest.approx(0.05)
    assert row.largest_at == "task sts-task, model m-disc, layer 0, epoch dev-best"
    # Dev chooses layer 1; its test mean beside the published value at layer 1.
    assert row.headline_ours == pytest.approx(0.705) and "L1 (dev-chosen)" in row.headline_ours_cell
    assert row.headline_published == pytest.approx(0.70)


def test_electra_status_counts_each_published_cell_against_its_own_epoch():
    """N4: a last-epoch (archive) cell meets our last epoch's score, a final-table cell our dev-chosen
    epoch's; the headline never sets a last-epoch value beside the dev-chosen epoch's score."""
    from trimbench.report.scoreboard import comparison

    published = ELECTRA_PUBLISHED.assign(epoch=["dev-best", "last", "last", "dev-best"],
                                         value=[0.45, 0.605, 0.52, 0.60])
    long = comparison(electra_experiment(published)).set_index(["layer", "epoch"])
    assert long.loc[(0, "dev-best"), "ours"] == pytest.approx(0.45)   # kept epoch against the final table
    assert long.loc[(1, "last"), "ours"] == pytest.approx(0.605)      # last epoch against the archive
    assert long.loc[(2, "last"), "ours"] == pytest.approx(0.52)
    assert len(long) == 4 and (1, "dev-best") not in long.index       # each cell once, of its own kind
    row = status_table([electra_experiment(published)]).iloc[0]
    assert (row.compared, row.within, row.published_only, row.ours_only) == (3, 3, 1, 0)
    # dev chooses layer 1, whose published value is the archive's last epoch: not beside ours
    assert row.headline_ours == pytest.approx(0.705) and pd.isna(row.headline_published)
    # an experiment keeping the last epoch has no dev-chosen score for the final table's cells
    last = comparison(electra_experiment(published, select="last")).set_index(["layer", "epoch"])
    assert pd.isna(last.loc[(0, "dev-best"), "ours"]) and last.loc[(1, "last"), "ours"] == pytest.approx(0.605)


def test_retrieval_status_joins_starbucks_dl_and_beir_cells():
    """N5: Starbucks' Table A1 DL19 / DL20 nDCG@10 and Table A2's BEIR nDCG@10 join the datasets the
    experiment evaluates, each against our cell of that dataset and metric; A2's datasets it does not
    evaluate (quora) stay out of its status."""
    from conftest import REPO

    published = pd.read_csv(REPO / "reference" / "2dmse_retrieval.csv")
    cells = [("separate", 2, 32, "trec-dl-2019", "ndcg@10", 0.4599),
             ("separate", 2, 32, "trec-dl-2020", "ndcg@10", 0.40),
             ("starbucks-2dmse", 12, 768, "scifact", "ndcg@10", 0.3863),
             ("starbucks-2dmse", 12, 768, "msmarco", "mrr@10", 0.3185)]
    rows = [{"experiment": "r", "track": "2dmse-retrieval", "variant": v, "model": "m", "layer": layer, "dim": dim,
             "dataset": ds, "split": "dev", "metric": metric, "value": value}
            for v, layer, dim, ds, metric, value in cells]
    config = {"track": "2dmse-retrieval", "scale": "paper", "methods": ["separate", "starbucks-2dmse"],
              "evaluation": {"datasets": ["msmarco", "trec-dl-2019", "trec-dl-2020", "scifact"],
                             "average_name": "beir-avg", "main_metric": "mrr@10", "split": "dev"},
              "reference": {"variant": "starbucks", "tolerance": 0.01, "work": None, "dataset": "msmarco"}}
    exp = Experiment("r", config, scores.frame(rows), published)
    long = comparison(exp).set_index(["dataset", "metric", "layer", "method", "dim"])
    assert long.loc[("trec-dl-2020", "ndcg@10", 2, "BERT-S", 32), "published"] == pytest.approx(0.4826)
    assert set(long.index.get_level_values("dataset")) == {"msmarco", "trec-dl-2019", "trec-dl-2020", "scifact"}
    row = status_table([exp]).iloc[0]
    # 6 sizes x 2 methods on each of the 4 datasets published; 4 of ours joined, 3 within 0.01
    assert (row.compared, row.within, row.published_only) == (4, 3, 48 - 4)
    assert row.largest_at == "dataset trec-dl-2020, metric ndcg@10, layer 2, method BERT-S, dim 32"


def test_electra_pareto_points_one_line_per_model():
    points = pareto_points([electra_experiment()], "sts-task", "layers_x_dim")
    assert list(points.variant.unique()) == ["m-disc"] and list(points.cost) == [0, 64, 128]
    assert points.score.tolist() == pytest.approx([0.45, 0.705, 0.62])


def test_retrieval_experiment_compares_on_its_reference_dataset():
    """Starbucks' published BERT-2DMSE cells join our starbucks-2dmse, never the seed's 2dmse."""
    from conftest import REPO

    published = pd.read_csv(REPO / "reference" / "2dmse_retrieval.csv")
    rows = [{"experiment": "r", "track": "2dmse-retrieval", "variant": v, "model": "m", "layer": layer, "dim": dim,
             "dataset": ds, "split": "dev", "metric": "mrr@10", "value": value}
            for v, layer, dim, ds, value in [("separate", 2, 32, "msmarco", 0.2),
                                             ("starbucks-2dmse", 12, 768, "msmarco", 0.30),
                                             ("2dmse", 12, 768, "msmarco", 0.31), ("2dmse", 12, 768, "scifact", 0.6)]]
    config = {"track": "2dmse-retrieval", "scale": "paper", "methods": ["separate", "2dmse", "starbucks-2dmse"],
              "evaluation": {"datasets": ["msmarco", "scifact"], "average_name": "sts-avg", "main_metric": "mrr@10",
                             "split": "dev"},
              "reference": {"variant": "starbucks", "tolerance": 0.01, "work": None, "dataset": "msmarco"}}
    exp = Experiment("r", config, scores.frame(rows), published)
    row = status_table([exp]).iloc[0]
    assert row.work == "2DMSE retrieval" and (row.compared, row.within) == (2, 1)
    long = comparison(exp).set_index(["dataset", "metric", "layer", "method", "dim"])
    assert "BERT-S" in long.index.get_level_values("method")
    assert long.loc[("msmarco", "mrr@10", 12, "BERT-2DMSE", 768), "delta"] == pytest.approx(0.30 - 0.3185)
    # the seed's 2DMSE has no published table
    assert pd.isna(long.loc[("msmarco", "mrr@10", 12, "2DMSE", 768), "published"])
    assert row.largest_abs_delta == pytest.approx(0.0185)
    assert row.headline_ours == pytest.approx(0.30) and row.headline_published == pytest.approx(0.3185)
    assert row.headline_ours_cell.startswith("BERT-2DMSE L12 d768")


def test_the_bm25_baseline_is_a_status_row_against_pyserinis_published_bm25(tmp_path):
    """Our BM25 on SciFact test (flat: the default index) against pyserini 2cr's bm25-flat row."""
    from pathlib import Path

    from trimbench.config.prepare import load_file
    from trimbench.report.scoreboard import bm25_experiments

    repo = Path(__file__).resolve().parents[2]
    config = load_file(repo / "configs" / "mini.yaml", overrides={"only": "mini-retrieval"}, workdir=repo)
    exp_config = config["experiments"]["mini-retrieval"]
    ours = {"ndcg@10": 0.6789, "recall@100": 0.9253, "recall@10": 0.5, "mrr@10": 0.6457}
    path = tmp_path / "bm25.parquet"
    scores.write(scores.frame([{"experiment": "mini-retrieval", "variant": "bm25", "dataset": "scifact",
                                "split": "test", "metric": m, "value": v} for m, v in ours.items()]), path)
    [exp] = bm25_experiments(["mini-retrieval"], [exp_config], [str(path)], str(repo / "reference" / "bm25.csv"),
                             [["scifact"]])
    long = comparison(exp).set_index("metric")
    # pyserini/2cr/beir.yaml bm25-flat scifact: nDCG@10 0.6789, R@100 0.9253, R@1000 0.9767
    assert long.loc["ndcg@10", "published"] == 0.6789 and long.loc["recall@100", "published"] == 0.9253
    assert pd.isna(long.loc["recall@1000", "ours"]) and pd.isna(long.loc["mrr@10", "published"])
    row = status_table([exp]).iloc[0]
    assert row["experiment"] == "mini-retrieval bm25" and row["work"] == "BM25 (pyserini two-click reproductions)"
    assert (row["compared"], row["within"], row["published_only"]) == (2, 2, 1)
    assert (row["headline_ours"], row["headline_published"]) == (0.6789, 0.6789)
    exp_config = {**exp_config, "bm25": {**exp_config["bm25"], "fields": "multifield"}}
    [multi] = bm25_experiments(["mini-retrieval"], [exp_config], [str(path)], str(repo / "reference" / "bm25.csv"),
                               [["scifact"]])
    assert status_table([multi]).iloc[0]["headline_published"] == 0.6647  # bm25-multifield's row


def _mini_bm25_row(tmp_path, ours: dict, extra_rows: tuple = ()):
    """mini-retrieval's BM25 row (SciFact test, flat) with our ``ours`` {metric: value} on SciFact."""
    from trimbench.config.prepare import load_file
    from trimbench.report.scoreboard import bm25_experiments

    config = load_file(REPO / "configs" / "mini.yaml", overrides={"only": "mini-retrieval"}, workdir=REPO)
    rows = [{"experiment": "mini-retrieval", "variant": "bm25", "dataset": "scifact", "split": "test",
             "metric": metric, "value": value} for metric, value in ours.items()]
    scores.write(scores.frame(rows + list(extra_rows)), tmp_path / "bm25.parquet")
    [exp] = bm25_experiments(["mini-retrieval"], [config["experiments"]["mini-retrieval"]],
                             [str(tmp_path / "bm25.parquet")], str(REPO_BM25), [["scifact"]])
    return exp


def test_bm25_cells_are_within_a_thousandth_of_pyserinis_or_not(tmp_path):
    """BM25 is deterministic: pyserini's four decimals are met within ±0.001, and a difference of
    0.005 (another tokenisation or corpus) is a miss."""
    exp = _mini_bm25_row(tmp_path, {"ndcg@10": 0.6839, "recall@100": 0.9253})  # published 0.6789, 0.9253
    row = status_table([exp]).iloc[0]
    assert (row["compared"], row["within"]) == (2, 1)
    exp = _mini_bm25_row(tmp_path, {"ndcg@10": 0.6799, "recall@100": 0.9243})  # 0.001 off each: still within
    assert status_table([exp]).iloc[0]["within"] == 2


def test_bm25_cells_of_datasets_the_experiment_does_not_evaluate_are_left_out(tmp_path):
    """Our BM25 table's averages (beir-avg, beir-13) and other datasets are no cells of the row."""
    average = {"experiment": "mini-retrieval", "variant": "bm25", "dataset": "beir-avg", "split": "test",
               "metric": "ndcg@10", "value": 0.5}
    other = {**average, "dataset": "nfcorpus", "value": 0.3218}  # published, but not evaluated here
    exp = _mini_bm25_row(tmp_path, {"ndcg@10": 0.6789, "recall@100": 0.9253}, (average, other))
    assert comparison(exp)["dataset"].unique().tolist() == ["scifact"]
    row = status_table([exp]).iloc[0]
    assert (row["compared"], row["ours_only"], row["published_only"]) == (2, 0, 1)


@pytest.mark.parametrize(("preset", "compared", "ours_only"), [
    # Tevatron's MS MARCO (titled passages): its DL19 / DL20 are no cells of pyserini's untitled index (N8)
    ("2dmse-retrieval.yaml", {"scifact", "nfcorpus", "fiqa", "arguana", "scidocs", "trec-covid"},
     {"msmarco", "trec-dl-2019", "trec-dl-2020"}),
    # BeIR's MS MARCO is pyserini's msmarco-v1-passage: dev, DL19 and DL20 compared
    ("splade.yaml", {"msmarco-dev", "trec-dl-2019", "trec-dl-2020", "arguana", "quora", "scifact"}, set()),
])
def test_a_bm25_row_meets_pyserinis_numbers_only_on_their_collection(tmp_path, preset, compared, ours_only):
    """Each preset's BM25 row is joined by collection, not by dataset name: a cell is compared only
    where the dataset is BEIR-format data (the corpora pyserini published on)."""
    import yaml

    from trimbench.config.prepare import bm25_published_datasets
    from trimbench.report.scoreboard import bm25_experiments

    config = yaml.safe_load((REPO / "configs" / preset).read_text())
    name, exp = next(iter(config["experiments"].items()))
    evaluated = exp["evaluation"]["datasets"]
    assert compared | ours_only <= set(evaluated)
    published_on = bm25_published_datasets(exp, config["datasets"])
    metrics = ("ndcg@10", "recall@1000", "mrr@10")
    rows = [{"experiment": name, "variant": "bm25", "dataset": dataset, "split": "test", "metric": metric,
             "value": 0.5} for dataset in evaluated for metric in metrics]
    scores.write(scores.frame(rows), tmp_path / "bm25.parquet")
    config_of = {**exp, "bm25": {"fields": "flat"}}
    [row] = bm25_experiments([name], [config_of], [str(tmp_path / "bm25.parquet")], str(REPO_BM25), [published_on])
    long = comparison(row)
    both = set(long.dropna(subset=["ours", "published"])["dataset"])
    assert compared <= both and not both & ours_only
    assert long[long["dataset"].isin(ours_only)]["published"].isna().all()


def _cells(page: str, tag: str) -> list[list[str]]:
    """Each row's <th> or <td> texts of an HTML table."""
    import re

    return [re.findall(rf"<{tag}>([^<]*)</{tag}>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page, flags=re.S)
            if f"<{tag}>" in row]


def test_status_page_is_the_readable_table_then_the_figure_with_its_caption():
    """The report's first page: one row per experiment as people read it (no index column, no border,
    the class the report styles), the figure with its caption escaped into alt and figcaption."""
    from trimbench.report.scoreboard import status_html

    cells = {("full", 2, 8): 0.505, ("full", 2, 16): 0.630, ("2dmse", 2, 8): 0.690}
    page = status_html(status_table([experiment(cells)]), "data:image/png;base64,AAAA", 'score <vs> cost & "dim"')
    body = page[page.index("<body>") + len("<body>"):page.index("</body>")]
    assert page.startswith("<!DOCTYPE html>") and body.startswith(
        '<div id="reproduction-status">\n<h2>Reproduction status</h2>\n<table class="dataframe reproduction-status">\n')
    assert _cells(body, "th") == [["work", "experiment", "scale", "within ±tolerance", "largest |Δ|", "ours",
                                   "published"]]
    # |Δ| 0.005, 0.03, 0.01 at tolerance 0.01; the headline: 2DMSE at our L2 d8, the work's L12 d768
    assert _cells(body, "td") == [["2DMSE STS v1", "e", "paper", "2/3 (67%)", "0.0300 (layer 2, method BERT, dim 16)",
                                   "0.6900 (2DMSE L2 d8 sts-avg7)", "0.800 (2DMSE L12 d768 sts-avg7)"]]
    caption = "score &lt;vs&gt; cost &amp; &quot;dim&quot;"
    assert body.endswith(
        f'</table>\n<figure><img id="status-figure" alt="{caption}" src="data:image/png;base64,AAAA" '
        f'style="max-width:100%"><figcaption>{caption}</figcaption></figure>\n</div>')
    # no caption given: an empty one
    assert status_html(status_table([experiment(cells)]), "data:,").endswith(
        '<img id="status-figure" alt="" src="data:," style="max-width:100%"><figcaption></figcaption></figure>\n'
        '</div></body></html>\n')
    # without a figure: the table closes the block
    bare = status_html(status_table([experiment(cells)]))
    assert "<figure>" not in bare and bare.endswith("</table>\n</div></body></html>\n")


def test_experiments_read_each_ones_scores_and_published_numbers_in_order(tmp_path):
    """The scoreboard and Pareto jobs' experiments: each name with its own config, score table, reference
    file and main metrics; lists of different lengths (a rule's params out of step) are an error."""
    from trimbench.report.scoreboard import experiments

    names, configs, metrics, paths, references = [], [], [], [], []
    for i, name in enumerate(("first", "second")):
        frame = scores.frame([{"experiment": name, "track": "2dmse-sts", "variant": "full", "model": "m", "layer": 2,
                               "dim": 8, "dataset": f"d{i}", "split": "test", "metric": "spearman_cosine",
                               "value": 0.5 + i / 10}])
        scores.write(frame, tmp_path / f"{name}.parquet")
        PUBLISHED.assign(value=PUBLISHED["value"] - i / 100).to_csv(tmp_path / f"{name}.csv", index=False)
        names.append(name)
        configs.append({"track": "2dmse-sts", "scale": "paper", "i": i})
        metrics.append({f"d{i}": "spearman_cosine"})
        paths.append(str(tmp_path / f"{name}.parquet"))
        references.append(str(tmp_path / f"{name}.csv"))
    read = experiments(names, configs, metrics, paths, references)
    assert [(e.name, e.config["i"], e.main_metrics) for e in read] == [("first", 0, {"d0": "spearman_cosine"}),
                                                                      ("second", 1, {"d1": "spearman_cosine"})]
    for i, exp in enumerate(read):
        assert exp.scores[["experiment", "dataset"]].values.tolist() == [[names[i], f"d{i}"]]
        assert exp.scores["value"].tolist() == pytest.approx([0.5 + i / 10])
        assert exp.published["value"].tolist() == pytest.approx((PUBLISHED["value"] - i / 100).tolist())
        assert list(exp.published.columns) == list(PUBLISHED.columns)
    for short in range(5):
        lists = [names, configs, metrics, paths, references]
        lists[short] = lists[short][:1]
        with pytest.raises(ValueError, match="zip"):
            experiments(*lists)


HOMEDEPOT_PUBLISHED = pd.DataFrame([
    {"model": model, "method": method, "dim": dim, "dataset": "home_depot-test", "metric": metric, "value": value}
    for model, method, dim, metric, value in [
        ("MiniLM", "fine-tuned-matryoshka", 384, "recall@10", 0.66),
        ("MiniLM", "fine-tuned-matryoshka", 48, "recall@10", 0.63),
        ("MiniLM", "fine-tuned-matryoshka", 384, "mrr@10", 0.37), ("MiniLM", "pretrained", 384, "recall@10", 0.58),
        ("other-model", "fine-tuned-matryoshka", 384, "recall@10", 0.9)]
])


def test_homedepot_status_joins_the_write_ups_cells_of_its_model():
    """Home Depot on the scoreboard: our deepest layer's cells against the write-up's of the reference
    model (never another model's), the headline recall@10 of the last method at the widest dim."""
    rows = [{"experiment": "h", "track": "homedepot", "variant": variant, "model": "m", "layer": layer, "dim": dim,
             "dataset": "home_depot-test", "split": "test", "metric": metric, "value": value}
            for variant, layer, dim, metric, value in [
                ("pretrained", 6, 384, "recall@10", 0.575), ("matryoshka", 6, 384, "recall@10", 0.64),
                ("matryoshka", 6, 48, "recall@10", 0.632), ("matryoshka", 6, 192, "recall@10", 0.65),
                ("matryoshka", 3, 384, "recall@10", 0.1)]]
    config = {"track": "homedepot", "scale": "paper", "model": "m", "methods": ["pretrained", "matryoshka"],
              "reference": {"model": "MiniLM", "tolerance": 0.01, "work": None}}
    exp = Experiment("h", config, scores.frame(rows), HOMEDEPOT_PUBLISHED, {"home_depot-test": "recall@10"})
    long = comparison(exp).set_index(["method", "metric", "dim"])
    assert set(long["model"]) == {"MiniLM"} and len(long) == 5
    assert long.loc[("fine-tuned-matryoshka", "recall@10", 384), "delta"] == pytest.approx(0.64 - 0.66)
    assert long.loc[("fine-tuned-matryoshka", "recall@10", 48), "delta"] == pytest.approx(0.632 - 0.63)
    assert long.loc[("pretrained", "recall@10", 384), "ours"] == pytest.approx(0.575)
    assert pd.isna(long.loc[("fine-tuned-matryoshka", "mrr@10", 384), "ours"])
    assert pd.isna(long.loc[("fine-tuned-matryoshka", "recall@10", 192), "published"])
    row = status_table([exp]).iloc[0]
    assert (row.work, row.compared, row.within, row.ours_only, row.published_only) == ("Home Depot", 3, 2, 1, 1)
    assert row.largest_abs_delta == pytest.approx(0.02)
    assert row.headline_ours == pytest.approx(0.64) and row.headline_published == pytest.approx(0.66)
    assert row.headline_ours_cell == "MiniLM fine-tuned-matryoshka d384 recall@10" == row.headline_published_cell


REPO_BM25 = Path(__file__).resolve().parents[2] / "reference" / "bm25.csv"
POINT_COLUMNS = ["experiment", "track", "variant", "layer", "dim", "cost", "score"]


def test_pareto_points_skip_experiments_without_the_dataset_and_read_each_ones_split():
    """An experiment not scored on the dataset, a track without a layer x dim cost (SPLADE) or one with
    no cell on the dataset's main metric and split is skipped, never the end of the list; a retrieval
    experiment's cells are its evaluation split's (dev), not test's. No point: the CSV's header still."""
    def exp(name, track, split, values, dataset="d", main_metrics=None):
        rows = [{"experiment": name, "track": track, "variant": variant, "model": "m", "layer": layer, "dim": dim,
                 "dataset": dataset, "split": s, "metric": "ndcg@10", "value": value}
                for variant, layer, dim, s, value in values]
        config = {"track": track, "evaluation": {"main_metric": "ndcg@10", **({"split": split} if split else {})}}
        return Experiment(name, config, scores.frame(rows), PUBLISHED,
                          {dataset: "ndcg@10"} if main_metrics is None else main_metrics)

    retrieval = exp("b-retrieval", "2dmse-retrieval", "dev", [("2dmse", 2, 8, "dev", 0.3), ("2dmse", 2, 8, "test", 0.9),
                                                               ("2dmse", 4, 16, "dev", 0.5)])
    sts = exp("a-sts", "2dmse-sts", None, [("full", 1, 4, "test", 0.7), ("full", 1, 4, "dev", 0.1)])
    skipped = [exp("c-splade", "splade", None, [("flops", 2, 8, "test", 0.6)]),
               exp("d-elsewhere", "2dmse-sts", None, [("full", 2, 8, "test", 0.6)], main_metrics={"other": "ndcg@10"}),
               exp("e-no-cell", "2dmse-sts", "test", [("full", 2, 8, "dev", 0.6)])]
    for order in ([*skipped, retrieval, sts], [skipped[2], retrieval, skipped[0], skipped[1], sts]):
        points = pareto_points(order, "d", "layers_x_dim")
        assert sorted(points.columns) == sorted(POINT_COLUMNS) and points.index.tolist() == [0, 1, 2]
        assert points[["experiment", "layer", "dim"]].values.tolist() == [["a-sts", 1, 4], ["b-retrieval", 2, 8],
                                                                          ["b-retrieval", 4, 16]]
        assert points.score.tolist() == pytest.approx([0.7, 0.3, 0.5]) and points.cost.tolist() == [4, 16, 64]
    none = pareto_points(skipped, "d", "bytes_per_doc")
    assert list(none.columns) == POINT_COLUMNS and none.empty


def test_summary_counts_a_cell_both_sides_have_whatever_its_keys_and_the_tolerance_inclusively():
    """A cell is compared when ours and published are numbers (a key left empty does not drop it);
    |Δ| at the tolerance plus its hair of slack is within, a hair more is not."""
    long = pd.DataFrame({"method": ["a", None, "c", "d"], "ours": [0.01 + 1e-9, 0.5, 0.7, None],
                         "published": [0.0, 0.5, 0.7 - 0.0100011, 0.4]})
    long["delta"] = long["ours"] - long["published"]
    summary = summarise(long, 0.01)
    assert (summary["compared"], summary["within"], summary["published_only"]) == (3, 2, 1)
    assert summary["largest_at"] == "method c" and summary["largest_abs_delta"] == pytest.approx(0.0100011)


def test_a_missing_number_is_shown_as_a_dash():
    from trimbench.report.scoreboard import _fmt

    assert [_fmt(None), _fmt(float("nan")), _fmt(0.12345), _fmt(0.5, 3)] == ["–", "–", "0.1235", "0.500"]


def test_status_lines_in_full_a_judged_a_smoke_and_a_toy_run():
    """The status table as people read it and each experiment's summary line, word for word: a judged
    run on local copies; a smoke run (no verdict, no headline of ours: it trained no 2DMSE); a toy run
    with no cell in common and no published headline (its reference variant v2 publishes nothing here)."""
    from dataclasses import replace

    judged = experiment({("full", 2, 8): 0.505, ("full", 2, 16): 0.630, ("2dmse", 2, 8): 0.690})
    judged.config["_local_copies"] = ["model m: /copies/m", "dataset d: /copies/d"]
    smoke = replace(experiment({("full", 2, 8): 0.505}, scale="smoke"), name="s")
    toy = replace(experiment({("2dmse", 6, 384): 0.5}, scale="toy", dataset="sts-avg"), name="t")
    toy.config["reference"]["variant"] = "v2"
    on_hub = replace(experiment({("full", 2, 8): 0.505}), name="f")
    local = readable_status(status_table([on_hub, judged]))
    assert list(local.columns) == ["work", "experiment", "scale", "within ±tolerance", "largest |Δ|", "ours",
                                   "published", "run on local copies"]
    assert local.values.tolist() == [
        ["2DMSE STS v1", "e", "paper", "2/3 (67%)", "0.0300 (layer 2, method BERT, dim 16)",
         "0.6900 (2DMSE L2 d8 sts-avg7)", "0.800 (2DMSE L12 d768 sts-avg7)",
         "model m: /copies/m; dataset d: /copies/d"],
        ["2DMSE STS v1", "f", "paper", "1/1 (100%)", "0.0050 (layer 2, method BERT, dim 8)", "–",
         "0.800 (2DMSE L12 d768 sts-avg7)", "–"]]
    shown = readable_status(status_table([toy, smoke]))
    assert list(shown.columns) == ["work", "experiment", "scale", "within ±tolerance", "largest |Δ|", "ours",
                                   "published"]
    assert shown.values.tolist() == [
        ["2DMSE STS v1", "s", "smoke", NO_VERDICT, "–", "–", "0.800 (2DMSE L12 d768 sts-avg7)"],
        ["2DMSE STS v2", "t", "toy", "no common cell", "–", "0.5000 (2DMSE L6 d384 sts-avg)", "–"]]
    # published only: BERT L2 d16, 2DMSE L2 d8 and L12 d768, MSE L2 d8 beside the smoke run's one cell
    assert [summary_line(exp) for exp in (judged, smoke, toy)] == [
        "2DMSE STS v1 (e, paper scale): 3 cells compared, 2 within ±0.01, largest |Δ| 0.0300 at layer 2, method BERT, "
        "dim 16; 0 cells ours only, 2 published only.",
        f"2DMSE STS v1 (s, smoke scale): 1 cells compared ({NO_VERDICT}); 0 cells ours only, 4 published only.",
        "2DMSE STS v2 (t, toy scale): 0 cells compared; 1 cells ours only, 0 published only."]
    # the comparison given (the comparisons page has it already): its one cell, BERT L2 d16, |0.630 - 0.600|
    assert summary_line(judged, comparison(judged).query("method == 'BERT' and dim == 16")) == (
        "2DMSE STS v1 (e, paper scale): 1 cells compared, 0 within ±0.01, largest |Δ| 0.0300 at layer 2, method BERT, "
        "dim 16; 0 cells ours only, 0 published only.")


def test_bm25_headline_is_empty_where_a_side_lacks_the_main_metric_and_its_lists_must_agree(tmp_path):
    """A BM25 row whose main metric neither side has shows no headline (every field empty, no error); one
    pyserini publishes but we did not score shows pyserini's alone; the long table is renumbered."""
    from trimbench.report.scoreboard import BM25, bm25_experiments, headline

    published = pd.DataFrame({"variant": ["flat", "flat", "multifield"], "dataset": ["scifact"] * 3,
                              "metric": ["ndcg@10", "recall@100", "ndcg@10"], "value": [0.6789, 0.9253, 0.6647]})
    config = {"track": BM25, "scale": "paper", "bm25": {"fields": "flat"},
              "evaluation": {"datasets": ["scifact"], "main_metric": "mrr@10"},
              "reference": {"work": "BM25", "tolerance": 0.001}}
    ours = scores.frame([{"experiment": "x", "variant": "bm25", "dataset": "scifact", "split": "test",
                          "metric": "recall@100", "value": 0.92}])
    exp = Experiment("x bm25", config, ours, published)
    assert headline(exp) == {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
    ndcg = Experiment("x bm25", {**config, "evaluation": {**config["evaluation"], "main_metric": "ndcg@10"}}, ours,
                      published)
    assert headline(ndcg) == {"ours": None, "ours_cell": "", "published": 0.6789,
                              "published_cell": "BM25 flat ndcg@10 scifact"}
    long = comparison(ndcg)
    assert list(long.columns) == ["dataset", "metric", "ours", "published", "delta"]
    assert long.index.tolist() == [0, 1] and long.metric.tolist() == ["ndcg@10", "recall@100"]
    path = tmp_path / "bm25.parquet"
    scores.write(ours, path)
    with pytest.raises(ValueError, match="zip"):
        bm25_experiments(["x", "y"], [config], [str(path)], str(REPO_BM25), [["scifact"], ["scifact"]])


# --- ELECTRA: headline and comparison on a two-task, two-model grid ---------------------------


def electra_two_by_two(select: str = "best", tasks: tuple = ("zz-task", "aa-task"),
                       published: pd.DataFrame | None = None) -> Experiment:
    """Two tasks and two models (the config's first: zz-task, m-gen; neither first in sorted order),
    layers 0..2, one seed. Dev chooses aa/m-disc k=0, aa/m-gen k=1, zz/m-disc k=2, zz/m-gen k=1; each
    cell's test score is its base + 0.01 k, the last epoch's 0.1 below."""
    base = {("aa-task", "m-disc"): 0.30, ("aa-task", "m-gen"): 0.40, ("zz-task", "m-disc"): 0.50,
            ("zz-task", "m-gen"): 0.60}
    chosen = {("aa-task", "m-disc"): 0, ("aa-task", "m-gen"): 1, ("zz-task", "m-disc"): 2, ("zz-task", "m-gen"): 1}
    rows = []
    for (task, model), score in base.items():
        for layer in range(3):
            for split, value in (("validation", 0.9 if layer == chosen[(task, model)] else 0.5),
                                 ("test", score + 0.01 * layer), ("test-last-epoch", score + 0.01 * layer - 0.1)):
                rows.append({"experiment": "el", "track": "electra", "variant": "truncated", "model": model,
                             "layer": layer, "dim": 64, "dataset": task, "split": split,
                             "metric": "spearman_cosine", "value": value, "seed": 0})
    if published is None:  # the final table's value at zz/m-gen's chosen k=1, the archive's at its k=2
        published = pd.DataFrame({"model": "m-gen", "experiment": "stsb-z", "layer": [1, 2],
                                  "dataset": "stsb-test", "metric": "spearman_cosine", "epoch": ["dev-best", "last"],
                                  "value": [0.55, 0.58]})
    config = {"track": "electra", "scale": "paper", "models": ["m-gen", "m-disc"], "tasks": list(tasks),
              "evaluation": {"batch_size": 8}, "train": {"select": select},
              "reference": {"file": "x", "experiments": {"aa-task": "stsb-a", "zz-task": "stsb-z"},
                            "tolerance": 0.01, "work": None}}
    return Experiment("el", config, scores.frame(rows), published,
                      {"aa-task": "spearman_cosine", "zz-task": "spearman_cosine"})


def test_electra_headline_is_the_configs_first_task_and_model_at_devs_layer():
    from trimbench.electra.scoreboard import headline

    assert headline(electra_two_by_two()) == pytest.approx({
        "ours": 0.61, "ours_cell": "m-gen L1 (dev-chosen) zz-task", "published": 0.55,
        "published_cell": "m-gen L1 zz-task"})
    # a first task without scores: the first (task, model) of the dev choice, sorted
    assert headline(electra_two_by_two(tasks=("no-task", "zz-task"))) == pytest.approx({
        "ours": 0.30, "ours_cell": "m-disc L0 (dev-chosen) aa-task", "published": None, "published_cell": ""})
    # an experiment keeping its last epoch: the final table's (dev-chosen epoch's) value meets no score of ours
    assert headline(electra_two_by_two(select="last")) == pytest.approx({
        "ours": 0.61, "ours_cell": "m-gen L1 (dev-chosen) zz-task", "published": None, "published_cell": ""})
    # an experiment without scores yet: an empty headline, no cell named
    e = electra_two_by_two()
    assert headline(Experiment(e.name, e.config, scores.frame([]), e.published, e.main_metrics)) == {
        "ours": None, "ours_cell": "", "published": None, "published_cell": ""}


def test_electra_comparison_sets_our_unpublished_cells_as_the_kept_epoch():
    """Each of our 12 cells once: against the published cell of its kind, else as the epoch the
    experiment keeps (dev-best: the test mean; last: the last epoch's); a published cell with no
    score of its kind stays, ours empty."""
    from trimbench.electra.scoreboard import comparison

    def expected(select):
        rows = []
        for task, model, score in (("aa-task", "m-disc", 0.30), ("aa-task", "m-gen", 0.40),
                                   ("zz-task", "m-disc", 0.50), ("zz-task", "m-gen", 0.60)):
            for layer in range(3):
                kept, last = score + 0.01 * layer, score + 0.01 * layer - 0.1
                if (task, model, layer) == ("zz-task", "m-gen", 1):
                    rows.append((task, model, layer, "dev-best", kept if select == "best" else np.nan, 0.55))
                elif (task, model, layer) == ("zz-task", "m-gen", 2):
                    rows.append((task, model, layer, "last", last, 0.58))
                elif select == "best":
                    rows.append((task, model, layer, "dev-best", kept, np.nan))
                else:
                    rows.append((task, model, layer, "last", last, np.nan))
        frame = pd.DataFrame(rows, columns=["task", "model", "layer", "epoch", "ours", "published"])
        return frame.assign(delta=frame["ours"] - frame["published"])

    for select in ("best", "last"):
        long = comparison(electra_two_by_two(select=select))
        pd.testing.assert_frame_equal(long, expected(select), check_dtype=False)


# --- the comparisons page, word for word ------------------------------------------------------


def test_comparisons_page_word_for_word_the_tolerance_inclusive_and_a_run_without_common_cells():
    """One judged run whose |Δ| are exactly the tolerance (within), the tolerance plus its hair of slack
    (within) and a hair more (not), then a toy run with no cell in common: each run's heading, summary
    line and table (no index, no border) or the sentence saying so, one after the other."""
    from dataclasses import replace

    published = pd.DataFrame([{"variant": "v1", "method": "BERT", "layer": 2, "dim": dim, "dataset": "sts-avg7",
                               "metric": "spearman_cosine", "value": 0.0} for dim in (8, 16, 32)])
    judged = replace(experiment({("full", 2, 8): 0.01, ("full", 2, 16): 0.01 + 1e-9, ("full", 2, 32): 0.01 + 3e-9}),
                     published=published, name="e <1>")
    toy = replace(experiment({("2dmse", 6, 384): 0.5}, scale="toy", dataset="sts-avg"), name="t")
    page = comparisons_html([judged, toy])
    body = page[page.index("<body>") + len("<body>"):page.index("</body>")]
    first, second = body.split("</table>")
    assert first.startswith("<h3>e &lt;1&gt;</h3><p>2DMSE STS v1 (e &lt;1&gt;, paper scale): 3 cells compared, "
                            "2 within ±0.01, largest |Δ| 0.0100 at layer 2, method BERT, dim 32; 0 cells ours only, "
                            '0 published only.</p><table class="dataframe">\n')
    assert _cells(first, "th") == [["layer", "method", "dim", "ours", "published", "delta", "within"]]
    assert sorted(_cells(first, "td"), key=lambda row: int(row[2])) == [
        ["2", "BERT", "8", "0.0100", "0.0000", "0.0100", "yes"],
        ["2", "BERT", "16", "0.0100", "0.0000", "0.0100", "yes"],
        ["2", "BERT", "32", "0.0100", "0.0000", "0.0100", "no"]]
    assert second == ("<h3>t</h3><p>2DMSE STS v1 (t, toy scale): 0 cells compared; 1 cells ours only, 0 published "
                      "only.</p><p>No cell in common with the published grid.</p>")


# --- 2DMSE: the STS headline's cell and method, a toy retrieval run's comparison -------------


def _sts_headline_of(config_methods, ours_rows, published_rows, average="sts-avg7"):
    """trimbench.dense.scoreboard.sts_headline of an STS experiment (reference variant v1) from rows
    (variant, layer, dim, dataset, metric, value) and (variant, method, layer, dim, dataset, metric, value)."""
    from trimbench.dense.scoreboard import sts_headline

    ours = scores.frame([{"variant": v, "layer": layer, "dim": dim, "dataset": ds, "metric": metric, "value": value}
                         for v, layer, dim, ds, metric, value in ours_rows])
    published = pd.DataFrame(published_rows, columns=["variant", "method", "layer", "dim", "dataset", "metric",
                                                      "value"])
    config = {"track": "2dmse-sts", "methods": config_methods, "reference": {"variant": "v1"},
              "evaluation": {"average_name": average, "main_metric": "spearman_cosine"}}
    return sts_headline(Experiment("e", config, ours, published))


def test_sts_headline_is_the_deepest_layers_widest_dim_of_the_method_average_and_metric():
    """Ours and the work's cell at the deepest layer, then its widest dim, of 2DMSE on the STS average
    in the main metric: a wider dim at a shallower layer, a deeper layer of another method, dataset,
    metric or reference variant all stay out."""
    spearman = "spearman_cosine"
    ours = [("2dmse", 12, 768, "sts-avg7", spearman, 0.81), ("2dmse", 12, 384, "sts-avg7", spearman, 0.79),
            ("2dmse", 6, 1024, "sts-avg7", spearman, 0.5), ("2dmse", 24, 768, "sts-b", spearman, 0.2),
            ("2dmse", 24, 768, "sts-avg7", "pearson_cosine", 0.3), ("full", 24, 768, "sts-avg7", spearman, 0.9)]
    published = [("v1", "2DMSE", 12, 768, "sts-avg7", spearman, 0.80),
                 ("v1", "2DMSE", 12, 512, "sts-avg7", spearman, 0.78),
                 ("v1", "2DMSE", 6, 1024, "sts-avg7", spearman, 0.6),
                 ("v1", "2DMSE", 24, 768, "sts-b", spearman, 0.1),
                 ("v1", "2DMSE", 24, 768, "sts-avg7", "pearson_cosine", 0.11),
                 ("v1", "BERT", 24, 768, "sts-avg7", spearman, 0.7),
                 ("v2", "2DMSE", 24, 768, "sts-avg7", spearman, 0.12)]
    assert _sts_headline_of(["pretrained", "full", "2dmse"], ours, published) == {
        "ours": 0.81, "ours_cell": "2DMSE L12 d768 sts-avg7", "published": 0.80,
        "published_cell": "2DMSE L12 d768 sts-avg7"}
    # a toy run's own average (sts-avg), which the work never published: the work's cell on its datasets
    toy = [(v, layer, dim, ds.replace("sts-avg7", "sts-avg"), metric, value)
           for v, layer, dim, ds, metric, value in ours]
    assert _sts_headline_of(["pretrained", "full", "2dmse"], toy, published[:4], average="sts-avg") == {
        "ours": 0.81, "ours_cell": "2DMSE L12 d768 sts-avg", "published": 0.1,
        "published_cell": "2DMSE L24 d768 sts-b"}
    # neither side has the method's cell: no number, an empty cell
    assert _sts_headline_of(["full", "2dmse"], ours[3:5], published[4:]) == {
        "ours": None, "ours_cell": "", "published": None, "published_cell": ""}


@pytest.mark.parametrize(("methods", "published", "headline"), [
    (["2dmse", "full"], ["2DMSE", "BERT"], "2dmse"),  # 2DMSE first, not the last method
    (["separate", "2dmse", "starbucks-2dmse"], ["BERT-S", "BERT-2DMSE"], "starbucks-2dmse"),  # no 2DMSE published
    (["full", "2dmse"], [], "2dmse"),  # nothing published: 2DMSE all the same
    (["full", "pretrained"], ["BERT", "pretrained"], "full"),  # a trained method before the pretrained model
    (["pretrained"], ["pretrained"], "pretrained"),  # the pretrained model when it is all there is
    (["full", "separate", "matryoshka"], ["BERT", "BERT-S"], "separate"),  # the last one published
    (["full", "matryoshka"], [], "matryoshka"),  # the last trained when nothing is published
])
def test_sts_headline_method_is_2dmse_else_the_last_trained_the_work_publishes(methods, published, headline):
    """Each method at L12 d768 on the average, the work's labels under reference variant v1; every label
    under another variant, which must not count."""
    from trimbench.dense.variants import SEED_METHOD_LABELS, seed_label

    ours = [(m, 12, 768, "sts-avg7", "spearman_cosine", 0.1 * (i + 1)) for i, m in enumerate(methods)]
    rows = [("v1", label, 12, 768, "sts-avg7", "spearman_cosine", 0.5) for label in published]
    rows += [("v2", seed_label(m), 12, 768, "sts-avg7", "spearman_cosine", 0.9)
             for m in ("pretrained", *SEED_METHOD_LABELS)]
    out = _sts_headline_of(methods, ours, rows)
    assert out["ours_cell"] == f"{seed_label(headline)} L12 d768 sts-avg7"
    assert out["ours"] == pytest.approx(0.1 * (methods.index(headline) + 1))
    assert out["published"] == (0.5 if seed_label(headline) in published else None)


def test_a_retrieval_run_on_no_published_dataset_is_compared_on_its_compared_dataset():
    """A toy retrieval run evaluating toy-msmarco, which the work never published (its MS MARCO is
    msmarco): our cells on toy-msmarco, each without a published number, not an empty comparison."""
    from conftest import REPO

    from trimbench.dense.scoreboard import retrieval_comparison

    rows = [{"variant": v, "layer": layer, "dim": dim, "dataset": ds, "metric": "mrr@10", "value": value}
            for v, layer, dim, ds, value in [("starbucks-2dmse", 2, 32, "toy-msmarco", 0.25),
                                             ("starbucks-2dmse", 2, 32, "other", 0.5)]]
    config = {"track": "2dmse-retrieval", "methods": ["starbucks-2dmse"],
              "evaluation": {"datasets": ["toy-msmarco", "other"], "average_name": "beir-avg", "main_metric": "mrr@10"},
              "reference": {"variant": "starbucks"}}
    long = retrieval_comparison(Experiment("r", config, scores.frame(rows),
                                           pd.read_csv(REPO / "reference" / "2dmse_retrieval.csv")))
    assert long[["layer", "method", "dim", "ours"]].values.tolist() == [[2, "BERT-2DMSE", 32, 0.25]]
    assert long["published"].isna().all()
