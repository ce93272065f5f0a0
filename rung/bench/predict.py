"""The model's prediction for a bench run, from this machine's measurements: the
measured one-device step, the gradient bytes counted from the real model, and a
transfer microbenchmark on the link in use. Pure: no TensorFlow.

Every process of a local run shares this machine's cores (namespaces isolate the
network, not the CPU): N co-located replicas are assumed to take N times the
one-device compute, since one device already uses every core through TensorFlow's
intra-op threads. Moving the all-reduce's bytes also costs CPU here (gRPC
serialisation, and the kernel forwarding every byte through veth, bridge and tbf),
and all test hosts share the same cores. `cpu_seconds_per_byte` (fitted by
`--calibrate`) is that cost: with N links each streaming at the measured goodput R,
the forwarding keeps a share u = N x R x c / cores of the cores busy, and the
all-reduce reaches (1 - u) of the rate it would reach on idle cores (the
processor-sharing form S / (1 - u): Kleinrock, "Queueing Systems" vol. 2, 1976).
Both are properties of this test bed, not of real clusters, where each host has its
own CPU (so `rung advise` uses only the link efficiency).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rung.model import comm, ps, straggler

# Memory-to-memory bandwidth for MirroredStrategy between logical CPU devices of one
# process (assumption: a copy through RAM; small beside compute for bench models).
LOCAL_COPY_BYTES_PER_SECOND = 5e9
# Beyond this share of the cores the streaming form S / (1 - u) is far outside anything
# calibrated; the prediction holds u here rather than diverge.
MAX_CPU_SHARE = 0.9


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


def predict_step_seconds(b: Basis, strategy: str, replicas: int, straggle: float = 1.0,
                         efficiency: float = 1.0) -> dict:
    """Predicted step (seconds) and its terms for `strategy` over `replicas` co-located replicas.

    `efficiency` scales the measured link goodput (1.0: the all-reduce achieves what a
    bulk TCP transfer does; `--calibrate` fits it)."""
    n = replicas
    compute = b.one_device_step_seconds * n * straggle
    if strategy == "one_device":
        return {"compute": b.one_device_step_seconds, "comm": 0.0, "straggler": 0.0,
                "step": b.one_device_step_seconds, "basis": True}
    if strategy == "mirrored":
        c = float(comm.ring_allreduce_seconds(b.dense_gradient_bytes, n, LOCAL_COPY_BYTES_PER_SECOND, 0.0))
        return {"compute": compute, "comm": c, "straggler": 0.0, "step": compute + c, "basis": False}
    if strategy == "multi_worker_mirrored":
        u = testbed_cpu_share(b, n)
        c = wire_seconds(b, n) / (efficiency * (1.0 - u)) + latency_seconds(b, n)
        s = float(straggler.straggler_seconds(b.one_device_step_seconds * n, b.step_time_cv, n))
        return {"compute": compute, "comm": c, "straggler": s, "step": compute + c + s, "basis": False}
    # parameter servers: each worker pulls weights and rows, pushes gradients; the
    # fleet's step is the mean time between completed steps across n workers
    each_way = b.dense_gradient_bytes + b.sparse_gradient_bytes
    x = float(ps.exchange_seconds(each_way, b.link_bytes_per_second * efficiency, efficiency=1.0))
    worker_steps = [b.one_device_step_seconds * n + x] * n
    if straggle > 1.0:
        worker_steps[-1] = b.one_device_step_seconds * n * straggle + x
    rate = sum(1.0 / t for t in worker_steps)      # completed worker-steps per second
    return {"compute": b.one_device_step_seconds * n, "comm": x, "straggler": 0.0,
            "step": 1.0 / rate, "basis": False}


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
    """Bytes per second each shared core must forward when N links stream at the goodput."""
    return n * b.link_bytes_per_second / max(1, b.cores)


def testbed_cpu_share(b: Basis, n: int) -> float:
    """Share of the shared cores busy forwarding N links' traffic (0 before calibration)."""
    return min(MAX_CPU_SHARE, streaming_bytes_per_core(b, n) * b.cpu_seconds_per_byte)


def relative_error(predicted: Optional[float], measured: Optional[float]) -> Optional[float]:
    if predicted is None or not measured:
        return None
    return (predicted - measured) / measured
