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

import numpy as np

# Fraction of a link's nominal bandwidth an all-reduce achieves. NCCL's nccl-tests on
# DGX A100 report ~230 GB/s bus bandwidth over 300 GB/s NVLink (0.77); InfiniBand and
# well-tuned Ethernet reach ~0.9 of line rate. Assumptions; `rung bench --calibrate`
# replaces them with this machine's measurement.
INTRA_HOST_EFFICIENCY = 0.80
INTER_HOST_EFFICIENCY = 0.90
# Latency per ring hop (seconds): a few microseconds over NVLink/PCIe (NCCL LL
# protocol), tens over a host network (TCP/RoCE). Assumptions, same calibration.
INTRA_HOST_HOP_SECONDS = 5e-6
INTER_HOST_HOP_SECONDS = 25e-6


def ring_allreduce_seconds(message_bytes, participants, bytes_per_second, hop_seconds):
    """Ring all-reduce: 2(N-1)/N x M / B + 2(N-1) x latency; 0 for one participant."""
    n = np.asarray(participants, dtype=float)
    return 2.0 * (n - 1.0) / n * message_bytes / bytes_per_second + 2.0 * (n - 1.0) * hop_seconds


def ring_allgather_seconds(bytes_per_participant, participants, bytes_per_second, hop_seconds):
    """Ring all-gather: each participant receives (N-1) x its share, in N-1 hops."""
    n = np.asarray(participants, dtype=float)
    return (n - 1.0) * bytes_per_participant / bytes_per_second + (n - 1.0) * hop_seconds


def intra_host_allreduce_seconds(message_bytes, devices_per_host, intra_host_bytes_per_second,
                                 efficiency=None, hop_seconds=None):
    """Reduce-scatter plus all-gather among the devices of one host (ring over NVLink/PCIe)."""
    efficiency = INTRA_HOST_EFFICIENCY if efficiency is None else efficiency
    hop_seconds = INTRA_HOST_HOP_SECONDS if hop_seconds is None else hop_seconds
    return ring_allreduce_seconds(message_bytes, devices_per_host,
                                  intra_host_bytes_per_second * efficiency, hop_seconds)


def inter_host_allreduce_seconds(message_bytes, hosts, inter_host_bytes_per_second,
                                 efficiency=None, hop_seconds=None):
    """The inter-host stage of a hierarchical all-reduce.

    Each of the host's D devices all-reduces a 1/D shard across the H hosts; the
    shards share the host's network, so the host sends 2(H-1)/H x M in all.
    """
    efficiency = INTER_HOST_EFFICIENCY if efficiency is None else efficiency
    hop_seconds = INTER_HOST_HOP_SECONDS if hop_seconds is None else hop_seconds
    return ring_allreduce_seconds(message_bytes, hosts,
                                  inter_host_bytes_per_second * efficiency, hop_seconds)


def sparse_allgather_seconds(sparse_bytes_per_replica, hosts, devices_per_host,
                             intra_host_bytes_per_second, inter_host_bytes_per_second):
    """Embedding (IndexedSlices) gradients are all-gathered, not all-reduced
    (tensorflow#53160): every replica receives every other replica's rows, so the cost
    grows with the number of replicas and with the batch.

    Returns (intra_seconds, inter_seconds): each host's network receives the rows of
    the (H-1) x D remote replicas; each device then receives all N-1 others' rows.
    """
    h = np.asarray(hosts, dtype=float)
    d = np.asarray(devices_per_host, dtype=float)
    replicas = h * d
    intra = ring_allgather_seconds(sparse_bytes_per_replica, replicas,
                                   intra_host_bytes_per_second * INTRA_HOST_EFFICIENCY,
                                   INTRA_HOST_HOP_SECONDS)  # module values read at call time
    inter = np.where(h > 1, (h - 1.0) * d * sparse_bytes_per_replica
                     / (inter_host_bytes_per_second * INTER_HOST_EFFICIENCY)
                     + (h - 1.0) * INTER_HOST_HOP_SECONDS, 0.0)
    return intra, inter


def calibrate(inter_host_efficiency=None, inter_host_hop_seconds=None) -> None:
    """Replace the inter-host link constants with measured ones (`rung bench --calibrate`
    stores them; `rung advise --calibration FILE` applies them for that process)."""
    global INTER_HOST_EFFICIENCY, INTER_HOST_HOP_SECONDS
    if inter_host_efficiency is not None:
        INTER_HOST_EFFICIENCY = float(inter_host_efficiency)
    if inter_host_hop_seconds is not None:
        INTER_HOST_HOP_SECONDS = float(inter_host_hop_seconds)
