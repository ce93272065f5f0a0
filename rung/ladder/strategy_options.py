"""The arguments the chosen strategy should be created with (contract: scenario v1
additions, "Strategy options"), each with its reason.

- mirrored: `cross_device_ops`. Three ways to all-reduce among the devices of one host,
  each predicted on the host's link (the bus bandwidth `comm.Links` gives it):
    NcclAllReduce: a ring, 2(d-1)/d x M through each device's link (Patarasuk & Yuan 2009);
    HierarchicalCopyAllReduce: copies up and down a tree of devices (TensorFlow's scheme
      for the DGX-1), taken as a binary tree: log2(d) reduce stages and log2(d)
      broadcast stages of M each, 2 log2(d) x M;
    ReductionToOneDevice: every device sends M to one device, which sends the sum back:
      2(d-1) x M through that device's link (TensorFlow's fallback).
  NCCL needs GPUs (not CPU devices, not TPUs); the fastest that can run is chosen.
- multi_worker_mirrored: `communication` (NCCL on GPUs, RING on CPUs) and
  `timeout_seconds`: a dead peer fails the step after that long instead of hanging
  the job (what `rung launch` sets, 600 s).
- parameter_server: `ps_tasks`, and a `variable_partitioner` when an embedding table is
  large enough to shard across the PS tasks (the TensorFlow PS guide's
  `MinSizePartitioner(min_shard_bytes=256 << 10, max_shards=NUM_PS)`).
"""

from __future__ import annotations

from rung import units as u
from rung.ladder import codes as C
from rung.ladder.decision import Finding
from rung.model import comm, memory, ps, throughput
from rung.spec.scenario import Scenario

COLLECTIVE_TIMEOUT_SECONDS = 600
MIN_SHARD_BYTES = 256 << 10


def cross_device_seconds(s: Scenario, devices: int, links: comm.Links) -> dict[str, float]:
    """Predicted seconds of each cross_device_ops' all-reduce of the dense gradients
    (`comm.INTRA_HOST_ALGORITHMS`, the functions the step model uses)."""
    m = throughput.exchanged_gradient_bytes(s)
    eff = throughput.intra_host_efficiency(s, links)
    return {comm.CROSS_DEVICE_OPS[a]: float(comm.intra_host_allreduce_seconds(
                m, devices, s.intra_host_bytes_per_second, eff, links.intra_host_hop_seconds, a))
            for a in comm.INTRA_HOST_ALGORITHMS}


def on_gpus(s: Scenario) -> bool:
    """GPUs: a catalog GPU, or a custom device not declared a CPU (`hardware.accelerator`)."""
    return not s.is_tpu and not (s.hardware.device == "custom" and s.hardware.accelerator == "cpu")


def host_algorithm(s: Scenario, devices: int, links: comm.Links) -> str:
    """The intra-host all-reduce MirroredStrategy would use: NCCL's ring on GPUs, else the
    faster of the tree and the one-device reduction (TPUs: their ICI ring)."""
    if on_gpus(s) or s.is_tpu or devices < 2:
        return "ring"
    times = cross_device_seconds(s, devices, links)
    return min(("tree", "reduce_to_one"), key=lambda a: times[comm.CROSS_DEVICE_OPS[a]])


def strategy_options(s: Scenario, verdict: str, devices_per_host: int, ps_tasks: int,
                     links: comm.Links) -> tuple[dict, list[Finding]]:
    if verdict == "mirrored" and devices_per_host > 1:
        times = cross_device_seconds(s, devices_per_host, links)
        usable = {k: v for k, v in times.items() if k != "NcclAllReduce" or on_gpus(s)}
        best = min(usable, key=usable.get)
        others = ", ".join(f"{k} {u.seconds(v)}" for k, v in sorted(times.items(), key=lambda kv: kv[1]) if k != best)
        why = "" if on_gpus(s) else " (NCCL needs GPUs; these devices are not)"
        return ({"cross_device_ops": best},
                [Finding(C.STRATEGY_OPTIONS,
                         f"cross_device_ops={best}: its all-reduce of the gradients across {devices_per_host} "
                         f"devices is predicted at {u.seconds(times[best])} per step, against {others}{why}")])
    if verdict == "multi_worker_mirrored":
        impl = "NCCL" if on_gpus(s) else "RING"
        return ({"communication": impl, "timeout_seconds": COLLECTIVE_TIMEOUT_SECONDS},
                [Finding(C.STRATEGY_OPTIONS,
                         f"communication={impl} ({'GPUs: NCCL' if impl == 'NCCL' else 'no GPUs: gRPC ring'} "
                         f"collectives); timeout_seconds={COLLECTIVE_TIMEOUT_SECONDS}: a dead peer fails the "
                         "step after 10 minutes instead of hanging every worker")])
    if verdict == "parameter_server":
        w = s.workload
        table = w.embedding_params * memory.BYTES_PER_DTYPE[w.param_dtype]
        out = {"ps_tasks": ps_tasks, "variable_partitioner": None}
        if splits_tables(s, ps_tasks):
            out["variable_partitioner"] = (f"MinSizePartitioner(min_shard_bytes={MIN_SHARD_BYTES}, "
                                           f"max_shards={ps_tasks})")
            why = (f"the embedding tables ({u.gib(table)}) are split across the {ps_tasks} PS tasks "
                   "(MinSizePartitioner), so no one task holds or serves a whole table")
        else:
            why = ("no variable is large enough to split" if ps_tasks == 1 or table < ps.EMBEDDING_LARGE_BYTES
                   else "")
        return out, [Finding(C.STRATEGY_OPTIONS, f"ps_tasks={ps_tasks}; {why}")]
    return {}, []


def splits_tables(s, ps_tasks: int) -> bool:
    """Whether the plan splits the embedding tables across its parameter-server tasks (a
    variable_partitioner): with more than one task, for tables from EMBEDDING_LARGE_BYTES."""
    w = s.workload
    return ps_tasks > 1 and w.embedding_params * memory.BYTES_PER_DTYPE[w.param_dtype] >= ps.EMBEDDING_LARGE_BYTES


def sharding(ctx) -> list[dict]:
    """What each device would hold with parameters, gradients and optimizer state split N
    ways (fully sharded, as ZeRO stage 3 / FSDP), activations per device unchanged: for
    the host's devices and for the fewest devices whose share fits."""
    s, r = ctx.s, ctx.replica
    fewest = memory.devices_to_shard_state(r.state_bytes, s.device_memory_bytes)
    counts = sorted({n for n in (s.hardware.devices_per_host, 2, 4, 8, fewest) if n >= 2})
    return [{"devices": n, "bytes_per_device": r.state_bytes / n + r.activation_bytes,
             "fits": r.state_bytes / n + r.activation_bytes <= ctx.usable_bytes} for n in counts]
