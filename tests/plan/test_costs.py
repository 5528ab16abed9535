"""The presets' cost cells (README.md, configs/README.md) and docs/costs.md come from their plans, as
the schema reference comes from the schema: `make plan-presets` writes them, these tests hold them."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from trimbench.plan import costs


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
    (0.819, "0.82"), (0.00328, "0.0033"),
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
