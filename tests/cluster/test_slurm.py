"""The cluster profile on a real SLURM cluster: the one-node cluster of cluster/ on localhost.

Needs root (the daemons); the module fixture starts the cluster (installing Debian's packages when
missing) unless it is up already, as .ci/run leaves it, and stops only what it started.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, SNAKEMAKE, experiment_dir, priced_env, run_snakemake

TINY_STS = experiment_dir("", "tiny-sts")

#: the tests share one cluster and its runs (module fixtures): under pytest-xdist, all on one worker
pytestmark = pytest.mark.xdist_group(__name__)

CLUSTER = REPO / "cluster"
NO_PACKAGES = 2  # start-local-slurm.sh's exit status when it cannot have its packages
CLUSTER_RULES = {"train_model", "encode_texts", "evaluate_sts"}  # the rest are localrules
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: \S+/rule_(\w+)/")


@pytest.fixture(scope="module")
def local_slurm(tmp_path_factory) -> dict:
    """The cluster up, and the environment in which `--profile slurm` finds the cluster profile
    (installed by the README's `make slurm-profile` into a temporary XDG_CONFIG_HOME)."""
    config_home = tmp_path_factory.mktemp("config-home")
    # the cluster's jobs ask SLURM for their planned runtime and memory (trimbench/plan/resources.py)
    environment = {**priced_env(), "XDG_CONFIG_HOME": str(config_home)}
    subprocess.run(["make", "-s", "-C", str(REPO), "slurm-profile"], env=environment, check=True, timeout=60)
    if os.geteuid() != 0:
        pytest.skip("the local SLURM cluster (cluster/start-local-slurm.sh) needs root")
    started = subprocess.run([str(CLUSTER / "start-local-slurm.sh"), "--install"], capture_output=True, text=True,
                             timeout=900)
    if started.returncode == NO_PACKAGES:
        pytest.skip(f"no local SLURM cluster: {started.stderr.strip()}")
    assert started.returncode == 0, started.stderr
    yield environment
    if "already running" not in started.stderr:
        subprocess.run([str(CLUSTER / "stop-local-slurm.sh")], check=True, timeout=300)


def cluster_command(workdir: Path, *args: str, limit_s: int = 1500) -> list[str]:
    """`snakemake --profile slurm --profile profiles/local-slurm` on ``workdir`` (the named profile:
    run it in the environment of the local_slurm fixture), stopped with SIGINT after ``limit_s``
    (snakemake ignores SIGTERM while jobs run)."""
    return ["timeout", "-s", "INT", str(limit_s), *SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"),
            "--directory", str(workdir), "--profile", "slurm",
            "--profile", str(REPO / "profiles" / "local-slurm"), *args]


def run_on_cluster(workdir: Path, *args: str, env: dict) -> str:
    result = subprocess.run(cluster_command(workdir, *args), capture_output=True, text=True, cwd=workdir, env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    return output


def submissions(output: str) -> dict[str, str]:
    """SLURM job id -> rule, from snakemake's "submitted with SLURM jobid" lines."""
    return {slurm_id: rule for _, slurm_id, rule in SUBMITTED.findall(output)}


def accounting(slurm_ids) -> dict[str, dict[str, str]]:
    """sacct's record of each job: State, ReqMem, AllocTRES."""
    fields = ["JobID", "State", "ReqMem", "AllocTRES"]
    table = subprocess.run(["sacct", "-X", "-n", "-P", "-j", ",".join(slurm_ids), "-o", ",".join(fields)],
                           capture_output=True, text=True, check=True).stdout
    return {row[0]: dict(zip(fields[1:], row[1:], strict=True))
            for row in (line.split("|") for line in table.splitlines()) if row[0]}


@pytest.fixture(scope="module")
def cluster_run(local_slurm, workdir_factory) -> tuple[Path, str]:
    workdir = workdir_factory("cluster")
    return workdir, run_on_cluster(workdir, env=local_slurm)


@pytest.fixture(scope="module")
def workdir_factory(tmp_path_factory):
    def make(name: str) -> Path:
        """A run of tiny.yaml's first experiment alone, with one trained method beside the pretrained
        model: its jobs take every cluster rule (more methods or experiments would only queue the
        same rules again, each sbatch job paying an interpreter's start-up)."""
        workdir = tmp_path_factory.mktemp(name)
        config = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
        config["experiments"] = {"tiny-sts": {**config["experiments"]["tiny-sts"], "methods": ["pretrained", "full"]}}
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        return workdir

    return make


def test_every_cluster_job_runs_through_sbatch(cluster_run):
    _, output = cluster_run
    cluster_jobs = re.findall(r"^rule (\w+):$", output, flags=re.MULTILINE)
    submitted = submissions(output)
    assert set(cluster_jobs) == CLUSTER_RULES
    assert sorted(submitted.values()) == sorted(cluster_jobs)  # one SLURM job per cluster job
    records = accounting(submitted)
    assert set(records) == set(submitted)
    assert {record["State"] for record in records.values()} == {"COMPLETED"}
    # Training and encoding got a (fake) GPU; evaluation did not ask for one.
    for slurm_id, rule in submitted.items():
        assert ("gres/gpu=1" in records[slurm_id]["AllocTRES"]) == (rule != "evaluate_sts"), (rule, records[slurm_id])


def test_cluster_gives_the_local_score_table(cluster_run, workdir_factory):
    cluster, _ = cluster_run
    local = workdir_factory("local")
    run_snakemake(local)
    scores = f"{TINY_STS}/scores.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(cluster / scores), pd.read_parquet(local / scores))


def test_failed_job_is_retried_with_more_memory_and_the_run_completes(local_slurm, workdir_factory):
    workdir = workdir_factory("retried")
    env = {**local_slurm, "TRIMBENCH_TEST_FAIL_ONCE": "encode_texts"}
    output = run_on_cluster(workdir, f"{TINY_STS}/scores/pretrained.parquet", env=env)
    assert (workdir / f"{TINY_STS}/scores/pretrained.parquet").is_file()
    encodings = [slurm_id for slurm_id, rule in submissions(output).items() if rule == "encode_texts"]
    records = accounting(encodings)
    # The first attempt failed; the retry asked for twice the memory (mem_mb, the job's plan on a
    # cluster: trimbench/plan/resources.py, grows with the attempt).
    attempts = [(records[i]["State"], records[i]["ReqMem"]) for i in sorted(encodings, key=int)]
    assert [state for state, _ in attempts] == ["FAILED", "COMPLETED"]
    first, retry = (int(memory.rstrip("M")) for _, memory in attempts)
    # the plan's (plan_host_base_mb 4000 and the model, x plan_margin 1.5), not the rule's own 4000
    assert retry == 2 * first and first > 4000
    assert "fails on its first attempt" in output


def test_requeued_training_resumes_from_its_checkpoint(local_slurm, workdir_factory):
    workdir = workdir_factory("requeued")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["experiments"]["tiny-sts"]["train"]["checkpoint_steps"] = 1
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    train_log = workdir / "results/logs/train_model/2dmse-sts/tiny-sts/full.log"
    output_file = workdir / "snakemake.out"
    env = {**local_slurm, "TRIMBENCH_TEST_HOLD": "train_model:checkpoint"}  # held once, after checkpoint-1
    with output_file.open("w") as output:
        run = subprocess.Popen(cluster_command(workdir, f"{TINY_STS}/models/full"), cwd=workdir, env=env,
                               stdout=output, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 600
    while "test hold at checkpoint" not in (train_log.read_text() if train_log.exists() else ""):
        assert run.poll() is None and time.monotonic() < deadline, output_file.read_text()[-8000:]
        time.sleep(1)
    (slurm_id,) = submissions(output_file.read_text())
    # What a preemption or a node failure does: SLURM kills the job and queues it again.
    subprocess.run(["scontrol", "requeue", slurm_id], check=True)
    assert run.wait(timeout=900) == 0, output_file.read_text()[-8000:]
    assert re.search(r"resuming from checkpoint \S+/full\.tmp/trainer/checkpoint-1 \(step 1\)", train_log.read_text())
    assert (workdir / f"{TINY_STS}/models/full/model.safetensors").is_file()
    states = subprocess.run(["sacct", "-D", "-X", "-n", "-P", "-j", slurm_id, "-o", "State"], capture_output=True,
                            text=True, check=True).stdout.split()
    assert states == ["REQUEUED", "COMPLETED"]


def test_a_job_planned_over_the_partitions_limit_is_not_submitted(local_slurm, workdir_factory):
    """plan_max_runtime 1 (every GPU job's plan is at least plan_min_runtime, 15): the run stops before
    its first job, naming the jobs and the limit; nothing reaches sbatch (plan_submit_over_limit false).
    The --config goes on top of the profile's config: entries (trimbench/config/profiles.py)."""
    workdir = workdir_factory("over-limit")
    result = subprocess.run(cluster_command(workdir, "--config", "plan_max_runtime=1"), capture_output=True,
                            text=True, cwd=workdir, env=local_slurm)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-8000:]
    assert "planned over plan_max_runtime (1 min, the partition's limit), so none is submitted" in output
    assert "train_model[" in output and "plan_submit_over_limit: true" in output
    assert not submissions(output)
