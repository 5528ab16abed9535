"""The cluster profile by name, as Snakemake users write it (`snakemake --profile slurm`), after the
README's `make slurm-profile`; and by its path in the checkout (`--profile profiles/slurm`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, job_counts, priced_env


def install_profile(config_home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "-C", str(REPO), "slurm-profile", *args], capture_output=True, text=True,
                          env={**os.environ, "XDG_CONFIG_HOME": str(config_home)}, timeout=60)


def test_make_slurm_profile_links_the_profile_once_and_never_replaces_another(tmp_path):
    first, again = install_profile(tmp_path), install_profile(tmp_path)
    link = tmp_path / "snakemake" / "slurm"
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert link.is_symlink() and link.resolve() == (REPO / "profiles" / "slurm").resolve()
    assert "linked" in first.stdout and "already" in again.stdout
    # A user's own profile of that name stays as it is, and the target says so.
    mine = tmp_path / "snakemake" / "mine"
    mine.mkdir()
    (mine / "config.yaml").write_text("executor: slurm\n")
    refused = install_profile(tmp_path, "PROFILE_NAME=mine")
    assert refused.returncode != 0 and "is not this checkout's profile: left as it is" in refused.stderr
    assert (mine / "config.yaml").read_text() == "executor: slurm\n" and not mine.is_symlink()
    # A link left dangling (the checkout moved) is replaced, saying so.
    (tmp_path / "snakemake" / "moved").symlink_to(tmp_path / "old-checkout" / "profiles" / "slurm")
    replaced = install_profile(tmp_path, "PROFILE_NAME=moved")
    assert replaced.returncode == 0 and "which no longer exists" in replaced.stdout
    assert (tmp_path / "snakemake" / "moved").resolve() == (REPO / "profiles" / "slurm").resolve()


@pytest.mark.parametrize("profile", ["slurm", "profiles/slurm"])
def test_both_spellings_of_the_cluster_profile_dry_run(tmp_path, profile):
    """The probe: `--profile slurm` failed ("no profile.yaml (or config.yaml) found")."""
    config_home, workdir = tmp_path / "config", tmp_path / "work"
    workdir.mkdir()
    shutil.copy(REPO / "tests" / "configs" / "tiny.yaml", workdir / "config.yaml")
    assert install_profile(config_home).returncode == 0
    # From the checkout, as the README runs it; --directory keeps the run's files out of the checkout.
    result = subprocess.run([*SNAKEMAKE, "--profile", profile, "--directory", str(workdir), "-n"], cwd=REPO,
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "XDG_CONFIG_HOME": str(config_home)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert job_counts(result.stdout)["total"] == 47
    # The cluster profile's settings reached the jobs: the partition to submit to.
    assert "slurm_partition=gpu" in result.stdout


def test_cluster_jobs_ask_for_the_cpus_they_use(tmp_path):
    """The probe: every SLURM job had cpus_per_task=1, training with dataloader workers too."""
    config = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    config["experiments"]["tiny-sts"]["train"]["dataloader_workers"] = 3
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    # --cores: on a cluster, Snakemake caps every job's threads at it (profiles/default: the
    # machine's cores, 2 here; a login node has more).
    result = subprocess.run([*SNAKEMAKE, "--profile", "profiles/slurm", "--directory", str(tmp_path), "-n",
                             "--cores", "16"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    cpus = {}
    for block in result.stdout.split("\n\n"):
        rule = re.search(r"^rule (\w+):", block, flags=re.MULTILINE)
        wildcards = re.search(r"wildcards: (?:\w+=\S+, )*experiment=([\w-]+)", block)
        asked = re.search(r"cpus_per_task=(\d+)", block)
        if rule and wildcards and asked:
            cpus.setdefault((rule.group(1), wildcards.group(1)), set()).add(int(asked.group(1)))
    # Training: its own process and the three tokenising beside it; the other experiment, one.
    assert cpus[("train_model", "tiny-sts")] == {4} and cpus[("train_model", "tiny-sts-v2")] == {1}
    assert cpus[("encode_texts", "tiny-sts")] == {1}


def test_a_config_on_the_command_line_keeps_the_profiles_partition_limit(tmp_path):
    """Snakemake lets any --config replace a profile's config: list; the profile's plan_max_runtime (the
    partition's limit) stays under it (trimbench/config/profiles.py): the dry run still names the jobs
    planned over it. A limit of 1 minute: every GPU job's plan (at least plan_min_runtime) is over it."""
    profile, workdir = tmp_path / "site", tmp_path / "work"
    shutil.copytree(REPO / "profiles" / "slurm", profile)
    settings = (profile / "config.yaml").read_text()
    assert "  plan_max_runtime: 2880" in settings
    (profile / "config.yaml").write_text(settings.replace("  plan_max_runtime: 2880", "  plan_max_runtime: 1"))
    workdir.mkdir()
    shutil.copy(REPO / "tests" / "configs" / "tiny.yaml", workdir / "config.yaml")
    result = subprocess.run([*SNAKEMAKE, "--profile", str(profile), "--directory", str(workdir), "-n",
                             "--config", "plan_margin=2"], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env=priced_env())
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert re.search(r"plan: train_model\[.*\]: planned \d+ min, over plan_max_runtime 1 min", output), output[-3000:]
