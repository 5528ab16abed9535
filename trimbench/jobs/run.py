"""Running a rule's step: from Snakemake's ``script:`` object, or alone from the command line.

Each ``scripts/<rule>.py`` holds its step as ``main(job)`` and ends with ``run(main, snakemake)``.
Under Snakemake the job comes from the injected ``snakemake`` object; alone, from arguments, for
debugging one stage::

    python scripts/evaluate_sts.py --input embeddings=results/2dmse-sts/x/embeddings/full \\
        --output scores=/tmp/s.parquet --params '{"experiment": "x", ...}' --log /tmp/e.log

A script imports the libraries its step needs inside ``main``: where the warm interpreter runs
(:mod:`trimbench.jobs.warm`), the script's own process only hands the job over, and the forked
child runs the script again by its path. Scripts have no ``from __future__``
import: Snakemake runs a copy of each with its preamble in front.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from trimbench.errors import ExplainedError
from trimbench.jobs import faults, warm
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.launch import rank_log_format
from trimbench.jobs.packaged import packaged_folder

#: the param naming each packaged model a job reads in place of an input folder (rules/common.smk's
#: ``packaged``): input name -> trimbench.jobs.packaged.packaged_model
PACKAGED_PARAM = "packaged"


class Job(SimpleNamespace):
    """input, output, params, wildcards, resources, log (namespaces of named values), threads, rule."""

    def named(self, field: str) -> dict:
        """The named values of ``field`` (e.g. "params") as a dict, from Snakemake or the CLI."""
        values = getattr(self, field)
        return dict(values.items()) if hasattr(values, "items") else dict(vars(values))

    @property
    def devices(self) -> int:
        """The devices the job spans: its resource ``gpu``, which the rules set from ``train.devices`` /
        ``*.encode_devices`` (why a resource, not a param: :mod:`trimbench.jobs.launch`)."""
        return max(1, int(self.named("resources").get("gpu", 1)))

    def to_cli(self, outputs: dict | None = None, threads: int | None = None) -> list[str]:
        """The job as :func:`job_from_cli` reads it back, with ``outputs`` in place of those outputs
        and ``threads`` in place of its threads (torchrun's ranks: each its share)."""

        def pairs(values: dict) -> list[str]:
            return [named_argument(name, value) for name, value in values.items()]

        # Snakemake's own resources (_cores, _nodes, tmpdir...) are its scheduler's, not the step's
        resources = {name: value for name, value in self.named("resources").items()
                     if not name.startswith("_") and isinstance(value, int)}
        return ["--input", *pairs(self.named("input")),
                "--output", *pairs({**self.named("output"), **(outputs or {})}),
                "--wildcards", *pairs(self.named("wildcards")), "--resources", *pairs(resources),
                "--params", json.dumps(self.named("params"), default=str),
                "--threads", str(self.threads if threads is None else threads),
                *(["--job-log", str(self.log[0])] if self.log else [])]

    def write_texts(self, texts: dict[str, str]) -> None:
        """Each text to the output of its name, atomically."""
        for name, text in texts.items():
            with atomic_path(getattr(self.output, name)) as tmp:
                Path(tmp).write_text(text)


def _named(pairs: list[str]) -> SimpleNamespace:
    values = {}
    for pair in pairs or []:
        name, _, value = pair.partition("=")
        values[name] = json.loads(value) if value.startswith("[") else value
    return SimpleNamespace(**values)


def named_argument(name: str, value) -> str:
    """``NAME=PATH`` of :func:`job_from_cli`; a list of paths (a rule's named input of several
    files, a list even of one) as ``NAME=["a", "b"]``."""
    if isinstance(value, list | tuple):
        return f"{name}={json.dumps([str(item) for item in value])}"
    return f"{name}={value}"


def job_from_cli(argv: list[str], rule: str) -> Job:
    parser = argparse.ArgumentParser(prog=f"scripts/{rule}.py", description=f"run rule {rule} alone")
    parser.add_argument("--input", nargs="*", default=[], metavar="NAME=PATH",
                        help='a list of paths as NAME=["a", "b"]')
    parser.add_argument("--output", nargs="*", default=[], metavar="NAME=PATH")
    parser.add_argument("--params", default="{}", help="JSON object of the rule's params")
    parser.add_argument("--wildcards", nargs="*", default=[], metavar="NAME=VALUE")
    parser.add_argument("--resources", nargs="*", default=[], metavar="NAME=NUMBER",
                        help="the rule's resources, e.g. gpu=2: the devices of a multi-device step")
    # --job-log: the spelling torchrun lets through to a rank's script (it rejects --log as an
    # ambiguous prefix of its own --log-dir, even after the script's path)
    parser.add_argument("--log", "--job-log", dest="log", default=None)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    return Job(input=_named(args.input), output=_named(args.output),
               params=SimpleNamespace(**json.loads(args.params)), wildcards=_named(args.wildcards),
               resources=SimpleNamespace(**{name: int(value) for name, value in vars(_named(args.resources)).items()}),
               log=[args.log] if args.log else [], threads=args.threads, rule=rule)


def job_from_snakemake(smk) -> Job:
    params = dict(smk.params.items())
    # A packaged model is no input file (its path depends on where the environment lives): the step
    # sees its folder in this environment where the input would be.
    packaged = params.pop(PACKAGED_PARAM, None)
    inputs = smk.input
    if isinstance(packaged, dict) and packaged:
        inputs = SimpleNamespace(**{**dict(smk.input.items()), **{
            name: str(packaged_folder(model)) for name, model in packaged.items()}})
    return Job(input=inputs, output=smk.output, params=SimpleNamespace(**params), wildcards=smk.wildcards,
               resources=smk.resources, log=list(smk.log), threads=smk.threads, rule=smk.rule)


@contextlib.contextmanager
def _log_to(path: str | None):
    """Send this process's stdout and stderr (tqdm, the trainer, C libraries) to the rule's log."""
    if not path:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a", buffering=1) as handle:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def run(main: Callable, smk=None) -> None:
    """Run a script's ``main(job)`` with logging to the rule's log and torch limited to the rule's
    threads: in a child of the warm interpreter where a launcher started one (:mod:`trimbench.jobs.warm`:
    the child runs the script, by its path, which calls this again there), else here.

    A cached input that cannot be used (:class:`~trimbench.errors.ArtifactError`), a data file that cannot
    (:class:`~trimbench.errors.DataError`) end the job with their one message naming the file, instead
    of a stack trace from deep inside numpy; any other error's traceback goes to the job's log.
    """
    if smk is not None and not warm.forked:
        # The script's own path: Snakemake runs a copy of it, with __file__ set to the original.
        code = warm.run_in_server(main.__globals__["__file__"], smk)
        if code is not None:
            raise SystemExit(code)
    run_here(main, smk)


def run_here(main: Callable, smk=None) -> None:
    # The rule's name: Snakemake's, or alone the script's (rule name = script name).
    rule = smk.rule if smk is not None else Path(main.__globals__["__file__"]).stem
    job = job_from_snakemake(smk) if smk is not None else job_from_cli(sys.argv[1:], rule)
    log_path = job.log[0] if job.log else None
    with _log_to(log_path):
        # The ranks of a multi-device job share its log: each line names its rank.
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, force=True,
                            format=rank_log_format("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        # torch reads this when first imported; steps that never need torch never pay for it.
        os.environ["OMP_NUM_THREADS"] = str(max(1, int(job.threads)))
        if "torch" in sys.modules:  # imported already (the warm interpreter): set it directly
            sys.modules["torch"].set_num_threads(max(1, int(job.threads)))
        started = time.perf_counter()
        log = logging.getLogger("trimbench")
        # The PID lets one find (and, in the fault tests, kill) the job's process.
        log.info("rule %s started (pid %d%s)", rule, os.getpid(), ", forked by the warm interpreter" * warm.forked)
        try:
            faults.start_job(rule, log_path)
            main(job)
        except Exception as error:
            # Into the job's own log, which Snakemake prints for a failed job and a cluster keeps:
            # an error that names its culprit (a damaged cache, a bad data file, a config key) as
            # its message, any other with its traceback. The console gets the message.
            if _explains_itself(error):
                log.error("%s", error)
            else:
                log.exception("rule %s failed: %s: %s", rule, type(error).__name__, error)
            if not log_path:
                raise
            raise SystemExit(f"rule {rule}: {_one_line(error)}" + (
                "" if _explains_itself(error) else f" (traceback in {log_path})")) from None
        log.info("rule %s done in %.1f s", rule, time.perf_counter() - started)


def _explains_itself(error: Exception) -> bool:
    return isinstance(error, ExplainedError)


def _one_line(error: Exception) -> str:
    return str(error) if _explains_itself(error) else f"{type(error).__name__}: {error}"
