"""trimbench.config.profiles: a cluster profile's config: entries (plan_gpu, plan_max_runtime: the
partition's limit) stay under a --config given on the command line, which Snakemake lets replace them."""

from __future__ import annotations

from conftest import REPO

from trimbench.config.profiles import named_profiles, profile_config

SLURM = str(REPO / "profiles" / "slurm")


def test_the_profiles_of_a_command_line_in_order_else_the_environments():
    argv = ["snakemake", "--profile", "a", "-n", "--profile=b", "--config", "x=1"]
    assert named_profiles(argv, {"SNAKEMAKE_PROFILE": "env"}) == ["a", "b"]
    assert named_profiles(["snakemake", "-n"], {"SNAKEMAKE_PROFILE": "env"}) == ["env"]
    assert named_profiles(["snakemake", "-n"], {}) == []


def test_the_cluster_profiles_plan_settings_are_read_as_snakemake_parses_them():
    assert profile_config(["snakemake", "--profile", SLURM, "-n"], {}) == {"plan_gpu": "a100-80gb",
                                                                           "plan_max_runtime": 2880}
    assert profile_config(["snakemake"], {"SNAKEMAKE_PROFILE": SLURM}) == {"plan_gpu": "a100-80gb",
                                                                           "plan_max_runtime": 2880}
    assert profile_config(["snakemake", "-n"], {}) == {}


def test_a_later_profiles_config_replaces_an_earlier_ones_and_one_without_keeps_it(tmp_path):
    """As Snakemake merges profiles, by top-level key: profiles/local-slurm, which has no config:,
    keeps the cluster profile's."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "config.yaml").write_text("executor: slurm\nconfig:\n  plan_max_runtime: 60\n  plan_gpu: h100-80gb\n")
    local = str(REPO / "profiles" / "local-slurm")
    assert profile_config(["snakemake", "--profile", SLURM, "--profile", local], {})["plan_max_runtime"] == 2880
    assert profile_config(["snakemake", "--profile", SLURM, "--profile", str(site)], {}) == {
        "plan_max_runtime": 60, "plan_gpu": "h100-80gb"}


def test_a_relative_profile_path_is_read_from_where_snakemake_started(tmp_path, monkeypatch):
    """The workflow runs in its --directory by the time it reads the config: `--profile profiles/slurm`
    is the checkout's, where snakemake was started."""
    monkeypatch.chdir(tmp_path)
    argv = ["snakemake", "--profile", "profiles/slurm", "--directory", str(tmp_path)]
    assert profile_config(argv, {}) == {}
    assert profile_config(argv, {}, folders=[None, str(REPO)])["plan_max_runtime"] == 2880
    assert profile_config(argv, {}, folders=[str(REPO), "/nowhere"])["plan_max_runtime"] == 2880
