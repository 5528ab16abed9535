"""The presets' cost cells (README.md, configs/README.md) and docs/costs.md come from their plans, as
the schema reference comes from the schema: `make plan-presets` writes them, these tests hold them."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from trimbench.cost.gpus import find_gpu, usable_gib
from trimbench.plan import costs, plan


def _figures() -> pd.DataFrame:
    # an empty unpriced_jobs stays "" (as the plan writes it), not NaN
    return pd.read_csv(costs.COSTS_CSV, keep_default_na=False)


def test_every_preset_has_its_figures():
    assert list(_figures()["preset"]) == list(costs.PRESETS)


def test_the_readmes_cost_cells_are_the_plans():
    """Each README's text is what make plan-presets writes from docs/costs.csv: a cell edited by hand
    (or figures changed without the cells) fails here."""
    for path, text in costs.readme_cells(_figures()).items():
        assert path.read_text() == text, f"{path.name}: its cost cells are not docs/costs.csv's; run make plan-presets"


def test_every_paper_preset_cell_gives_an_estimate_and_its_range_and_its_plan():
    cells = costs.cells_of(costs.CONFIGS_README)
    figures = _figures().set_index("preset")
    for preset in costs.PRESETS:
        (cell,) = [cell for cell in cells if f"costs.md#{preset})" in cell]
        if not figures.loc[preset, "gpu_jobs"]:  # the trim profile: CPU jobs only, no GPU figure to give
            assert cell.startswith(costs.NO_GPU_JOB) and "GPU-h" not in cell, cell
            continue
        for gpu in costs.GPUS:
            assert re.search(rf"est\. [0-9.,]+ GPU-h \(range [0-9.,]+–[0-9.,]+\) on {gpu.upper()}", cell), cell
            low, central, high = (figures.loc[preset, f"gpu_hours_{gpu}{end}"] for end in ("_low", "", "_high"))
            assert 0 < low <= central <= high
        # no figure is a bound: the MFU is an assumption, whatever the lengths
        assert "≤" not in cell and "not estimated" not in cell


def test_a_cell_names_the_jobs_its_figures_leave_out():
    """A preset with jobs the plan cannot price says how many and which, in its cell."""
    figures = _figures().set_index("preset")
    cells = costs.cells_of(costs.CONFIGS_README)
    unpriced = figures[figures["unpriced"] > 0]
    assert len(unpriced), "some preset (electra) has jobs the plan cannot price"
    for preset, row in unpriced.iterrows():
        (cell,) = [cell for cell in cells if f"costs.md#{preset})" in cell]
        assert f"{row['unpriced']} job(s) not priced, in no figure" in cell
        assert all(job in cell for job in row["unpriced_jobs"].split("; "))
    row = figures.loc["electra"].to_dict()
    assert "not priced" in costs.cell({**row, "preset": "electra"}, "x")
    assert "not priced" not in costs.cell({**row, "preset": "electra", "unpriced": 0, "unpriced_jobs": ""}, "x")


def test_the_readme_tracks_table_has_one_row_per_paper_preset():
    """Every paper preset of configs/ (mini is no paper's) has exactly one row of README's tracks table,
    its cost cell its own plan's: a preset left out, or two in one row, fails here."""
    paper_presets = sorted(path.stem for path in (costs.REPO / "configs").glob("*.yaml") if path.stem != "mini")
    assert sorted(costs.README_PRESETS) == paper_presets, (
        f"paper presets of configs/ without a row in README's tracks table (costs.README_PRESETS): "
        f"{sorted(set(paper_presets) - set(costs.README_PRESETS))}; rows of no preset: "
        f"{sorted(set(costs.README_PRESETS) - set(paper_presets))}")
    cells = costs.cells_of(costs.README)
    assert len(cells) == len(costs.README_PRESETS)
    for preset in costs.README_PRESETS:
        (cell,) = [cell for cell in cells if f"costs.md#{preset})" in cell]
        assert cell.count("GPU-h") == 1 or cell.startswith(costs.NO_GPU_JOB), f"README's {preset} row: {cell}"


@pytest.mark.slow
@pytest.mark.workflow
def test_docs_costs_is_a_fresh_plan_of_every_preset(tmp_path):
    """docs/costs.csv equals the plan of every preset now (every preset's dry run, a minute or two)."""
    bounded: dict = {}
    table, totals = costs.plan_presets(cache_dir=tmp_path, bounded=bounded)
    pd.testing.assert_frame_equal(costs.summary(table, totals), _figures(), check_dtype=False)
    assert costs.COSTS_MD.read_text() == costs.costs_markdown(table, costs.summary(table, totals), bounded)


def test_every_preset_of_configs_is_priced():
    """Each configs/*.yaml is some run's first file: a preset no track's face lists (its ``presets``)
    would be missing from the cost pages without a word."""
    presets = {path.relative_to(costs.REPO).as_posix() for path in (costs.REPO / "configs").glob("*.yaml")}
    first_files = {files[0] for files in costs.PRESETS.values()}
    assert presets - first_files == set(), "add the preset to its track's face (presets=) in trimbench/<track>/face.py"
    assert all((costs.REPO / path).is_file() for files in costs.PRESETS.values() for path in files)


@pytest.mark.parametrize(("hours", "written"), [
    (1060.0, "1,060"), (117.0, "117"), (99.96, "100"), (53.7, "53.7"), (35.0, "35.0"), (1.31, "1.31"),
    (0.819, "0.82"), (0.00328, "0.0033"), (1.0, "1.00"),
])
def test_a_cells_hours_are_written_to_the_plans_three_significant_figures(hours, written):
    """No digit the plan did not keep (117.0, 1,060.0 read as measured to a tenth), none dropped."""
    assert costs._hours(hours) == written


def test_make_plan_presets_passes_arguments_the_module_takes():
    """The Makefile's recipe is parsed as the module parses it (it once passed a path `--write` refused)."""
    recipe = re.search(r"^plan-presets:.*\n\t\$\(BIN\)/python -m trimbench\.plan\.costs(.*)$",
                       (costs.REPO / "Makefile").read_text(), re.MULTILINE)
    assert recipe, "make plan-presets no longer runs python -m trimbench.plan.costs"
    assert costs.arguments().parse_args(recipe.group(1).split()).write


def _job(run: str, gpu: str, rule: str, name: str, hours: float | None = None, peak: float | None = None,
         disk: float | None = 0.0, unknown: str = "", lengths: str = "", examples: float | None = 10.0) -> dict:
    """A row of the plan's table (trimbench.plan.plan.rows): a priced GPU job when ``hours`` is given,
    its range half and twice the estimate."""
    priced = hours is not None
    return {"run": run, "gpu": gpu, "rule": rule, "job": f"{rule}[{name}]", "examples": examples,
            "optimizer_steps": 0, "tokens": 1000 if priced else None, "tflops": 2.0 * hours if priced else None,
            "peak_gib": peak, "fits": True if priced else None, "fits_on": "", "advice": "",
            "gpu_hours": hours, "gpu_hours_low": hours / 2 if priced else None,
            "gpu_hours_high": 2 * hours if priced else None, "at_max_length": ("upper bound" in lengths) if priced
            else None, "runtime_min": 15, "mem_mb": 8000, "disk_gb": disk, "unknown": unknown, "lengths": lengths}


def _presets_table() -> pd.DataFrame:
    """Two presets on the cells' GPUs (the H100 three times the A100): "paper" with GPU jobs (one at
    the truncation length, one over 40 GB, four the plan cannot price for three reasons, a CPU job),
    "cpu" with CPU jobs only."""
    jobs = []
    for gpu, speed in zip(costs.GPUS, (1, 3), strict=True):
        jobs += [
            _job("paper", gpu, "train_model", "v=a", 2.0 / speed, 12.04, 0.5, lengths="measured on x.jsonl"),
            _job("paper", gpu, "train_model", "v=b", 3.0 / speed, 39.44, 0.24, lengths="upper bound 512; on y"),
            _job("paper", gpu, "encode_texts", "v=a", 0.5555 / speed, 2.0, 1.0, lengths="contract z"),
            _job("paper", gpu, "train_electra", "m=q", unknown="no config.json of q", disk=None),
            _job("paper", gpu, "train_electra", "m=p", unknown="no config.json of p", disk=None),
            _job("paper", gpu, "train_electra", "m=p2", unknown="no config.json of q", disk=None),
            _job("paper", gpu, "train_electra", "m=o", unknown="no config.json of o", disk=None),
            _job("paper", gpu, "prepare_data", "d=x", examples=None, disk=None),
            _job("cpu", gpu, "profile_cuts", "m=x", examples=None, disk=None),
        ]
    return pd.DataFrame(jobs, columns=plan.COLUMNS)


@pytest.fixture
def two_presets(monkeypatch):
    monkeypatch.setattr(costs, "PRESETS", {"paper": ["configs/paper.yaml", "configs/overlay.yaml"],
                                           "cpu": ["configs/cpu.yaml"]})
    return _presets_table()


def test_a_presets_figures_are_its_plans_totals_on_the_cells_gpus(two_presets):
    figures = costs.summary(two_presets, plan.totals(two_presets)).set_index("preset")
    assert list(figures.index) == ["paper", "cpu"]
    paper = figures.loc["paper"]
    assert (paper["jobs"], paper["gpu_jobs"], paper["unpriced"]) == (8, 3, 4)
    assert paper["unpriced_jobs"] == "train_electra[m=o]; train_electra[m=p2]; train_electra[m=p]; train_electra[m=q]"
    assert paper["at_max_length"] == 1  # the one priced job with an upper bound among its lengths
    # three significant figures, each GPU and end its own
    assert paper["gpu_hours_a100-80gb"] == 5.56 and paper["gpu_hours_h100-80gb"] == 1.85
    assert paper["gpu_hours_a100-80gb_low"] == 2.78 and paper["gpu_hours_a100-80gb_high"] == 11.1
    assert paper["gpu_hours_h100-80gb_low"] == 0.926 and paper["gpu_hours_h100-80gb_high"] == 3.7
    assert (paper["widest_gib"], paper["over_40gb"], paper["over_80gb"], paper["disk_gb"]) == (39.4, 1, 0, 1.7)
    cpu = figures.loc["cpu"]
    assert (cpu["jobs"], cpu["gpu_jobs"], cpu["unpriced"], cpu["at_max_length"]) == (1, 0, 0, 0)
    assert costs._estimate({**cpu.to_dict(), "preset": "cpu"}, costs.GPUS[0]) == costs.NO_GPU_JOB
    assert costs._estimate({**paper.to_dict(), "preset": "paper"}, costs.GPUS[1]) == \
        "est. 1.85 GPU-h (range 0.93–3.70) on H100-80GB"


def test_the_cost_page_gives_each_presets_rules_lengths_wide_jobs_and_unpriced_jobs(two_presets):
    figures = costs.summary(two_presets, plan.totals(two_presets))
    page = costs.costs_markdown(two_presets, figures, {"paper": ["d train text", "d train title"]})
    # the page's opening is docs/costs.md's (make plan-presets writes it from this function)
    opening = "\n".join(costs.COSTS_MD.read_text().split("\n")[:4])
    assert page.startswith(opening + "\n| preset ")
    assert page.split("\n")[4 + 2 + len(figures)] == "" and page.split("\n")[4 + 2 + len(figures) + 1] == "## paper"
    paper = page.split("## paper\n\n")[1].split("## cpu")[0].split("\n")
    assert paper[:4] == ["Files: `configs/paper.yaml`, `configs/overlay.yaml`.", "",
                         "GPU jobs by rule on a100-80gb:", ""]
    rules = [[cell.strip() for cell in line.strip("|").split("|")] for line in paper[6:8]]
    # per rule: jobs, GPU-hours (summed), widest GiB (the largest), disk GB (summed), to a tenth
    assert [[rule, *map(float, figures)] for rule, *figures in rules] == [["encode_texts", 1, 0.6, 2.0, 1.0],
                                                                          ["train_model", 2, 5.0, 39.4, 0.7]]
    assert paper[4].startswith("| rule ") and paper[5].startswith("|:-")
    assert paper[8:] == [
        "", "Texts priced at their maximum length (no measured or recorded lengths: give a contract `lengths:`, a url "
            "dataset's `datasets.<name>.lengths` or a local copy to price them closer): d train text, d train title.",
        "", "Jobs over 40 GB (more than the 37 GiB a job can use of it):", "", "- train_model[v=b] (39.4 GiB)", "",
        # by how many jobs each reason leaves unpriced, then by the reason
        "Not priced (what the plan lacks):", "", "- no config.json of q (2 job(s))", "- no config.json of o (1 job(s))",
        "- no config.json of p (1 job(s))", "", ""]
    # a job at exactly the usable memory of a 40 GB device fits it
    at_limit = two_presets.copy()
    at_limit.loc[at_limit["job"] == "train_model[v=a]", "peak_gib"] = usable_gib(find_gpu("a100-40gb"))
    assert "- train_model[v=a]" not in costs.costs_markdown(at_limit, figures, {})
    cpu = page.split("## cpu\n\n")[1]
    assert cpu == "Files: `configs/cpu.yaml`.\n"


def test_plan_presets_plans_every_preset_in_an_empty_directory_and_names_its_bounded_texts(monkeypatch, two_presets,
                                                                                         tmp_path):
    from trimbench.cost.work import Phase, Work
    from trimbench.plan.price import JobPlan

    asked = []

    def planned(runs, gpus, workdir, cache_dir):
        asked.append((runs, gpus, cache_dir, list(workdir.iterdir()), workdir.is_dir()))
        phase = Phase("train", "m", 1, 1, 1, train=True, lengths_source="upper bound 512")
        job = JobPlan("train_model", {"v": "a"}, Work((phase,), examples=1), "a100-80gb", flops=1e12, gpu_hours=1.0)
        lengths = [{("d", "train", "text"): "upper bound 512", ("d", "train", "title"): "upper bound 32",
                    ("d", "test", "text"): "measured on d"}, {("e", "test", "text"): "contract e"}]
        return [(name, {gpu: [job] for gpu in gpus}, found) for name, found in zip(("x", "y"), lengths, strict=True)]

    monkeypatch.setattr(costs, "plan_many", planned)
    bounded: dict = {}
    table, totals = costs.plan_presets(cache_dir=tmp_path, bounded=bounded)
    assert asked == [([[str(costs.REPO / "configs/paper.yaml"), str(costs.REPO / "configs/overlay.yaml")],
                       [str(costs.REPO / "configs/cpu.yaml")]], list(costs.GPUS), tmp_path, [], True)]
    assert bounded == {"paper": ["d train text", "d train title"], "cpu": []}
    assert list(table["run"]) == ["paper", "paper", "cpu", "cpu"] and list(table["gpu"]) == [*costs.GPUS] * 2
    assert list(totals["run"]) == ["paper", "paper", "cpu", "cpu"] and list(totals["gpu_hours"]) == [1.0] * 4


def test_make_plan_presets_writes_the_page_the_figures_and_the_readmes_cells(monkeypatch, two_presets, tmp_path,
                                                                            capsys):
    def planned(cache_dir=None, bounded=None):
        bounded.update({"paper": ["d train text"]})
        return two_presets, plan.totals(two_presets)

    monkeypatch.setattr(costs, "plan_presets", planned)
    paths = {name: tmp_path / name for name in ("costs.md", "costs.csv", "README.md")}
    monkeypatch.setattr(costs, "REPO", tmp_path)  # the paths it names, relative to the checkout
    monkeypatch.setattr(costs, "COSTS_MD", paths["costs.md"])
    monkeypatch.setattr(costs, "COSTS_CSV", paths["costs.csv"])
    monkeypatch.setattr(costs, "readme_cells", lambda figures: {paths["README.md"]: "|".join(figures["preset"])})
    costs.main([])  # without --write: printed, nothing written
    figures = costs.summary(two_presets, plan.totals(two_presets))
    assert capsys.readouterr().out == figures.to_markdown(index=False) + "\n"
    assert not any(path.exists() for path in paths.values())
    costs.main(["--write"])
    assert paths["costs.md"].read_text() == costs.costs_markdown(two_presets, figures, {"paper": ["d train text"]})
    pd.testing.assert_frame_equal(pd.read_csv(paths["costs.csv"], keep_default_na=False), figures, check_dtype=False)
    assert paths["README.md"].read_text() == "paper|cpu"
    assert capsys.readouterr().out == "wrote costs.md, costs.csv and the READMEs' cost cells\n"


PAGE = """# A page

Text with | a bar, not a table.

| preset | what | cost |
|---|---|---|
| [`paper.yaml`](configs/paper.yaml) | a paper | old |
| `cpu` | the profile | old |
| [`overlays/extra.yaml`](configs/overlays/extra.yaml) | an overlay | old |
| [`other.yaml`](configs/other.yaml) | no figures | kept |

| preset | cost |
|---|---|
| `paper` | a later table, kept |
"""


def test_the_cost_cells_are_rewritten_in_their_tables_rows_and_nowhere_else(monkeypatch, two_presets, tmp_path):
    """Each row naming a preset (its file, its name, or its overlay's file) of the first table with a
    cost column gets that preset's cell; every other line stays as it was."""
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    cells = {"paper": "P", "cpu": "C", "extra": "E"}
    rewritten = costs._rewrite_cells(page, cells, "cost").splitlines()
    expected = PAGE.splitlines()
    for row, cell in ((6, "P"), (7, "C"), (8, "E")):
        expected[row] = expected[row].replace("| old |", f"| {cell} |")
    assert rewritten == expected
    page.write_text("\n".join(rewritten) + "\n")
    assert costs.cells_of(page) == ["P", "C", "E", "kept"] and costs.cells_of(page, "what")[0] == "a paper"

    figures = costs.summary(two_presets, plan.totals(two_presets))
    readme, configs_readme = tmp_path / "README.md", tmp_path / "configs-README.md"
    readme.write_text(PAGE)
    configs_readme.write_text(PAGE)
    monkeypatch.setattr(costs, "README", readme)
    monkeypatch.setattr(costs, "CONFIGS_README", configs_readme)
    monkeypatch.setattr(costs, "README_PRESETS", ["paper"])  # the README's rows: its one-file paper presets
    pages = costs.readme_cells(figures)
    by_preset = {row["preset"]: row for row in figures.to_dict("records")}
    page.write_text(pages[configs_readme])
    assert costs.cells_of(page)[:2] == [costs.cell(by_preset["paper"], "../docs/costs.md"),
                                        costs.cell(by_preset["cpu"], "../docs/costs.md")]
    assert "([plan](../docs/costs.md#paper))" in costs.cells_of(page)[0]
    page.write_text(pages[readme])
    assert costs.cells_of(page)[:2] == [costs.short_cell(by_preset["paper"], "docs/costs.md"), "old"]
    assert costs.cells_of(page)[0].endswith("([plan](docs/costs.md#paper))")


def test_a_runs_totals_add_its_priced_jobs_and_count_the_rest(two_presets):
    """trimbench.plan.plan.totals per run and GPU: the priced jobs' figures summed (the widest the
    largest), the unpriced ones counted and named, the jobs over a 40 / 80 GB device's usable memory
    and those that fit no planned GPU counted, the disk no count gives counted apart."""
    table = two_presets.copy()
    table.loc[(table["job"] == "train_model[v=b]") & (table["gpu"] == "h100-80gb"), "fits"] = False
    totals = plan.totals(table).set_index(["run", "gpu"])
    assert list(totals.index) == [("paper", "a100-80gb"), ("cpu", "a100-80gb"), ("paper", "h100-80gb"),
                                  ("cpu", "h100-80gb")]  # in the table's order
    paper = totals.loc[("paper", "a100-80gb")].to_dict()
    assert {key: paper[key] for key in ("jobs", "gpu_jobs", "unpriced", "at_max_length", "over_40gb", "over_80gb",
                                        "not_fitting", "disk_unknown")} == {
        "jobs": 8, "gpu_jobs": 3, "unpriced": 4, "at_max_length": 1, "over_40gb": 1, "over_80gb": 0, "not_fitting": 0,
        "disk_unknown": 4}
    assert paper["unpriced_jobs"] == "train_electra[m=o]; train_electra[m=p2]; train_electra[m=p]; train_electra[m=q]"
    assert (paper["gpu_hours"], paper["gpu_hours_low"], paper["gpu_hours_high"]) == pytest.approx(
        (5.5555, 5.5555 / 2, 2 * 5.5555))
    assert (paper["tokens"], paper["pflops"], paper["widest_gib"], paper["disk_gb"]) == pytest.approx(
        (3000, 2 * 5.5555 / 1e3, 39.44, 1.74))
    assert totals.loc[("paper", "h100-80gb"), "not_fitting"] == 1
    assert totals.loc[("paper", "h100-80gb"), "gpu_hours"] == pytest.approx(5.5555 / 3)
    cpu = totals.loc[("cpu", "a100-80gb")].to_dict()
    assert (cpu["jobs"], cpu["gpu_jobs"], cpu["unpriced"], cpu["unpriced_jobs"], cpu["widest_gib"],
            cpu["gpu_hours"], cpu["disk_unknown"]) == (1, 0, 0, "", 0.0, 0, 0)
