"""`rung launch --engine local`: the generated train.py as real processes on this
machine, each with its TF_CONFIG on loopback ports. What rung hands the team is what
runs. Every process is ended on every path (success, failure, deadline, Ctrl-C, and
the launcher's own death by SIGKILL)."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rung.bench.plan import free_ports
from rung.bench.run import PORT_RETRIES, Processes, _tail, exit_words, port_taken
from rung.errors import RunError
from rung.launch import tfconfig as T
from rung.launch.emit import Job

POLL_SECONDS = 0.1
# TensorFlow's coordination service, while the group forms: "Waiting for 1/2 tasks to
# connect." and then the names of the tasks it waits for, one per line.
_WAITING_FOR = re.compile(r"^/job:(\w+)/replica:\d+/task:(\d+)\s*$", re.M)
# With --kill, synchronous training backs up this often (steps) so a restart resumes close by.
KILL_SAVE_EVERY = 5


class LaunchError(RunError):
    """A launched job failed: which task, its exit code and its last lines. `port_taken`:
    a task could not serve on its port, which another process took between rung picking
    it (free then) and the task binding it."""

    def __init__(self, message: str, port_taken: bool = False) -> None:
        super().__init__(message)
        self.port_taken = port_taken


# train.py's own line for a workload that cannot be used (exit code 2). A task whose port
# was taken (port_taken) starts the job again on new ports, up to PORT_RETRIES times.
_WORKLOAD_ERROR = re.compile(r"^train\.py: workload: (.*)$", re.M)
_WORKLOAD_ANYWHERE = re.compile(r"train\.py: workload: (.*)$", re.M)


def workload_error(text: str, anywhere: bool = False):
    """train.py's own line for a workload it cannot use (`stop_workload`), as the InputError
    rung prints, or None. `anywhere`: the line may sit inside another (a Ray Train worker's
    error, which launch_ray.py raises with it)."""
    bad = (_WORKLOAD_ANYWHERE if anywhere else _WORKLOAD_ERROR).search(text)
    if bad is None:
        return None
    from rung.errors import InputError

    path, _, message = bad.group(1).partition(": ")
    return InputError(path, None, message)


def _failure(proc: "Proc") -> Exception:
    """Why a task exited: the workload (exit 2, bad input), a port in use, or its last lines."""
    text = proc.log.read_text(errors="replace") if proc.log.exists() else ""
    bad = workload_error(text)
    if bad is not None and proc.popen.returncode == 2:
        return bad
    taken = port_taken(proc.task, text)
    if taken:
        return LaunchError(taken, port_taken=True)
    from rung.failures import hint

    found = hint(text)  # a failure met only under a strategy: what to change first
    last = _tail(proc.log)
    if proc.popen.returncode < 0:  # a signal: the log's last lines may not say why, its whole text may
        last = (f"{last}; " if last else "") + f"its log: {proc.log}"
    return LaunchError(f"{proc.task} {exit_words(proc.popen.returncode)}: "
                       + (f"{found[0]}; last output: " if found else "") + last)


@dataclass
class Proc:
    task: str           # "worker:0", or "local"
    popen: object
    log: Path
    progress: Path


def cluster_for(job: Job) -> Optional[dict]:
    v = job.script_verdict
    if v == "multi_worker_mirrored":
        return {"worker": [f"127.0.0.1:{p}" for p in free_ports(job.workers)]}
    if v == "parameter_server":
        ports = free_ports(1 + job.workers + job.ps_tasks)
        return {"chief": [f"127.0.0.1:{ports[0]}"],
                "worker": [f"127.0.0.1:{p}" for p in ports[1:1 + job.workers]],
                "ps": [f"127.0.0.1:{p}" for p in ports[1 + job.workers:]]}
    return None


def _read_int(path: Path) -> Optional[int]:
    try:
        return int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return None


def _reports(log: Path) -> list[dict]:
    out = []
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def notices(lines) -> list[str]:
    """What train.py told the user on its way (lines it starts with "train.py: "), once each
    whichever tasks printed them: a run that succeeds still says what it changed (a model's
    XLA turned off under parameter servers)."""
    seen = []
    for line in lines:
        said = line.removeprefix("train.py: ")
        if said != line and said not in seen:
            seen.append(said)
    return seen


def _notices(procs) -> list[str]:
    return notices(line for p in procs if p.log.exists() for line in p.log.read_text(errors="replace").splitlines())


class LocalJob:
    def __init__(self, job: Job, out_dir: Path, steps: int, epochs: int, workdir: Path,
                 startup_seconds: float, deadline_seconds: float) -> None:
        self.job, self.out_dir, self.steps, self.epochs = job, out_dir, steps, epochs
        self.workdir, self.startup, self.deadline = workdir, startup_seconds, deadline_seconds
        # the user's train.py cannot watch its parent: the kernel ends it if `rung launch`
        # dies without its `finally` (SIGKILL, the OOM killer)
        self.procs = Processes(killed_with_parent=True)
        self.cluster = cluster_for(job)
        self.killed: set[str] = set()
        self.kill_watch = False

    def _argv(self, save_every: int) -> list[str]:
        argv = [sys.executable, str(self.out_dir / "train.py"), "--steps", str(self.steps),
                "--epochs", str(self.epochs), "--checkpoint-dir", str(self.workdir / "checkpoints")]
        if self.job.script_verdict == "multi_worker_mirrored" and save_every:
            argv += ["--save-every", str(save_every)]
        if self.job.script_verdict == "mirrored":
            argv += ["--cpu-devices", str(max(2, self.job.devices_per_host))]
        return argv

    def start(self, attempt: int | str, save_every: int, only: Optional[list[str]] = None) -> list[Proc]:
        """Start every task of the job (or `only` those named); `attempt` names their logs."""
        tasks = [str(t) for t in T.tasks_of(self.cluster)] if self.cluster else ["local"]
        procs = []
        for name in tasks if only is None else [t for t in tasks if t in only]:
            env = dict(os.environ)
            env.pop("TF_CONFIG", None)
            if self.cluster:
                kind, _, index = name.partition(":")
                config = T.tf_config(self.cluster, T.Task(kind, int(index)))
                T.check(config, self.job.script_verdict)  # the same check as check-tf-config
                env["TF_CONFIG"] = json.dumps(config)
            if self.job.legacy_keras:
                env["TF_USE_LEGACY_KERAS"] = "1"
            env["TF_CPP_MIN_LOG_LEVEL"] = "0"  # to the task's log file: names the tasks a group waits for
            tag = f"{name.replace(':', '')}-a{attempt}"
            progress = self.workdir / f"{tag}.progress"
            env["RUNG_PROGRESS"] = str(progress)
            if self.kill_watch:  # the step count every step, so a kill lands where asked
                env["RUNG_PROGRESS_EVERY"] = "1"
            log = self.workdir / f"{tag}.log"
            procs.append(Proc(name, self.procs.start(self._argv(save_every), env, log), log, progress))
        return procs

    @staticmethod
    def lead(procs: list[Proc]) -> Proc:
        return next((p for p in procs if p.task in ("chief:0", "worker:0", "local")), procs[0])

    def wait(self, procs: list[Proc], t0: float, kill: Optional[tuple[int, int]]) -> Optional[int]:
        """Until the lead exits; returns the step at which worker K was killed, if it was."""
        lead = self.lead(procs)
        while True:
            now = time.perf_counter() - t0
            step = _read_int(lead.progress)
            if lead.popen.poll() is not None:
                if lead.popen.returncode != 0:
                    raise _failure(lead)
                return None
            for p in procs:
                if p is not lead and p.task not in self.killed and p.popen.poll() not in (None, 0):
                    raise _failure(p)
            if step is None and now > self.startup:
                self._never_joined(procs)
            if kill and step is not None and step >= kill[1]:
                victim = next(p for p in procs if p.task == f"worker:{kill[0]}")
                self.killed.add(victim.task)
                self.procs.kill(victim.popen)
                victim.popen.wait(timeout=10)
                return step
            if now > self.deadline:
                raise LaunchError(f"no result within {self.deadline:.0f} s (deadline); every task was ended")
            time.sleep(POLL_SECONDS)

    def _never_joined(self, procs: list[Proc]) -> None:
        waited = sorted({f"{m.group(1)}:{m.group(2)}" for p in procs if p.log.exists()
                         for m in _WAITING_FOR.finditer(p.log.read_text(errors="replace"))})
        missing = waited or [p.task for p in procs if _read_int(p.progress) is None]
        raise LaunchError(f"no step within the start-up deadline ({self.startup:.0f} s): "
                          f"{', '.join(missing)} never joined the job (TensorFlow's strategy constructor waits "
                          "for every task, and ignores SIGTERM); every task was ended")


def launch_local(job: Job, out_dir: Path, steps: int, epochs: int, workdir: Path,
                 kill: Optional[tuple[int, int]] = None, startup_seconds: float = 120.0,
                 deadline_seconds: float = 900.0) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    lj = LocalJob(job, out_dir, steps, epochs, workdir, startup_seconds, deadline_seconds)
    lj.kill_watch = kill is not None
    sync = job.script_verdict == "multi_worker_mirrored"
    save_every = KILL_SAVE_EVERY if kill and sync else 0
    t0 = time.perf_counter()
    restarts, killed_at = 0, None
    retried = []
    try:
        for attempt in range(PORT_RETRIES + 1):
            procs = lj.start(0 if not retried else f"0r{len(retried)}", save_every)
            try:
                killed_at = lj.wait(procs, t0, kill)
                break
            except LaunchError as e:
                if not e.port_taken or attempt == PORT_RETRIES or lj.cluster is None:
                    raise
                for p in procs:  # the others wait for the task that could not serve: end them
                    lj.procs.kill(p.popen)
                for p in procs:
                    p.popen.wait(timeout=10)
                retried.append(str(e))
                lj.cluster = cluster_for(job)  # ports free now, as the first ones were
        started = [{"task": p.task, "node": "localhost", "pid": p.popen.pid} for p in procs]
        if killed_at is not None and sync:
            # a dead peer stalls the collective: end the group, start it again, resume
            for p in procs:
                lj.procs.kill(p.popen)
            for p in procs:
                p.popen.wait(timeout=10)
            restarts = 1
            procs = lj.start(1, save_every)
            lj.wait(procs, time.perf_counter(), None)
        elif killed_at is not None:
            lj.wait(procs, t0, None)  # parameter servers: the coordinator carries on
        reports = _reports(lj.lead(procs).log)
        notes = [f"started again on new ports: {why}" for why in retried] + _notices(procs)
    finally:
        lj.procs.close()
    last = reports[-1] if reports else {}
    return {"schema": "rung/launch/v1", "engine": "local", "strategy": job.script_verdict,
            "workers": job.workers if lj.cluster else 1, "ps_tasks": job.ps_tasks if lj.cluster and
            job.script_verdict == "parameter_server" else 0,
            "keras": "tf_keras" if job.legacy_keras else "keras3",
            "steps_completed": last.get("step"), "examples_per_second": last.get("examples_per_second"),
            "loss": last.get("loss"), "restarts": restarts, "killed_at_step": killed_at,
            "resumed_from_step": last.get("start_step") if restarts else None,
            "wall_seconds": time.perf_counter() - t0, "tasks": started, "epochs": reports, "notes": notes}
