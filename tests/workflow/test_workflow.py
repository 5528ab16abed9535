"""The whole DAG through snakemake itself, on a temporary directory."""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, SNAKEMAKE, click_menu_entry, experiment_dir, job_counts, run_snakemake, snakemake_command

TINY_STS = experiment_dir("", "tiny-sts")

#: the tests share this module's runs (module fixtures): under pytest-xdist, all on one worker
pytestmark = pytest.mark.xdist_group(__name__)

TRAINED = ["full", "separate-L1", "separate-L2", "matryoshka", "2dmse"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """The tiny test config run to the end once for the module."""
    workdir = tmp_path_factory.mktemp("tiny-run")
    shutil.copy(REPO / "tests" / "configs" / "tiny.yaml", workdir / "config.yaml")
    run_snakemake(workdir)
    return workdir


def test_full_run_makes_every_output(finished):
    base = experiment_dir(finished, "tiny-sts")
    for name in ("tables/grid.sts-avg.md", "tables/grid.sts-avg.csv", "tables/grid.sts-avg.html",
                 "tables/grid_vs_published.sts-avg.csv", "figures/grid_layers.sts-avg.png",
                 "figures/grid_layers.sts-avg.svg"):
        assert (base / name).stat().st_size > 0, name
    scores = pd.read_parquet(base / "scores.parquet")
    assert list(scores.columns) == ["experiment", "track", "variant", "model", "layer", "dim", "dataset", "split",
                                    "metric", "value", "seed"]
    cells = scores[(scores.dataset == "sts-avg") & (scores.metric == "spearman_cosine")]
    # 4 methods x 3 layers x 3 dims, plus BERT-S one layer each.
    assert len(cells) == 4 * 3 * 3 + 3 * 3
    assert cells["value"].between(-1, 1).all()
    for variant in TRAINED:
        assert (base / "models" / variant / "modules.json").is_file()
    assert not (base / "models" / "separate-L3").exists()  # BERT-S at full depth is the full model
    assert "**" in (base / "tables" / "grid.sts-avg.md").read_text()


def test_v2_objective_and_side_by_side_table(finished):
    base = experiment_dir(finished, "tiny-sts-v2")
    for variant in ("full", "separate-L2", "matryoshka", "2dmse"):
        assert (base / "models" / variant / "modules.json").is_file()
    log = (finished / "results" / "logs" / "train_model" / "2dmse-sts" / "tiny-sts-v2" / "2dmse.log").read_text()
    assert "objective angle: loss EspressoLoss" in log
    scores = pd.read_parquet(base / "scores.parquet")
    cells = scores[(scores.dataset == "sts-avg") & (scores.metric == "spearman_cosine")]
    # full, matryoshka, 2dmse x 2 layers x 3 dims, plus BERT-S at layers 2 and 3 (3 is the full model)
    assert len(cells) == 3 * 2 * 3 + 2 * 3 and cells["value"].between(-1, 1).all()
    side = finished / "results" / "tracks" / "2dmse-sts"
    numbers = pd.read_csv(side / "sts_versions.csv")
    assert [c for c in numbers.columns if c.endswith(" 32")] == ["tiny-sts 32", "tiny-sts-v2 32"]
    # v2 has no pretrained row; v1 has layer 1, v2 does not.
    pretrained = numbers[numbers.method == "pretrained"]
    assert pretrained["tiny-sts-v2 32"].isna().all() and pretrained["tiny-sts 32"].notna().all()
    v2 = cells[(cells.variant == "2dmse") & (cells.layer == 3) & (cells.dim == 32)]["value"].iloc[0]
    row = numbers[(numbers.layer == 3) & (numbers.method == "2DMSE")]
    assert abs(row["tiny-sts-v2 32"].iloc[0] - v2) < 1e-6
    assert "tiny-sts-v2" in (side / "sts_versions.md").read_text()
    assert (side / "sts_versions_layers.png").stat().st_size > 0


def test_rerun_of_evaluation_leaves_training_alone(finished):
    base = experiment_dir(finished, "tiny-sts")
    trained = {v: (base / "models" / v).stat().st_mtime_ns for v in TRAINED}
    embedded = {p.name: p.stat().st_mtime_ns for p in (base / "embeddings").iterdir()}
    scored = (base / "scores" / "full.parquet").stat().st_mtime_ns
    result = run_snakemake(finished, "-R", "evaluate_sts")
    counts = job_counts(result.stdout + result.stderr)
    assert counts["evaluate_sts"] == 7 + 5 and counts["grid_table"] == 2 and counts["sts_versions"] == 1
    assert "train_model" not in counts and "encode_texts" not in counts
    assert {v: (base / "models" / v).stat().st_mtime_ns for v in TRAINED} == trained
    assert {p.name: p.stat().st_mtime_ns for p in (base / "embeddings").iterdir()} == embedded
    assert (base / "scores" / "full.parquet").stat().st_mtime_ns != scored


def test_changed_evaluation_settings_rerun_evaluation_not_training(finished, tmp_path):
    config = yaml.safe_load((finished / "config.yaml").read_text())
    config["experiments"]["tiny-sts"]["evaluation"]["metrics"] = ["spearman_cosine"]
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(config))
    counts = job_counts(run_snakemake(finished, "-n", "--configfile", str(changed)).stdout)
    assert counts["evaluate_sts"] == 7
    assert "train_model" not in counts and "encode_texts" not in counts


def test_changed_devices_rerun_nothing_and_a_changed_logging_interval_retrains(finished, tmp_path):
    """train.devices 1 -> 2: the same models, so nothing re-runs (the devices are the job's gpu
    resource, which the rerun triggers do not compare; the job gets them: test_multi_device.py).
    logging_steps is a param like any other."""
    config = yaml.safe_load((finished / "config.yaml").read_text())
    config["experiments"]["tiny-sts"]["train"]["devices"] = 2
    changed = tmp_path / "devices.yaml"
    changed.write_text(yaml.safe_dump(config))
    assert "Nothing to be done" in run_snakemake(finished, "-n", "--configfile", str(changed)).stdout
    config["experiments"]["tiny-sts"]["train"].update(devices=1, logging_steps=2)
    changed = tmp_path / "logging.yaml"
    changed.write_text(yaml.safe_dump(config))
    counts = job_counts(run_snakemake(finished, "-n", "--configfile", str(changed)).stdout)
    assert counts["train_model"] == len(TRAINED)


def file_states(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: its content hash and mtime."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_smoke_run_beside_a_finished_run_leaves_its_files_alone(finished, tmp_path):
    """The probe: a smoke run in a finished checkout rewrote results/scoreboard/status.* with its rows
    ("toy", "0/36 within tolerance") over the real run's."""
    before = file_states(finished / "results")
    config = yaml.safe_load((finished / "config.yaml").read_text())
    config["experiments"] = {"tiny-sts": {**config["experiments"]["tiny-sts"], "methods": ["pretrained"]}}
    smoke = tmp_path / "smoke.yaml"
    smoke.write_text(yaml.safe_dump(config))
    run_snakemake(finished, "--configfile", str(smoke), "--config", "smoke=true")
    # ... and its report over the real run's is refused (tests/config: check_smoke_report)
    refused = run_snakemake(finished, "--configfile", str(smoke), "--config", "smoke=true", "--report",
                            "results/report.html", check=False)
    assert refused.returncode != 0 and "a smoke run's report would replace" in refused.stdout + refused.stderr
    assert file_states(finished / "results") == before
    status = pd.read_csv(finished / "results-smoke" / "scoreboard" / "status.csv")
    assert list(status["scale"]) == ["smoke"] and status["within"].isna().all()
    readable = (finished / "results-smoke" / "scoreboard" / "status.md").read_text()
    assert "| smoke   | no verdict: a smoke run" in readable


def test_a_copied_run_with_its_venv_linked_plans_no_job(finished, tmp_path):
    """The probe: a checkout copied with its .venv symlinked planned 72 of 82 jobs, 10 trainings ("Set
    of input files has changed"): the packaged MiniLM's folder was an input named through the venv."""
    copy, venv = tmp_path / "copy", tmp_path / "venv"
    shutil.copytree(finished, copy, symlinks=True)
    venv.symlink_to(Path(sys.prefix), target_is_directory=True)
    result = subprocess.run([str(venv / "bin" / "python"), *snakemake_command(copy, "-n")[1:]], cwd=copy,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout, job_counts(result.stdout)


def test_no_op_rerun(finished):
    assert "Nothing to be done" in run_snakemake(finished, "-n").stdout


def test_report_builds(finished):
    run_snakemake(finished, "--report", "results/report.html")
    html = (finished / "results" / "report.html").read_text(errors="replace")
    assert "grid_layers.sts-avg.png" in html and "grid.sts-avg.html" in html
    # The claims view of each experiment, with the STS claims checked on both sides.
    assert "claims.html" in html and "tiny-sts" in html
    claims = pd.read_csv(finished / TINY_STS / "claims.csv")
    assert "2dmse-beats-mse-on-sub-dims" in set(claims["claim"])
    assert set(claims["ours"]) <= {"holds", "partly", "fails", "not covered"}


def view_files(workdir: Path) -> dict[str, str]:
    """Every table and figure of the run (the views of the score tables), with its content hash."""
    results = workdir / "results"
    paths = [*results.glob("*/*/tables/*"), *results.glob("*/*/figures/*"), *(results / "tracks").rglob("*.*"),
             *(results / "scoreboard").glob("*"), *results.glob("*/*/claims.*")]
    return {str(p.relative_to(results)): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def test_views_rebuild_byte_identical(finished):
    before = view_files(finished)
    assert len(before) >= 12
    for name in before:
        (finished / "results" / name).unlink()
    result = run_snakemake(finished)
    counts = job_counts(result.stdout + result.stderr)
    assert "train_model" not in counts and "evaluate_sts" not in counts
    assert view_files(finished) == before


CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--virtual-time-budget=20000"]
#: appended to a copy of the report: once the page's scripts have rendered it, the viewport and
#: where the front page's title and text are, written into the DOM that --dump-dom prints
MEASURE_FRONT_PAGE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const box = (selector) => { const el = document.querySelector(selector);
    if (!el) return null; const r = el.getBoundingClientRect(); return [r.top, r.bottom, r.left, r.right]; };
  const pre = document.createElement("pre");
  pre.id = "trimbench-measure";
  pre.textContent = JSON.stringify({width: innerWidth, height: innerHeight,
                                    title: box("#app .prose h1"), text: box("#app .prose")});
  document.body.appendChild(pre);
}, 5000));
</script>"""


def front_page_boxes(report: Path, size: tuple[int, int], profile: Path) -> dict:
    page = report.read_text()
    end = page.rindex("</body>")
    measured = report.with_name("report-measured.html")
    measured.write_text(page[:end] + MEASURE_FRONT_PAGE + page[end:])
    dom = subprocess.run([*CHROMIUM, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
                          "--dump-dom", measured.as_uri()], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    found = re.search(r'<pre id="trimbench-measure">(.*?)</pre>', dom)
    assert found, "the measuring script did not run"
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_report_front_page_fits_the_screen_and_status_renders_in_chromium(finished, tmp_path, size):
    """The probe: at 1400x1000 the front page's top sat at -438 px, above a scroll container that
    cannot scroll there (Snakemake's template centres the page vertically)."""
    run_snakemake(finished, "--report", "results/report.html")
    boxes = front_page_boxes(finished / "results" / "report.html", size, tmp_path / "profile")
    assert boxes["title"] and boxes["text"], boxes
    for name in ("title", "text"):
        top, bottom, left, right = boxes[name]
        assert 0 <= top < bottom <= boxes["height"] and 0 <= left < right <= boxes["width"], (name, boxes)
    # The status table and its figure: the report's first result, a page of its own.
    status = finished / "results" / "scoreboard" / "status.html"
    assert "status.html" in (finished / "results" / "report.html").read_text(errors="replace")
    dom = subprocess.run([*CHROMIUM, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1366,768",
                          "--dump-dom", status.as_uri()], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    table = dom[dom.index('<div id="reproduction-status">'):]
    table = table[:table.index("</table>")]
    for expected in ("<th>within ±tolerance</th>", "<td>tiny-sts</td>", "<td>tiny-sts-v2</td>",
                     "<td>2DMSE STS v2</td>"):
        assert expected in table
    assert re.search(r'<img id="status-figure" [^>]*src="data:image/png;base64,', dom)


def _set(config: dict, *path_and_value) -> None:
    *path, key, value = path_and_value
    for name in path:
        config = config[name]
    config[key] = value


@pytest.mark.parametrize(("edit", "message"), [
    # The re-probe's problem 1: a NaN learning rate re-ran the training and deleted the finished models.
    (lambda c: _set(c, "experiments", "tiny-sts", "train", "lr", float("nan")),
     "config key experiments.tiny-sts.train.lr: nan is not a finite number"),
    # Problem 2: a column gensim's rows lack, caught once Snakemake had deleted the prepared data.
    (lambda c: _set(c, "datasets", "lee-sim", "columns", {"score": "scorez"}),
     "config key datasets.lee-sim.columns.score: maps 'score' to 'scorez', which is not a column of the rows gensim "
     "builder 'lee_similarity' makes"),
    # Problem 3: a length beyond the model's positions.
    (lambda c: _set(c, "experiments", "tiny-sts", "evaluation", "max_seq_length", 100000),
     "config key experiments.tiny-sts.evaluation.max_seq_length: 100000 tokens per text is more than model 'tiny' "
     "takes (512: max_position_embeddings 512 in the tiny model it builds)"),
    # Dims matryoshka and 2dmse cannot train the full embedding at.
    (lambda c: _set(c, "experiments", "tiny-sts", "grid", "dims", [16, 8, 7]),
     "config key experiments.tiny-sts.grid.dims: methods ['matryoshka', '2dmse'] train at the grid's dims, and "
     "[16, 8, 7] lacks model 'tiny''s width 32"),
], ids=["nan-lr", "gensim-column", "max-seq-length", "dims"])
def test_a_value_a_job_would_reject_leaves_a_finished_run_untouched(finished, tmp_path, edit, message):
    """Refused while Snakemake parses the workflow: no job starts, so no finished output is removed."""
    config = yaml.safe_load((finished / "config.yaml").read_text())
    edit(config)
    (tmp_path / "changed.yaml").write_text(yaml.safe_dump(config))
    before = file_states(finished / "results")
    result = run_snakemake(finished, "--configfile", str(tmp_path / "changed.yaml"), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and f"Invalid configuration: {message}" in output, output
    assert not re.search(r"^\s*(local)?rule \w+:", output, re.MULTILINE), output
    assert file_states(finished / "results") == before


def test_an_override_emptying_the_experiments_is_refused_on_a_finished_run(finished):
    before = file_states(finished / "results")
    result = run_snakemake(finished, "--config", "experiments={}", check=False)
    assert result.returncode != 0
    assert "Invalid configuration: --config experiments={}: an empty mapping cannot empty or replace" in \
        result.stdout + result.stderr
    assert file_states(finished / "results") == before


CLICK_STATUS = click_menu_entry("reproduction status")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_status_is_one_click_from_the_front_page_and_every_table_is_a_page(finished, tmp_path):
    """The probe: the status table was four clicks deep (Results → reproduction status → "Other" →
    view), and "ours vs published" a data:text/csv link that showed nothing."""
    report = finished / "results" / "report.html"
    run_snakemake(finished, "--report", "results/report.html")
    page = report.read_text()
    end = page.rindex("</body>")
    clicked = report.with_name("report-clicked.html")
    clicked.write_text(page[:end] + CLICK_STATUS + page[end:])
    dom = subprocess.run([*CHROMIUM, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1366,768",
                          "--dump-dom", clicked.as_uri()], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    found = re.search(r'<pre id="trimbench-measure">(.*?)</pre>', dom)
    assert found, "the clicking script did not run"
    seen = json.loads(html.unescape(found.group(1)))
    assert seen["found"], "no menu entry 'reproduction status'"
    # One click lists the status page (its one subcategory opens directly).
    assert "status, one row per experiment" in seen["shown"], seen["shown"][:2000]
    assert seen["subcategories"]["reproduction status"] == ["status and every common cell"]
    assert not [c for c, subs in seen["subcategories"].items() if "Other" in subs], seen["subcategories"]
    # Every table is a page the report shows, none a CSV link.
    assert any(path.endswith("grid_vs_published.sts-avg.html") for path in seen["mime_types"])
    assert set(seen["mime_types"].values()) <= {"text/html", "image/png", "image/svg+xml"}, seen["mime_types"]


def test_bad_config_fails_before_any_job(workdir):
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["experiments"]["tiny-sts"]["grid"]["dims"] = [64, 32]
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    result = run_snakemake(workdir, check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Invalid configuration: config key experiments.tiny-sts.grid.dims: dim 64 is larger than model " \
           "'tiny''s width 32" in output
    assert not (workdir / "results").exists()


@pytest.mark.parametrize(("edit", "message"), [
    # The probe's A12: a second experiment block of the same name replaced the first, silently.
    (lambda text: text + "  tiny-sts:\n    track: 2dmse-sts\n    model: minilm\n",
     r"config.yaml': key 'experiments.tiny-sts' is given twice, on lines 29 and \d+"),
    # A13: malformed YAML named neither the file nor the line.
    (lambda text: text.replace("dims: [32, 16, 8]", "dims: [32, 16, 8", 1), r"config.yaml', line \d+, column \d+: "
                                                                            r"not valid YAML"),
    (lambda text: text.replace("    model: tiny", "\tmodel: tiny", 1), r"config.yaml', line 32, column 1: not valid "
                                                                      r"YAML: .*\(a tab: YAML indents with spaces"),
    # The re-probe: an empty config.yaml said "'datasets' is a required property".
    (lambda text: "# to do\n", r"config.yaml' is empty \(no keys, only comments or blank lines\)"),
])
def test_bad_config_file_fails_before_any_job_naming_file_and_line(workdir, edit, message):
    config = workdir / "config.yaml"
    config.write_text(edit(config.read_text()))
    result = run_snakemake(workdir, check=False)
    assert result.returncode != 0
    assert re.search(r"Invalid configuration: config file '" + message, result.stdout + result.stderr), \
        result.stdout + result.stderr
    assert not (workdir / "results").exists()


def test_a_preset_runs_alone_and_configs_combine_when_listed(tmp_path):
    """--configfile replaces config.yaml (the probe: the tiny config planned 115 jobs, not 45)."""
    shutil.copy(REPO / "config.yaml", tmp_path / "config.yaml")
    tiny = str(REPO / "tests" / "configs" / "tiny.yaml")

    def planned(*args):
        output = run_snakemake(tmp_path, "-n", *args).stdout
        return job_counts(output)["total"], set(re.findall(r"experiment=([\w.-]+)", output))

    default = planned()
    assert planned("--configfile", tiny) == (47, {"tiny-sts", "tiny-sts-v2"})
    jobs, experiments = planned("--configfile", str(tmp_path / "config.yaml"), tiny)
    assert experiments == default[1] | {"tiny-sts", "tiny-sts-v2"} and jobs > default[0] + 30


def test_a_moved_checkout_names_the_same_inputs(tmp_path):
    """The probe: a moved checkout re-ran 14 view jobs, their inputs naming reference/*.csv by
    absolute path ("Set of input files has changed since last execution")."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()

    def planned_inputs(checkout: Path) -> set[str]:
        for name in files:
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            if (REPO / name).is_file():
                shutil.copy(REPO / name, checkout / name)
        shutil.copy(REPO / "tests" / "configs" / "tiny.yaml", checkout / "config.yaml")
        result = subprocess.run([*SNAKEMAKE, "-n", "-p", "--cores", "1"], cwd=checkout, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        return set(re.findall(r"^\s+input: (.*)$", result.stdout, flags=re.MULTILINE))

    first, moved = planned_inputs(tmp_path / "checkout"), planned_inputs(tmp_path / "moved" / "checkout")
    assert any("reference/2dmse_sts.csv" in line for line in first)
    assert first == moved


def test_paper_preset_dry_run_shows_full_dag(tmp_path):
    result = run_snakemake(tmp_path, "-n", "--configfile", str(REPO / "configs" / "2dmse-sts.yaml"))
    counts = job_counts(result.stdout)
    # full, separate x 5 (L12 is the full model), matryoshka, 2dmse; 8 data tables; 1 model download.
    assert counts["train_model"] == 8
    assert counts["prepare_data"] == 8
    assert counts["fetch_model"] == 1
    assert counts["evaluate_sts"] == 10


def test_bm25_scores_beside_the_retrieval_methods_on_one_index_per_corpus(tmp_path):
    """Dry runs: the embedded default scores BM25 in its two retrieval experiments (2dmse-retrieval,
    splade) on two indexes, Lee's training split (the miner's) and held-out split (both evaluations),
    two corpora; the mini preset indexes SciFact once, for the miner and both experiments."""
    counts = job_counts(run_snakemake(tmp_path, "-n", "--configfile", str(REPO / "config.yaml")).stdout)
    assert counts["bm25_scores"] == 2 and counts["bm25_index"] == 2 and counts["mine_negatives"] == 1
    mini = run_snakemake(tmp_path, "-n", "--configfile", str(REPO / "configs" / "mini.yaml")).stdout
    assert job_counts(mini)["bm25_scores"] == 2 and job_counts(mini)["bm25_index"] == 1
    assert set(re.findall(r"results/bm25/[\w./-]+", mini)) == {"results/bm25/scifact/test/flat"}
