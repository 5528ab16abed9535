"""trimbench.jobs.launch without ranks: the job handed to torchrun's ranks (Job.to_cli, read back by
job_from_cli), and the checks before launching them (the ranks themselves:
tests/dense/test_dense_ddp.py, tests/workflow/test_multi_device.py)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from trimbench.errors import ConfigError
from trimbench.jobs import launch
from trimbench.jobs.run import Job, job_from_cli


def a_job(devices: int = 2) -> Job:
    return Job(input=SimpleNamespace(model="results/models/tiny", data="results/data/x.parquet"),
               output=SimpleNamespace(model="results/e/models/full"),
               params=SimpleNamespace(method="full", train={"batch_size": 8, "lr": 5e-5}, dims=[8, 16]),
               wildcards=SimpleNamespace(experiment="e", variant="full"),
               resources=SimpleNamespace(gpu=devices, mem_mb=8000, _cores=4, tmpdir="/tmp"),
               log=["results/logs/e.log"], threads=4, rule="train_model")


def test_the_ranks_read_back_the_job_they_are_handed():
    job = a_job()
    again = job_from_cli(job.to_cli(threads=2), "train_model")
    for field in ("input", "output", "params", "wildcards"):
        assert again.named(field) == job.named(field)
    assert again.log == job.log and again.threads == 2  # each rank: its share of the job's CPUs
    # the devices travel as the resource gpu (not a param); Snakemake's own resources stay behind
    assert again.named("resources") == {"gpu": 2, "mem_mb": 8000} and again.devices == 2
    assert job_from_cli(job.to_cli(), "train_model").threads == 4


def test_the_ranks_write_in_place_of_the_output_and_read_back_lists_of_paths():
    job = a_job()
    job.input.data = ["results/data/a", "results/data/b"]
    again = job_from_cli(job.to_cli({"model": "results/e/models/.full.tmp-7"}), "train_model")
    assert again.input.data == ["results/data/a", "results/data/b"]
    assert again.output.model == "results/e/models/.full.tmp-7"


def test_a_job_without_a_gpu_resource_spans_one_device():
    job = a_job()
    job.resources = SimpleNamespace()
    assert job.devices == 1 and job_from_cli([], "train_model").devices == 1


def test_nothing_is_launched_on_one_device_or_inside_a_rank(monkeypatch):
    assert not launch.launched(a_job(devices=1), "scripts/train_model.py")
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert not launch.launched(a_job(), "scripts/train_model.py")


@pytest.mark.parametrize("setting", ["train.devices", "retrieval.encode_devices"])
def test_a_slurm_job_without_gpus_is_a_config_error_naming_the_key(monkeypatch, setting):
    import torch

    key = re.escape(f"experiments.e.{setting}")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "17")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match=rf"config key {key}: 2 devices, but SLURM job 17 has no GPU"):
        launch.launched(a_job(), "scripts/train_model.py", setting)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ConfigError, match=rf"{key}: 2 devices, but this job sees 1 GPUs"):
        launch.launched(a_job(), "scripts/train_model.py", setting)
