"""Training and corpus encoding on several devices through Snakemake: the sbatch call the SLURM
profile makes for ``train.devices: 4``, ``retrieval.encode_devices: 4`` and ``splade.encode_devices: 4``
(built by the executor plugin's own code from the resources Snakemake gives the job), and a tiny run
with ``devices: 2`` on CPU (two gloo ranks)."""

from __future__ import annotations

import re
import subprocess
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, cold_env, experiment_dir, snakemake_command, warm_env


class Resources(SimpleNamespace):
    def get(self, name, default=None):
        return getattr(self, name, default)


def dry_run_resources(workdir, rule: str, *args: str) -> dict:
    """The resources Snakemake's dry run gives the first job of ``rule``."""
    result = subprocess.run([*SNAKEMAKE, "--directory", str(workdir), "-n", *args], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    block = next(b for b in result.stdout.split("\n\n") if re.search(rf"^rule {rule}:", b, flags=re.MULTILINE))
    listed = re.search(r"resources: (.*)", block).group(1)
    resources = {}
    for pair in listed.split(", "):
        name, _, value = pair.partition("=")
        resources[name] = int(value) if value.isdigit() else value
    return resources


@pytest.mark.parametrize(("config_file", "name", "settings", "rule"), [
    ("tests/configs/tiny.yaml", "tiny-sts", ("train", "devices"), "train_model"),
    ("configs/mini.yaml", "mini-retrieval", ("retrieval", "encode_devices"), "encode_corpus"),
    ("configs/mini.yaml", "mini-splade", ("splade", "encode_devices"), "encode_sparse")])
def test_slurm_job_of_four_devices_asks_for_four_gpus_on_one_node(tmp_path, config_file, name, settings, rule):
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    config = yaml.safe_load((REPO / config_file).read_text())
    config["only"] = [name]
    section, key = settings
    config["experiments"][name].setdefault(section, {})[key] = 4
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    resources = dry_run_resources(tmp_path, rule, "--profile", "profiles/slurm", "--cores", "64")
    job = SimpleNamespace(resources=Resources(**resources), threads=resources["cpus_per_task"])
    params = {"run_uuid": "id", "slurm_logfile": "log", "comment_str": rule, "account": "",
              "partition": f"-p {resources['slurm_partition']}", "workdir": str(tmp_path)}
    call = get_submit_command(job, params) + set_gres_string(job)
    assert " --gpus=4" in call and " --nodes=1" in call, call
    # one task (torchrun starts the ranks inside it) with the CPUs of the four ranks
    assert "--ntasks" not in call and "--cpus-per-task=4" in call, call


def with_retrieval_encoded_on_two_devices(config: dict) -> str:
    """``config`` with a tiny retrieval experiment whose corpus encoding spans two devices; the
    embeddings folder its run makes."""
    config["datasets"]["lee-ict-retrieval"] = {"source": "gensim", "builder": "lee_ict", "kind": "retrieval",
                                               "heldout_fraction": 0.2, "seed": 42}
    config["only"].append("tiny-retrieval")
    config["experiments"]["tiny-retrieval"] = {
        "track": "2dmse-retrieval", "model": "tiny", "pooling": "mean", "methods": ["pretrained"],
        "grid": {"layers": [2, 3], "dims": [32, 16]}, "train": {"dataset": "lee-ict-retrieval", "split": "train"},
        "retrieval": {"encode_devices": 2, "target_dims": [16], "q_max_length": 16, "p_max_length": 32},
        "evaluation": {"datasets": ["lee-ict-retrieval"], "split": "heldout", "metrics": ["ndcg@10"],
                       "main_metric": "ndcg@10"}}
    return "results/2dmse-retrieval/tiny-retrieval/embeddings/pretrained"


@pytest.mark.parametrize("interpreter", ["cold", "warm"])
def test_tiny_training_on_two_cpu_ranks_through_snakemake(tmp_path, interpreter):
    """A training job of ``devices: 2`` launches two ranks (gloo on CPU), whose lines in the job's log
    name them; rank 0 alone writes the model, and nothing of the run's work dir is left. Under the
    warm interpreter the forked job starts the ranks as fresh interpreters; that run also encodes a
    retrieval corpus on two devices (``retrieval.encode_devices``, which reaches the job outside the
    params Snakemake compares; the arrays equal one device's: tests/dense/test_encode_ddp.py)."""
    config = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    config["only"] = ["tiny-sts"]
    experiment = config["experiments"]["tiny-sts"]
    experiment["methods"] = ["full"]
    experiment["train"].update(devices=2, max_steps=2, checkpoint_steps=1)
    # the encoding in one of the two runs only: each job of two ranks costs ~20 s on two cores
    embeddings = with_retrieval_encoded_on_two_devices(config) if interpreter == "warm" else None
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    model = experiment_dir(tmp_path, "tiny-sts") / "models" / "full"
    targets = [str(model.relative_to(tmp_path)), *([embeddings] if embeddings else [])]
    result = subprocess.run(snakemake_command(tmp_path, *targets), cwd=tmp_path,
                            env=warm_env() if interpreter == "warm" else cold_env(), capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    if embeddings:
        log = (tmp_path / "results" / "logs" / "encode_corpus" / "2dmse-retrieval" / "tiny-retrieval"
               / "pretrained.log").read_text()
        assert "launching 2 ranks" in log and " rank 1/2 " in log and "forked by the warm interpreter" in log
        assert (tmp_path / embeddings / "lee-ict-retrieval" / "docs.npy").is_file()
        assert [p.name for p in (tmp_path / embeddings).parent.iterdir()] == ["pretrained"]
    log = (tmp_path / "results" / "logs" / "train_model" / "2dmse-sts" / "tiny-sts" / "full.log").read_text()
    assert "launching 2 ranks" in log and "--nproc_per_node=2" in log
    assert ("forked by the warm interpreter" in log) == (interpreter == "warm")
    assert " rank 0/2 " in log and " rank 1/2 " in log
    assert (model / "modules.json").is_file()
    assert not model.with_name("full.tmp").exists()
