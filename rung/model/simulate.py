"""A fleet simulated step by step, past what one machine can run: the checks of the
closed forms (expected slowest of N, Young's checkpoint interval, staleness of about
N - 1 steps) where no bench can reach, and what they cannot answer (heavy-tailed step
times). Pure numpy; every draw from one seeded generator.

Synchronous (all-reduce): each step every worker draws its compute time; the step
lasts the slowest worker's compute plus the input wait, the gradient exchange and the
co-location overhead of `throughput.sync_terms` (the same model). Preemptions: the job
fails at N x lambda (a Poisson process in wall time), restarts in `restart_seconds`
and loses the work since its last checkpoint, taken every Young's interval tau of work
at a cost delta (`preemption.checkpoint_seconds`). A failure-free stretch of F seconds
completes floor(F / (tau + delta)) checkpointed intervals; a restart ends only after
`restart_seconds` without a failure (a host lost meanwhile needs its own replacement),
each failed attempt drawn; goodput is the useful work over the wall time across enough
failures (at least `MIN_FAILURES`).

Asynchronous (parameter servers): every worker runs its own steps (compute drawn per
step, plus the PS exchange of `throughput.ps_terms`), is preempted at lambda and is
down until its replacement has run `restart_seconds` without a preemption of its own
(as a synchronous restart), then rejoins. An update's staleness is the number of
other workers' updates applied between its read (the step's start) and its push (the
step's end). The coordinator's dispatch cap (`Links.dispatch_seconds`) is applied
to the simulated rate as in the closed form, not simulated as a queue.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Optional

import numpy as np

from rung import units as u
from rung.model import comm, memory, preemption, ps, throughput
from rung.model.straggler import Distribution
from rung.model.testbed import Testbed
from rung.spec.scenario import Scenario

SCHEMA = "rung/simulation/v1"
# rate x restart past which a synchronous restart is taken never to end: e^8, about 3,000
# attempts a restart on average (drawn, the slowest of 2,000 restarts takes some 23,000
# rounds); the closed form's goodput there is under 4e-4
RESTART_LIMIT = 8.0
MIN_FAILURES = 2000     # failure cycles simulated for goodput (its standard error ~ 1 / sqrt of it)
CHUNK_CELLS = 4_000_000  # workers x steps drawn at once (memory bound)


def _sync(s: Scenario, n: int, steps: int, dist: Distribution, rng, links: comm.Links,
          on_step: Optional[Callable[[int, int], None]] = None, testbed: Optional[Testbed] = None) -> dict:
    d = s.hardware.devices_per_host
    # the injected straggler of a test bed is simulated (one worker's draws x its factor),
    # not added as the closed form's constant
    plain = replace(testbed, straggle=1.0) if testbed is not None else None
    t = {k: float(np.asarray(v)) for k, v in throughput.sync_terms(s, n, d, links=links, testbed=plain).items()
         if k != "capped"}
    stream_cpu = t["stream_cpu"]
    compute = t["compute"]
    # the wait for the slowest batch across the replicas (`load_imbalance_seconds`) is the
    # closed form's: the simulation draws the hosts' step times, not each batch's
    others = (t["mirrored"] + t["wait"] + t["intra"] + t["inter"] + t["sparse"] + t["sync"] + t["sync_bn"] + t["logs"]
              + t["imbalance"])
    # k micro-batches per step: the sum's spread is cv / sqrt(k) of its mean
    dist = Distribution(dist.kind, dist.cv / np.sqrt(s.workload.gradient_accumulation_steps))
    straggle = testbed.straggle if testbed is not None else 1.0
    slowest = np.empty(steps)
    rows = max(1, CHUNK_CELLS // max(1, n))
    for start in range(0, steps, rows):
        k = min(rows, steps - start)
        x = dist.draw(rng, compute, (k, n))
        if straggle != 1.0:  # the slowed worker's draws, and its streaming CPU, x its factor
            x[:, 0] = x[:, 0] + testbed.straggler_extra_seconds(x[:, 0], stream_cpu)
        slowest[start:start + k] = x.max(axis=1)
        if on_step:
            on_step(start + k, steps)
    # an input-bound host delivers its devices' batches no faster than its pipeline (the
    # closed form's floor, `inputs.pipeline_step_floor`), whatever the replicas' draws
    step = np.maximum(slowest + others, t["input_floor"])
    w = s.workload
    rep = throughput.replica(s)
    goodput = _sync_goodput(n * s.preemptions_per_host_second, s.fleet.restart_seconds,
                            preemption.checkpoint_seconds(rep.state_bytes, s.fleet.checkpoint_seconds), rng)
    examples = n * d * w.per_device_batch * w.gradient_accumulation_steps
    return {"examples_per_second": examples / float(step.mean()) * goodput,
            "step_seconds_mean": float(step.mean()), "straggler_seconds_mean": float(slowest.mean() - compute),
            "goodput": goodput}


def _sync_goodput(rate: float, restart: float, delta: float, rng) -> float:
    if rate <= 0:
        return 1.0
    delta = max(delta, 1e-9)
    tau = float(preemption.young_interval_seconds(delta, 1.0 / rate))
    free = rng.exponential(1.0 / rate, size=MIN_FAILURES)   # failure-free stretches of wall time
    useful = np.floor(free / (tau + delta)) * tau
    return float(useful.sum() / (free.sum() + _restarts(rate, restart, rng).sum()))


def _restarts(rate: float, restart: float, rng, size: int = MIN_FAILURES) -> np.ndarray:
    """Wall time of `size` restarts, each over only after `restart` seconds without a
    failure (at `rate`): every attempt a failure interrupts (its time to that failure) is
    drawn. Past rate x restart = RESTART_LIMIT the expected attempts (e^(rate x restart))
    are too many to draw, and a restart never ends in practice: infinite."""
    if rate * restart > RESTART_LIMIT:
        return np.full(size, np.inf)
    total = np.zeros(size)
    pending = np.ones(size, dtype=bool)
    while pending.any():
        gap = rng.exponential(1.0 / rate, size=int(pending.sum()))
        done = gap >= restart
        idx = np.flatnonzero(pending)
        total[idx] += np.where(done, restart, gap)
        pending[idx[done]] = False
    return total


def _async(s: Scenario, n: int, steps: int, dist: Distribution, rng, links: comm.Links) -> dict:
    d = s.hardware.devices_per_host
    t = throughput.ps_terms(s, n, d, links)
    compute = float(np.asarray(t["compute"]))
    fixed = float(np.asarray(t["step"])) - compute    # wait, intra-host and PS exchange
    y = dist.draw(rng, compute, (steps, n)).astype(np.float64) + fixed
    lam, restart = s.preemptions_per_host_second, s.fleet.restart_seconds
    if lam > 0 and restart > 0:   # workers leave (preempted) and rejoin after the restart
        busy = y.sum(axis=0)
        counts = rng.poisson(lam * busy)
        who = np.repeat(np.arange(n), counts)
        at = rng.integers(0, steps, size=who.size)
        # a worker's replacement is up after `restart` seconds without a preemption of its own
        down = _restarts(lam, restart, rng, size=who.size)
        np.add.at(y, (at, who), down)          # the gap delays that step's start (its read)
        gaps = np.zeros_like(y)
        np.add.at(gaps, (at, who), down)
    else:
        gaps = np.zeros_like(y)
    ends = np.cumsum(y, axis=0)
    starts = ends - (y - gaps)                # the read happens after any gap
    flat_ends = np.sort(ends, axis=None)
    # the steady window: after every worker finished its first step, before the first finished its last
    lo, hi = float(ends[0].max()), float(ends[-1].min())
    inside = (starts >= lo) & (ends <= hi)
    e, b = ends[inside], starts[inside]
    stale = np.searchsorted(flat_ends, e, side="left") - np.searchsorted(flat_ends, b, side="right")
    window = hi - lo
    in_window = np.searchsorted(flat_ends, hi, side="right") - np.searchsorted(flat_ends, lo, side="right")
    rate = in_window / window if window > 0 else n / float(y.mean())
    # one coordinator dispatches every step
    rate = min(rate, 1.0 / links.dispatch_seconds(s.workload.steps_per_execution))
    w = s.workload
    return {"examples_per_second": rate * d * w.per_device_batch,
            "staleness_mean": float(stale.mean()) if stale.size else None,
            "staleness_p95": float(np.percentile(stale, 95)) if stale.size else None}


def simulate_sync(s: Scenario, workers: int, steps: int, seed: int = 0, distribution: Optional[str] = None,
                  cv: Optional[float] = None, links: comm.Links = comm.DEFAULT_LINKS,
                  testbed: Optional[Testbed] = None) -> dict:
    """The synchronous fleet alone (the `sync` block), on real hosts or, with `testbed`,
    on `rung bench`'s test bed: what reproduces a bench run from its inputs."""
    dist = Distribution(distribution or s.workload.step_time_distribution,
                        s.workload.step_time_cv if cv is None else cv)
    return _sync(s, workers, steps, dist, np.random.default_rng(seed), links, testbed=testbed)


def closed_form(s: Scenario, n: int, links: comm.Links = comm.DEFAULT_LINKS) -> dict:
    d = s.hardware.devices_per_host
    p = throughput.predict_sync(s, "multi_worker_mirrored", n, d, links)
    q = throughput.predict_ps(s, n, d, links)
    return {"sync": {"examples_per_second": p.examples_per_second, "step_seconds_mean": p.step_seconds,
                     "straggler_seconds_mean": p.straggler_seconds, "goodput": p.goodput},
            "async": {"examples_per_second": q.examples_per_second, "staleness_mean": float(ps.staleness_steps(n)),
                      "staleness_p95": None}}


def memory_notes(s: Scenario) -> list[str]:
    """What the simulation assumes and the device cannot hold: a synchronous replica (the
    whole model, its gradients, optimizer state and activations) or a parameter-server
    worker's share over one device's usable memory (DOES_NOT_FIT in rung advise)."""
    usable = memory.usable_device_bytes(s.device_memory_bytes)
    notes = []
    need = throughput.replica(s).total_bytes
    if need > usable:
        notes.append(f"DOES_NOT_FIT: a synchronous replica needs {u.gib(need)} of {u.gib(usable)} usable on one "
                     f"{s.device.name} device: every replica would run out of memory, and the sync figures "
                     "assume it would not (the model needs sharding, not replication)")
    worker = throughput.ps_worker_memory_bytes(s)
    if worker > usable:
        notes.append(f"DOES_NOT_FIT: a parameter-server worker needs {u.gib(worker)} of {u.gib(usable)} usable: the "
                     "async figures assume it would fit")
    return notes


def simulate(s: Scenario, workers: int, steps: int, seed: int = 0, distribution: Optional[str] = None,
             cv: Optional[float] = None, links: comm.Links = comm.DEFAULT_LINKS,
             on_phase: Optional[Callable[[str], None]] = None,
             on_step: Optional[Callable[[int, int], None]] = None) -> dict:
    """rung/simulation/v1 for `workers` workers (hosts) and `steps` steps each;
    `distribution`: normal | lognormal (default: the scenario's); `on_phase` / `on_step`
    report progress (the command shows them on a terminal)."""
    started = time.perf_counter()
    dist = Distribution(distribution or s.workload.step_time_distribution,
                        s.workload.step_time_cv if cv is None else cv)
    rng = np.random.default_rng(seed)
    if on_phase:
        on_phase("synchronous fleet: steps")
    sync = _sync(s, workers, steps, dist, rng, links, on_step)
    if on_phase:
        on_phase("asynchronous fleet: updates and their staleness")
    out = {"schema": SCHEMA, "workers": workers, "steps": steps, "seed": seed,
           "step_distribution": {"kind": dist.kind, "cv": dist.cv},
           "sync": sync, "async": _async(s, workers, steps, dist, rng, links),
           "closed_form": closed_form(s, workers, links), "notes": memory_notes(s)}
    out["wall_seconds"] = time.perf_counter() - started
    return out
