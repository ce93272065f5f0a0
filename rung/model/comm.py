"""Gradient exchange: all-reduce of dense gradients, all-gather of sparse ones.

Ring all-reduce moves 2(N-1)/N of the message through each participant's link
(Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
workstations", 2009; Thakur, Rabenseifner & Gropp 2005) and takes 2(N-1) hops.
Across hosts the exchange is hierarchical, as NCCL and TensorFlow's collective ops do
it: reduce-scatter inside each host, all-reduce of the shards across hosts (the
host's network carries the whole inter-host ring for all its devices' shards), then
all-gather inside the host. All functions accept numpy arrays for sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Links:
    """The exchange's constants: an explicit value passed into the model (`rung advise
    --calibration FILE` replaces some with measured ones; never module state).

    Bus bandwidth NCCL reaches against the link's nominal rate (`efficiency`):
    nccl-tests all_reduce on DGX A100 reports ~230 GB/s bus bandwidth over NVLink's
    300 GB/s one way (0.77; NVIDIA, "NCCL tests" README and DGX A100 user guide); PCIe
    peer-to-peer reaches ~12 of 16 GB/s (gen3) in nccl-tests (0.75); InfiniBand reaches
    ~0.9 of line rate (nccl-tests on HDR/EDR). Without peer-to-peer access NCCL stages
    every transfer through host memory (its SHM transport): each byte crosses PCIe twice,
    halving the rate (`host_staged_factor`). TPU ICI is taken like NVLink.
    """

    nvlink_efficiency: float = 0.77
    pcie_efficiency: float = 0.75
    ici_efficiency: float = 0.77
    host_staged_factor: float = 0.5
    inter_host_efficiency: float = 0.90
    # latency per ring hop: a few microseconds over NVLink/PCIe (NCCL's LL protocol),
    # tens over a host network (TCP/RoCE); assumptions until calibrated
    intra_host_hop_seconds: float = 5e-6
    inter_host_hop_seconds: float = 25e-6
    # Gradients exchanged in packs of this many bytes as the backward pass produces them
    # (Horovod's tensor fusion, 64 MiB by default; TF's CommunicationOptions
    # bytes_per_pack). 0: one pack after the whole backward pass (Keras' default), no overlap.
    bucket_bytes: float = 0.0
    # how the devices of one host all-reduce (MirroredStrategy's cross_device_ops): "ring"
    # (NcclAllReduce), "tree" (HierarchicalCopyAllReduce), "reduce_to_one" (ReductionToOneDevice)
    intra_host_algorithm: str = "ring"
    # share of a step's compute that is the backward pass: backward costs about twice the
    # forward pass (Kaplan et al. 2020, "Scaling laws", C = 6N per token: 2N forward, 4N back)
    backward_fraction: float = 2.0 / 3.0
    # fixed cost of each synchronous step with more than one replica: launching the
    # collectives and the barrier at the step's end. A test bed measures its own
    # (`Testbed.sync_seconds`), which takes this one's place there.
    sync_step_seconds: float = 0.003
    # share of the compute a step loses once it has more than one replica, to what is not
    # gradient bytes: the host's CPU, memory and PCIe shared by its devices (input
    # pipeline, kernel launches), clocks under a full box's power.
    # The two constants are fitted together on the 29 usable published results
    # (benchmarks/bench_published.py: the pair that minimises the mean absolute error on a
    # 1 ms x 0.005 grid) and tested on 150 published results they were not fitted on
    # (benchmarks/published/holdout.json): 0.077 without the fixed cost, 0.071 with it.
    colocation_overhead: float = 0.065
    # Parameter servers (rung/bench/psbench.py measures all three on the machine in use):
    # Keras fit's cost per scheduled step at the coordinator (ClusterCoordinator.schedule
    # and Keras' per-step work): one coordinator dispatches every worker's steps, so the
    # fleet completes at most 1 / this many steps a second. Measured 10-14 ms (best of
    # five rounds) for a one-layer model on this project's 2-core machine; an assumption
    # for a dedicated coordinator (steps_per_execution > 1 amortises part of it:
    # `dispatch_seconds`).
    ps_dispatch_seconds: float = 0.010
    # that cost per step when compile(steps_per_execution=8) runs 8 steps a dispatch, as a
    # share of it at 1: 0.59-0.65 in six psbench runs (1 and 2 workers) on this project's
    # 2-core machine; psbench measures it (`keras_looped_dispatch_seconds`)
    ps_looped_dispatch_share: float = 0.62
    # one trainable variable's remote read and update per step: measured 0.14-0.15 ms over loopback
    ps_variable_seconds: float = 1.5e-4
    # one metric variable (a mean's total or count) per step under Keras fit on parameter
    # servers, beyond the loss's tracker: updated and read on its PS by every step. psbench's
    # fit with 8 compiled metrics against none, less the same on one device
    # (`keras_metric_variable_seconds`): 0.14-0.22 ms a variable in eleven runs (alone and
    # inside benches) on this project's 2-core machine, 2 workers (a trainable variable's
    # read and update: 0.07-0.09 ms)
    ps_metric_variable_seconds: float = 1.7e-4
    # where the parameter-server figures above come from, as COORDINATOR_BOUND says it
    ps_costs_source: str = ("rung's default, measured on its own 2-core test machine; `rung bench --calibrate` "
                            "with a parameter-server run measures yours")
    # remote variable transfer rate (gRPC tensor transfer); None: the link's
    ps_transfer_bytes_per_second: float | None = None
    # one all-reduce of a few bytes among the replicas (what a synchronized BatchNorm
    # layer launches six times a step: `sync_batch_norm_seconds`); None: the ring's hop
    # latency (`small_allreduce_seconds`). `rung bench` measures it in its own cluster.
    small_allreduce_seconds: float | None = None
    # one value Keras's fit logs, all-reduced across the workers in a multi-worker step
    # (`logged_values_seconds`); None: one small all-reduce. `rung bench` measures it in a fit.
    logged_value_seconds: float | None = None
    source: str = "defaults"

    def dispatch_seconds(self, steps_per_execution: int = 1) -> float:
        """The coordinator's cost per step when every dispatch runs `steps_per_execution`
        steps: a + b / k through k = 2 (which took 0.94-0.97 of one step a dispatch, so
        taken as equal) and k = 8 (`ps_looped_dispatch_share`), never above k = 1's. Keras
        takes another path at k = 1, off that curve. Checked against psbench on this
        project's 2-core machine (2 workers, shares of k = 1): k = 4 measured 0.73-0.75
        (the curve 0.75), k = 16 0.50-0.52 (0.56), k = 32 0.51 (0.53). What stays per step
        at large k is taken as the coordinator's: where every task shares the cores it
        cannot be told from the looped steps' own remote work (so at large k it errs low)."""
        d1, k = self.ps_dispatch_seconds, steps_per_execution
        if k <= 1:
            return d1
        d8 = d1 * self.ps_looped_dispatch_share
        b = max(0.0, d1 - d8) * 8 / 3
        return min(d1, max(0.0, d8 - b / 8) + b / k)

    def efficiency(self, link: str) -> float:
        return {"nvlink": self.nvlink_efficiency, "pcie": self.pcie_efficiency,
                "ici": self.ici_efficiency}.get(link, self.pcie_efficiency)

    def with_(self, **changes) -> "Links":
        return replace(self, **changes)

    def calibrated(self, c) -> "Links":
        """These constants with the ones a calibration (rung.spec.calibration.Calibration)
        measured in place of the defaults."""
        changes = {"source": f"calibration measured {c.measured_at}"}
        if c.inter_host_efficiency is not None:
            changes["inter_host_efficiency"] = c.inter_host_efficiency
        if c.inter_host_hop_seconds is not None:
            changes["inter_host_hop_seconds"] = c.inter_host_hop_seconds
        if c.ps_dispatch_seconds is not None:
            changes["ps_dispatch_seconds"] = c.ps_dispatch_seconds
            on = f" on {c.ps_cores} cores" if c.ps_cores else ""
            changes["ps_costs_source"] = (f"measured by `rung bench`{on} with {c.ps_workers or '?'} local worker(s), "
                                          f"{c.measured_at} (--calibration)")
        if c.ps_looped_dispatch_share is not None:
            changes["ps_looped_dispatch_share"] = min(1.0, c.ps_looped_dispatch_share)
        if c.ps_variable_seconds is not None:
            changes["ps_variable_seconds"] = c.ps_variable_seconds
        if c.ps_metric_variable_seconds is not None:
            changes["ps_metric_variable_seconds"] = c.ps_metric_variable_seconds
        return replace(self, **changes)


DEFAULT_LINKS = Links()


def ring_allreduce_seconds(message_bytes, participants, bytes_per_second, hop_seconds):
    """Ring all-reduce: 2(N-1)/N x M / B + 2(N-1) x latency; 0 for one participant."""
    n = np.asarray(participants, dtype=float)
    return 2.0 * (n - 1.0) / n * message_bytes / bytes_per_second + 2.0 * (n - 1.0) * hop_seconds


def ring_allgather_seconds(bytes_per_participant, participants, bytes_per_second, hop_seconds):
    """Ring all-gather: each participant receives (N-1) x its share, in N-1 hops."""
    n = np.asarray(participants, dtype=float)
    return (n - 1.0) * bytes_per_participant / bytes_per_second + (n - 1.0) * hop_seconds


def tree_allreduce_seconds(message_bytes, participants, bytes_per_second, hop_seconds):
    """A binary tree: log2(N) stages reducing M up and log2(N) broadcasting it down, one
    link at a time (TensorFlow's HierarchicalCopyAllReduce copies along such a tree)."""
    n = np.asarray(participants, dtype=float)
    stages = np.log2(np.maximum(n, 1.0))
    return 2.0 * stages * message_bytes / bytes_per_second + 2.0 * np.ceil(stages) * hop_seconds


def reduce_to_one_allreduce_seconds(message_bytes, participants, bytes_per_second, hop_seconds):
    """Every device sends M to one device, which sends the sum back: 2(N-1) x M through
    that device's link (ReductionToOneDevice)."""
    n = np.asarray(participants, dtype=float)
    return np.where(n > 1, 2.0 * (n - 1.0) * message_bytes / bytes_per_second + 2.0 * hop_seconds, 0.0)


INTRA_HOST_ALGORITHMS = {"ring": ring_allreduce_seconds, "tree": tree_allreduce_seconds,
                         "reduce_to_one": reduce_to_one_allreduce_seconds}
CROSS_DEVICE_OPS = {"ring": "NcclAllReduce", "tree": "HierarchicalCopyAllReduce",
                    "reduce_to_one": "ReductionToOneDevice"}


def intra_host_allreduce_seconds(message_bytes, devices_per_host, intra_host_bytes_per_second,
                                 efficiency, hop_seconds, algorithm: str = "ring"):
    """All-reduce among the devices of one host (ring over NVLink/PCIe by default);
    `intra_host_bytes_per_second` nominal, `efficiency` the bus bandwidth's share of it."""
    return INTRA_HOST_ALGORITHMS[algorithm](message_bytes, devices_per_host,
                                            intra_host_bytes_per_second * efficiency, hop_seconds)


def inter_host_allreduce_seconds(message_bytes, hosts, inter_host_bytes_per_second,
                                 efficiency, hop_seconds):
    """The inter-host stage of a hierarchical all-reduce.

    Each of the host's D devices all-reduces a 1/D shard across the H hosts; the
    shards share the host's network, so the host sends 2(H-1)/H x M in all.
    """
    return ring_allreduce_seconds(message_bytes, hosts,
                                  inter_host_bytes_per_second * efficiency, hop_seconds)


def sparse_allgather_seconds(sparse_bytes_per_replica, hosts, devices_per_host,
                             intra_host_bytes_per_second, inter_host_bytes_per_second,
                             links: Links = DEFAULT_LINKS, intra_efficiency=None):
    """Embedding (IndexedSlices) gradients are all-gathered, not all-reduced
    (tensorflow#53160): every replica receives every other replica's rows, so the cost
    grows with the number of replicas and with the batch.

    Returns (intra_seconds, inter_seconds): each host's network receives the rows of
    the (H-1) x D remote replicas; each device then receives all N-1 others' rows.
    """
    h = np.asarray(hosts, dtype=float)
    d = np.asarray(devices_per_host, dtype=float)
    replicas = h * d
    eff = links.nvlink_efficiency if intra_efficiency is None else intra_efficiency
    intra = ring_allgather_seconds(sparse_bytes_per_replica, replicas,
                                   intra_host_bytes_per_second * eff, links.intra_host_hop_seconds)
    inter = np.where(h > 1, (h - 1.0) * d * sparse_bytes_per_replica
                     / (inter_host_bytes_per_second * links.inter_host_efficiency)
                     + (h - 1.0) * links.inter_host_hop_seconds, 0.0)
    return intra, inter


def exposed_exchange_seconds(exchange_seconds, message_bytes, bucket_bytes, backward_seconds):
    """The part of a gradient exchange the step waits for when gradients are exchanged in
    buckets as the backward pass produces them (Horovod's tensor fusion: Sergeev & Del
    Balso 2018; PyTorch DDP's buckets: Li et al., VLDB 2020; TF CommunicationOptions
    bytes_per_pack).

    Buckets are ready evenly through the backward pass; the first after b/M of it. The
    exchange runs as a pipeline behind them and ends at the later of (a) the last
    bucket's own exchange after the backward pass and (b) the whole exchange started
    when the first bucket was ready: exposed = max(x b/M, x - (1 - b/M) backward).
    Without buckets (b = 0, or one bucket holding everything) the whole exchange is exposed.
    """
    x = np.asarray(exchange_seconds, dtype=float)
    m = np.asarray(message_bytes, dtype=float)
    if bucket_bytes <= 0:
        return x
    share = np.minimum(1.0, bucket_bytes / np.maximum(m, 1.0))
    return np.maximum(x * share, x - (1.0 - share) * np.asarray(backward_seconds, dtype=float))


# Keras's synchronized BatchNormalization (tf-keras, and Keras 3 on TensorFlow:
# `_calculate_mean_and_var`) all-reduces three tensors in the forward pass, the batch's
# sum, squared sum and count, one `ReplicaContext.all_reduce` each, and TensorFlow
# all-reduces the gradient of each in the backward pass. Counted in the train function
# tf-keras 2.21 traces under MultiWorkerMirroredStrategy on two workers: 6 more
# CollectiveReduceV2 ops for each synchronized layer (5 in a step without one).
SYNC_BN_COLLECTIVES_PER_LAYER = 6


def logged_values_seconds(values, hosts, devices_per_host, links: Links):
    """What a multi-worker Keras step waits for the values its fit logs: tf-keras's
    train_function reduces each leaf of train_step's output across the workers with
    `strategy.reduce(SUM)` (`reduce_per_replica`, tf-keras 2.21: reduction "auto" is "sum"
    off TPUs), one all-reduce of a scalar apiece, and TensorFlow runs a worker's collectives
    in order. Each costs what one small all-reduce does (`small_allreduce_seconds`), unless a
    test bed measured a logged value's own cost in a fit (`Links.logged_value_seconds`).
    Measured on this machine, two workers on loopback (tf-keras, 2.3 ms a step alone): a
    step of 8.4 ms with the loss alone, 11.6 with a metric, 15.0 with two outputs' losses,
    19.4 with both, 3.6 ms a value; a chain of small all-reduces outside fit, 1.1 ms each."""
    h = np.asarray(hosts, dtype=float)
    d = np.asarray(devices_per_host, dtype=float)
    one = (np.where(h * d > 1, links.logged_value_seconds, 0.0) if links.logged_value_seconds is not None
           else small_allreduce_seconds(h, d, links))
    return np.asarray(values, dtype=float) * one


def small_allreduce_seconds(hosts, devices_per_host, links: Links):
    """One all-reduce of a few bytes among hosts x devices_per_host replicas: what a step
    waits for it is latency, not bandwidth. Measured (`Links.small_allreduce_seconds`),
    else the hop latency of the hierarchical ring the gradient exchange takes (2(D-1)
    hops inside a host, 2(H-1) between hosts)."""
    h = np.asarray(hosts, dtype=float)
    d = np.asarray(devices_per_host, dtype=float)
    if links.small_allreduce_seconds is not None:
        return np.where(h * d > 1, links.small_allreduce_seconds, 0.0)
    return (ring_allreduce_seconds(0.0, d, 1.0, links.intra_host_hop_seconds)
            + ring_allreduce_seconds(0.0, h, 1.0, links.inter_host_hop_seconds))


# tf.distribute's CollectiveAllReduce all-gathers an IndexedSlices gradient in three
# collectives, one after another (`CollectiveReplicaLauncher.all_reduce_indexed_slices`,
# TensorFlow 2.21): every replica's row count, then its rows and their indices, padded to
# the longest (five CollectiveGatherV2 ops in the graph, two of them in each branch of a
# cond, three run). Multi-worker orders its collectives (an ordering token), so they queue.
SPARSE_GATHER_COLLECTIVES_PER_TENSOR = 3


def sparse_gather_latency_seconds(tensors, allreduce_seconds):
    """The latency sparse gradients add to a synchronous step beyond their bytes: each
    IndexedSlices gradient's three collectives in sequence
    (`SPARSE_GATHER_COLLECTIVES_PER_TENSOR`), each waiting one small collective's latency."""
    return np.asarray(tensors, dtype=float) * SPARSE_GATHER_COLLECTIVES_PER_TENSOR * np.asarray(allreduce_seconds,
                                                                                                 dtype=float)


def sync_batch_norm_seconds(layers, allreduce_seconds):
    """What synchronized BatchNorm layers add to a step: each layer's six small
    all-reduces (`SYNC_BN_COLLECTIVES_PER_LAYER`) run one after another, and the layers
    after it wait for them, so nothing hides them: layers x 6 x one all-reduce's latency."""
    return np.asarray(layers, dtype=float) * SYNC_BN_COLLECTIVES_PER_LAYER * np.asarray(allreduce_seconds, dtype=float)
