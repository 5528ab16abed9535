"""``jobs.artifacts.PRODUCERS`` (the rule named in an error about a damaged cached file) held
against the DAG itself: Snakemake's dry runs of the embedded default, of the SPLADE and ELECTRA
presets together, and of a preset of each track of the table neither has (between them every rule
that writes something a later job reads; seconds, no job runs)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE

from trimbench.config.schema import load_config
from trimbench.jobs.artifacts import PRODUCERS, producer
from trimbench.plan.dryrun import job_total, parse
from trimbench.tracks import TRACKS

#: the tests share this module's dry runs (a module fixture): under pytest-xdist, all on one worker
pytestmark = pytest.mark.xdist_group(__name__)

#: the embedded default, and the presets with the rules it lacks (the SPLADE seed's downloads and
#: ensembles; ELECTRA's domain adaptation and word-similarity stage), combined as a user combines configs
DRY_RUNS = {"default": [REPO / "config.yaml"],
            "splade+electra": [REPO / "configs" / "splade.yaml", REPO / "configs" / "electra.yaml"]}


def tracks_of(configs) -> set[str]:
    return {exp.get("track") for exp in load_config(configs)["experiments"].values()}


# Every track of the table is in some dry run: a track none of the above has is dry-run with its
# face's first preset, so that a new track's outputs are held against PRODUCERS too.
for _name, _track in TRACKS.items():
    if _name not in set().union(*map(tracks_of, DRY_RUNS.values())):
        DRY_RUNS[_name] = [REPO / path for path in next(iter(_track.presets.values()))]

def planned_jobs(tmp_path, configs) -> list[tuple[str, list[str], list[str]]]:
    """(rule, inputs, outputs) of every job of the dry run of ``configs`` in an empty directory (read
    as the cost plan reads a dry run: trimbench.plan.dryrun)."""
    result = subprocess.run([*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                             "--configfile", *map(str, configs), "-n"], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = [(job.rule, list(job.inputs), list(job.outputs)) for job in parse(result.stdout)]
    assert jobs and len(jobs) == job_total(result.stdout), result.stdout[-3000:]
    return jobs


@pytest.fixture(scope="module")
def dags(tmp_path_factory) -> dict[str, list]:
    return {name: planned_jobs(tmp_path_factory.mktemp(name), configs) for name, configs in DRY_RUNS.items()}


TARGET = re.compile(r"all(_\w+)?$")


def wrong_producers(jobs) -> list[str]:
    """Each output another job reads that PRODUCERS misses or names wrongly, and each output it
    names with a rule other than the job's."""
    # the target rules (all, all_*) ask for outputs; they read none
    read = {path for rule, inputs, _ in jobs if not TARGET.match(rule) for path in inputs}
    wrong = []
    for rule, _, outputs in jobs:
        for output in outputs:
            named = producer(output)
            if named is None:
                if output in read:
                    wrong.append(f"{output}: read by a later job, made by rule {rule}; PRODUCERS names no rule")
            elif rule not in named[0].split(" or ") or str(named[1]) != output:
                wrong.append(f"{output}: made by rule {rule}; PRODUCERS says rule {named[0]} makes {named[1]}")
    return wrong


def test_producers_name_the_rule_of_every_output_a_later_job_reads(dags):
    wrong = [line for name, jobs in dags.items() for line in wrong_producers(jobs)]
    assert not wrong, "\n".join(wrong)


def test_every_producers_entry_is_an_output_of_the_workflow(dags):
    """No entry outlives its rule or layout: each pattern matches an output of its rule in a dry run,
    or a folder of them (ELECTRA's fine-tunings/<task>, kept from the retrieval runs' pattern below it)."""
    made = {(rule, str(folder)) for jobs in dags.values() for rule, _, outputs in jobs for output in outputs
            for folder in (Path(output), *Path(output).parents)}
    unused = [(pattern, rules) for pattern, rules in PRODUCERS
              if not any(re.fullmatch(_regex(pattern), output) and rule in rules.split(" or ")
                         for rule, output in made)]
    assert not unused, unused


def _regex(pattern: str) -> str:
    """PRODUCERS' glob (``*`` within one path part) as a regex, anchored on the relative output path."""
    return "[^/]*".join(re.escape(part) for part in pattern.split("*"))
