"""`rung bench --engine ray`: the same bench tasks (`rung.bench.task.run`), placed on a Ray
cluster instead of local processes, so a team can take the honest test — one host
against N hosts — to its own fleet. Each run returns the record a local run returns,
and bench puts the same prediction beside it.

- single_device, mirrored: one Ray task.
- multi_worker_mirrored: Ray Train's TensorflowTrainer, one worker per node where the
  cluster has them (SPREAD); it sets TF_CONFIG; rank 0's record comes back through a
  small actor.
- parameter_server: one actor per worker and ps task hosting a tf.distribute.Server
  (pinned to a node, on a port picked there), and the chief as a Ray task.

rung is shipped to the cluster's workers with the job (`py_modules`), and the workload
file's text travels in the task's configuration, so the nodes need neither.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from rung.bench.plan import keras_for
from rung.errors import RunError

CONNECT_TIMEOUT_SECONDS = 5.0


@dataclass
class RayOutcome:
    """What `rung.bench.run.execute` returns, for the fields bench reads."""

    result: dict
    wall_seconds: float
    tasks_started: int
    notes: list[str] = field(default_factory=list)
    recovery: dict = field(default_factory=dict)
    # the address of the Ray node each worker ran on, by worker index: where Ray placed
    # them, read in the tasks (not assumed from the cluster's size)
    worker_nodes: list[str] = field(default_factory=list)
    # the address of the node each parameter-server task ran on, by task index
    ps_nodes: list[str] = field(default_factory=list)


def _reachable(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_SECONDS):
            return True
    except (OSError, ValueError):
        return False


class RayCluster:
    """A connection to a Ray cluster (or a local instance started here), for a bench."""

    def __init__(self, address: str | None) -> None:
        self.address = address
        self.ray = None

    def __enter__(self) -> "RayCluster":
        import rung

        if self.address and not _reachable(self.address):
            raise RunError(f"no Ray cluster answers at {self.address} (within {CONNECT_TIMEOUT_SECONDS:g} s)")
        import ray

        env = {"TF_CPP_MIN_LOG_LEVEL": "2"}
        runtime_env = {"env_vars": env, "py_modules": [str(Path(rung.__file__).parent)]}
        if self.address:
            ray.init(address=self.address, runtime_env=runtime_env, log_to_driver=False)
        else:
            ray.init(address="local", num_cpus=max(os.cpu_count() or 1, 6), runtime_env=runtime_env,
                     include_dashboard=False,
                     log_to_driver=False)
        self.ray = ray
        return self

    def __exit__(self, *exc) -> None:
        if self.ray is not None:
            self.ray.shutdown()

    @functools.cached_property
    def kernels(self) -> int:
        """Machines under the cluster's live nodes: the distinct Linux boot ids they report.
        Ray nodes in network namespaces of one machine (rung's shaped-link tests) share a
        kernel, and so its cores; nodes on separate machines each have their own."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as Pin

        def boot_id() -> str:
            try:
                with open("/proc/sys/kernel/random/boot_id") as f:
                    return f.read().strip()
            except OSError:  # not Linux: the node's own id stands for its machine
                return ray.get_runtime_context().get_node_id()

        ray = self.ray
        ids = [ray.get(ray.remote(boot_id).options(num_cpus=0, scheduling_strategy=Pin(n, soft=False)).remote())
               for n in live_nodes(ray)]
        return len(set(ids))


def live_nodes(ray) -> list[str]:
    """The ids of the cluster's live nodes, in Ray's order (the first is where a
    parameter-server run's chief goes, and the link is measured first -> last)."""
    return [n["NodeID"] for n in ray.nodes() if n["Alive"]]


def _with_source(cfg: dict) -> dict:
    # (and the folder the bench runs in, where the workload's relative paths start)
    return dict(cfg, workload_source=Path(cfg["workload"]).read_text(), workload_name=Path(cfg["workload"]).name,
                cwd=os.getcwd())


class TaskFailed(Exception):
    """A bench task's failure on a Ray worker, in the line a local run's error file holds
    (`rung.bench.task.error_line`: what to change first, where rung knows the failure)."""


def _run_task(cfg: dict) -> dict:
    """In a Ray worker: write the workload where the task can import it, run the bench task."""
    import shutil
    import sys
    import tempfile

    from rung.bench.orphans import die_with_parent

    die_with_parent("raylet")  # with the node's raylet, whatever this process is doing then

    os.environ.update(cfg.pop("env", {}))  # the Keras choice, before TensorFlow is imported
    cwd = cfg.pop("cwd", None)
    if cwd and os.path.isdir(cwd):
        # where the bench runs, as its local tasks do: a workload that reads a file by a
        # relative path (open("vocab.txt")) failed in Ray's own folder, FileNotFoundError.
        # A node that does not see that folder stays in Ray's (the file must be there, as
        # modules beside the workload must)
        os.chdir(cwd)
    beside = os.path.dirname(os.path.abspath(cfg["workload"]))
    if os.path.isdir(beside) and beside not in sys.path:
        # the modules beside the workload, where this node sees its folder (one machine, a
        # shared file system); elsewhere they must be installed, as TensorFlow is
        sys.path.append(beside)
    folder = tempfile.mkdtemp(prefix="rung-bench-")
    try:
        path = os.path.join(folder, cfg.pop("workload_name"))
        with open(path, "w") as f:
            f.write(cfg.pop("workload_source"))
        from rung.bench.task import error_line, run

        try:
            return run(dict(cfg, workload=path, progress=None, result=None, error=None))
        except Exception as e:  # noqa: BLE001 - said as a local run says it, of the user's file
            raise TaskFailed(error_line(e).replace(path, cfg["workload"])) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the task's copy of the workload, not left in /tmp


def execute_on_ray(cluster: RayCluster, strategy: str, replicas: int, cfg: dict, ps_tasks: int) -> RayOutcome:
    try:
        return _execute(cluster, strategy, replicas, cfg, ps_tasks)
    except RunError:
        raise
    except Exception as e:  # noqa: BLE001 - a task failed on the cluster: a failed run, said in one line
        from rung.bench.run import BenchError
        from rung.measure.workload import one_line

        # the task's own line (RayTaskError's cause); a failure outside it (Ray Train's, the
        # cluster's) as one line of its own. A BenchError, as a local run's: this run fails
        # alone and the bench goes on (before, any failed run on Ray ended the bench)
        cause = getattr(e, "cause", None)
        why = str(cause) if isinstance(cause, TaskFailed) else f"{type(e).__name__}: {one_line(e)}"
        raise BenchError(f"{strategy}:{replicas} on Ray failed: {why}") from None


def _execute(cluster: RayCluster, strategy: str, replicas: int, cfg: dict, ps_tasks: int) -> RayOutcome:
    ray = cluster.ray
    env = {"TF_USE_LEGACY_KERAS": "1"} if (cfg.get("keras") or keras_for(strategy, cfg.get("model"))) == "tf_keras" \
        else {}
    t0 = time.perf_counter()
    job = _with_source(dict(cfg, role="worker" if strategy != "parameter_server" else "chief", index=0, env=env))
    if strategy in ("single_device", "mirrored"):
        # max_calls=1: a fresh process per run (logical devices are fixed once TensorFlow starts)
        task = ray.remote(max_calls=1)(_run_task).options(num_cpus=1, runtime_env={"env_vars": env})
        result = ray.get(task.remote(job))
        return RayOutcome(result, time.perf_counter() - t0, 1)
    if strategy == "multi_worker_mirrored":
        result, nodes = _multi_worker(ray, replicas, job, env)
        return RayOutcome(result, time.perf_counter() - t0, replicas, worker_nodes=nodes)
    result, nodes, ps_nodes = _parameter_servers(ray, replicas, ps_tasks, job, env)
    return RayOutcome(result, time.perf_counter() - t0, 1 + replicas + ps_tasks, worker_nodes=nodes,
                      ps_nodes=ps_nodes)


def _train_loop(config):
    """One Ray Train worker: the bench task, with TF_CONFIG set by TensorflowTrainer."""
    import ray
    import ray.train

    rank = ray.train.get_context().get_world_rank()
    ray.get(config["sink"].place.remote(rank, ray.util.get_node_ip_address()))
    result = _run_task(dict(config["job"], index=rank))
    if rank == 0:
        ray.get(config["sink"].put.remote(result))


def _fit_multi_worker(workers: int, job: dict, sink) -> None:
    """Runs as a Ray task whose environment has the Keras choice: the trainer's workers
    inherit it (ray.train.tensorflow touches tf.keras as soon as a worker imports it)."""
    from ray.train import ScalingConfig
    from ray.train.tensorflow import TensorflowTrainer

    trainer = TensorflowTrainer(_train_loop, train_loop_config={"job": job, "sink": sink},
                                scaling_config=ScalingConfig(num_workers=workers, placement_strategy="SPREAD"))
    outcome = trainer.fit()
    if outcome.error:
        raise outcome.error


def _multi_worker(ray, workers: int, job: dict, env: dict) -> tuple[dict, list[str]]:
    """Rank 0's result, and the address of the node each worker ran on."""

    @ray.remote(num_cpus=0)
    class Sink:
        def __init__(self):
            self.value, self.nodes = None, {}

        def put(self, value):
            self.value = value

        def place(self, rank, node):
            self.nodes[rank] = node  # a restarted group's worker writes over its predecessor

        def get(self):
            return self.value, [self.nodes[r] for r in sorted(self.nodes)]

    sink = Sink.remote()
    fit = ray.remote(_fit_multi_worker).options(num_cpus=0, runtime_env={"env_vars": env})
    ray.get(fit.remote(workers, job, sink))
    return ray.get(sink.get.remote())


def _parameter_servers(ray, workers: int, ps_tasks: int, job: dict, env: dict) -> tuple[dict, list[str], list[str]]:
    """The chief's result, and the address of the node each worker and each ps task ran on."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as Pin

    @ray.remote(num_cpus=0)
    def place():
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address(), port

    @ray.remote(num_cpus=0.5)
    class Server:
        def __init__(self, cluster, kind, index):
            from rung.bench.orphans import die_with_parent

            die_with_parent("raylet")
            os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})
            import tensorflow as tf

            self.server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=kind, task_index=index,
                                               protocol="grpc", start=True)

        def ready(self):
            return True

    # the chief on the first live node (`coordinator_node`, where psbench measures), then the
    # workers and ps tasks round the nodes
    nodes = live_nodes(ray)
    names = [("chief", 0)] + [("worker", i) for i in range(workers)] + [("ps", i) for i in range(ps_tasks)]
    where = {name: ray.get(place.options(scheduling_strategy=Pin(nodes[k % len(nodes)], soft=False)).remote())
             for k, name in enumerate(names)}
    cluster = {kind: [f"{where[(k2, i)][1]}:{where[(k2, i)][2]}" for k2, i in names if k2 == kind]
               for kind in ("chief", "worker", "ps")}
    servers = [Server.options(scheduling_strategy=Pin(where[name][0], soft=False), runtime_env={"env_vars": env})
               .remote(cluster, *name) for name in names if name[0] != "chief"]
    ray.get([s.ready.remote() for s in servers])
    chief_env = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}}))
    chief = ray.remote(max_calls=1)(_run_task).options(num_cpus=1, runtime_env={"env_vars": chief_env},
                                          scheduling_strategy=Pin(where[("chief", 0)][0], soft=False))
    try:
        return ray.get(chief.remote(job)), [where[("worker", i)][1] for i in range(workers)], \
            [where[("ps", i)][1] for i in range(ps_tasks)]
    finally:
        for s in servers:
            ray.kill(s)


def coordinator_node(ray) -> str:
    """The node a parameter-server run's chief (its coordinator) is placed on: the first
    live node (`_parameter_servers`)."""
    return live_nodes(ray)[0]


def _psbench_on_node(workers: int, timeout: float) -> dict:
    """In a Ray task: `python -m rung.bench.psbench WORKERS` on this node, as a local bench
    runs it (its servers over this node's loopback). Its exit code and output, and where
    it ran; the process ends with this task's (the kernel's parent-death signal)."""
    import subprocess
    import sys
    import tempfile

    import ray

    from rung.bench.orphans import die_with_parent, killed_with_parent

    die_with_parent("raylet")
    # rung as this worker imports it (shipped with the job: py_modules), for the subprocess
    path = os.pathsep.join(p for p in sys.path if p)
    out: dict = {"node": ray.util.get_node_ip_address(), "returncode": None, "stdout": "", "stderr": ""}
    with tempfile.TemporaryDirectory(prefix="rung-psbench-") as scratch:
        try:
            r = subprocess.run([sys.executable, "-m", "rung.bench.psbench", str(workers)], capture_output=True,
                               text=True, timeout=timeout, preexec_fn=killed_with_parent(),
                               env=dict(os.environ, TMPDIR=scratch, PYTHONPATH=path))
            out.update(returncode=r.returncode, stdout=r.stdout, stderr=r.stderr[-4000:])
        except subprocess.TimeoutExpired:
            pass  # returncode None: no result in time
    return out


def psbench_on_ray(cluster: RayCluster, workers: int, timeout: float) -> tuple[str, str]:
    """psbench's one line of costs, measured on the node a parameter-server run's coordinator
    runs on (so a cluster's own machines, not the driver's), and that node's address.
    Raises what `subprocess.run(check=True)` raises for a failed or late psbench."""
    import subprocess

    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as Pin

    ray = cluster.ray
    task = ray.remote(max_calls=1)(_psbench_on_node).options(
        num_cpus=1, scheduling_strategy=Pin(coordinator_node(ray), soft=False))
    cmd = ["python", "-m", "rung.bench.psbench", str(workers)]
    try:
        out = ray.get(task.remote(workers, timeout))
    except Exception as e:  # noqa: BLE001 - the task itself failed (its node, Ray): psbench failed, said
        from rung.measure.workload import one_line

        raise subprocess.CalledProcessError(-1, cmd, "", f"the Ray task failed: {type(e).__name__}: {one_line(e)}") \
            from None
    if out["returncode"] is None:
        raise subprocess.TimeoutExpired(cmd, timeout)
    if out["returncode"] != 0:
        raise subprocess.CalledProcessError(out["returncode"], cmd, out["stdout"], out["stderr"])
    return out["stdout"], out["node"]


def measure_link(cluster: RayCluster, nbytes: int) -> dict:
    """The link between two Ray nodes (the first and the last), or loopback on a lone node:
    the same ping-pong and bulk transfer as bench's local link measurement."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as Pin

    from rung.bench import linkbench

    ray = cluster.ray
    nodes = live_nodes(ray)

    def port_here():
        with socket.socket() as s:
            s.bind(("", 0))
            return ray.util.get_node_ip_address(), s.getsockname()[1]

    ip, port = ray.get(ray.remote(port_here).options(num_cpus=0, scheduling_strategy=Pin(nodes[-1], soft=False)).remote())
    server = ray.remote(linkbench.serve).options(num_cpus=0, scheduling_strategy=Pin(nodes[-1], soft=False)).remote(port)
    m = ray.get(ray.remote(linkbench.probe).options(num_cpus=0, scheduling_strategy=Pin(nodes[0], soft=False))
                .remote(ip if len(nodes) > 1 else "127.0.0.1", port, nbytes))
    ray.get(server)
    m["where"] = f"Ray nodes ({len(nodes)}): first -> last" if len(nodes) > 1 else "one Ray node: loopback"
    return m
