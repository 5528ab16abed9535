"""The cost plan against a real run: configs/mini.yaml's plan on this CPU against its jobs' times.

The plan (trimbench.plan) prices a GPU job as its counted FLOPs / (the device's peak x plan_mfu). Here
the device is this CPU: its fp32 FLOP rate is measured the way the jobs compute (torch, fp32, the
GPU rules' one thread a job: ``threads: 1`` or ``train.devices x (1 + dataloader_workers)`` = 1 in the
mini preset; trimbench.jobs.run sets torch's threads to the rule's), given to the plan as a user GPU
``cpu`` (config ``plan_gpus``) with ``plan_mfu`` 1.0, and configs/mini.yaml on the local copies
(``local_copies``, as ``make mini``) is planned on it and then run for real. For every GPU job the
plan priced it prints the predicted seconds (GPU-hours x 3600 / devices, without ``plan_margin`` or
``plan_min_runtime``) against the measured ones, their ratio (predicted / measured: the model FLOPs
utilisation the job reached against the measured rate, its start-up included), the ratios'
spread, and the least-squares line measured = overhead + predicted / utilisation over the jobs priced
within 2x of the median ratio (one further off has a count wrong, not a rate): the fixed seconds a
job pays whatever its FLOPs (model load, data read, the evaluator) and the utilisation of its FLOPs.

Measured seconds are each job's own ``rule <name> done in <s> s`` line in its log (trimbench.jobs.run
times ``main(job)``: the job's work, model loading included, without Snakemake's scheduling or the
interpreter's start; the run is warm, as ``make mini``), and its process's CPU seconds, sampled from
/proc while it runs (:class:`CpuSampler`): on a shared machine the wall time grows with the other
processes, the CPU time hardly. Snakemake's per-output records (``.snakemake/metadata``: start and end
of the job as Snakemake saw them) are printed beside them.

    make splade-tiny                                         # the mini's SPLADE start (once)
    python benchmarks/plan_calibration.py                     # a new run in a scratch directory (the whole mini)
    python benchmarks/plan_calibration.py --one-job-per-rule  # of each GPU rule its cheapest job and what it needs
    python benchmarks/plan_calibration.py --run-dir DIR --reuse   # the jobs of a finished run in DIR
    python benchmarks/plan_calibration.py --plan-only         # the FLOP rate and the plan, no run
    make mpnet && python benchmarks/plan_calibration.py --mpnet   # at the presets' shape (below)

``--mpnet``: the presets train bert-base-shaped models (12 x 768), which the mini's tiny ones are not.
all-mpnet-base-v2 (``make mpnet``) is priced by the plan's own step count (trimbench.cost.step on its
config.json) and timed on this CPU, ``--repeats-mpnet`` times: a few training steps on STS-B pairs
(MNRL, AdamW: what a 2DMSE-STS training step does, at ``--mpnet-batch`` pairs) and an encoding of
STS-B sentences at a preset's encoding batch (128), length-sorted as the encoders batch them. The
CPU's rate is measured before each repeat in this process's CPU seconds (the rate of a shared machine
moves between runs, and a wall-clock rate is only the share of the core a process got), each repeat's
ratio is predicted / CPU seconds at that rate (and, for AdamW's memory-bound update, the plan's 28
bytes a parameter at the CPU's measured bandwidth, :func:`elementwise_bandwidth`); the median and the
spread are printed.

The bandwidth the plan is given is what this CPU reaches on the work the plan prices by bandwidth
(:func:`elementwise_bandwidth`: SPLADE's pooling over vocabulary-wide logits, fresh tensors each pass),
not a streaming add over warm arrays (printed beside it): about a tenth of it on this machine.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _shared

REPO = Path(__file__).resolve().parent.parent
MPNET = REPO / "results" / "models" / "all-mpnet-base-v2"
MINI = REPO / "configs" / "mini.yaml"
SPLADE_TINY = Path("results") / "models" / "splade-tiny-msmarco"
#: the local copies make mini reads (../shared/data beside the checkout)
SHARED_DATA = REPO.parent / "shared" / "data"
#: each job's sampled CPU seconds, by its log's path (CpuSampler), in the run's directory
CPU_FILE = "job-cpu.json"
#: the line trimbench.jobs.run logs at a job's end
DONE = re.compile(r"rule (\w+) done in ([0-9.]+) s")
#: the square matmul that stands for the CPU's peak, and the linear layer of the mini's jobs: MiniLM's
#: feed-forward (384 -> 1536) over a training batch of mini-sts (32 x 64 tokens)
MATMUL_SIZE = 2048
LINEAR_SHAPE = (32 * 64, 384, 1536)


def flop_rate(threads: int, repeats: int) -> dict[str, float]:
    """TFLOP/s of this CPU in fp32 at ``threads`` torch threads: a large square matmul, and a
    MiniLM-sized linear layer's forward and backward (three matmuls of 2 x tokens x in x out each)."""
    import torch

    torch.set_num_threads(threads)
    n = MATMUL_SIZE
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    matmul = best_rate(lambda: torch.mm(a, b), 2 * n**3, repeats)
    tokens, width, hidden = LINEAR_SHAPE
    layer = torch.nn.Linear(width, hidden)
    x = torch.randn(tokens, width, requires_grad=True)

    def step():
        layer.zero_grad(set_to_none=True)
        x.grad = None
        layer(x).sum().backward()

    step()
    linear = best_rate(step, 3 * 2 * tokens * width * hidden, repeats)
    return {"matmul": matmul, "linear": linear}


def best_rate(run, flops: float, repeats: int) -> float:
    return flops / _shared.best_time(run, repeats) / 1e12


def ram_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def calibration_config(folder: Path, tflops: float, bandwidth: float) -> Path:
    """A config file beside configs/mini.yaml: this CPU as the plan's device (its measured rate its
    peak, so plan_mfu 1.0; its measured bandwidth, bytes/s, what prices the memory-bound work no FLOP
    counter sees: AdamW's update, an MLM head's over the vocabulary. Without it the plan leaves that
    work out, as it does for a GPU without ``memory_gbps``)."""
    import yaml

    path = folder / "plan-calibration.yaml"
    path.write_text(yaml.safe_dump({
        "plan_gpu": "cpu", "plan_mfu": 1.0,
        "plan_gpus": {"cpu": {"memory_gib": round(ram_gib(), 1), "peak_tflops": {"fp32": tflops},
                              "memory_gbps": round(bandwidth / 1e9, 2),
                              "source": "measured by benchmarks/plan_calibration.py"}}}))
    return path


def prepare_run_dir(run_dir: Path) -> None:
    """The mini's SPLADE start in the run's directory: the checkout's (make splade-tiny)."""
    model = run_dir / SPLADE_TINY
    if not model.exists():
        source = REPO / SPLADE_TINY
        if not (source / "config.json").is_file():
            sys.exit(f"{source} is missing: run `make splade-tiny` first (configs/mini.yaml's local copies)")
        model.parent.mkdir(parents=True, exist_ok=True)
        model.symlink_to(source)


def run_mini(run_dir: Path, configfiles: list[Path], overrides: list[str], targets: list[str]) -> float:
    """configs/mini.yaml run for real in ``run_dir``, as make mini runs it (the warm interpreter, every
    core; ``targets``: only those outputs and what they need), each job's CPU seconds sampled meanwhile
    (:class:`CpuSampler`, written to ``run_dir``/job-cpu.json); its wall seconds."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "trimbench.jobs.warm", "--snakefile", str(REPO / "Snakefile"),
               "--directory", str(run_dir), "--profile", str(REPO / "profiles" / "default"),
               *targets, "--configfile", *map(str, configfiles), "--config", *overrides]
    sampler = CpuSampler(run_dir)
    sampler.start()
    try:
        result = subprocess.run(command, cwd=run_dir, capture_output=True, text=True)
    finally:
        sampler.stop()
    if result.returncode != 0:
        sys.exit(f"the mini run failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


class CpuSampler(threading.Thread):
    """The CPU seconds (user + system) of each job's process while the run goes: its log names its PID
    (trimbench.jobs.run: "rule <name> started (pid N"); /proc/N/stat is read every ``interval`` seconds
    until the job logs its end, and the last reading kept (short of the truth by at most an interval).
    Unlike wall time it does not grow with the other processes sharing the cores."""

    STARTED = re.compile(r"rule \w+ started \(pid (\d+)")

    def __init__(self, run_dir: Path, interval: float = 0.5):
        super().__init__(daemon=True)
        self.run_dir, self.interval = run_dir, interval
        self.path = run_dir / CPU_FILE
        earlier = json.loads(self.path.read_text()) if self.path.is_file() else {}
        # an earlier run's finished jobs (a job stopped before its end runs again)
        self.seconds: dict[str, float] = {name: cpu for name, cpu in earlier.items()
                                          if DONE.search((run_dir / name).read_text(errors="replace"))}
        self.done: set[str] = set(self.seconds)
        self._halt = threading.Event()

    def run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self._halt.wait(self.interval):
            for log in (self.run_dir / "results" / "logs").rglob("*.log"):
                name = str(log.relative_to(self.run_dir))
                if name in self.done:
                    continue
                text = log.read_text(errors="replace")
                pids = self.STARTED.findall(text)  # the last: a log appended to by a job run again
                if pids:
                    try:
                        fields = Path(f"/proc/{pids[-1]}/stat").read_text().rsplit(")", 1)[1].split()
                        self.seconds[name] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
                    except (OSError, IndexError):
                        pass
                if DONE.search(text):
                    self.done.add(name)

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.path.write_text(json.dumps(self.seconds, indent=1, sort_keys=True))


def metadata_records(run_dir: Path) -> dict[str, dict]:
    """Snakemake's record of each output (.snakemake/metadata: the output's path, base64 url-safe, cut
    into folders named "@<part>" when long: snakemake/persistence/file.py, _record_path) -> the record
    (rule, starttime: when the job was marked incomplete; endtime: the output's mtime; log)."""
    records = {}
    root = run_dir / ".snakemake" / "metadata"
    for path in root.rglob("*"):
        if path.is_file():
            name = "".join(part.removeprefix("@") for part in path.relative_to(root).parts)
            try:
                output = base64.urlsafe_b64decode(name).decode()
                records[output] = json.loads(path.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
    return records


def job_seconds(run_dir: Path, jobs) -> dict[tuple, dict[str, float | None]]:
    """(rule, wildcards) of each dry-run job -> its seconds: ``log``, its log's 'done in' line; ``cpu``,
    its process's sampled CPU time (CpuSampler); ``snakemake``, between Snakemake's start and end
    records of its first output."""
    records = metadata_records(run_dir)
    cpu = json.loads((run_dir / CPU_FILE).read_text()) if (run_dir / CPU_FILE).is_file() else {}
    out = {}
    for job in jobs:
        record = next((records[o] for o in job.outputs if o in records), None)
        seconds = {"log": None, "cpu": None, "snakemake": None}
        if record is not None:
            if record.get("starttime") and record.get("endtime"):
                seconds["snakemake"] = record["endtime"] - record["starttime"]
            for log in record.get("log") or []:
                path = run_dir / log
                found = DONE.findall(path.read_text()) if path.is_file() else []
                if found:
                    seconds["log"], seconds["cpu"] = float(found[-1][1]), cpu.get(log)
        out[key(job.rule, job.wildcards)] = seconds
    return out


def key(rule: str, wildcards: dict) -> tuple:
    return rule, tuple(sorted(wildcards.items()))


def least_squares(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(intercept, slope) of ys = intercept + slope x xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - slope * mx, slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path, default=None,
                        help="the mini run's working directory (default: a new one in the temp dir)")
    parser.add_argument("--reuse", action="store_true", help="take the jobs of the finished run in --run-dir")
    parser.add_argument("--plan-only", action="store_true", help="measure the rate and plan; run nothing")
    parser.add_argument("--one-job-per-rule", action="store_true",
                        help="run, of each GPU rule, only its job the plan predicts cheapest (and what it needs)")
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="the local copies (make mini's MINI_DATA)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads a GPU job uses (the rules' threads)")
    parser.add_argument("--repeats", type=int, default=10, help="timings of each FLOP-rate kernel (the best counts)")
    parser.add_argument("--tflops", type=float, default=None,
                        help="the CPU's fp32 TFLOP/s for the plan instead of the measured (one from a quiet machine)")
    parser.add_argument("--mpnet", action="store_true",
                        help="calibrate at the presets' shape on all-mpnet-base-v2 (make mpnet), not the mini")
    parser.add_argument("--mpnet-batch", type=int, default=16,
                        help="pairs a training step (the 2DMSE-STS presets: 128; a few of those take minutes here)")
    parser.add_argument("--mpnet-steps", type=int, default=3, help="training steps a repeat (after one warm-up)")
    parser.add_argument("--mpnet-texts", type=int, default=512, help="STS-B sentences encoded a repeat")
    parser.add_argument("--repeats-mpnet", type=int, default=3, help="repeats of the mpnet measurement")
    args = parser.parse_args()
    if args.mpnet:
        mpnet_calibration(args)
        return
    if not args.data.is_dir():
        sys.exit(f"the local copies are not at {args.data} (--data): the plan measures their lengths")
    run_dir = (args.run_dir or Path(tempfile.mkdtemp(prefix="trimbench-plan-calibration-"))).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    prepare_run_dir(run_dir)

    rates = flop_rate(args.threads, args.repeats)
    # the plan's peak: the faster kernel's best run, the rate this core was seen to sustain (on a
    # shared machine a slower best is another process's time slice, not the kernel's)
    peak = args.tflops or max(rates.values())
    print(f"fp32 at {args.threads} thread(s), best of {args.repeats}: {MATMUL_SIZE}^2 matmul "
          f"{rates['matmul'] * 1e3:.1f} GFLOP/s; MiniLM's feed-forward ({LINEAR_SHAPE[0]} tokens x "
          f"{LINEAR_SHAPE[1]} -> {LINEAR_SHAPE[2]}, forward + backward) {rates['linear'] * 1e3:.1f} GFLOP/s; "
          f"the plan's peak {peak * 1e3:.1f} GFLOP/s" + (" (--tflops)" if args.tflops else ""))
    bandwidth = elementwise_bandwidth(args.repeats)
    print(f"memory bandwidth, best of {args.repeats}: SPLADE's pooling of {' x '.join(map(str, POOLING_SHAPE))} "
          f"MLM logits {bandwidth / 1e9:.2f} GB/s, the plan's memory_gbps (a streaming fp32 addition of 2^25 "
          f"elements: {cpu_bandwidth(args.repeats) / 1e9:.1f} GB/s)")
    configfiles = [MINI, calibration_config(run_dir, peak, bandwidth)]
    overrides = [f"local_copies={args.data.resolve()}"]

    from trimbench.plan.dryrun import dry_run
    from trimbench.plan.plan import plan_run

    started = time.perf_counter()
    priced = [job for job in plan_run(configfiles, ["cpu"], overrides, workdir=run_dir)["cpu"] if job.priced]
    print(f"plan: {len(priced)} GPU jobs priced in {time.perf_counter() - started:.0f} s")
    if args.plan_only:
        for job in priced:
            print(f"  {job.label}: {predicted_seconds(job):.1f} s predicted")
        return
    targets = []
    if args.one_job_per_rule:
        cheapest = {}
        for job in sorted(priced, key=predicted_seconds):  # of equals the first listed (a pretrained variant)
            cheapest.setdefault(job.rule, job)
        wanted = {key(job.rule, job.wildcards) for job in cheapest.values()}
        targets = [job.outputs[0] for job in dry_run(configfiles, overrides, run_dir)[0]
                   if key(job.rule, job.wildcards) in wanted]
    if not args.reuse:
        load = os.getloadavg()[0]
        wall = run_mini(run_dir, configfiles, overrides, targets)
        print(f"mini run in {run_dir}{' (one job per GPU rule)' if targets else ''}: {wall:.0f} s wall "
              f"(load average {load:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores)")
    seconds = job_seconds(run_dir, dry_run(configfiles, overrides, run_dir)[0])

    rows = []
    print("\n| job | predicted s | wall s (log) | CPU s | Snakemake's s | predicted / wall | predicted / CPU |")
    print("|---|---|---|---|---|---|---|")
    for job in priced:
        predicted = predicted_seconds(job)
        measured = seconds.get(key(job.rule, job.wildcards), {})
        wall, cpu = measured.get("log"), measured.get("cpu")
        if wall:
            rows.append((job.label, predicted, wall, cpu))
        print(f"| {job.label} | {predicted:.1f} | {_fmt(wall)} | {_fmt(cpu)} | {_fmt(measured.get('snakemake'))} | "
              f"{_ratio(predicted, wall)} | {_ratio(predicted, cpu)} |")
    if not rows:
        sys.exit("no priced job has a 'done in' line in its log: is the run finished?")
    print()
    for at, what in ((2, "wall"), (3, "CPU")):
        measured = [(row[1], row[at]) for row in rows if row[at]]
        if not measured:
            continue
        ratios = [p / m for p, m in measured]
        geometric = math.exp(statistics.fmean(math.log(r) for r in ratios))
        print(f"predicted / {what} over {len(ratios)} jobs: median {statistics.median(ratios):.3f}, min "
              f"{min(ratios):.3f}, max {max(ratios):.3f}, geometric mean {geometric:.3f}; totals predicted "
              f"{sum(p for p, _ in measured):.0f} s, {what} {sum(m for _, m in measured):.0f} s")
        # the line over the jobs priced within 2x of the median: a job off by more has a count wrong (its
        # steps, its work), not a rate, and would only drag the line
        median = statistics.median(ratios)
        kept = [(p, m) for p, m in measured if 0.5 < p / m / median < 2]
        if len(kept) > 2:
            overhead, slope = least_squares(*zip(*kept, strict=True))
            print(f"  least squares over the {len(kept)} jobs within 2x of the median, {what} = {overhead:.1f} s + "
                  f"predicted x {slope:.2f}: a job's fixed {overhead:.1f} s (model load, data, evaluator), its FLOPs "
                  f"at {1 / slope:.0%} of the measured rate")


def mpnet_calibration(args) -> None:
    """all-mpnet-base-v2's training steps and encoding on this CPU against the plan's count of them."""
    import torch
    from sentence_transformers import SentenceTransformer, losses

    from trimbench.cost.architecture import architecture
    from trimbench.cost.step import Step, step_cost
    from trimbench.plan.price import ADAMW_BYTES_PER_PARAMETER

    if not (MPNET / "config.json").is_file():
        sys.exit(f"{MPNET} is missing: run `make mpnet` first")
    torch.set_num_threads(args.threads)
    stsb = args.data / "stsb" / "train.jsonl"
    rows = [json.loads(line) for line in stsb.read_text().splitlines() if line.strip()]
    arch = architecture("all-mpnet-base-v2", {"source": "local", "path": str(MPNET)}, REPO)
    model = SentenceTransformer(str(MPNET), device="cpu")
    tokenizer, max_length = model.tokenizer, model.max_seq_length

    def lengths(texts):
        return [len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]

    loss = losses.MultipleNegativesRankingLoss(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    cache = Path(tempfile.mkdtemp(prefix="trimbench-mpnet-steps-"))
    parameters = sum(parameter.numel() for parameter in model.parameters())
    print("\n| repeat | what | CPU rate GFLOP/s | CPU GB/s | predicted s | CPU s | predicted / CPU |")
    print("|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {"train": [], "encode": []}
    for repeat in range(args.repeats_mpnet):
        rate, bandwidth = cpu_flop_rate(args.repeats), elementwise_bandwidth(args.repeats)
        start = repeat * args.mpnet_batch * (args.mpnet_steps + 1)
        batches = [rows[start + i * args.mpnet_batch:start + (i + 1) * args.mpnet_batch]
                   for i in range(args.mpnet_steps + 1)]
        flops = 0.0
        cpu = 0.0
        for number, batch in enumerate(batches):
            columns = [[row["sentence1"] for row in batch], [row["sentence2"] for row in batch]]
            features = [model.tokenize(texts) for texts in columns]
            began = time.process_time()
            model.train()
            value = loss(features, torch.zeros(len(batch)))
            value.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if number == 0:
                continue  # the warm-up step: AdamW's states are made
            cpu += time.process_time() - began
            # the plan's step: each column a forward of its own (MNRL on two columns: embed_columns merges
            # none), padded to its longest, before the one backward
            (first, length), *more = [(len(batch), f["input_ids"].shape[1]) for f in features]
            flops += step_cost(Step(arch, first, length, train=True, more_forwards=tuple(more)), cache).flops
        # AdamW's update, memory-bound: the plan's term (trimbench.plan.price) at this CPU's bandwidth
        adamw = args.mpnet_steps * parameters * ADAMW_BYTES_PER_PARAMETER / bandwidth
        _mpnet_row(repeat, f"train {args.mpnet_steps} steps x {args.mpnet_batch} pairs", rate, flops / rate + adamw,
                   cpu, ratios["train"], f"{bandwidth / 1e9:.1f}")
        texts = [row["sentence1"] for row in rows[:args.mpnet_texts]]
        # length-sorted batches of 128 (SentenceTransformer.encode sorts longest first), each its longest
        ordered = sorted(lengths(texts), reverse=True)
        flops = sum(step_cost(Step(arch, len(part), part[0], train=False), cache).flops
                    for part in (ordered[i:i + 128] for i in range(0, len(ordered), 128)))
        began = time.process_time()
        model.encode(texts, batch_size=128, convert_to_numpy=True)
        _mpnet_row(repeat, f"encode {len(texts)} texts, batch 128", rate, flops / rate,
                   time.process_time() - began, ratios["encode"], f"{bandwidth / 1e9:.1f}")
    print()
    for what, values in ratios.items():
        print(f"mpnet {what}: predicted / CPU median {statistics.median(values):.3f}, min {min(values):.3f}, "
              f"max {max(values):.3f} over {len(values)} repeats (load average {os.getloadavg()[0]:.1f} at the end, "
              f"{os.cpu_count()} cores)")


def cpu_flop_rate(repeats: int) -> float:
    """FLOP/s of this process's CPU time in fp32 (the best of ``repeats`` square matmuls of
    :data:`MATMUL_SIZE`): CPU seconds, as the jobs' are measured, so another process's time slice
    slows neither (on a shared machine a wall-clock rate is the share of the core this process got)."""
    import torch

    n = MATMUL_SIZE
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = math.inf
    for _ in range(repeats):
        began = time.process_time()
        torch.mm(a, b)
        best = min(best, time.process_time() - began)
    return 2 * n**3 / best


def cpu_bandwidth(repeats: int) -> float:
    """Bytes/s this process's CPU time moves through memory: the best of ``repeats`` fp32 additions
    c = a + b of 2^25 elements (three 128 MiB arrays: two read, one written), in CPU seconds. A
    streaming figure over warm arrays, printed beside :func:`elementwise_bandwidth`."""
    import torch

    n = 2**25
    a, b, c = torch.randn(n), torch.randn(n), torch.empty(n)
    torch.add(a, b, out=c)
    best = math.inf
    for _ in range(repeats):
        began = time.process_time()
        torch.add(a, b, out=c)
        best = min(best, time.process_time() - began)
    return 3 * 4 * n / best


#: the vocabulary-wide tensor of :func:`elementwise_bandwidth`: the mini's SPLADE encoding batch (32 texts
#: of 48 tokens) over BERT's 30,522 terms
POOLING_SHAPE = (32, 48, 30522)


def elementwise_bandwidth(repeats: int) -> float:
    """Bytes/s of the memory-bound work the plan prices by bandwidth, as this CPU runs it: the best of
    ``repeats`` MLM-head outputs pooled the SPLADE way (the decoder's bias added into a fresh
    vocabulary-wide tensor, then sentence-transformers' own SpladePooling: the mask product, ReLU,
    log1p and the max over the tokens) at :data:`POOLING_SHAPE`, in the plan's bytes of that work
    (trimbench.plan.price.VOCABULARY_BYTES, five fp32 passes) over CPU seconds.

    This is the CPU's figure the plan's ``memory_gbps`` stands for. A GPU runs these kernels near its
    datasheet bandwidth; a CPU core does not: each pass writes a freshly allocated tensor (its pages
    faulted in and zeroed by the kernel) and the max reduces across the token axis with the vocabulary's
    stride (on this machine about a tenth of :func:`cpu_bandwidth`'s streaming add; on mini-splade's
    encoding, two thirds of its CPU time). A matmul stands for the FLOP rate the same way."""
    import torch
    from sentence_transformers.sparse_encoder.modules import SpladePooling

    from trimbench.plan.price import VOCABULARY_BYTES

    batch, length, vocabulary = POOLING_SHAPE
    hidden, bias = torch.randn(batch, length, vocabulary), torch.randn(vocabulary)
    mask = torch.ones(batch, length, dtype=torch.long)
    pooling = SpladePooling(pooling_strategy="max").eval()
    best = math.inf
    with torch.no_grad():
        pooling({"token_embeddings": hidden + bias, "attention_mask": mask})  # the allocator's first pages
        for _ in range(repeats):
            began = time.process_time()
            pooling({"token_embeddings": hidden + bias, "attention_mask": mask})
            best = min(best, time.process_time() - began)
    return batch * length * vocabulary * VOCABULARY_BYTES[False] / best


def _mpnet_row(repeat: int, what: str, rate: float, predicted: float, cpu: float, ratios: list[float],
               bandwidth: str) -> None:
    ratios.append(predicted / cpu)
    print(f"| {repeat + 1} | {what} | {rate / 1e9:.1f} | {bandwidth} | {predicted:.1f} | {cpu:.1f} | "
          f"{predicted / cpu:.3f} |")


def predicted_seconds(job) -> float:
    """The plan's seconds of a job on one device: its GPU-hours (FLOPs / peak / plan_mfu) over its devices,
    without plan_margin or plan_min_runtime."""
    return job.gpu_hours * 3600 / job.work.devices


def _ratio(predicted: float, measured: float | None) -> str:
    return f"{predicted / measured:.3f}" if measured else "not measured"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    main()
