"""What a test bed adds to a step: `rung bench` runs its "hosts" as processes (or
logical devices) on one machine. These are extra named terms of the one model in
`throughput`, and every one is zero for real hosts (`testbed=None`).

- Shared compute: every replica's process shares this machine's cores. One replica's
  step keeps c of the C cores busy (measured: the one-device run's CPU time over its
  steps' wall time, `step_cpu_cores`), so N co-located replicas ask N x c of them and,
  the cores shared as a processor-sharing server, take max(1, N x c / C) times the
  one-device compute (`compute_factor`). Unmeasured, c is every core: N times. On this
  project's 2-core machine a small CNN's step kept 1.5-1.7 cores busy, and with c in
  place of 2 its predictions of 2 multi-worker workers, +11% to +24% over the measured
  step in six benches, came out -3% to +8% in four (docs/results.md). A parameter-server
  run's workers take their compute the same way; the rest of each worker's step runs in
  turn (`throughput.ps_terms`).
- Streaming cost: moving the all-reduce's bytes between test hosts costs CPU here
  (gRPC serialisation, and the kernel forwarding every byte through veth, bridge and
  tbf) on the same shared cores. With N links each streaming at the measured goodput
  R, forwarding keeps a share u = N x R x c / cores busy (c: CPU seconds per byte,
  fitted by `rung bench --calibrate`), and the exchange reaches (1 - u) of the rate it
  would reach on idle cores (the processor-sharing form S / (1 - u): Kleinrock,
  "Queueing Systems" vol. 2, 1976).
- An injected straggler (`rung bench --straggler W:F`): the bench stops the worker's
  process (SIGSTOP) for (F - 1)/F of the time, so everything that process does on the
  CPU takes F times as long: its compute, and its share of the streaming CPU work
  (serialising and moving its ring all-reduce bytes, c per byte). The step waits
  (F - 1) x (compute + streaming CPU) for it.
- The step's extra under mirrored variables (`workload.strategy_step_extra_seconds`, on
  tf-keras a copy of a sparsely updated table: memory traffic): co-located replicas pay
  between one of it (their copies overlap whole) and N (one after the other). Two
  machines gave each end: mirrored:2 of a 1M x 64 Adagrad table took 2 copies' time on
  one, 1.3 on another (19.6 ms a copy, 28.9 ms a step), and two bare copies at once
  took 1.1-2.0 times one copy's time there from run to run, so that measurement does not
  tell which. The term takes the middle, (N + 1) / 2 copies (`copies`).
- A fixed cost of each multi-worker step (`sync_seconds`): what a step between test
  hosts takes beyond its compute and its bytes (TensorFlow's collective launch and the
  workers' rendezvous through gRPC, every process waking on the shared cores), the same
  for a small model as for a large one. Fitted by `rung bench --calibrate` beside the
  other two constants, from runs whose gradients differ in size (`docs/model.md`); 0
  until then. It is the model's own `comm.Links.sync_step_seconds` term, measured for
  the test bed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# Beyond this share of the cores the streaming form S / (1 - u) is far outside anything
# calibrated; the prediction holds u here rather than diverge.
MAX_CPU_SHARE = 0.9


@dataclass(frozen=True)
class Testbed:
    cores: int                        # cores every local process shares
    replicas: int                     # replicas whose compute shares them
    stream_bytes_per_second: float = 0.0  # measured TCP goodput of one link between test hosts
    cpu_seconds_per_byte: float = 0.0     # CPU cost of streaming a byte between test hosts (calibrated)
    straggle: float = 1.0             # one worker's compute slowed by this factor
    sync_seconds: float = 0.0         # fixed cost of each step between test hosts (calibrated)
    compute_cores: Optional[float] = None  # cores one replica's step keeps busy (None: every core)

    def compute_factor(self) -> float:
        """The co-located replicas' compute, in one replica's: max(1, N x c / C) for N
        replicas each keeping c of the C shared cores busy; N when c is not known."""
        if self.compute_cores is None:
            return float(self.replicas)
        c = min(max(self.compute_cores, 0.0), float(self.cores))
        return max(1.0, self.replicas * c / max(1, self.cores))

    def copies(self) -> float:
        """What the co-located replicas' extra under mirrored variables takes, in one
        replica's: the middle of 1 (at once) and N (one after the other)."""
        return (self.replicas + 1) / 2.0

    def streaming_bytes_per_core(self, links: int) -> float:
        """Bytes per second each shared core must forward when `links` links stream at the goodput."""
        return links * self.stream_bytes_per_second / max(1, self.cores)

    def straggler_extra_seconds(self, compute, streaming_cpu_seconds=0.0):
        """What the slowed worker adds to a step: (F - 1) x its CPU work in it."""
        return (compute + streaming_cpu_seconds) * (self.straggle - 1.0)

    def cpu_share(self, links: int) -> float:
        """Share of the shared cores busy forwarding `links` links' traffic (0 before calibration)."""
        return min(MAX_CPU_SHARE, self.streaming_bytes_per_core(links) * self.cpu_seconds_per_byte)
