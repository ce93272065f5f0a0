"""The model's prediction for a bench run, from this machine's measurements: the
measured one-device step, the gradient bytes counted from the real model, and a
transfer microbenchmark on the link in use. Pure: no TensorFlow.

Every process of a local run shares this machine's cores (namespaces isolate the
network, not the CPU): N co-located replicas are assumed to take N times the
one-device compute, since one device already uses every core through TensorFlow's
intra-op threads. Moving the all-reduce's bytes also costs CPU here (gRPC
serialisation, and the kernel forwarding every byte through veth, bridge and tbf),
and all test hosts share the same cores: `cpu_seconds_per_byte` (fitted by
`--calibrate`) charges the 2(N-1) x M bytes a ring moves per step to those cores.
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


@dataclass(frozen=True)
class Basis:
    one_device_step_seconds: float
    dense_gradient_bytes: float
    sparse_gradient_bytes: float
    step_time_cv: float
    link_bytes_per_second: float      # measured TCP goodput on the link in use
    link_rtt_seconds: float           # measured round trip on it
    cpu_seconds_per_byte: float = 0.0  # test-bed CPU cost of moving all-reduce bytes (calibrated)
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
    hop = b.link_rtt_seconds / 2
    bw = b.link_bytes_per_second * efficiency
    if strategy == "mirrored":
        c = float(comm.ring_allreduce_seconds(b.dense_gradient_bytes, n, LOCAL_COPY_BYTES_PER_SECOND, 0.0))
        return {"compute": compute, "comm": c, "straggler": 0.0, "step": compute + c, "basis": False}
    if strategy == "multi_worker_mirrored":
        c = float(comm.ring_allreduce_seconds(b.dense_gradient_bytes, n, bw, hop))
        c += ring_cpu_seconds(b, n)
        if b.sparse_gradient_bytes:
            c += float(comm.ring_allgather_seconds(b.sparse_gradient_bytes, n, bw, hop))
        s = float(straggler.straggler_seconds(b.one_device_step_seconds * n, b.step_time_cv, n))
        return {"compute": compute, "comm": c, "straggler": s, "step": compute + c + s, "basis": False}
    # parameter servers: each worker pulls weights and rows, pushes gradients; the
    # fleet's step is the mean time between completed steps across n workers
    each_way = b.dense_gradient_bytes + b.sparse_gradient_bytes
    x = float(ps.exchange_seconds(each_way, bw, efficiency=1.0))
    worker_steps = [b.one_device_step_seconds * n + x] * n
    if straggle > 1.0:
        worker_steps[-1] = b.one_device_step_seconds * n * straggle + x
    rate = sum(1.0 / t for t in worker_steps)      # completed worker-steps per second
    return {"compute": b.one_device_step_seconds * n, "comm": x, "straggler": 0.0,
            "step": 1.0 / rate, "basis": False}


def ring_wire_seconds(b: Basis, n: int) -> float:
    """Bytes each worker sends in a ring all-reduce over the measured goodput (no efficiency)."""
    return 2 * (n - 1) / n * b.dense_gradient_bytes / b.link_bytes_per_second


def ring_cpu_seconds(b: Basis, n: int) -> float:
    """CPU time, on the shared cores, to move the 2(N-1) x M bytes of one ring all-reduce."""
    return 2 * (n - 1) * b.dense_gradient_bytes * b.cpu_seconds_per_byte / max(1, b.cores)


def relative_error(predicted: Optional[float], measured: Optional[float]) -> Optional[float]:
    if predicted is None or not measured:
        return None
    return (predicted - measured) / measured
