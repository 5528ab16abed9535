"""One warm interpreter for the jobs of a local run::

    python -m trimbench.jobs.warm --cores 2 [more snakemake arguments]

Each job of a local run is a new Python process, and a job that touches a model first imports
torch, transformers and sentence-transformers: 6 s of a quiet core, about a third of the embedded
default's CPU time. This launcher starts a server that imports them once, runs ``snakemake`` with
the arguments given and ``TRIMBENCH_WARM`` naming the server's socket, and stops the server when
snakemake ends. A job's script (:func:`trimbench.jobs.run.run`) then hands its job to the server:
the script's path and Snakemake's ``snakemake`` object, nothing else to run. The server forks a
child for it, which has every module imported already, takes the job's working directory,
environment and standard streams (passed over the socket) and runs that script as Python would,
with the ``snakemake`` object in its globals; its exit status is the job's, and its PID is the one
the job's log names. Snakemake schedules, logs, retries and cleans up every job as before; the
client forwards SIGTERM / SIGINT to the child, and a client that dies (killed by Snakemake) takes
its child with it.

A job runs in its own process as before where the variable is unset; where it is set but the server
cannot be reached, on a SLURM node, or from another Python environment or checkout (a ``conda:``
env, a worktree), too, and says so as a warning: a run that was meant to be warm and is not is
otherwise only slower.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import logging
import os
import pickle
import pkgutil
import runpy
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import trimbench

WARM = "TRIMBENCH_WARM"
#: what the server imports before it forks jobs; never pyserini (it starts a JVM, whose threads do
#: not survive a fork) and nothing that starts threads or touches CUDA at import. The last seven are
#: the pure-Python libraries pyserini's search imports (pyserini.encode's OpenAI client and its
#: HTTP stack): 0.65 of the 3.1 CPU-seconds a BM25 or impact-search job spends importing pyserini
#: (docs/performance.md); not onnxruntime, which starts a thread at import.
PRELOAD = ("numpy", "pandas", "pyarrow.parquet", "scipy.stats", "sklearn.metrics", "torch", "transformers",
           "sentence_transformers", "datasets", "faiss", "matplotlib.pyplot", "seaborn", "ir_measures",
           "openai", "pydantic", "httpx", "requests", "tiktoken", "click", "pygments")

log = logging.getLogger("trimbench")
_LENGTH = 8
#: True in a job's child forked by the server
forked = False


def _identity() -> dict:
    """What must match between a job and the server: the Python environment and the trimbench code."""
    return {"prefix": sys.prefix, "trimbench": os.path.dirname(os.path.abspath(trimbench.__file__))}


def _send(conn: socket.socket, data: bytes) -> None:
    conn.sendall(len(data).to_bytes(_LENGTH, "big") + data)


def _receive_exactly(conn: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = conn.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(conn: socket.socket) -> bytes:
    return _receive_exactly(conn, int.from_bytes(_receive_exactly(conn, _LENGTH), "big"))


# --- the job's side --------------------------------------------------------------------------------


#: the signals a client passes on to its job
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _running_here(path: str, why: str) -> None:
    log.warning("%s=%s is set, but this job runs in its own interpreter: %s", WARM, path, why)


def run_in_server(script: str, smk) -> int | None:
    """Run the job's ``script`` (its path) in a child of the warm server, with ``smk`` as the
    script's ``snakemake``; the child's exit code.

    None where no server takes the job (see the module's docstring): the caller runs it itself.
    """
    path = os.environ.get(WARM)
    if not path:
        return None
    if "SLURM_JOB_ID" in os.environ:
        _running_here(path, "a SLURM node's job")
        return None
    # Pickled before anything is sent: a job that cannot travel runs here, and the server is never
    # handed its standard streams for nothing.
    try:
        payload = pickle.dumps((os.path.abspath(script), smk))
    except Exception as error:  # noqa: BLE001  (pickle raises AttributeError, TypeError, PicklingError...)
        _running_here(path, f"the job cannot be handed to a warm interpreter ({type(error).__name__}: {error})")
        return None
    # Held from before the child exists until they are forwarded to it: a signal in between would
    # otherwise end this client and leave the job to die with it, not by the signal.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED_SIGNALS)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        request = {**_identity(), "cwd": os.getcwd(), "env": dict(os.environ), "argv": sys.argv}
        sys.stdout.flush()
        sys.stderr.flush()
        socket.send_fds(conn, [b"J"], [0, 1, 2])
        _send(conn, json.dumps(request).encode())
        _send(conn, payload)
        reply = json.loads(_receive(conn))
        refused = reply.get("refused") if "pid" not in reply else None
        if "pid" not in reply and refused is None:
            raise ValueError(f"a reply without the child's pid: {reply}")
    except (OSError, ValueError) as error:  # unreachable, or a reply it cannot read
        conn.close()
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        _running_here(path, f"the job could not be handed to a warm interpreter ({type(error).__name__}: {error})")
        return None
    if refused is not None:
        conn.close()
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        _running_here(path, f"the warm interpreter refused the job ({refused})")
        return None
    child = reply["pid"]

    def forward(number, frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, number)

    for sig in FORWARDED_SIGNALS:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)  # one that came meanwhile is forwarded now
    try:
        status = json.loads(_receive(conn))["status"]
    except ConnectionError:
        print(f"trimbench.jobs.warm: the warm interpreter ended before job pid {child} did", file=sys.stderr)
        return 1
    # A child ended by a signal: the shell's convention for the job's exit status.
    return 128 - status if status < 0 else status


# --- the server's side -----------------------------------------------------------------------------


def _die_with_parent(sig: int) -> None:
    """Have the kernel send ``sig`` to this process when its parent ends (Linux): no orphan job runs
    on after the server, and no idle server after its launcher."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(sig))  # PR_SET_PDEATHSIG


def _run_script(script: str, smk) -> None:
    """The job's script, run as Python runs it (as ``__main__``, its folder first on the path for its
    ``import _repo``), with ``smk`` as its ``snakemake``: its ``run(main, snakemake)`` then runs the
    step in this process (:data:`forked`)."""
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, init_globals={"snakemake": smk}, run_name="__main__")


def _run_child(header: dict, payload: bytes) -> int:
    """In the forked child: become the job's process and run its script."""
    global forked
    forked = True
    os.chdir(header["cwd"])
    os.environ.clear()
    os.environ.update(header["env"])
    os.environ.pop(WARM, None)  # a job's own subprocesses start cold
    sys.argv = header["argv"]
    try:
        _run_script(*pickle.loads(payload))
        return 0
    except SystemExit as end:
        if end.code is None or isinstance(end.code, int):
            return end.code or 0
        print(end.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1


def _fork_job(conn: socket.socket, listener: socket.socket, selector: selectors.BaseSelector) -> int | None:
    """Read a job from ``conn`` and fork its child; the child's PID (None: refused)."""
    _, fds, _, _ = socket.recv_fds(conn, 1, 3)
    try:
        header = json.loads(_receive(conn))
        payload = _receive(conn)
    except BaseException:  # a client gone mid-request: its streams are not kept open here
        for fd in fds:
            os.close(fd)
        raise
    mismatch = {key: (header.get(key), value) for key, value in _identity().items() if header.get(key) != value}
    if mismatch or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        _send(conn, json.dumps({"refused": f"another environment or checkout: {mismatch}"}).encode())
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    # Held across the fork until the child has the default actions: a signal the client forwards
    # the moment it has the PID would otherwise reach the server's handler in the child, and once
    # that handler is reset Python drops the pending signal (the job then runs on, unsignalled).
    held = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED_SIGNALS)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            selector.close()
            listener.close()
            conn.close()
            for sig in FORWARDED_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # one forwarded meanwhile acts now
            _die_with_parent(signal.SIGKILL)
            for target, fd in zip((0, 1, 2), fds, strict=True):
                os.dup2(fd, target)
                os.close(fd)
            code = _run_child(header, payload)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    for fd in fds:
        os.close(fd)
    try:
        _send(conn, json.dumps({"pid": pid}).encode())
    except OSError:  # the client is gone already: so is the child
        os.kill(pid, signal.SIGKILL)
    return pid


def _preload(modules) -> None:
    """Import ``modules`` and trimbench; CUDA stays uninitialised (a forked child initialises its own:
    CUDA does not survive a fork), so a CUDA check at import asks NVML instead of the driver."""
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    import matplotlib

    matplotlib.use("Agg")
    started = time.perf_counter()
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:  # optional for some tracks: a job that needs it imports it itself
            log.info("warm: not preloaded: %s (%s)", module, error)
    for info in pkgutil.walk_packages(trimbench.__path__, "trimbench."):
        if not info.name.endswith(("warm", "__main__")):
            importlib.import_module(info.name)
    log.info("warm: modules imported in %.1f s", time.perf_counter() - started)
    # Out of the collector's reach: else each child's first full collection walks (and so copies on
    # write) every object the imports made, about 0.4 CPU-s a job (docs/performance.md).
    gc.freeze()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("an import initialised CUDA, which a forked child cannot use")


def serve(path: str, modules=PRELOAD) -> None:
    """Accept jobs on the Unix socket ``path`` until SIGTERM; one forked child per job.

    One thread only: a fork copies just the forking thread, so locks other threads hold would stay
    held in every child."""
    _die_with_parent(signal.SIGTERM)
    for fd in (0, 1, 2):  # open, so that the descriptors jobs pass over are never 0, 1 or 2 here
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # first: jobs that connect while the imports run wait in the backlog
    listener.listen(64)
    _preload(modules)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(0))
    try:
        while True:
            for key, _ in selector.select(timeout=0.1):
                if key.fileobj is listener:
                    conn, _ = listener.accept()
                    try:
                        pid = _fork_job(conn, listener, selector)
                    except (OSError, ConnectionError, ValueError) as error:
                        log.warning("warm: a job could not be started: %s", error)
                        pid = None
                    if pid is None:
                        conn.close()
                    else:
                        children[pid] = conn
                        selector.register(conn, selectors.EVENT_READ, pid)
                elif not key.fileobj.recv(1):  # the job's client is gone (killed): so is its child
                    selector.unregister(key.fileobj)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(key.data, signal.SIGKILL)
            while children:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                conn = children.pop(pid)
                with contextlib.suppress(KeyError):
                    selector.unregister(conn)
                try:
                    _send(conn, json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
                except OSError:
                    pass  # the client is gone
                conn.close()
    finally:
        for pid in children:
            os.kill(pid, signal.SIGKILL)


# --- the launcher ----------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
        modules = argv[2].split(",") if len(argv) > 2 else PRELOAD
        serve(argv[1], [m for m in modules if m])
        return 0
    directory = tempfile.mkdtemp(prefix="trimbench-warm-")  # 0700: only this user reaches the socket
    path = os.path.join(directory, "socket")
    server = subprocess.Popen([sys.executable, "-m", "trimbench.jobs.warm", "--serve", path])
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # bound in a fraction of a second; jobs then queue while it imports
        # Ctrl-C reaches snakemake (same process group); it stops its jobs, then we stop the server.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return subprocess.call([sys.executable, "-m", "snakemake", *argv], env={**os.environ, WARM: path})
        finally:
            signal.signal(signal.SIGINT, previous)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    # The module's own copy, not __main__'s: forked children read trimbench.jobs.warm.forked.
    from trimbench.jobs.warm import main as module_main

    sys.exit(module_main(sys.argv[1:]))
