"""TF_CONFIG as data: build it for every task of a job, and check one (or a whole job's)
the way TensorFlow's cluster handling does, plus the mistakes TensorFlow only finds at
run time, by hanging or failing late (contract: shared/contract/launch-v1.md).

Pure: no TensorFlow. TensorFlow's rules, from `tf.distribute.cluster_resolver.
TFConfigClusterResolver` and `multi_worker_util` (TF 2.21): job names are `chief`,
`worker`, `ps`, `evaluator`; at most one chief and one evaluator; the task's type must
be in the cluster (an evaluator may stand outside it); the index is an int (a numeric
string is accepted) in range.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
from dataclasses import dataclass
from typing import Any, Iterable, Optional

JOBS = ("chief", "worker", "ps", "evaluator")
# keys TensorFlow and its launchers write beside cluster and task
KNOWN_EXTRA_KEYS = ("rpc_layer", "environment", "session_master")
LOOPBACK_NAMES = ("localhost", "ip6-localhost", "ip6-loopback")


class TFConfigError(ValueError):
    """One broken rule: `field` is the path in the TF_CONFIG, `message` says what and why."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class Task:
    type: str
    index: int

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"


# -- building ----------------------------------------------------------------------------

def cluster_for(strategy: str, workers: list[str], chief: Optional[str] = None,
                ps: Optional[list[str]] = None, evaluator: Optional[str] = None) -> dict[str, list[str]]:
    """The cluster of a job: jobs in TensorFlow's order, empty jobs left out."""
    cluster: dict[str, list[str]] = {}
    if chief:
        cluster["chief"] = [chief]
    if workers:
        cluster["worker"] = list(workers)
    if ps:
        cluster["ps"] = list(ps)
    if evaluator:
        cluster["evaluator"] = [evaluator]
    if not cluster:  # --workers '' (an empty variable in a script): no task at all
        raise TFConfigError("cluster.worker", "no address given; expected at least one worker 'host:port'")
    check({"cluster": cluster, "task": {"type": next(iter(cluster)), "index": 0}}, strategy)
    return cluster


def tasks_of(cluster: dict[str, list[str]]) -> list[Task]:
    return [Task(job, i) for job in JOBS for i in range(len(cluster.get(job, [])))]


def tf_config(cluster: dict[str, list[str]], task: Task) -> dict[str, Any]:
    if task.type == "evaluator" and "evaluator" in cluster:
        # the evaluator runs apart: TensorFlow expects it outside the training cluster
        training = {k: v for k, v in cluster.items() if k != "evaluator"}
        return {"cluster": training, "task": {"type": "evaluator", "index": task.index}}
    return {"cluster": cluster, "task": {"type": task.type, "index": task.index}}


def all_tf_configs(cluster: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One line per task, as `rung tf-config --all` prints them."""
    return [{"task": str(t), "TF_CONFIG": tf_config(cluster, t)} for t in tasks_of(cluster)]


def parse_task(text: str, cluster: dict[str, list[str]]) -> Task:
    kind, _, index = text.partition(":")
    if kind not in JOBS or not index.isdigit():
        raise TFConfigError("--task", f"expected TYPE:INDEX with TYPE one of {', '.join(JOBS)}, received {text!r}")
    t = Task(kind, int(index))
    if t.index >= len(cluster.get(kind, [])):
        raise TFConfigError("--task", f"{text} is not in the cluster ({len(cluster.get(kind, []))} {kind} task(s))")
    return t


# -- checking one ------------------------------------------------------------------------

def _address(field: str, addr: Any) -> tuple[str, int]:
    if not isinstance(addr, str):
        raise TFConfigError(field, f"expected an address 'host:port', received {addr!r}")
    host, sep, port = addr.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        raise TFConfigError(field, f"expected an address 'host:port', received {addr!r}")
    if not 1 <= int(port) <= 65535:
        raise TFConfigError(field, f"port {port} is out of range (1-65535) in {addr!r}")
    return host, int(port)


def _index(raw: Any) -> int:
    if isinstance(raw, bool):
        raise TFConfigError("task.index", f"expected an integer, received {raw!r}")
    if isinstance(raw, int):
        index = raw
    elif isinstance(raw, str) and raw.lstrip("-").isdigit():
        index = int(raw)  # TensorFlow takes "1" too
    else:
        raise TFConfigError("task.index", f"expected an integer, received {raw!r}")
    if index < 0:
        raise TFConfigError("task.index", f"{index} is negative")
    return index


def _check_cluster(cluster: Any) -> None:
    if not isinstance(cluster, dict):
        raise TFConfigError("cluster", f"expected a mapping of job names to address lists, received {cluster!r}")
    seen: dict[tuple[str, int], str] = {}
    for job, addrs in cluster.items():
        if job not in JOBS:
            hint = " (TF1's 'master' is 'chief' in tf.distribute)" if job == "master" else ""
            raise TFConfigError(f"cluster.{job}", f"unknown job {job!r}; expected one of {', '.join(JOBS)}{hint}")
        if isinstance(addrs, dict):
            raise TFConfigError(f"cluster.{job}", "expected a list of addresses (tf.distribute does not take "
                                                  "sparse {index: address} jobs)")
        if not isinstance(addrs, list) or not addrs:
            raise TFConfigError(f"cluster.{job}", f"expected a non-empty list of 'host:port', received {addrs!r}")
        if job in ("chief", "evaluator") and len(addrs) > 1:
            raise TFConfigError(f"cluster.{job}", f"at most one {job} task, received {len(addrs)}")
        for i, addr in enumerate(addrs):
            host, port = _address(f"cluster.{job}[{i}]", addr)
            where = f"{job}[{i}]"
            if (host, port) in seen:
                raise TFConfigError(f"cluster.{job}[{i}]", f"{addr} is also {seen[(host, port)]}: two tasks "
                                                             "cannot serve on one address")
            seen[(host, port)] = where


def _near(key: str) -> str:
    near = difflib.get_close_matches(key, ["cluster", "task"], n=1, cutoff=0.7)
    return near[0] if near else ""


def check(config: Any, strategy: Optional[str] = None) -> Optional[Task]:
    """Check one TF_CONFIG (a parsed JSON value); the task it names, or None for local
    training (an empty object). Raises TFConfigError naming the rule and the field."""
    if not isinstance(config, dict):
        raise TFConfigError("(top level)", f"expected a JSON object, received {type(config).__name__}")
    for key in config:
        if key not in ("cluster", "task") and key not in KNOWN_EXTRA_KEYS and _near(key):
            raise TFConfigError(key, f"unknown key; did you mean {_near(key)!r}? (TensorFlow ignores {key!r} "
                                     "and trains alone)")
    if "cluster" in config and not isinstance(config["cluster"], dict):
        # TensorFlow 2.21's TFConfigClusterResolver: "TypeError: `cluster` must be a dictionary
        # mapping one or more job names to lists of network addresses" (null, [] and "" too)
        raise TFConfigError("cluster", "expected an object of jobs {\"worker\": [\"host:port\", ...]}, received "
                                       f"{json.dumps(config['cluster'])} (TensorFlow raises TypeError on it)")
    if not config.get("cluster"):
        if strategy in ("multi_worker_mirrored", "parameter_server"):
            raise TFConfigError("cluster", f"missing: {strategy} needs a cluster of tasks")
        if config.get("task"):
            raise TFConfigError("cluster", "missing, but a task is given: the task has no cluster to be in")
        return None
    cluster = config["cluster"]
    _check_cluster(cluster)
    if strategy is None and "ps" in cluster:
        # only ParameterServerStrategy has ps tasks: its rules hold (a chief, the coordinator,
        # in every task's cluster: a worker's TF_CONFIG without it is not the coordinator's)
        strategy = "parameter_server"
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        raise TFConfigError("task", "a cluster needs a task: {\"type\": ..., \"index\": ...}")
    kind = task["type"]
    if kind not in JOBS:
        hint = " (TF1's 'master' is 'chief' in tf.distribute)" if kind == "master" else ""
        raise TFConfigError("task.type", f"unknown task type {kind!r}; expected one of {', '.join(JOBS)}{hint}")
    index = _index(task["index"])
    if kind not in cluster:
        if kind != "evaluator" or strategy == "multi_worker_mirrored":
            raise TFConfigError("task.type", f"{kind!r} is not a job of the cluster ({', '.join(cluster)})")
        if index != 0:
            raise TFConfigError("task.index", f"{index} is out of range for 'evaluator' (1 task)")
    elif index >= len(cluster[kind]):
        raise TFConfigError("task.index", f"{index} is out of range for {kind!r} ({len(cluster[kind])} tasks)")
    if strategy == "parameter_server":
        for job in ("ps", "worker", "chief"):
            if job not in cluster:
                raise TFConfigError(f"cluster.{job}", "missing: parameter_server needs at least one ps, one "
                                                      "worker and a chief (the coordinator)")
    if strategy == "multi_worker_mirrored" and "ps" in cluster:
        raise TFConfigError("cluster.ps", "multi_worker_mirrored has no parameter servers; drop the ps job "
                                          "(or use parameter_server)")
    return Task(kind, index)


def summary(config: dict, task: Optional[Task]) -> str:
    if task is None:
        return "valid: no cluster, local training (one process)"
    jobs = ", ".join(f"{len(v)} {k}" for k, v in config["cluster"].items())
    return f"valid: cluster of {jobs}; this task is {task}"


# -- checking a whole job ----------------------------------------------------------------

def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_set_lines(lines: Iterable[str]) -> list[dict]:
    """TF_CONFIGs of a job, one per line: `tf-config --all` lines or bare objects."""
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            raise TFConfigError(f"line {n}", f"not JSON: {e.msg}") from None
        if isinstance(value, dict) and "TF_CONFIG" in value:
            value = value["TF_CONFIG"]
        out.append(value)
    return out


def check_set(configs: list[Any], strategy: Optional[str] = None) -> str:
    """Check a whole job: each TF_CONFIG alone, then that every task sees the same
    cluster, that every slot of it is taken by exactly one task, and that no address is
    loopback while peers are on other hosts. Returns a one-line summary."""
    if not configs:
        raise TFConfigError("(set)", "no TF_CONFIG given; expected one per line")
    tasks: list[Task] = []
    for n, config in enumerate(configs, 1):
        try:
            task = check(config, strategy)
        except TFConfigError as e:
            raise TFConfigError(f"line {n}: {e.field}", e.message) from None
        if task is None:
            raise TFConfigError(f"line {n}", "has no cluster: a job of several tasks needs one in every TF_CONFIG")
        tasks.append(task)
    first = configs[0]["cluster"]
    for n, config in enumerate(configs[1:], 2):
        if config["cluster"] != first:
            raise TFConfigError(f"line {n}: cluster", "differs from line 1's: every task must see the same cluster "
                                                      "(TensorFlow then hangs, or aborts with 'joining a group "
                                                      "with size N, but that group has size M')")
    training = [t for t in tasks if not (t.type == "evaluator" and "evaluator" not in first)]
    for n, t in enumerate(tasks, 1):
        if tasks.index(t) != n - 1:
            raise TFConfigError(f"line {n}: task", f"{t} is also line {tasks.index(t) + 1}'s task: two processes "
                                                   "would claim one slot")
    wanted = tasks_of(first)
    missing = [str(t) for t in wanted if t not in training]
    if missing:
        raise TFConfigError("(set)", f"no TF_CONFIG for {', '.join(missing)}: the cluster has slots no task takes, "
                                     "and the others wait for them forever")
    hosts = {_address("cluster", a)[0] for addrs in first.values() for a in addrs}
    loop = sorted(h for h in hosts if _is_loopback(h))
    if loop and len(hosts) > len(loop):
        raise TFConfigError("cluster", f"{loop[0]} is a loopback address beside tasks on other hosts: a peer on "
                                       "another host cannot reach it; give every task its host's reachable name")
    return f"valid job: {len(tasks)} tasks, the same cluster in each, every slot taken once"
