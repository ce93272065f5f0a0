"""Bench plans as data: which runs, which tasks, their TF_CONFIG, command and environment.
Pure: building a plan starts nothing (the runner in `rung.bench.run` executes it)."""

from __future__ import annotations

import json
import socket
import sys
from dataclasses import dataclass, field
from typing import Optional

from rung.errors import InputError

STRATEGIES = ("single_device", "mirrored", "multi_worker_mirrored", "parameter_server")
# Keras 3 runs one-device and mirrored fit; multi-worker and parameter-server fit need
# tf-keras (DESIGN.md: tensorflow#72388, keras-team/keras#18624).
KERAS_FOR = {"single_device": "keras3", "mirrored": "keras3",
             "multi_worker_mirrored": "tf_keras", "parameter_server": "tf_keras"}
# the runs whose Keras `rung bench --keras` chooses (the others run only on tf-keras)
ONE_HOST_KERAS = tuple(k for k, v in KERAS_FOR.items() if v == "keras3")


# The names the bench's own table prints (`mwms:2`, `ps:2:partitioned`), taken back by --runs.
SHORT_NAMES = {"mwms": "multi_worker_mirrored", "ps": "parameter_server"}
# Strategy options a run may take (`--runs mirrored:2:hierarchical`): MirroredStrategy's
# cross_device_ops, and a variable partitioner for parameter servers.
OPTIONS = {"mirrored": {"nccl": "ring", "hierarchical": "tree", "reduction": "reduce_to_one"},
           "parameter_server": {"partitioned": "partitioned"}}


@dataclass(frozen=True)
class RunSpec:
    strategy: str
    replicas: int
    option: Optional[str] = None
    # the Keras the run uses when not `keras_for`'s: a second single-device run on the Keras
    # of the runs it is the basis of (`rung.bench.bench`)
    keras: Optional[str] = None

    @property
    def label(self) -> str:
        base = self.strategy if self.strategy == "single_device" else f"{self.strategy}:{self.replicas}"
        return base + (f":{self.option}" if self.option else "") + (f"@{self.keras}" if self.keras else "")


def parse_runs(text: str) -> list[RunSpec]:
    """'single_device,mirrored:2,multi_worker_mirrored:2,parameter_server:2' -> RunSpecs;
    a third field takes a strategy option: mirrored:2:hierarchical, parameter_server:2:partitioned."""
    runs = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        name, _, rest = part.partition(":")
        name = SHORT_NAMES.get(name, name)
        count, _, option = rest.partition(":")
        if option and option not in OPTIONS.get(name, {}):
            known = ", ".join(f"{s}:N:{o}" for s, opts in OPTIONS.items() for o in opts)
            raise InputError("--runs", None, f"unknown option {option!r} in {part!r}; expected one of {known}")
        if name not in STRATEGIES:
            raise InputError("--runs", None, f"unknown strategy {name!r} in {part!r}; expected one of "
                                             f"{', '.join(STRATEGIES)} (with :N replicas; mwms and ps as the table "
                                             "prints them)")
        if name == "single_device":
            if count not in ("", "1"):
                raise InputError("--runs", None, f"single_device runs one replica, received {part!r}")
            runs.append(RunSpec(name, 1))
            continue
        try:
            n = int(count) if count else 2
        except ValueError:
            raise InputError("--runs", None, f"expected {name}:N with N a whole number, received {part!r}") from None
        if not 1 <= n <= 16:
            raise InputError("--runs", None, f"expected 1 to 16 replicas, received {part!r}")
        runs.append(RunSpec(name, n, option or None))
    if not runs:
        raise InputError("--runs", None, "no runs given; expected e.g. single_device,mirrored:2")
    return runs


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n ports free on `host` now (bound, then released; the tasks bind them next)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


@dataclass
class Task:
    role: str            # "single", "worker", "chief", "ps"
    index: int
    tf_config: Optional[dict]
    address: Optional[str] = None   # host the task runs on (a test host's IP or loopback)
    host: Optional[int] = None      # test host index when tasks run in network namespaces
    straggle: float = 1.0           # slow this task's process by this factor

    @property
    def name(self) -> str:
        return self.role if self.role == "single" else f"{self.role}:{self.index}"


@dataclass
class RunPlan:
    spec: RunSpec
    tasks: list[Task] = field(default_factory=list)
    keras: str = "keras3"

    @property
    def lead(self) -> Task:
        """The task whose timings are the run's: single, worker 0 (MWMS) or the chief (PS)."""
        for role in ("single", "chief"):
            for t in self.tasks:
                if t.role == role:
                    return t
        return next(t for t in self.tasks if t.role == "worker" and t.index == 0)


def _tf_config(cluster: dict, role: str, index: int) -> dict:
    return {"cluster": cluster, "task": {"type": role, "index": index}}


def keras_for(strategy: str, model: Optional[dict] = None) -> str:
    """The Keras a run uses: KERAS_FOR, except a mirrored run of a model Keras 3's fit
    cannot run under MirroredStrategy (rung.kerasfit; rung init does the same), and every
    run of a file that imports tf_keras itself, and the single-device run of a bench whose
    other runs all use tf-keras; the one-host runs on `keras_asked` (`rung bench --keras`)
    when given. `model`: the single-device run's `string_inputs`, `steps_per_execution`,
    `ragged_or_sparse_inputs` and `gradient_clipping` (left out for a file that imports Keras
    3), `tf_keras_import`, `tf_keras_runs` and `keras_asked`."""
    from rung.kerasfit import keras3_mirrored_failures

    m = model or {}
    if m.get("tf_keras_import"):  # the file builds its model with tf_keras itself
        return "tf_keras"
    if m.get("keras_asked") and strategy in ONE_HOST_KERAS:  # `rung bench --keras`, as `rung init --keras`
        return m["keras_asked"]
    if m.get("tf_keras_runs"):  # every other run of the bench is on tf-keras: its basis is too
        return "tf_keras"
    if strategy == "mirrored" and keras3_mirrored_failures(
            m.get("string_inputs", False), m.get("steps_per_execution", 1), m.get("ragged_or_sparse_inputs", False),
            m.get("gradient_clipping")):
        return "tf_keras"
    return KERAS_FOR[strategy]


def plan_run(spec: RunSpec, addresses: Optional[list[str]] = None, ps_tasks: int = 1,
             straggler: Optional[tuple[int, float]] = None, model: Optional[dict] = None,
             ps_host: Optional[tuple[int, str]] = None) -> RunPlan:
    """The tasks of one run. `addresses[i]` is where worker i runs (test hosts), else loopback.
    On test hosts the PS tasks and the coordinator run on `ps_host` (index, address), a host
    of their own, so every worker reads and updates its variables across a link, as the
    model has it (beside worker 0 they shared its loopback: worker 0 never crossed the link,
    and the fleet ran ~9x faster than predicted); without one, on worker 0's host."""
    keras = spec.keras or keras_for(spec.strategy, model)
    if spec.strategy in ("single_device", "mirrored"):
        return RunPlan(spec, [Task("single", 0, None)], keras)
    n = spec.replicas
    addrs = addresses or ["127.0.0.1"] * n
    if len(addrs) < n:
        raise InputError("--hosts", None, f"{spec.label} needs {n} hosts, {len(addrs)} given")
    slow_k, factor = straggler if straggler else (-1, 1.0)
    if spec.strategy == "multi_worker_mirrored":
        ports = free_ports(n)
        cluster = {"worker": [f"{addrs[i]}:{ports[i]}" for i in range(n)]}
        tasks = [Task("worker", i, _tf_config(cluster, "worker", i), addrs[i], i if addresses else None,
                      factor if i == slow_k else 1.0) for i in range(n)]
        return RunPlan(spec, tasks, keras)
    # parameter servers: a chief (coordinator), n workers, ps_tasks PS
    ports = free_ports(1 + n + ps_tasks)
    head_host, head = ps_host if (ps_host and addresses) else (0 if addresses else None, addrs[0])
    cluster = {"chief": [f"{head}:{ports[0]}"],
               "worker": [f"{addrs[i]}:{ports[1 + i]}" for i in range(n)],
               "ps": [f"{head}:{ports[1 + n + j]}" for j in range(ps_tasks)]}
    tasks = [Task("chief", 0, _tf_config(cluster, "chief", 0), head, head_host)]
    tasks += [Task("worker", i, _tf_config(cluster, "worker", i), addrs[i], i if addresses else None,
                   factor if i == slow_k else 1.0) for i in range(n)]
    tasks += [Task("ps", j, _tf_config(cluster, "ps", j), head, head_host) for j in range(ps_tasks)]
    return RunPlan(spec, tasks, keras)


def task_command(config_path: str) -> list[str]:
    return [sys.executable, "-m", "rung.bench.task", config_path]


def task_environment(base: dict, task: Task, keras: str) -> dict:
    env = dict(base)
    env.pop("TF_CONFIG", None)
    if task.tf_config is not None:
        env["TF_CONFIG"] = json.dumps(task.tf_config)
    if keras == "tf_keras":
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    # the task's log keeps the native ERROR lines: gRPC's "Failed to add port" is one, and
    # the bench reads it (`run.port_taken`); a process that measured in-process set 3
    # (`tfenv.import_tensorflow`), which its children would inherit
    if env.get("TF_CPP_MIN_LOG_LEVEL") not in ("0", "1"):
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["PYTHONUNBUFFERED"] = "1"
    return env
