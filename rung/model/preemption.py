"""Goodput under preemption: the share of wall time that advances training.

A synchronous job (gang-scheduled, all-or-nothing) stops whenever any of its H hosts
is preempted (job failure rate H x lambda), restarts (restart_seconds R) and replays the
work since its last checkpoint. With checkpoint cost delta and mean time between
failures M = 1/(H x lambda), Young's optimal interval is tau = sqrt(2 x delta x M)
(Young, "A first order approximation to the optimum checkpoint interval", CACM 1974).
A host lost while the job restarts needs a replacement of its own, so the restart ends
only after R seconds without a failure: M x (e^(R/M) - 1) on average. Goodput is Daly's
tau / (M e^(R/M) (e^((tau + delta)/M) - 1)) (Daly, "A higher order estimate of the
optimum checkpoint interval for restart dumps", FGCS 2006, with failures in restarts),
to first order Young's 1 - delta/tau - (R + tau/2)/M, and checked against
`rung simulate`. It falls towards 0 as R/M grows past 1: a fleet that loses a host more
often than it can restart never trains synchronously.

An asynchronous (parameter-server) job loses only the preempted worker's share while
it restarts: 1 - e^(-lambda x restart) of each worker's time, to first order
lambda x restart. Parameter servers and the coordinator run on non-preemptible CPU
hosts (assumption, stated in the decision).
"""

from __future__ import annotations

import numpy as np

# How fast a job writes a checkpoint (weights + optimizer state) to durable storage.
# Assumption: 1 GB/s, typical of a parallel file system or object store per job.
CHECKPOINT_WRITE_BYTES_PER_SECOND = 1e9


def checkpoint_seconds(state_bytes, measured=None):
    """Time to write one checkpoint of weights and optimizer state: `measured` when the
    scenario gives it (`fleet.checkpoint_seconds`), else the state at the assumed rate.
    The byte count misses a save's fixed cost: a BackupAndRestore save of the 0.4 M
    parameter mlp took 47-74 ms on rung's 2-core test bed, where 4.8 MB at 1 GB/s is 5 ms."""
    if measured is not None:
        return float(measured)
    return state_bytes / CHECKPOINT_WRITE_BYTES_PER_SECOND


def young_interval_seconds(checkpoint_s, mtbf_s):
    """Young's optimal checkpoint interval sqrt(2 x delta x M)."""
    return np.sqrt(2.0 * checkpoint_s * mtbf_s)


def sync_goodput(hosts, preemptions_per_host_second, restart_seconds, checkpoint_s):
    """Goodput of a synchronous job that restarts from its last checkpoint (0..1)."""
    rate = np.asarray(hosts, dtype=float) * preemptions_per_host_second
    if np.all(rate == 0):
        return np.ones_like(rate) if np.ndim(rate) else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        mtbf = np.where(rate > 0, 1.0 / np.where(rate > 0, rate, 1.0), np.inf)
        delta = max(checkpoint_s, 1e-9)
        tau = young_interval_seconds(delta, mtbf)
        # a failure-free stretch (mean M) completes floor(F / (tau + delta)) intervals of
        # tau, tau / (e^((tau + delta)/M) - 1) on average; each stretch then waits for a
        # restart of R seconds without a failure, M (e^(R/M) - 1) on average: a cycle of
        # M e^(R/M) (renewal-reward; Daly 2006)
        cycle = mtbf * np.exp(np.minimum(restart_seconds / mtbf, 700.0))
        g = np.where(rate > 0, tau / (cycle * np.expm1((tau + delta) / mtbf)), 1.0)
    g = np.clip(g, 0.0, 1.0)
    return float(g) if np.ndim(g) == 0 else g


def sync_checkpoint_interval_seconds(hosts, preemptions_per_host_second, checkpoint_s):
    """The interval to configure (BackupAndRestore save_freq), or None without preemption."""
    rate = hosts * preemptions_per_host_second
    if rate <= 0:
        return None
    return float(young_interval_seconds(max(checkpoint_s, 1e-9), 1.0 / rate))


def async_goodput(preemptions_per_host_second, restart_seconds):
    """Goodput of one asynchronous worker: after each preemption it is down until its
    replacement has run restart_seconds without a preemption of its own (as a synchronous
    job's restart, for one host): up 1/lambda of every e^(lambda R) / lambda, e^(-lambda R);
    to first order 1 - lambda R."""
    return float(np.exp(-preemptions_per_host_second * restart_seconds))


def resumed_from_step(killed_after_steps: int, checkpoint_every_steps: int) -> int:
    """The step a synchronous job restarts from: its last checkpoint, taken every
    `checkpoint_every_steps` steps (BackupAndRestore's `save_freq`). The work since is lost."""
    every = max(1, int(checkpoint_every_steps))
    return (int(killed_after_steps) // every) * every


def killed_run_seconds(steps: int, killed_after_steps: int, checkpoint_every_steps: int, step_seconds: float,
                       restart_seconds: float, checkpoint_s: float = 0.0) -> float:
    """Wall time of `steps` synchronous steps with one failure after `killed_after_steps`
    of them: every step once, the steps since the last checkpoint again, every checkpoint
    taken (`checkpoint_s` each: before the failure, and again from the restored step on),
    and the restart (detection, a fresh start, the restore). The one-failure case of
    `sync_goodput`'s accounting (delta per checkpoint, the work since the last checkpoint
    lost, then restart_seconds)."""
    every = max(1, int(checkpoint_every_steps))
    resumed = resumed_from_step(killed_after_steps, every)
    saves = killed_after_steps // every + (steps // every - resumed // every)
    return (steps + killed_after_steps - resumed) * step_seconds + saves * checkpoint_s + restart_seconds
