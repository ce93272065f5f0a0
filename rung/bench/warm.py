"""Warm starts for the bench's tasks: one process per Keras imports TensorFlow once, then
forks a task for each run, so a bench of N runs pays the import (3-6 s of CPU here) once
per Keras instead of once per process.

`python -m rung.bench.warm` is that process. It reads one request a line on stdin (the
task's config, environment, log, exit file and network namespace), forks, and answers
with the child's pid on stdout. The child starts a session of its own (so the runner
stops, continues and kills its process group as it does a cold task's), joins the test
host's network namespace if it has one, points its output at the task's log and runs
`rung.bench.task` as `python -m` would. The warm process reaps its children and writes
each one's exit code (as `Popen.returncode` gives it) to the request's exit file.

What it changes in the figures: a warm task skips TensorFlow's import, so the run's
start-up (launch to the first step's end) adds the import the warm process measured, once,
alone (`WarmStarter.import_seconds`): it is what a cold process pays on a real cluster.
It is the import's CPU time when that is less than its wall time: the first import after
a machine starts (or early in a fresh clone's CI) can also wait on the disk for files a
restart moments later finds in the page cache (docs/bench.md).
Restarts after a kill are started cold. `RUNG_WARM_START=0` starts every task cold.

Forking after `import tensorflow` is safe while TensorFlow's runtime has not started
(no op has run, no device is listed: the warm process does neither, and exits, leaving
its tasks to cold starts, if the import itself made the runtime). On GPU machines that is
written to hold and not measured: this machine has no GPU. A warm process that
fails to start or to answer is not used again and the task starts cold."""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

ANSWER_SECONDS = 180.0  # the import (the first request waits for it) and one fork
CLONE_NEWNET = 0x40000000
PR_SET_NAME = 15


def enabled() -> bool:
    return os.environ.get("RUNG_WARM_START", "1") not in ("0", "false", "no")


class WarmChild:
    """A forked task, with the part of `subprocess.Popen` the runner uses: pid,
    returncode, poll(), wait(timeout)."""

    def __init__(self, pid: int, exit_path: Path, starter: "WarmStarter", cmd: list[str]) -> None:
        self.pid, self.exit_path, self.starter, self.args = pid, exit_path, starter, cmd
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            try:
                self.returncode = int(self.exit_path.read_text())
            except (OSError, ValueError):
                if self.starter.proc.poll() is not None and not _alive(self.pid):
                    self.returncode = -9  # its warm process died first: nobody reaped it to say how it ended
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        until = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if until is not None and time.monotonic() > until:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.02)
        return self.returncode  # type: ignore[return-value]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class WarmStarter:
    """The warm process of one Keras ("keras3" or "tf_keras"), started at its first task."""

    def __init__(self, keras: str, env: dict, log_path: Path, preexec=None) -> None:
        self.keras = keras
        self.broken: Optional[str] = None
        self.import_seconds: Optional[float] = None  # its CPU time, or its wall time if less (main())
        self.import_wall_seconds: Optional[float] = None
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "rung.bench.warm"], env=env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                                         preexec_fn=preexec)

    def _answer(self) -> Optional[dict]:
        ready, _, _ = select.select([self.proc.stdout], [], [], ANSWER_SECONDS)
        line = self.proc.stdout.readline() if ready else b""  # type: ignore[union-attr]
        if not line:
            if ready:  # its output closed: it is exiting (poll() alone can come before the exit)
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            self.broken = "no answer" if self.proc.poll() is None else f"exited ({self.proc.returncode})"
            self.close()
            return None
        return json.loads(line)

    def ready(self) -> bool:
        """Wait for the import (the first time); False if the warm process is not usable."""
        if self.import_seconds is None and self.broken is None:
            got = self._answer()
            if got is not None:
                self.import_seconds = float(got["import_seconds"])
                self.import_wall_seconds = float(got["import_wall_seconds"])
        return self.broken is None

    def spawn(self, config: str, env: dict, log_path: Path, netns: Optional[str], cmd: list[str]) -> Optional[WarmChild]:
        if not self.ready():
            return None
        exit_path = log_path.with_suffix(".exit")
        request = {"config": config, "env": env, "log": str(log_path), "exit": str(exit_path), "netns": netns}
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except OSError:
            self.broken = "its input closed"
            self.close()
            return None
        got = self._answer()
        return None if got is None else WarmChild(int(got["pid"]), exit_path, self, cmd)

    def close(self) -> None:
        """End the warm process: at the end of its input it kills the tasks it forked that
        still run, reaps them and exits (killed after 5 s; its tasks then exit too, as
        they watch their parent: `orphans.exit_with_parent`)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class WarmStarters:
    """The bench's warm processes, one per Keras, each started when a run first needs it."""

    def __init__(self, scratch: Path) -> None:
        from rung.bench.orphans import killed_with_parent

        # a warm process ends with the bench, even a bench killed by SIGKILL; its tasks
        # then end with it (they watch their parent)
        self.scratch, self._preexec = scratch, killed_with_parent()
        self._by_keras: dict[str, WarmStarter] = {}

    def get(self, keras: str, env: dict) -> Optional[WarmStarter]:
        if not enabled():
            return None
        s = self._by_keras.get(keras)
        if s is None:
            env = {k: v for k, v in env.items() if k != "TF_CONFIG"}
            s = self._by_keras[keras] = WarmStarter(keras, env, self.scratch / f"warm-{keras}.log", self._preexec)
        return None if s.broken else s

    def close(self) -> None:
        for s in self._by_keras.values():
            s.close()
        self._by_keras.clear()

    def __enter__(self) -> "WarmStarters":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- the warm process -------------------------------------------------------------------

def _setns(name: str) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into network namespace {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _child(req: dict) -> None:
    """In the forked child: become the task. Never returns."""
    code = 1
    try:
        os.setsid()
        import ctypes

        # its command line stays the warm process's; its name says what it is (`ps -o comm`,
        # `pgrep rung.bench.task`)
        ctypes.CDLL(None).prctl(PR_SET_NAME, b"rung.bench.task", 0, 0, 0)
        fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        if req.get("netns"):
            _setns(req["netns"])
        os.environ.clear()
        os.environ.update(req["env"])
        import tempfile

        tempfile.tempdir = None  # TMPDIR is the task's own (its run's folder)
        if "numpy" in sys.modules:
            # a fork copies NumPy's global generator (Python's `random` reseeds itself after
            # a fork): fresh entropy, as each cold process draws, or every forked worker of
            # a workload that draws its synthetic data from np.random would draw the same
            sys.modules["numpy"].random.seed()
        import runpy

        sys.argv = [sys.argv[0], req["config"]]
        runpy.run_module("rung.bench.task", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - the task's own failure, in its log, as a cold task's would be
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _write_exit(path: str, status: int) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(str(os.waitstatus_to_exitcode(status)))
    os.replace(tmp, path)


def main() -> None:
    t0, cpu0 = time.perf_counter(), time.process_time()
    import importlib

    # the import every task would pay: TensorFlow, the Keras of this process, and rung's own
    for name in ("tensorflow", "tf_keras" if os.environ.get("TF_USE_LEGACY_KERAS") == "1" else None,
                 "rung.bench.task", "rung.measure.counts"):
        if name:
            importlib.import_module(name)
    from tensorflow.python.eager import context

    if context.context_safe() is not None:
        # something made TensorFlow's runtime at import (its devices, a GPU's driver): a
        # fork would copy it half-made. Not seen here; the bench then starts its tasks cold
        sys.exit("TensorFlow's runtime started at import: no warm starts")
    # what the import made stays out of the collector's sight in the children (as the gc
    # module advises for forking servers): a collection that walked it would write to
    # every page of it, and each child would copy those pages, inside its timed steps
    gc.collect()
    gc.freeze()
    out = sys.stdout
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    # the import alone and off a warm page cache: its CPU time, unless its threads made
    # that more than the wall time (not seen: 3.8 s of CPU in 3.7 s of wall here)
    out.write(json.dumps({"import_seconds": min(wall, cpu), "import_wall_seconds": wall}) + "\n")
    out.flush()
    children: dict[int, str] = {}
    stdin = sys.stdin.buffer
    open_input = True
    while open_input or children:
        if open_input:
            ready, _, _ = select.select([stdin], [], [], 0.05)
            if ready:
                line = stdin.readline()
                if not line:
                    open_input = False  # the bench is done with this process: end what is left
                    for pid in children:
                        try:
                            os.killpg(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                else:
                    req = json.loads(line)
                    pid = os.fork()
                    if pid == 0:
                        _child(req)
                    children[pid] = req["exit"]
                    out.write(json.dumps({"pid": pid}) + "\n")
                    out.flush()
        else:
            time.sleep(0.05)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            path = children.pop(pid, None)
            if path:
                _write_exit(path, status)


if __name__ == "__main__":
    main()
