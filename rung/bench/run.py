"""Executing a bench plan: one process per task, each in its own process group, reaped
on every exit path (success, failure, deadline, Ctrl-C)."""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from rung.bench import cpuload
from rung.bench.plan import RunPlan, Task, task_command, task_environment
from rung.errors import RunError

STRAGGLE_PERIOD_SECONDS = 0.02  # duty cycle of SIGSTOP/SIGCONT that slows a straggler


class BenchError(RunError):
    """A run failed; the message says which task and why (its last error lines)."""


# rung picks free ports (bound, then released) and a cluster's tasks bind them a moment
# later: another process can take one in between (a busy machine, tests side by side).
# A job whose task met that starts again on new ports, up to this many times; then the
# failure is said. What TensorFlow's gRPC server says when its port is taken:
PORT_RETRIES = 2
PORT_TAKEN = re.compile(r"(?:Address already in use|Failed to add port)(?:[^\n]*?((?:\d{1,3}\.){3}\d{1,3}:\d+))?")


def port_taken(task: str, text: str) -> Optional[str]:
    """What a task's output says when its port was taken ("worker:1 could not serve on
    0.0.0.0:41211: the port is in use by another process"), or None."""
    found = PORT_TAKEN.search(text)
    if found is None:
        return None
    return f"{task} could not serve on {found.group(1) or 'its port'}: the port is in use by another process"


def port_taken_line(folder: Path) -> Optional[str]:
    """Which task of a failed run could not serve on its port, from the logs in `folder`,
    or None."""
    for log in sorted(folder.glob("*.log")):
        m = re.match(r"([a-z]+)(\d+)-", log.name)
        said = port_taken(f"{m.group(1)}:{m.group(2)}" if m else log.stem, log.read_text(errors="replace"))
        if said:
            return said
    return None


@dataclass
class Outcome:
    plan: RunPlan
    result: dict
    wall_seconds: float
    tasks_started: int
    notes: list[str] = field(default_factory=list)
    recovery: dict = field(default_factory=dict)
    # per attempt, on the runner's clock (perf_counter: CLOCK_MONOTONIC, the tasks' too):
    # when its processes were launched, its lead's step ends as they happened and, in an
    # attempt ended by a kill, when the killed run had stalled and the runner moved on
    attempts: list[dict] = field(default_factory=list)
    # what else the machine did while the first attempt was timed (`cpuload.Sampler.share`);
    # None for a run with a kill or a window too short to read
    machine: Optional[dict] = None


class Processes:
    """Every child started, so that all of them are ended whatever happens."""

    def __init__(self, killed_with_parent: bool = False) -> None:
        """killed_with_parent: the kernel ends each child when this process dies, even by
        SIGKILL (`rung.bench.orphans.killed_with_parent`), for children that do not watch
        their parent themselves (the bench's own tasks do: `exit_with_parent`)."""
        from rung.bench.orphans import killed_with_parent as preexec

        self._preexec = preexec() if killed_with_parent else None
        self.procs: list[subprocess.Popen] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @staticmethod
    def _scratch_env(env, log_path: Path) -> dict:
        # a task ended from here (a killed worker, a server that never exits) leaves its
        # temporary files (TensorFlow's autograph files) behind: beside its log, in the
        # run's own folder, not in the machine's /tmp
        scratch = log_path.parent / "tmp"
        scratch.mkdir(exist_ok=True)
        return dict(env, TMPDIR=str(scratch))

    def start_warm(self, starter, config: str, env, log_path: Path, netns: Optional[str], cmd: list[str]):
        """A task forked from a warm process (`rung.bench.warm`); None when that process
        cannot start it (the caller starts it cold)."""
        p = starter.spawn(config, self._scratch_env(env, log_path), log_path, netns, cmd)
        if p is not None:
            self.procs.append(p)
        return p

    def start(self, cmd, env, log_path: Path) -> subprocess.Popen:
        env = self._scratch_env(env, log_path)
        log = open(log_path, "wb")
        p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, preexec_fn=self._preexec)
        log.close()
        self.procs.append(p)
        return p

    def straggle(self, p: subprocess.Popen, factor: float, after: Optional[Callable[[], bool]] = None) -> None:
        """Let the process run 1/factor of the time: it computes `factor` times slower, from
        when `after()` first holds (the run's first step: its start-up, TensorFlow's import
        and the cluster's rendezvous, is not what a straggler slows)."""
        run_s = STRAGGLE_PERIOD_SECONDS / factor
        stop_s = STRAGGLE_PERIOD_SECONDS - run_s

        def loop():
            while after is not None and not after():
                if self._stop.wait(0.05) or p.poll() is not None:
                    return
            while not self._stop.is_set() and p.poll() is None:
                time.sleep(run_s)
                try:
                    os.killpg(p.pid, signal.SIGSTOP)
                    time.sleep(stop_s)
                finally:
                    try:
                        os.killpg(p.pid, signal.SIGCONT)
                    except ProcessLookupError:
                        return

        t = threading.Thread(target=loop, daemon=True)
        t.start()
        self._threads.append(t)

    def kill(self, p: subprocess.Popen) -> None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=1)
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                self.kill(p)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Keras colours its messages


# TensorFlow's own logging (absl/glog: "I1204 17:10:14.123 ..."; before absl starts,
# "I0000 00:00:..."), and the start-up lines every process prints: not why a task failed
_LOG_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d")
_START_UP = ("WARNING: All log", "To enable the following instructions", "This TensorFlow binary is optimized")
# a task's name alone on a line: the rest of a log line of the coordination service's
_TASK_NAME = re.compile(r"^/job:\w+/replica:\d+/task:\d+$")
# a signal that ends a process by a fault of its own, not by being told to stop
_CRASHES = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT")


def _tail(path: Path, n: int = 6) -> str:
    try:
        lines = [_ANSI.sub("", ln) for ln in path.read_text(errors="replace").splitlines()
                 if ln.strip() and not ln.startswith(_START_UP) and not _LOG_LINE.match(ln)
                 and not _TASK_NAME.match(ln)]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def exit_words(code: Optional[int]) -> str:
    """How a task's process ended, for its failure's line: "exited with code 1", or the
    signal that ended it ("crashed with SIGSEGV (signal 11)"), which no Python line explains."""
    if code is None or code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"was ended by signal {-code}"
    return f"crashed with {name} (signal {-code})" if name in _CRASHES else f"was ended by {name} (signal {-code})"


def execute(plan: RunPlan, base_cfg: dict, workdir: Path, deadline_seconds: float,
            wrap: Optional[Callable[[Task, list[str]], list[str]]] = None,
            on_progress: Optional[Callable[[int], None]] = None,
            kill: Optional[tuple[int, int]] = None, restarts: int = 0, warm=None,
            netns: Optional[Callable[[Task], Optional[str]]] = None) -> Outcome:
    """Start every task of `plan`, wait for the lead task's result, end everything.

    `wrap(task, cmd)` prefixes a command (e.g. `ip netns exec HOST`). `kill=(k, step)`
    kills worker k once the lead task reports `step`; synchronous runs are then restarted
    (up to `restarts` times) and resume from BackupAndRestore.

    `warm` (a `rung.bench.warm.WarmStarter` of the plan's Keras) forks the first attempt's
    tasks from a process that has imported TensorFlow, each in the network namespace
    `netns(task)` names (the namespace `wrap` would enter); restarts start cold. A warm
    attempt records the import it skipped (`import_seconds`): its start-up adds it."""
    procs = Processes()
    t0 = time.perf_counter()
    started = 0
    notes: list[str] = []
    recovery: dict = {}
    attempts: list[dict] = []
    sampler = cpuload.Sampler()
    try:
        attempt = 0
        while True:
            starter = warm if (attempt == 0 and warm is not None and warm.ready()) else None
            launched = time.perf_counter()
            files, warm_tasks = _start_all(plan, base_cfg, workdir, procs, wrap, attempt, starter, netns)
            started += len(plan.tasks)
            lead_result, lead_err, _lead_log, progress = files
            attempts.append({"launched_at": launched, "timeline": progress.with_suffix(".timeline"),
                             # every task skipped TensorFlow's import: a cold start would have paid it
                             "import_seconds": starter.import_seconds if warm_tasks == len(plan.tasks) else 0.0})
            if attempt > 0:
                _await_first_step(plan, procs, progress, lead_result, t0, deadline_seconds)
                recovery["recovery_seconds"] = time.perf_counter() - recovery.pop("_killed_at")
            killed_at = _wait(plan, procs, lead_result, lead_err, t0, deadline_seconds, on_progress, progress,
                              kill if attempt == 0 else None, sampler=sampler if attempt == 0 else None)
            if killed_at is None:
                break
            recovery["_killed_at"] = attempts[-1]["killed_at"] = time.perf_counter()
            recovery["killed_at_step"] = killed_at
            # a worker was killed
            if plan.spec.strategy == "parameter_server":
                notes.append(f"killed worker {kill[0]} at step {killed_at}; the coordinator carried on")
                _wait(plan, procs, lead_result, lead_err, t0, deadline_seconds, on_progress, progress, None,
                      dead_ok=True)
                recovery.pop("_killed_at", None)
                recovery["restarts"] = 0
                break
            if attempt >= restarts:
                raise BenchError(f"{plan.spec.label}: worker {kill[0]} was killed and no restart is allowed")
            notes.append(f"killed worker {kill[0]} at step {killed_at}; restarting every worker")
            for p in procs.procs:
                procs.kill(p)
            for p in procs.procs:
                p.wait(timeout=10)
            procs.procs.clear()
            attempt += 1
            recovery["restarts"] = attempt
        result = json.loads(lead_result.read_text())
        for a in attempts:
            a["ends"] = _read_floats(a.pop("timeline"))
        return Outcome(plan, result, time.perf_counter() - t0, started, notes, recovery, attempts,
                       machine=sampler.share() if attempt == 0 and not recovery else None)
    finally:
        procs.close()


def _start_all(plan, base_cfg, workdir, procs, wrap, attempt, starter=None, netns=None):
    lead = plan.lead
    warm_tasks = 0
    lead_files = None
    lead_progress = workdir / f"{lead.role}{lead.index}-a{attempt}.progress"

    def stepped() -> bool:  # the lead has seen a step of this attempt
        return (_read_int(lead_progress) or 0) >= 1

    for task in plan.tasks:
        tag = f"{task.role}{task.index}-a{attempt}"
        cfg = dict(base_cfg, role=task.role, index=task.index)
        is_lead = task is lead
        cfg["result"] = str(workdir / f"{tag}.result.json") if is_lead else None
        cfg["error"] = str(workdir / f"{tag}.error.txt")
        cfg["progress"] = str(workdir / f"{tag}.progress") if is_lead else None
        cfg["timeline"] = str(workdir / f"{tag}.timeline") if is_lead else None
        cfg_path = workdir / f"{tag}.config.json"
        cfg_path.write_text(json.dumps(cfg))
        cmd = task_command(str(cfg_path))
        if wrap:
            cmd = wrap(task, cmd)
        env, log = task_environment(os.environ, task, plan.keras), workdir / f"{tag}.log"
        p = procs.start_warm(starter, str(cfg_path), env, log, netns(task) if netns else None, cmd) \
            if starter is not None else None
        if p is None:
            p = procs.start(cmd, env, log)
        else:
            warm_tasks += 1
        p.rung_task = task  # type: ignore[attr-defined]
        if task.straggle > 1.0:
            procs.straggle(p, task.straggle, after=stepped)
        if is_lead:
            lead_files = (Path(cfg["result"]), Path(cfg["error"]), workdir / f"{tag}.log", Path(cfg["progress"]))
    return lead_files, warm_tasks


def _await_first_step(plan, procs, progress: Path, result: Path, t0, deadline) -> None:
    """After a restart: until the restarted lead reports a step (or finishes)."""
    while _read_int(progress) is None and not result.exists():
        if time.perf_counter() - t0 > deadline:
            raise BenchError(f"{plan.spec.label}: no step after the restart within the deadline")
        if all(p.poll() is not None for p in procs.procs):
            raise BenchError(f"{plan.spec.label}: every task exited after the restart without a result")
        time.sleep(0.05)


def _wait(plan, procs, result: Path, err: Path, t0, deadline, on_progress, progress: Path, kill, dead_ok=False,
          sampler: Optional[cpuload.Sampler] = None):
    """Until the lead's result exists. Returns the step at which a worker was killed, or None.
    `sampler` reads the machine's CPU time and the tasks' from the lead's first step on."""
    lead_proc = next(p for p in procs.procs if p.rung_task is plan.lead)  # type: ignore[attr-defined]
    while True:
        if result.exists():
            return None
        step = _read_int(progress)
        if sampler is not None and step is not None and step >= 1:
            sampler.sample(p.pid for p in procs.procs)
        if on_progress and step is not None:
            on_progress(step)
        if kill and step is not None and step >= kill[1]:
            victim = next((p for p in procs.procs if p.rung_task.role == "worker"  # type: ignore[attr-defined]
                           and p.rung_task.index == kill[0]), None)  # type: ignore[attr-defined]
            if victim is not None:
                procs.kill(victim)
                victim.wait(timeout=10)
                if plan.spec.strategy == "parameter_server":
                    return step  # the coordinator carries on: its count keeps moving
                return _settled_step(progress, step)
        if lead_proc.poll() is not None and not result.exists():
            time.sleep(0.2)
            if result.exists():
                return None
            cause = _earlier_peer_failure(plan, procs, err, kill, dead_ok)
            if cause is not None:
                raise BenchError(f"{plan.spec.label}: {cause}")
            log = err.with_suffix("").with_suffix(".log")
            why = (err.read_text()[:600].splitlines()[0] if err.exists()
                   else f"{exit_words(lead_proc.returncode)}, last output: {_tail(log)}")
            raise BenchError(f"{plan.spec.label}: {plan.lead.name} failed: {why}")
        for p in procs.procs:
            t = p.rung_task  # type: ignore[attr-defined]
            if p.poll() not in (None, 0) and t is not plan.lead and not dead_ok and not (kill and t.role == "worker"):
                errfile = next(iter(sorted(err.parent.glob(f"{t.role}{t.index}-a*.error.txt"))), err)
                why = errfile.read_text().splitlines()[0] if errfile.exists() else exit_words(p.returncode)
                raise BenchError(f"{plan.spec.label}: {t.name} failed: {why}")
        if time.perf_counter() - t0 > deadline:
            raise BenchError(f"{plan.spec.label}: no result after {deadline:.0f} s (deadline); every task "
                             "was ended")
        time.sleep(0.1)


def _earlier_peer_failure(plan, procs, lead_err: Path, kill, dead_ok) -> Optional[str]:
    """When the lead failed: a peer that failed before it, "TASK failed: ERROR", or None.
    A worker whose peer fails fails too (UnavailableError), often before the runner sees
    the peer exit: the error file written first is the cause (a worker killed on purpose
    is none)."""
    suffix = lead_err.name[len(f"{plan.lead.role}{plan.lead.index}"):]  # "-aN.error.txt"
    lead_at = lead_err.stat().st_mtime_ns if lead_err.exists() else None
    first = None
    for p in procs.procs:
        t = p.rung_task  # type: ignore[attr-defined]
        if t is plan.lead or dead_ok or (kill and t.role == "worker"):
            continue  # (a peer that wrote its error may still be exiting: TensorFlow's teardown)
        f = lead_err.parent / f"{t.role}{t.index}{suffix}"
        try:
            at = f.stat().st_mtime_ns
        except OSError:
            continue
        if (lead_at is None or at < lead_at) and (first is None or at < first[0]):
            first = (at, t, f)
    if first is None:
        return None
    _, t, f = first
    lines = f.read_text().splitlines()
    return f"{t.name} failed: {lines[0] if lines else 'an empty error file'}"


def _settled_step(progress: Path, seen: int, still: float = 0.5, cap: float = 3.0) -> int:
    """The step a synchronous lead completed before its peer died. The step seen at kill
    time may be stale by a step or two, and the lead cannot go further without the peer:
    read its count once it has held still for `still` seconds (`cap` at most)."""
    last, still_since, until = seen, time.perf_counter(), time.perf_counter() + cap
    while time.perf_counter() < until and time.perf_counter() - still_since < still:
        time.sleep(0.1)
        now = _read_int(progress) or last
        if now != last:
            last, still_since = now, time.perf_counter()
    return max(seen, last)


def _read_floats(path: Path) -> list[float]:
    try:
        return [float(x) for x in path.read_text().split()]
    except (OSError, ValueError):
        return []


def _read_int(path: Path) -> Optional[int]:
    try:
        return int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return None


def step_stats(result: dict, warmup: int, global_batch: int) -> dict:
    """Steps after warm-up: intervals between step ends; throughput over the same window."""
    # here, not at the top: `rung launch`'s launcher imports this module and never times a
    # step, and rung.stats loads numpy (0.29 s of its 0.45 s start)
    from rung.stats import epoch_step_seconds, percentile

    if result.get("async"):
        steps, window = result["steps"], result["end"] - result["start"]
        per, fixed, rounds = window / steps, None, []
        ends = result.get("epoch_ends") or []
        if len(ends) > 1:
            # one fit of several epochs of `steps`: the median epoch, per step, and the fit's
            # fixed cost before the first end
            rounds, per, fixed = epoch_step_seconds(result["start"], ends, steps)
            per = per or window / steps
            # the window holds every timed epoch, and so do the steps counted with it
            window, steps = ends[-1] - ends[0], steps * len(rounds)
        return {"steps_timed": steps, "window_seconds": window, "step_seconds_p50": per,
                "step_seconds_p95": per, "step_seconds_mean": per, "fit_fixed_seconds": fixed,
                "step_seconds_rounds": rounds, "examples_per_second": global_batch / per, "step_time_cv": None,
                "step_cpu_cores": None}
    ends = result["ends"]
    warmup = result.get("warmup", warmup)  # whole calls of a steps_per_execution model
    timed = ends[warmup:] if len(ends) > warmup else ends
    base = ends[warmup - 1] if warmup >= 1 and len(ends) > warmup else result["start"]
    intervals = [b - a for a, b in zip([base] + timed[:-1], timed)]
    window = (timed[-1] if timed else result["end"]) - base
    steps = len(timed)
    p95 = percentile(intervals, 0.95) if intervals else None
    # the cores this process kept busy over the timed steps: its CPU time (every thread's)
    # over the same window; None where the task did not read it or the window is empty
    cpu = result.get("cpu_ends") or []
    cores = None
    if len(cpu) == len(ends) and warmup >= 1 and len(ends) > warmup and window > 0:
        cores = (cpu[-1] - cpu[warmup - 1]) / window
    return {"steps_timed": steps, "window_seconds": window,
            # times Keras traced its train function among the timed steps (a trace there is
            # a call many times the others: it must be 0)
            "traced_while_timed": result.get("traced_while_timed"),
            # fit's start to the warm-up's end: its set-up and the first (traced) call
            "warmup_seconds": base - result["start"] if warmup >= 1 and len(ends) > warmup else None,
            "step_seconds_p50": statistics.median(intervals) if intervals else None,
            "step_seconds_p95": p95, "step_seconds_max": max(intervals) if intervals else None,
            "step_seconds_mean": window / steps if steps else None,
            "examples_per_second": steps * global_batch / window if window > 0 else None,
            "step_time_cv": (statistics.pstdev(intervals) / statistics.fmean(intervals))
            if len(intervals) > 1 else 0.0,
            "step_cpu_cores": round(cores, 3) if cores is not None else None}


def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="rung-bench-"))
