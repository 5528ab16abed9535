"""Every published number is set beside the one method that produced it.

Each experiment of every preset is joined with its reference file by the predicates the views use
(method labels for the 2DMSE tracks and Home Depot, run identity or ensemble name for SPLADE, the
task -> published experiment mapping and model names for ELECTRA). Within one experiment a
published row may join at most one of our methods; over the paper presets, every published row
must join one (a row no method produces, e.g. Starbucks' BERT-2DMSE without its method, fails).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trimbench.config import prepare as tb_config
from trimbench.dense.homedepot import METHOD_LABELS as HOMEDEPOT_LABELS
from trimbench.dense.variants import seed_label
from trimbench.splade.report import published_rows, row_labels

REPO = Path(__file__).resolve().parents[2]
PRESETS = ["config.yaml"] + sorted(f"configs/{p.name}" for p in (REPO / "configs").glob("*.yaml"))


def _prepared(preset: str, workdir: Path) -> dict:
    raw = yaml.safe_load((REPO / preset).read_text())
    for entry in raw["datasets"].values():  # TREC files must exist at config time: empty ones here
        for key in ("topics", "qrels"):
            if key in entry:
                (workdir / entry[key]).parent.mkdir(parents=True, exist_ok=True)
                (workdir / entry[key]).touch()
    workdir = REPO if preset == "config.yaml" else workdir  # the default's local model lives in the repo
    return tb_config.prepare(copy.deepcopy(raw), workdir)


def joins(exp: dict, published: pd.DataFrame) -> pd.DataFrame:
    """(row, ours): each published row index with each of our methods (runs, task/model) it joins."""
    track, pairs = exp["track"], []
    if track in ("2dmse-sts", "2dmse-retrieval"):
        rows = published[published["variant"] == exp["reference"]["variant"]]
        pairs = [(i, m) for i, label in rows["method"].items() for m in exp["methods"] if seed_label(m) == label]
    elif track == "homedepot":
        rows = published[published["model"] == (exp["reference"]["model"] or exp["model"])]
        pairs = [(i, m) for i, label in rows["method"].items() for m in exp["methods"]
                 if HOMEDEPOT_LABELS.get(m, m) == label]
    elif track == "splade":
        pairs = [(i, label["variant"]) for _, label in row_labels(exp).iterrows()
                 for i in published_rows(published, label).index]
    elif track == "electra":
        for task, experiment in exp["reference"]["experiments"].items():
            rows = published[(published["experiment"] == experiment) & published["model"].isin(exp["models"])]
            pairs += [(i, f"{task}/{model}") for i, model in rows["model"].items()]
    elif track == "profile":  # MTEB's score of a model joins that model's full-model cells
        ids = exp["reference"]["models"]
        pairs = [(i, model) for model in exp["models"] for i in published.index[published["model"] == ids.get(model)]]
    else:
        raise AssertionError(f"track {track}: no join of its published rows to its methods here; add its branch")
    return pd.DataFrame(pairs, columns=["row", "ours"])


@pytest.fixture(scope="module")
def preset_joins(tmp_path_factory) -> list[dict]:
    out = []
    for preset in PRESETS:
        config = _prepared(preset, tmp_path_factory.mktemp("preset"))
        for name, exp in config["experiments"].items():
            file = exp["reference"]["file"]
            published = pd.read_csv(REPO / file)
            out.append({"preset": preset, "experiment": name, "scale": exp["scale"], "file": file,
                        "published": published, "joins": joins(exp, published)})
    return out


def test_a_published_row_joins_at_most_one_method_of_an_experiment(preset_joins):
    for item in preset_joins:
        twice = item["joins"].groupby("row")["ours"].apply(list)
        twice = twice[twice.str.len() > 1]
        assert twice.empty, (f"{item['preset']} {item['experiment']}: published rows of {item['file']} joined to "
                             f"several methods: {twice.head().to_dict()}")


def test_every_published_row_joins_a_method_of_a_paper_preset(preset_joins):
    joined: dict[str, set] = {}
    files = {}
    for item in preset_joins:
        files[item["file"]] = item["published"]
        if item["scale"] == "paper":
            joined.setdefault(item["file"], set()).update(item["joins"]["row"])
    for file, published in files.items():
        orphans = published.loc[sorted(set(published.index) - joined.get(file, set()))]
        assert orphans.empty, f"{file}: rows no paper preset's method produces:\n{orphans.head(10).to_string()}"


def test_a_splade_run_or_ensemble_joins_one_published_row_per_cell(preset_joins):
    for item in preset_joins:
        if item["published"].get("lambda_q") is None:
            continue
        rows = item["published"].loc[item["joins"]["row"]].assign(ours=item["joins"]["ours"].to_numpy())
        assert not rows.duplicated(["ours", "dataset", "metric"]).any(), (item["preset"], item["experiment"])


def test_the_starbucks_rows_join_starbucks_2dmse_not_the_seeds_2dmse(preset_joins):
    item = next(i for i in preset_joins if i["preset"] == "configs/2dmse-retrieval.yaml"
                and i["experiment"] == "2dmse-retrieval")
    methods = item["published"].loc[item["joins"]["row"], "method"].to_numpy()
    pairs = set(zip(methods, item["joins"]["ours"], strict=True))
    assert pairs == {("BERT-S", "separate"), ("BERT-2DMSE", "starbucks-2dmse")}


def test_published_ensemble_flops_are_the_sum_of_their_members(preset_joins):
    item = next(i for i in preset_joins if i["preset"] == "configs/splade.yaml")
    published = item["published"]
    config = yaml.safe_load((REPO / "configs" / "splade.yaml").read_text())["experiments"]["splade"]
    flops = published[published["metric"] == "flops"]
    run_flops = {ours: flops.loc[row, "value"] for row, ours in item["joins"].itertuples(index=False)
                 if row in flops.index}
    for name, spec in config["ensembles"].items():
        assert run_flops[name] == pytest.approx(sum(run_flops[member] for member in spec["variants"]), abs=1e-9), name
