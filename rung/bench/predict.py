"""The model's prediction for a bench run: the very functions `rung advise` decides with
(`rung.model.throughput.sync_terms` / `ps_terms`), given this machine's measurements as
their inputs and the test bed's own effects as the model's extra named terms
(`rung.model.testbed.Testbed`: shared cores, CPU spent streaming between test hosts,
an injected straggler), which are zero for real hosts. Pure: no TensorFlow.

The inputs: the measured one-device step, the gradient bytes counted from the real
model, and a transfer microbenchmark on the link in use (its TCP goodput stands for the
link's rate, half its round trip for a ring hop). Logical CPU devices of one process
(MirroredStrategy) exchange through memory (`LOCAL_COPY_BYTES_PER_SECOND`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from rung.model import comm, throughput
from rung.model.testbed import Testbed
from rung.spec.benchresult import PsCosts
from rung.spec.scenario import SCHEMA, Scenario, parse_scenario

# Memory-to-memory bandwidth for MirroredStrategy between logical CPU devices of one
# process (assumption: a copy through RAM; small beside compute for bench models).
LOCAL_COPY_BYTES_PER_SECOND = 5e9


@dataclass(frozen=True)
class Basis:
    one_device_step_seconds: float
    dense_gradient_bytes: float
    sparse_gradient_bytes: float
    step_time_cv: float
    link_bytes_per_second: float      # measured TCP goodput on the link in use
    link_rtt_seconds: float           # measured round trip on it
    cpu_seconds_per_byte: float = 0.0  # test-bed CPU cost of streaming a byte between hosts (calibrated)
    cores: int = 2                     # cores every local process shares
    sync_seconds: float = 0.0          # test-bed fixed cost of a step between test hosts (calibrated)
    variables: Optional[int] = None    # trainable variables of the model
    optimizer: str = "sgd"             # its optimizer's kind (slots per variable)
    non_trainable_params: float = 0.0  # weights no optimizer updates (float32): a PS worker reads them a step
    sync_batch_norm_layers: int = 0    # BatchNormalization(synchronized=True) layers of the model
    logged_values: Optional[int] = None  # the values its fit logs a step (None: the loss alone)
    metric_variables: Optional[int] = None  # its metrics' variables (None: the loss's tracker alone)
    sparse_gradient_tensors: Optional[int] = None  # IndexedSlices gradients a step (None: one, with sparse bytes)
    # one small all-reduce between the run's workers, measured in its cluster (the probe);
    # None: the model's hop latency
    small_allreduce_seconds: Optional[float] = None
    # one value fit logs, all-reduced in a multi-worker step: measured in the run's cluster (the
    # probe) for a model that logs more than its loss; None: one small all-reduce
    logged_value_seconds: Optional[float] = None
    # parameter-server costs rung.bench.psbench measured on this machine, by worker count
    # (absent: the model's defaults)
    ps_costs: Optional[dict[str, Optional[PsCosts]]] = None
    # the model's compile(steps_per_execution=k): steps a parameter-server dispatch runs
    steps_per_execution: int = 1
    # what a step costs more under mirrored variables than without a strategy, timed beside
    # the single-device run as rung profile times it (rung.measure.timing.strategy_extra)
    strategy_step_extra_seconds: float = 0.0
    # the cores the one-device run's steps kept busy (its CPU time over their wall time; None:
    # not measured, every core): the test bed's co-located replicas share them (`Testbed.compute_factor`)
    step_cpu_cores: Optional[float] = None


def scenario_for(b: Basis, strategy: str, replicas: int) -> Scenario:
    """The bench configuration as a scenario: one replica step of the measured model (the
    per-replica batch counted as 1, so examples/s are replica steps/s), `replicas` test
    hosts of one device (multi-worker, PS) or one host of `replicas` logical devices."""
    mirrored = strategy == "mirrored"
    params = (b.dense_gradient_bytes + b.sparse_gradient_bytes) / 4.0  # float32 gradients
    workload = {"params": max(params, 1.0), "embedding_params": b.sparse_gradient_bytes / 4.0,
                "optimizer": b.optimizer, "per_device_batch": 1, "step_seconds": b.one_device_step_seconds,
                "step_time_cv": b.step_time_cv}
    if b.variables:
        workload["trainable_variables"] = b.variables
    if b.steps_per_execution > 1:
        workload["steps_per_execution"] = int(b.steps_per_execution)
    if b.strategy_step_extra_seconds:
        workload["strategy_step_extra_seconds"] = b.strategy_step_extra_seconds
    if b.non_trainable_params:
        workload["non_trainable_params"] = float(b.non_trainable_params)
    if b.sync_batch_norm_layers:
        workload["sync_batch_norm_layers"] = int(b.sync_batch_norm_layers)
    if b.logged_values is not None:
        workload["logged_values"] = int(b.logged_values)
    if b.metric_variables is not None:
        workload["metric_variables"] = int(b.metric_variables)
    if b.sparse_gradient_bytes:
        workload["sparse_gradient_bytes_per_example"] = b.sparse_gradient_bytes
        if b.sparse_gradient_tensors is not None:
            workload["sparse_gradient_tensors"] = int(b.sparse_gradient_tensors)
    return parse_scenario({
        "schema": SCHEMA, "name": f"bench {strategy}:{replicas}", "workload": workload,
        "hardware": {"device": "custom", "accelerator": "cpu", "device_memory_gib": 1e6, "devices_per_host": replicas if mirrored else 1,
                     "intra_host": "pcie", "intra_host_gbps": LOCAL_COPY_BYTES_PER_SECOND * 8 / 1e9,
                     "inter_host_gbps": b.link_bytes_per_second * 8 / 1e9, "max_hosts": max(1, replicas)},
        "goal": {"target_examples_per_second": 1.0},
    }, "bench basis")


def links_for(b: Basis, efficiency: float = 1.0, workers: int = 1) -> comm.Links:
    """The measured link as the model's constants: `efficiency` of the measured goodput
    (1.0: the all-reduce reaches what a bulk TCP transfer does; `--calibrate` fits it),
    a hop of half the measured round trip; logical devices copy through memory; the
    parameter-server costs measured with `workers` workers (Keras fit's per-step cost on the
    cluster less the same model's step on one device, which the basis already holds)."""
    m = (b.ps_costs or {}).get(str(workers))
    ps = {}
    if m is not None:
        dispatch = m.keras_dispatch_seconds
        if m.keras_local_step_seconds:
            # Keras's own work per step is in the measured one-device step already: the dispatch
            # is what a step on the cluster takes beyond it (never below the bare schedule)
            dispatch = max(m.dispatch_seconds, dispatch - m.keras_local_step_seconds)
            looped = m.keras_looped_dispatch_seconds
            if looped and m.looped_steps == 8 and m.keras_local_looped_step_seconds is not None and dispatch > 0:
                # the same at 8 steps a dispatch (less Keras's own looped step), as a share of it
                net = max(0.0, looped - m.keras_local_looped_step_seconds)
                ps["ps_looped_dispatch_share"] = min(1.0, net / dispatch)
        ps.update({"ps_dispatch_seconds": dispatch, "ps_variable_seconds": m.variable_seconds,
                   "ps_transfer_bytes_per_second": m.remote_bytes_per_second,
                   "ps_metric_variable_seconds": m.keras_metric_variable_seconds})
        ps = {k: v for k, v in ps.items() if v is not None}
    if b.small_allreduce_seconds is not None:
        ps["small_allreduce_seconds"] = b.small_allreduce_seconds
    if b.logged_value_seconds is not None:
        ps["logged_value_seconds"] = b.logged_value_seconds
    return comm.DEFAULT_LINKS.with_(pcie_efficiency=1.0, intra_host_hop_seconds=0.0,
                                    inter_host_efficiency=efficiency, inter_host_hop_seconds=b.link_rtt_seconds / 2,
                                    source="measured link of this bench", **ps)


def testbed_for(b: Basis, replicas: int, straggle: float = 1.0) -> Testbed:
    return Testbed(cores=b.cores, replicas=replicas, stream_bytes_per_second=b.link_bytes_per_second,
                   cpu_seconds_per_byte=b.cpu_seconds_per_byte, straggle=straggle, sync_seconds=b.sync_seconds,
                   compute_cores=b.step_cpu_cores)


def with_fixed_cost(b: Basis, measured: Optional[float], shares_cores: bool = True,
                    small_allreduce: Optional[float] = None, logged_value: Optional[float] = None) -> Basis:
    """`b` with a run's fixed cost of a multi-worker step: what the run measured (its probe),
    else 0 on the test bed (until a calibration) and the model's own between machines; and
    the latency of one small all-reduce, and of one logged value, the probe measured, when it did."""
    if measured is None:
        measured = 0.0 if shares_cores else comm.DEFAULT_LINKS.sync_step_seconds
    return replace(b, sync_seconds=measured, small_allreduce_seconds=small_allreduce,
                   logged_value_seconds=logged_value)


def run_links(b: Basis, strategy: str, replicas: int, straggle: float = 1.0, efficiency: float = 1.0,
              option: Optional[str] = None, shares_cores: bool = True) -> tuple[comm.Links, Optional[Testbed]]:
    """The model's constants and the test bed's terms for one run (see `predict_step_seconds`)."""
    links = links_for(b, efficiency, replicas)
    if not shares_cores:
        links = links.with_(sync_step_seconds=b.sync_seconds)
    if strategy == "mirrored" and option:
        from rung.bench.plan import OPTIONS

        links = links.with_(intra_host_algorithm=OPTIONS["mirrored"][option])
    return links, (testbed_for(b, replicas, straggle) if shares_cores else None)


def predict_step_seconds(b: Basis, strategy: str, replicas: int, straggle: float = 1.0,
                         efficiency: float = 1.0, option: Optional[str] = None, shares_cores: bool = True) -> dict:
    """Predicted step (seconds) for `strategy` over `replicas` co-located replicas, and its
    terms (compute, mirrored_variables, comm, sync, sync_batch_norm, straggler). For parameter
    servers the step is the mean time between completed worker steps across the fleet.
    `shares_cores=False`: the workers ran on machines of their own (a Ray cluster's nodes),
    so the model runs without the test bed's terms, as for real hosts, with `b.sync_seconds`
    as the hosts' fixed cost."""
    if strategy == "single_device":
        return {"compute": b.one_device_step_seconds, "mirrored_variables": 0.0, "comm": 0.0, "sync": 0.0,
                "sync_batch_norm": 0.0, "logged_values": 0.0, "straggler": 0.0, "step": b.one_device_step_seconds,
                "basis": True}
    s = scenario_for(b, strategy, replicas)
    links, bed = run_links(b, strategy, replicas, straggle, efficiency, option, shares_cores)
    if strategy == "parameter_server":
        t = throughput.ps_terms(s, replicas, 1, links, bed)
        return {"compute": float(t["compute"]), "mirrored_variables": 0.0, "comm": float(t["exchange"]), "sync": 0.0,
                "sync_batch_norm": 0.0, "logged_values": 0.0, "straggler": 0.0, "step": 1.0 / float(t["rate"]),
                "basis": False}
    hosts, devices = (1, replicas) if strategy == "mirrored" else (replicas, 1)
    t = throughput.sync_terms(s, hosts, devices, links=links, testbed=bed)
    return {"compute": float(t["compute"]), "mirrored_variables": float(t["mirrored"]),
            "comm": float(t["intra"] + t["inter"] + t["sparse"]),
            "sync": float(t["sync"]), "sync_batch_norm": float(t["sync_bn"]), "logged_values": float(t["logs"]),
            # the wait for the slowest worker and for the slowest batch (none measured here: 0)
            "straggler": float(t["straggler"] + t["imbalance"]), "step": float(t["step"]), "basis": False}


def wire_seconds(b: Basis, n: int) -> float:
    """Bytes each worker sends in one multi-worker step over the measured goodput: the ring
    all-reduce's 2(N-1)/N of the dense gradients plus the all-gather of the sparse rows."""
    return (float(comm.ring_allreduce_seconds(b.dense_gradient_bytes, n, b.link_bytes_per_second, 0.0))
            + float(comm.ring_allgather_seconds(b.sparse_gradient_bytes, n, b.link_bytes_per_second, 0.0)))


def latency_seconds(b: Basis, n: int) -> float:
    """Hop latency of the same exchange (half the measured round trip per hop)."""
    hop = b.link_rtt_seconds / 2
    return (float(comm.ring_allreduce_seconds(0.0, n, 1.0, hop))
            + (float(comm.ring_allgather_seconds(0.0, n, 1.0, hop)) if b.sparse_gradient_bytes else 0.0))


def streaming_bytes_per_core(b: Basis, n: int) -> float:
    return testbed_for(b, n).streaming_bytes_per_core(n)


def testbed_cpu_share(b: Basis, n: int) -> float:
    return testbed_for(b, n).cpu_share(n)


def relative_error(predicted: Optional[float], measured: Optional[float]) -> Optional[float]:
    if predicted is None or not measured:
        return None
    return (predicted - measured) / measured
