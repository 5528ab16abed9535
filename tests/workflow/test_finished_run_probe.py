"""The reliability probe's cases (../shared/reviews/reliability-2026-11-28.md) on one finished run: a
tiny STS and a tiny retrieval experiment run to the end once, then every bad input tried on it with
every file under results/ hashed before and after. A refused input must be named before any job
and change nothing; a setting that only changes how a search, an encoding or a checkpoint runs
must re-train nothing; ``only`` and a smoke report must leave the shared views and the real report
alone. The summary the review's table asks for: each case refused or harmless, 0 files lost."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO, experiment_dir, job_counts, run_snakemake

#: the tests share this module's run (a module fixture): under pytest-xdist, all on one worker
pytestmark = pytest.mark.xdist_group(__name__)

TINY_RETRIEVAL = {
    "track": "2dmse-retrieval", "model": "tiny", "pooling": "mean", "methods": ["pretrained", "full"],
    "grid": {"layers": [2, 3], "dims": [32, 16]},
    "train": {"dataset": "lee-ict-retrieval", "split": "train", "max_samples": 8, "batch_size": 4,
              "logging_steps": 1, "warmup_steps": 1},
    "retrieval": {"target_dims": [16], "q_max_length": 16, "p_max_length": 32, "group_size": 2, "top_k": 100,
                  "negatives": {"miner": "dense", "model": "tiny", "depth": 8, "keep": 4}},
    "bm25": {"enabled": False},
    "evaluation": {"datasets": ["lee-ict-retrieval"], "split": "heldout", "metrics": ["ndcg@10", "recall@100"],
                   "main_metric": "ndcg@10"},
}


def probe_config() -> dict:
    """tests/configs/tiny.yaml's STS experiment (its two trained methods the probe's cases touch) and a
    tiny retrieval experiment without the BM25 baseline (no JVM)."""
    config = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    config["datasets"]["lee-ict-retrieval"] = {"source": "gensim", "builder": "lee_ict", "kind": "retrieval",
                                               "heldout_fraction": 0.2, "seed": 42}
    sts = config["experiments"]["tiny-sts"]
    sts["methods"] = ["pretrained", "full", "2dmse"]
    sts["train"]["max_samples"] = 16
    config["experiments"] = {"tiny-sts": sts, "tiny-retrieval": TINY_RETRIEVAL}
    return config


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("probe-run")
    (workdir / "config.yaml").write_text(yaml.safe_dump(probe_config(), sort_keys=False))
    run_snakemake(workdir)
    return workdir


def file_states(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: its content hash and mtime."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def changed_config(finished: Path, tmp_path: Path, edit) -> Path:
    config = yaml.safe_load((finished / "config.yaml").read_text())
    edit(config)
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _set(*path_and_value):
    *path, key, value = path_and_value

    def edit(config):
        node = config["experiments"]
        for name in path:
            node = node.setdefault(name, {})
        node[key] = value

    return edit


def ran_jobs(output: str) -> list[str]:
    return re.findall(r"^\s*(?:local)?rule (\w+):", output, re.MULTILINE)


#: (review row, edit, the message's start after "config key ")
REFUSED = [
    ("C28", _set("tiny-sts", "train", "batch_size", 8.0),
     "experiments.tiny-sts.train.batch_size: 8.0 is written with a decimal point (or an exponent) and this key "
     "takes a whole number: write 8"),
    ("C29", _set("tiny-sts", "train", "seed", 42.0),
     "experiments.tiny-sts.train.seed: 42.0 is written with a decimal point"),
    ("C30", _set("tiny-sts", "grid", "layers", [1.0, 2, 3]),
     "experiments.tiny-sts.grid.layers.0: 1.0 is written with a decimal point"),
    ("C31", _set("tiny-sts", "grid", "dims", [32.0, 16, 8]),
     "experiments.tiny-sts.grid.dims.0: 32.0 is written with a decimal point"),
    ("A18", _set("tiny-sts", "evaluation", "max_seq_length", 100000.0),
     "experiments.tiny-sts.evaluation.max_seq_length: 100000.0 is written with a decimal point"),
    ("C41", _set("tiny-sts", "train", "scale", -20.0),
     "experiments.tiny-sts.train.scale: -20.0 is less than or equal to the minimum of 0"),
    ("C42", _set("tiny-sts", "train", "scale", 0.0),
     "experiments.tiny-sts.train.scale: 0.0 is less than or equal to the minimum of 0"),
    ("C40", _set("tiny-sts", "train", "kl_temperature", 0),
     "experiments.tiny-sts.train.kl_temperature: 0 is less than or equal to the minimum of 0"),
    ("C43", _set("tiny-retrieval", "retrieval", "top_k", 5),
     "experiments.tiny-retrieval.retrieval.top_k: 5 hits per query is fewer than metric 'recall@100' of "
     "experiments.tiny-retrieval.evaluation.metrics reads (100)"),
]


@pytest.mark.parametrize(("row", "edit", "message"), REFUSED, ids=[row for row, _, _ in REFUSED])
def test_a_refused_value_is_named_before_any_job_and_changes_no_file(finished, tmp_path, row, edit, message):
    """Each of these changed a rule's params, so Snakemake deleted the finished models or embeddings
    (4-11 files) before the job failed with a raw error, or (C40, C43) finished with wrong results."""
    before = file_states(finished / "results")
    result = run_snakemake(finished, "--configfile", str(changed_config(finished, tmp_path, edit)), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and f"Invalid configuration: config key {message}" in output, output[-3000:]
    assert not ran_jobs(output), output[-3000:]
    assert file_states(finished / "results") == before


def test_only_one_experiment_leaves_the_views_across_experiments_alone(finished):
    """C50: ``--config only=sts-v1`` on a finished run rewrote the scoreboard to one row (19 files) and
    the next plain run redid them. Now it runs nothing, and neither does the plain run after it."""
    before = file_states(finished / "results")
    result = run_snakemake(finished, "--config", "only=tiny-sts")
    assert not ran_jobs(result.stdout + result.stderr), result.stdout[-3000:]
    assert file_states(finished / "results") == before
    assert "Nothing to be done" in run_snakemake(finished, "-n").stdout


def test_a_smoke_report_by_an_absolute_or_parent_path_never_replaces_the_real_report(finished):
    """C51, C52: only a path starting with results/ was refused."""
    before = file_states(finished / "results")
    for path in (finished / "results" / "report.html", f"../{finished.name}/results/report.html"):
        result = run_snakemake(finished, "--config", "smoke=true", "only=tiny-sts", "--report", str(path),
                               check=False)
        output = result.stdout + result.stderr
        assert result.returncode != 0 and f"--report {path}: a smoke run's report would replace" in output, output
        assert file_states(finished / "results") == before
    assert not (finished / "results-smoke").exists()


@pytest.mark.parametrize(("edit", "rerun"), [
    (_set("tiny-retrieval", "retrieval", "top_k", 200), {"retrieval_scores"}),
    (_set("tiny-retrieval", "retrieval", "encode_chunk", 7), {"encode_corpus", "retrieval_scores"}),
    (_set("tiny-retrieval", "train", "checkpoint_steps", 1), set()),
    (_set("tiny-sts", "train", "checkpoint_steps", 1), set()),
], ids=["top_k", "encode_chunk", "retrieval-checkpoint_steps", "sts-checkpoint_steps"])
def test_a_search_or_checkpoint_setting_retrains_nothing(finished, tmp_path, edit, rerun):
    """Section F: changing retrieval.top_k, retrieval.encode_chunk or train.checkpoint_steps re-trained
    the models (2 train_retriever, 5 train_model). Now each re-runs its search or encoding only."""
    counts = job_counts(run_snakemake(finished, "-n", "--configfile",
                                      str(changed_config(finished, tmp_path, edit))).stdout)
    assert not {rule for rule in counts if rule.startswith("train_")}, counts
    assert rerun <= set(counts), counts
    assert set(counts) - {"all", "total"} <= rerun | {"scoreboard", "scoreboard_pareto", "claims", "collect_scores",
                                             "grid_table", "grid_figure", "retrieval_ablation"}, counts


def test_the_run_is_finished_and_whole(finished):
    """The fixture the cases above run on: both experiments scored, the shared views written."""
    for name in ("tiny-sts", "tiny-retrieval"):
        assert (experiment_dir(finished, name) / "scores.parquet").is_file()
    assert (finished / "results" / "scoreboard" / "status.csv").is_file()


def test_a_long_description_redraws_the_views_only_at_a_bounded_size(finished, tmp_path):
    """C25: a 20,000-character description (emoji too) made figures/grid_layers.sts-avg.png 206,087 x 601
    pixels. Now the title wraps and is cut: the figure keeps its size; only the views are redrawn.
    (Last in this module: it leaves the run's views drawn with this description.)"""
    from PIL import Image

    figure = experiment_dir(finished, "tiny-sts") / "figures" / "grid_layers.sts-avg.png"
    width, height = Image.open(figure).size
    before = file_states(finished / "results")
    changed = changed_config(finished, tmp_path, _set("tiny-sts", "description", "emoji 😀 and words " * 1100))
    result = run_snakemake(finished, "--configfile", str(changed))
    assert not [rule for rule in ran_jobs(result.stdout + result.stderr) if rule.startswith(("train_", "encode_"))]
    after = file_states(finished / "results")
    assert set(after) >= set(before)  # nothing lost
    redrawn = {path for path in before if after[path] != before[path] and not path.startswith("logs/")}
    assert redrawn and all("/figures/" in path or "/tables/" in path or path.startswith(("scoreboard/", "tracks/"))
                           or path.endswith(("claims.md", "claims.csv", "claims.html")) for path in redrawn), redrawn
    new_width, new_height = Image.open(figure).size
    assert new_width <= width * 1.2 and new_height <= height + 200, ((width, height), (new_width, new_height))
