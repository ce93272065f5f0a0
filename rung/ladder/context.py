"""What the ladder knows about a scenario before it walks: the measured device, the
replica's memory, the triggers for each rung, and every rung's best configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from rung import units as u
from rung.model import comm, inputs, memory, ps, throughput
from rung.model.throughput import Prediction
from rung.spec.scenario import Scenario

# When no rung meets the target, a higher rung must beat the best lower one by this
# factor to be worth the complexity it adds (assumption; below it, stay lower).
MIN_GAIN_TO_CLIMB = 1.10
# When no rung meets the target, several synchronous hosts must give at least this share
# of hosts x one host's throughput to be worth their network, gang scheduling and
# stragglers. The seed's honest test of multi-worker: "if N hosts give you well under N
# times the throughput, you have bought complexity, not speed"; eight hosts that scale
# like two (a quarter) are the case rung exists to catch. A third is the line
# (assumption): 32 hosts at 40% of linear, 12.7x one host, still climb.
MIN_HOST_SCALING_TO_CLIMB = 1 / 3
# A synchronous step that waits this share of itself on the slowest worker has a
# straggler problem worth naming.
STRAGGLER_SIGNIFICANT_FRACTION = 0.10
# A synchronous job that loses this share of its time to restarts, stragglers and
# all-gathering embedding rows is "too costly" when an asynchronous one meets the goal
# (the seed: climb to parameter servers when the failure model or embedding-dominated
# variables make synchronous steps too costly).
SYNC_WASTE_LIMIT = 0.20
# Below this share of linear scaling across hosts, scaling is not close to linear
# (the contract's LINEAR_SCALING_ASSUMED threshold).
LINEAR_SCALING_FRACTION = 0.80


# what several hosts cost beyond their price, by rung (HOSTS_DO_NOT_PAY's words)
_COMPLEXITY = {"multi_worker_mirrored": "a network, gang scheduling, stragglers",
               "parameter_server": "a network, parameter-server tasks, stale gradients"}


@dataclass
class Candidate:
    verdict: str
    prediction: Optional[Prediction]
    allowed: bool = True
    # short of the target, whether its hosts give enough for their number
    # (MIN_HOST_SCALING_TO_CLIMB); a candidate that does not pay is not climbed to. The
    # multi-worker rung is weighed so, and parameter servers climbed to for the fleet
    # (preemption, stragglers), not for a model dominated by embedding tables (below)
    pays: bool = True
    # its fastest count when that does not pay (the candidate then holds the fastest count
    # that does, or, when none does, stays on the fastest with pays False)
    unpaid: Optional[Prediction] = None

    @property
    def eps(self) -> float:
        p = self.prediction
        return p.examples_per_second if p is not None and p.examples_per_second is not None else 0.0


def pick_count(eps: np.ndarray, counts: np.ndarray, target: float) -> int:
    """The fewest hosts (workers) that meet the target, else the count with most throughput."""
    meets = np.nonzero(eps >= target)[0]
    if meets.size:
        return int(counts[meets[0]])
    return int(counts[int(np.argmax(eps))])


def _runnable_eps(terms: dict, counts: np.ndarray) -> np.ndarray:
    """Throughput per count, 0 where a replica does not fit (so the pick falls on the fewest)."""
    eps = np.broadcast_to(terms["examples_per_second"], counts.shape)
    return np.where(terms["fits"], eps, 0.0)


def tpu_slice_counts(s: Scenario, top: int) -> np.ndarray:
    """The host counts a TPU plan may take: the slices the generation offers (`slice_hosts`)
    up to `top` hosts; every count for a device without a list."""
    offered = [h for h in s.device.slice_hosts if h <= top]
    return np.array(offered or [1]) if s.device.slice_hosts else np.arange(1, top + 1)


class Context:
    def __init__(self, s: Scenario, links: comm.Links = comm.DEFAULT_LINKS) -> None:
        self.s = s
        from rung.ladder.strategy_options import host_algorithm

        # devices without NCCL all-reduce another way, which the model then predicts
        self.links = links.with_(intra_host_algorithm=host_algorithm(s, s.hardware.devices_per_host, links))
        w, h = s.workload, s.hardware
        self.target = s.goal.target_examples_per_second
        self.devices_per_host = h.devices_per_host
        self.max_hosts = h.max_hosts
        self.one_device_eps = throughput.one_device_examples_per_second(s)
        self.replica = throughput.replica(s)
        self.usable_bytes = memory.usable_device_bytes(s.device_memory_bytes)
        self.fits = self.replica.total_bytes <= self.usable_bytes
        self.wait_fraction = inputs.input_wait_fraction(w.step_seconds, w.input_wait_seconds)
        self.input_bound = throughput.input_bound(s)
        self.tpu = s.is_tpu
        self.embedding_dominated = ps.embedding_dominated(w.params, w.embedding_params, w.param_dtype)
        self.preemptible = s.preemptible
        self.reproducible = s.goal.reproducible
        self.ps_worker_fits = throughput.ps_worker_memory_bytes(s) <= self.usable_bytes
        given = s.goal.min_host_scaling
        self.min_host_scaling = MIN_HOST_SCALING_TO_CLIMB if given is None else given
        self._line_set_by = " as goal.min_host_scaling asks" if given is not None else (
            ", rung's line: goal.min_host_scaling sets another")
        self._evaluate()

    # -- every rung's best configuration ----------------------------------------------
    def _evaluate(self) -> None:
        s, d, top, L = self.s, self.devices_per_host, self.max_hosts, self.links
        self.single = Candidate("single_device", throughput.predict_sync(s, "single_device", 1, 1, L))
        self.mirrored = Candidate("mirrored", throughput.predict_sync(s, "mirrored", 1, d, L), allowed=d > 1)
        self.mwms = Candidate("multi_worker_mirrored", None, allowed=top >= 2)
        if top >= 2:
            hosts = np.arange(2, top + 1)
            eps = _runnable_eps(throughput.sync_terms(s, hosts, d, links=L), hosts)
            mwms_eps = hosts, eps
            self.mwms.prediction = throughput.predict_sync(
                s, "multi_worker_mirrored", pick_count(eps, hosts, self.target), d, L)
        workers = np.arange(1, top + 1)
        ps_eps = _runnable_eps(throughput.ps_terms(s, workers, d, L), workers)
        self.ps = Candidate("parameter_server", throughput.predict_ps(s, pick_count(ps_eps, workers, self.target), d, L))
        slices = tpu_slice_counts(s, top)
        tpu_eps = _runnable_eps(throughput.sync_terms(s, slices, d, links=L), slices)
        self.tpu_rung = Candidate("tpu", throughput.predict_sync(s, "tpu", pick_count(tpu_eps, slices, self.target), d, L))

        p = self.mwms.prediction
        self.stragglers = bool(p and p.straggler_seconds >= STRAGGLER_SIGNIFICANT_FRACTION * p.step_seconds)
        self.async_triggers = [code for code, on in (
            ("PREEMPTIBLE_WORKERS", self.preemptible),
            ("STRAGGLERS", self.stragglers),
            ("EMBEDDING_DOMINATED", self.embedding_dominated),
        ) if on]
        self.ps.allowed = bool(self.async_triggers) and not self.reproducible and not self.tpu
        self.one_host_eps = max(self.single.eps, self.mirrored.eps if self.mirrored.allowed else 0.0)
        if top >= 2:
            self._pay_for_hosts(self.mwms, *mwms_eps, lambda n: throughput.predict_sync(
                s, "multi_worker_mirrored", n, d, L))
            if self.fits and not self.embedding_dominated:
                # asynchronous workers buy tolerance of preemption and stragglers, but short
                # of the target they are climbed to for speed, and 16 preemptible hosts at
                # 2.7x one host are complexity (a network, parameter-server tasks, stale
                # gradients) bought for little, as synchronous ones would be. Not weighed:
                # a model that does not fit one device (no one host to weigh against), and
                # embedding tables, the seed's natural fit for parameter servers, whose
                # synchronous alternative all-gathers rows (an open judgement: 45 one-T4
                # hosts on 1 Gb/s at 5x one device keep their plan, docs/model.md)
                self._pay_for_hosts(self.ps, workers, ps_eps, lambda n: throughput.predict_ps(s, n, d, L))

    def _pay_for_hosts(self, c: Candidate, counts: np.ndarray, eps: np.ndarray, predict) -> None:
        """Short of the target, whether the candidate's hosts give enough for their number.
        When its fastest count gives under min_host_scaling (goal.min_host_scaling, else
        MIN_HOST_SCALING_TO_CLIMB) of count x one host's best, that count is kept as
        `unpaid` (to say what it would give) and the candidate moves to the fastest count
        that does; when none does, it stays and does not pay.
        The triggers above were read on the fastest count."""
        p = c.prediction
        if p is None or p.examples_per_second is None or p.examples_per_second >= self.target \
                or not self.one_host_eps or p.examples_per_second >= self.paying_eps(p.hosts):
            return
        c.unpaid = p
        paying = eps >= self.paying_eps(counts)
        if not paying.any():
            c.pays = False
            return
        c.prediction = predict(int(counts[paying][int(np.argmax(eps[paying]))]))

    def paying_eps(self, hosts):
        """The least throughput `hosts` (a count or an array of counts) must give to pay."""
        return self.min_host_scaling * hosts * self.one_host_eps

    def hosts_unpaid(self, c: Candidate, against: float) -> str:
        """What the candidate's fastest count would give for its hosts when that does not
        pay and is MIN_GAIN_TO_CLIMB faster than `against` (the plan's rate); empty
        otherwise: the words of HOSTS_DO_NOT_PAY."""
        p, one = c.unpaid, self.one_host_eps
        if p is None or not one or not c.allowed or p.examples_per_second < MIN_GAIN_TO_CLIMB * against:
            return ""
        fewer = ("no count of hosts reaches it" if not c.pays else
                 f"{u.plan(c.prediction.hosts, c.prediction.devices_per_host)}, the most hosts that reach it, "
                 f"give {u.rate(c.eps)}")
        return (f"{u.plan(p.hosts, p.devices_per_host)} would give {u.rate(p.examples_per_second)}, "
                f"{p.examples_per_second / one:.2f}x one host's {u.rate(one)} for {p.hosts}x the hosts "
                f"({u.percent(p.examples_per_second / (p.hosts * one))} of {p.hosts}x one host's, under "
                f"{u.percent(self.min_host_scaling)}{self._line_set_by}; {fewer}): short of the target either way, "
                f"more hosts buy complexity ({_COMPLEXITY[c.verdict]}), not speed")

    def dispatch_seconds(self) -> float:
        """The coordinator's cost per step at the model's steps_per_execution."""
        return self.links.dispatch_seconds(self.s.workload.steps_per_execution)

    def dispatch_words(self) -> str:
        """The coordinator's dispatch per step, and where that figure comes from (rung's
        default, or the user's own bench through --calibration): COORDINATOR_BOUND's words."""
        L, k = self.links, self.s.workload.steps_per_execution
        each = (f"{u.seconds(L.ps_dispatch_seconds)} each" if k == 1 else
                f"{u.seconds(L.dispatch_seconds(k))} a step at the model's steps_per_execution={k}, "
                f"{u.seconds(L.ps_dispatch_seconds)} at 1")
        return f"{each}: {L.ps_costs_source}"

    def looped_words(self) -> str:
        """What compile(steps_per_execution=8) would make of the coordinator's cap."""
        d8 = self.links.dispatch_seconds(8)
        return (f"compile(steps_per_execution=8) runs 8 steps a dispatch: about {u.seconds(d8)} a step, at most "
                f"{1 / d8:,.0f} steps a second (not 8x: part of the cost stays with every step)")

    def meets(self, c: Candidate) -> bool:
        return c.allowed and c.eps >= self.target

    def sync_waste(self, p: Prediction) -> float:
        """Share of a synchronous job's time lost to restarts, waiting on stragglers and
        all-gathering embedding rows: what asynchronous parameter servers avoid."""
        avoidable = (p.straggler_seconds + p.sparse_exchange_seconds) / p.step_seconds
        return 1.0 - p.goodput * (1.0 - avoidable)

    def host_scaling(self, p: Prediction) -> Optional[float]:
        """Throughput across hosts over hosts x one host of the same strategy."""
        if p.examples_per_second is None or p.hosts <= 1:
            return None
        if p.strategy == "parameter_server":
            one = throughput.predict_ps(self.s, 1, p.devices_per_host, self.links)
        else:
            one = throughput.predict_sync(self.s, p.strategy, 1, p.devices_per_host, self.links)
        if not one.examples_per_second:
            return None
        return p.examples_per_second / (p.hosts * one.examples_per_second)
