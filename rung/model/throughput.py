"""The composer: step time, throughput and memory of one configuration.

Weak scaling: every device keeps the measured per-device batch, so compute per step
stays the measured one-device compute and the global batch grows with devices.
The step is compute + input wait + exposed gradient exchange + the co-location
overhead + straggler wait (docs/model.md names each term and its source). Keras under
tf.distribute reduces gradients in one pack after the backward pass, so by default
nothing of the exchange is hidden (`comm.Links.bucket_bytes`). Throughput is examples
per step / step time x goodput under preemption. The exchange's constants come in as
an explicit `comm.Links`; `rung bench` adds its test bed's terms (`testbed.Testbed`).

`sync_terms` and `ps_terms` take scalars or numpy arrays (for sweeps); `predict_*`
wrap them into a `Prediction` for one configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from rung.model import comm, inputs, memory, preemption, ps, straggler
from rung.model.testbed import Testbed
from rung.spec.scenario import Scenario


@dataclass(frozen=True)
class Prediction:
    """One configuration's predicted numbers, base units; None where not predictable."""

    strategy: str
    hosts: int
    devices_per_host: int
    compute_seconds: float
    input_wait_seconds: float
    intra_host_seconds: float
    inter_host_seconds: float
    sparse_exchange_seconds: float
    ps_exchange_seconds: float
    straggler_seconds: float
    step_seconds: float
    goodput: float
    examples_per_second: Optional[float]
    scaling_efficiency: Optional[float]
    memory_bytes_per_device: float
    fits: bool
    input_capped: bool = False
    ps_tasks: int = 0
    staleness_steps: int = 0
    checkpoint_interval_seconds: Optional[float] = None
    checkpoint_seconds: Optional[float] = None  # one save (synchronous plans)
    sync_seconds: float = 0.0
    sync_batch_norm_seconds: float = 0.0  # synchronized BatchNorm's all-reduces (comm.sync_batch_norm_seconds)
    # multi-worker Keras: the values fit logs, one all-reduce each a step (comm.logged_values_seconds)
    logged_values_seconds: float = 0.0
    # the step's extra under mirrored variables (the workload's strategy_step_extra_seconds)
    mirrored_variables_seconds: float = 0.0
    # waiting for the replica whose batch takes longest (the workload's batch_time_cv: batches
    # of different shapes, `load_imbalance_seconds`)
    load_imbalance_seconds: float = 0.0
    # what the step waits beyond its own terms for the host's input pipeline, which makes the
    # batches of every device on the host (`inputs.host_pipeline_floor`; input_capped)
    input_floor_wait_seconds: float = 0.0
    dispatch_bound: bool = False  # parameter servers: the coordinator's dispatch caps the fleet

    @property
    def devices(self) -> int:
        return self.hosts * self.devices_per_host

    @property
    def communication_seconds(self) -> float:
        return (self.intra_host_seconds + self.inter_host_seconds
                + self.sparse_exchange_seconds + self.ps_exchange_seconds)

    def to_dict(self) -> dict:
        """The contract's `predicted` block (bytes, seconds, examples/s)."""
        return {
            "examples_per_second": self.examples_per_second,
            "scaling_efficiency": self.scaling_efficiency,
            "step_seconds": self.step_seconds if self.fits else None,
            "memory_bytes_per_device": self.memory_bytes_per_device,
        }


# -- quantities of the workload ----------------------------------------------------------

def dense_params(s: Scenario) -> float:
    return s.workload.params - s.workload.embedding_params


def exchanged_gradient_bytes(s: Scenario) -> float:
    """Bytes of dense gradient a synchronous step all-reduces: one per dense parameter, in
    `workload.gradient_dtype` when the step casts them for the exchange, else in the
    variables' dtype."""
    w = s.workload
    return dense_params(s) * memory.BYTES_PER_DTYPE[w.gradient_dtype or w.param_dtype]


def frozen_bytes(s: Scenario) -> float:
    """Weights no optimizer updates (`workload.non_trainable_params`), in the parameter dtype."""
    return s.workload.non_trainable_params * memory.BYTES_PER_DTYPE[s.workload.param_dtype]


def sparse_bytes_per_example(s: Scenario) -> float:
    """Embedding-row gradient bytes per example (0 without embedding tables)."""
    w = s.workload
    if w.embedding_params <= 0:
        return 0.0
    if w.sparse_gradient_bytes_per_example is not None:
        return w.sparse_gradient_bytes_per_example
    return float(ps.DEFAULT_SPARSE_GRADIENT_BYTES_PER_EXAMPLE)


def sparse_gradient_tensors(s: Scenario) -> int:
    """IndexedSlices gradients a step: as measured, else one when the workload has
    embedding rows to exchange (0 without)."""
    if sparse_bytes_per_example(s) <= 0:
        return 0
    n = s.workload.sparse_gradient_tensors
    return 1 if n is None else int(n)


def replica(s: Scenario, per_device_batch=None) -> memory.ReplicaMemory:
    w = s.workload
    return memory.replica_memory(w.params, w.optimizer, w.param_dtype, w.mixed_precision,
                                 w.activation_bytes_per_example,
                                 w.per_device_batch if per_device_batch is None else per_device_batch,
                                 w.optimizer_slot_bytes, w.non_trainable_params)


def one_device_examples_per_second(s: Scenario) -> float:
    """What the measured device does today: per-device batch / measured step."""
    return s.workload.per_device_batch / s.workload.step_seconds


def input_bound(s: Scenario) -> bool:
    return inputs.is_input_bound(s.workload.step_seconds, s.workload.input_wait_seconds)


# -- array-friendly terms ----------------------------------------------------------------

def _scaled_step(s: Scenario, batch):
    """Measured step, compute and wait at `batch` (linear in batch: an assumption when
    batch differs from the measured one; exact when it does not)."""
    w = s.workload
    k = np.asarray(batch, dtype=float) / w.per_device_batch
    return w.step_seconds * k, (w.step_seconds - w.input_wait_seconds) * k, w.input_wait_seconds * k


def _host_pipeline_floor(s: Scenario, batch, devices_per_host, testbed: Optional[Testbed]):
    """The shortest step one host's input pipeline allows its devices
    (`inputs.host_pipeline_floor`, the measured pipeline linear in the batch); 0 when it was
    not measured. Not on the test bed: there the pipeline and the replicas' compute share the
    same cores, which the step measured under them (and the co-location overhead) counts.
    Never more than the measured step a batch: one device's step is what was measured, its
    wait for the pipeline included (a pipeline timed alone slower than that is noise)."""
    w = s.workload
    pipe = None if w.pipeline_seconds_per_batch is None else min(w.pipeline_seconds_per_batch, w.step_seconds)
    if not pipe or testbed is not None:
        return np.zeros_like(np.asarray(devices_per_host, dtype=float))
    return inputs.host_pipeline_floor(pipe * np.asarray(batch, dtype=float) / w.per_device_batch,
                                      devices_per_host)


def _input_floor(s: Scenario, measured, batch, devices_per_host, testbed: Optional[Testbed]):
    """The shortest step (one micro-batch's) the input allows D devices a host: an input-bound
    device's measured step D times (`inputs.pipeline_step_floor`), or the host's pipeline D
    times (`_host_pipeline_floor`), whichever is longer."""
    floor = _host_pipeline_floor(s, batch, devices_per_host, testbed)
    if input_bound(s):
        floor = np.maximum(floor, inputs.pipeline_step_floor(measured, devices_per_host))
    return floor


def _floored(step, floor):
    """The step no shorter than its input floor; whether the floor set it; what it waits for it."""
    return np.maximum(step, floor), floor > step, np.maximum(floor - step, 0.0)


def intra_host_efficiency(s: Scenario, links: comm.Links) -> float:
    """Bus bandwidth's share of the intra-host link's nominal rate (halved when the host's
    GPUs have no peer-to-peer access and NCCL stages through host memory)."""
    eff = links.efficiency(s.intra_host_link)
    return eff if s.hardware.peer_to_peer else eff * links.host_staged_factor


def load_imbalance_seconds(compute_seconds, batch_time_cv, replicas):
    """What a synchronous step waits, beyond the mean, for the replica whose batch takes
    longest: each of the N replicas computes a batch of its own, and batches of different
    shapes (lengths, object counts) take different times, independently, with coefficient of
    variation `batch_time_cv` (`rung profile` measures it on one device: batch against batch,
    net of the same batch timed again). The step lasts as long as the slowest batch: the
    mean plus cv x E[max of N standard normals] (the straggler term's order statistic, David
    & Nagaraja section 2.1), across every replica, those of one host too. 0 for one replica."""
    n = np.asarray(replicas, dtype=float)
    return np.where(n > 1, compute_seconds * batch_time_cv * straggler.expected_max_standard_normal(
        np.maximum(n, 1).astype(int)), 0.0)


def tpu_exchange(s: Scenario, hosts, devices_per_host):
    """The (hosts, devices per host) a synchronous step's gradient exchange runs across. A TPU
    slice of several hosts is one ICI domain (a 2D or 3D torus joins every chip of the slice,
    across its hosts; the data-centre network is not on the path: Cloud TPU system
    architecture), so its exchange is one ring over all H x D chips at the chips' ICI rate:
    (1, H x D). GPUs' hosts all-reduce among their devices and then over the network: (H, D)."""
    h = np.asarray(hosts, dtype=float)
    d = np.asarray(devices_per_host, dtype=float)
    return (np.ones_like(h * d), h * d) if s.is_tpu else (h, d)


def sync_terms(s: Scenario, hosts, devices_per_host, inter_host_bytes_per_second=None,
               batch=None, intra_host_bytes_per_second=None, links: comm.Links = comm.DEFAULT_LINKS,
               testbed: Optional[Testbed] = None) -> dict:
    """Synchronous data parallelism (Mirrored, MultiWorkerMirrored, TPU): every term, per
    optimizer step (one gradient exchange: `gradient_accumulation_steps` micro-batches).
    `testbed`: the extra terms of hosts simulated on one machine (`rung bench`); None for
    real hosts."""
    w = s.workload
    batch = w.per_device_batch if batch is None else batch
    inter_bw = s.inter_host_bytes_per_second if inter_host_bytes_per_second is None else inter_host_bytes_per_second
    intra_bw = s.intra_host_bytes_per_second if intra_host_bytes_per_second is None else intra_host_bytes_per_second
    h = np.asarray(hosts, dtype=float)
    d = np.asarray(devices_per_host, dtype=float)
    # where the gradients go: a TPU slice's hosts share one ICI domain, so its exchange is one
    # ring over every chip on ICI (`tpu_exchange`); GPUs' is hierarchical, hosts over the network
    xh, xd = tpu_exchange(s, h, d)
    k = float(w.gradient_accumulation_steps)
    measured, micro_compute, micro_wait = _scaled_step(s, batch)
    # what a step costs more under the strategy's mirrored variables (measured on one device:
    # `strategy_step_extra_seconds`), once an optimizer step, on every replica
    mirrored = np.where(h * d > 1, w.strategy_step_extra_seconds, 0.0)
    if testbed is not None:  # co-located replicas share the cores
        micro_compute = micro_compute * testbed.compute_factor()
        mirrored = mirrored * testbed.copies()
    compute, wait = k * micro_compute, k * micro_wait
    grad_bytes = exchanged_gradient_bytes(s)
    intra_eff = intra_host_efficiency(s, links)
    intra = np.where(xd > 1, comm.intra_host_allreduce_seconds(grad_bytes, xd, intra_bw, intra_eff,
                                                                links.intra_host_hop_seconds,
                                                                links.intra_host_algorithm), 0.0)
    inter = np.where(xh > 1, comm.inter_host_allreduce_seconds(grad_bytes, xh, inter_bw, links.inter_host_efficiency,
                                                                links.inter_host_hop_seconds), 0.0)
    slowdown = 1.0
    if testbed is not None:  # streaming between test hosts takes CPU from the shared cores
        slowdown = 1.0 / (1.0 - testbed.cpu_share(h))
        inter_latency = np.where(h > 1, 2.0 * (h - 1.0) * links.inter_host_hop_seconds, 0.0)
        inter = (inter - inter_latency) * slowdown + inter_latency
    # only the last micro-batch's backward pass can hide the exchange
    exchange = intra + inter
    exposed = comm.exposed_exchange_seconds(exchange, grad_bytes, links.bucket_bytes,
                                            links.backward_fraction * micro_compute)
    share = np.where(exchange > 0, exposed / np.where(exchange > 0, exchange, 1.0), 0.0)
    intra, inter = intra * share, inter * share
    sparse_bytes = sparse_bytes_per_example(s) * np.asarray(batch, dtype=float) * k
    sp_intra, sp_inter = comm.sparse_allgather_seconds(sparse_bytes, xh, xd, intra_bw, inter_bw, links, intra_eff)
    sparse = np.where((h * d > 1) & (sparse_bytes > 0), np.where(xd > 1, sp_intra, 0.0) + sp_inter * slowdown, 0.0)
    # each sparse gradient's three collectives in sequence, once a step (the k micro-batches'
    # rows go in one exchange, as their bytes do): latency
    sparse = sparse + np.where(h * d > 1, comm.sparse_gather_latency_seconds(
        sparse_gradient_tensors(s), comm.small_allreduce_seconds(xh, xd, links)), 0.0)
    # the fixed cost of a synchronous step: real hosts', or the test bed's own, measured
    # between its hosts (0 inside one test host)
    fixed = links.sync_step_seconds if testbed is None else np.where(h > 1, testbed.sync_seconds, 0.0)
    sync = np.where(h * d > 1, fixed + links.colocation_overhead * compute, 0.0)
    # synchronized BatchNorm: six small all-reduces a layer in every micro-batch, in sequence
    sync_bn = np.where(h * d > 1, k * comm.sync_batch_norm_seconds(
        w.sync_batch_norm_layers, comm.small_allreduce_seconds(xh, xd, links)), 0.0)
    # k independent micro-batches: the sum's spread grows as sqrt(k), not k (its cv / sqrt(k))
    strag = straggler.straggler_seconds(compute, w.step_time_cv / np.sqrt(k), h, w.step_time_distribution)
    imbalance = load_imbalance_seconds(compute, w.batch_time_cv / np.sqrt(k), h * d)
    stream_cpu = 0.0
    if testbed is not None:  # CPU one worker spends streaming its ring bytes between test hosts
        wire = np.where(h > 1, comm.ring_allreduce_seconds(grad_bytes, h, 1.0, 0.0), 0.0)
        stream_cpu = wire * testbed.cpu_seconds_per_byte
        if testbed.straggle > 1.0:  # the step waits for the slowed worker
            strag = strag + testbed.straggler_extra_seconds(compute, stream_cpu)
    # the values fit logs, each all-reduced across the workers every step: a step across
    # hosts is a multi-worker one (a TPU's logs are its first replica's, none reduced)
    logged = 1 if w.logged_values is None else w.logged_values
    logs = np.where((h > 1) & (not s.is_tpu), comm.logged_values_seconds(logged, xh, xd, links), 0.0)
    step = compute + mirrored + wait + intra + inter + sparse + sync + sync_bn + logs + strag + imbalance
    floor = k * _input_floor(s, measured, batch, d, testbed) + 0.0 * step
    step, capped, input_extra = _floored(step, floor)
    rep = replica(s, batch)
    goodput = preemption.sync_goodput(h, s.preemptions_per_host_second, s.fleet.restart_seconds,
                                      preemption.checkpoint_seconds(rep.state_bytes, s.fleet.checkpoint_seconds))
    mem = rep.total_bytes
    eps = h * d * batch * k / step * goodput
    return dict(compute=compute, mirrored=mirrored, wait=wait, intra=intra, inter=inter, sparse=sparse, sync=sync,
                sync_bn=sync_bn, logs=logs, straggler=strag, imbalance=imbalance, step=step, goodput=goodput, examples_per_second=eps,
                memory=mem, fits=mem <= memory.usable_device_bytes(s.device_memory_bytes),
                capped=capped, input_floor=floor, input_extra=input_extra, stream_cpu=stream_cpu)


def ps_worker_memory_bytes(s: Scenario, devices_per_host: int = 1) -> float:
    """A PS worker device holds dense weights and gradients, the looked-up rows and their
    gradients, and activations; variables' optimizer state stays on the PS."""
    w = s.workload
    dense = dense_params(s) * memory.BYTES_PER_DTYPE[w.param_dtype]
    rows = sparse_bytes_per_example(s) * w.per_device_batch
    return 2 * dense + frozen_bytes(s) + 2 * rows + w.activation_bytes_per_example * w.per_device_batch


def trainable_variables(s: Scenario) -> int:
    v = s.workload.trainable_variables
    return ps.DEFAULT_TRAINABLE_VARIABLES if v is None else v


def ps_terms(s: Scenario, workers, devices_per_host, links: comm.Links = comm.DEFAULT_LINKS,
             testbed: Optional[Testbed] = None) -> dict:
    """Asynchronous parameter-server training: a worker's step and the fleet's throughput.

    A worker's step is its compute, input wait, intra-host all-reduce (several devices),
    the pull and push of dense weights and looked-up rows, one remote read and update
    per trainable variable, and the update and read of each metric variable beyond the
    loss's tracker (`ps.metric_seconds`). The coordinator dispatches every step (`Links.dispatch_seconds`
    each, less at steps_per_execution > 1), so the fleet completes at most 1 / dispatch
    steps a second. On a test bed every process shares the cores: a round of N worker
    steps takes the N workers' compute as the co-located replicas of a synchronous run take
    it (`Testbed.compute_factor`: max(1, N x c / cores), N when c is not known), and the
    rest of each step (input, exchange, dispatch) one after the other."""
    w = s.workload
    h = np.asarray(workers, dtype=float)
    d = np.asarray(devices_per_host, dtype=float)
    measured, compute, wait = _scaled_step(s, w.per_device_batch)
    dense_bytes = dense_params(s) * memory.BYTES_PER_DTYPE[w.param_dtype]
    rows = sparse_bytes_per_example(s) * w.per_device_batch * d
    each_way = ps.worker_bytes_each_way(dense_bytes, rows)
    intra = np.where(d > 1, comm.intra_host_allreduce_seconds(dense_bytes, d, s.intra_host_bytes_per_second,
                                                               intra_host_efficiency(s, links),
                                                               links.intra_host_hop_seconds), 0.0)
    # each variable is read from its PS and updated there; its optimizer slots sit beside it
    # and the update runs on that PS (the strategy colocates it with the variable), so a slot
    # adds no remote round trip: measured on 128 variables, momentum (one slot each) took
    # SGD's step and Adam (two) 7-10 ms more, not the 19 and 38 ms remote slots would add
    # (benchmarks/bench_ps_slots.py; Adam's heavier update, ~0.06 ms a variable, left out)
    remote = trainable_variables(s)
    # weights no optimizer updates live on the PS too, and a worker reads them every step
    # (one way; their reads' per-variable cost is left out: with it a frozen ResNet50 base's
    # 318 variables came out 28% too slow, without it 16% and 23% in two benches, docs/model.md)
    exchange = ps.exchange_seconds(each_way, s.inter_host_bytes_per_second, links.inter_host_efficiency,
                                   remote, links.ps_variable_seconds, links.ps_transfer_bytes_per_second,
                                   frozen_bytes(s))
    # the metrics' variables live on the PS too: each step updates and reads them there
    exchange = exchange + ps.metric_seconds(w.metric_variables, links.ps_metric_variable_seconds)
    step = compute + wait + intra + exchange + 0.0 * h
    floor = _input_floor(s, measured, w.per_device_batch, d, testbed) + 0.0 * h
    step, capped, input_extra = _floored(step, floor)
    goodput = preemption.async_goodput(s.preemptions_per_host_second, s.fleet.restart_seconds)
    dispatch = links.dispatch_seconds(w.steps_per_execution)
    if testbed is None:
        # worker steps a second: the workers up (goodput of each one's time) ask for h x goodput
        # / step, and one coordinator dispatches at most 1 / dispatch of them, whoever is up
        asked = h * goodput / step
        rate = np.minimum(asked, 1.0 / dispatch)
        dispatch_bound = asked > 1.0 / dispatch
    else:
        # a round of every worker's step: their compute on the shared cores, the rest in turn
        one_round = (compute * testbed.compute_factor() + h * (step - compute + dispatch)
                     + compute * (testbed.straggle - 1.0))
        rate = h / one_round * goodput
        dispatch_bound = np.zeros_like(step, dtype=bool)
    mem = ps_worker_memory_bytes(s)
    eps = d * w.per_device_batch * rate
    return dict(compute=compute, wait=wait, intra=intra, exchange=exchange, step=step, rate=rate,
                dispatch_bound=dispatch_bound, goodput=goodput, examples_per_second=eps, memory=mem,
                each_way=each_way + frozen_bytes(s),  # what the PS sends a worker a step (frozen weights too)
                fits=mem <= memory.usable_device_bytes(s.device_memory_bytes), capped=capped,
                input_extra=input_extra)


# -- one configuration -------------------------------------------------------------------

def _efficiency(s: Scenario, eps: Optional[float], devices: int) -> Optional[float]:
    if eps is None:
        return None
    return eps / (devices * one_device_examples_per_second(s))


def _scalars(terms: dict) -> dict:
    return {k: (v.item() if isinstance(v, np.ndarray) else v) for k, v in terms.items()}


def predict_sync(s: Scenario, strategy: str, hosts: int, devices_per_host: int,
                 links: comm.Links = comm.DEFAULT_LINKS) -> Prediction:
    t = _scalars(sync_terms(s, hosts, devices_per_host, links=links))
    fits = bool(t["fits"])
    eps = float(t["examples_per_second"]) if fits else None
    save = preemption.checkpoint_seconds(replica(s).state_bytes, s.fleet.checkpoint_seconds)
    return Prediction(
        strategy=strategy, hosts=hosts, devices_per_host=devices_per_host,
        compute_seconds=float(t["compute"]), input_wait_seconds=float(t["wait"]),
        intra_host_seconds=float(t["intra"]), inter_host_seconds=float(t["inter"]),
        sparse_exchange_seconds=float(t["sparse"]), ps_exchange_seconds=0.0,
        straggler_seconds=float(t["straggler"]), step_seconds=float(t["step"]),
        sync_seconds=float(t["sync"]), sync_batch_norm_seconds=float(t["sync_bn"]),
        logged_values_seconds=float(t["logs"]),
        mirrored_variables_seconds=float(t["mirrored"]), load_imbalance_seconds=float(t["imbalance"]),
        goodput=float(t["goodput"]), examples_per_second=eps,
        scaling_efficiency=_efficiency(s, eps, hosts * devices_per_host),
        memory_bytes_per_device=float(t["memory"]), fits=fits, input_capped=bool(t["capped"]),
        input_floor_wait_seconds=float(t["input_extra"]),
        checkpoint_interval_seconds=preemption.sync_checkpoint_interval_seconds(
            hosts, s.preemptions_per_host_second, save),
        checkpoint_seconds=save,
    )


def predict_ps(s: Scenario, workers: int, devices_per_host: int,
               links: comm.Links = comm.DEFAULT_LINKS) -> Prediction:
    t = _scalars(ps_terms(s, workers, devices_per_host, links))
    w = s.workload
    var_bytes = ps.variable_bytes_on_ps(w.params, w.optimizer, w.param_dtype, w.mixed_precision,
                                        w.optimizer_slot_bytes, w.non_trainable_params)
    tasks = max(ps.tasks_for_memory(var_bytes, s.host_memory_bytes),
                ps.tasks_for_bandwidth(workers, float(t["each_way"]), float(t["step"]),
                                       s.inter_host_bytes_per_second, links.inter_host_efficiency))
    fits = bool(t["fits"])
    eps = float(t["examples_per_second"]) if fits else None
    return Prediction(
        strategy="parameter_server", hosts=workers, devices_per_host=devices_per_host,
        compute_seconds=float(t["compute"]), input_wait_seconds=float(t["wait"]),
        intra_host_seconds=float(t["intra"]), inter_host_seconds=0.0, sparse_exchange_seconds=0.0,
        ps_exchange_seconds=float(t["exchange"]), straggler_seconds=0.0,
        step_seconds=float(t["step"]), goodput=float(t["goodput"]), examples_per_second=eps,
        scaling_efficiency=_efficiency(s, eps, workers * devices_per_host),
        memory_bytes_per_device=float(t["memory"]), fits=fits, input_capped=bool(t["capped"]),
        input_floor_wait_seconds=float(t["input_extra"]), ps_tasks=tasks, staleness_steps=ps.staleness_steps(workers),
        dispatch_bound=bool(t["dispatch_bound"]),
    )
