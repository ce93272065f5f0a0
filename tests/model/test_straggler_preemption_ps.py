"""Straggler penalty (Blom), goodput under preemption (Young), parameter-server sizing."""

import math

import numpy as np
import pytest

from rung.model import inputs, preemption, ps, straggler


@pytest.mark.parametrize("n,exact", [
    # E[max of n standard normals], tabulated (Harter 1961); n=2 is 1/sqrt(pi).
    (2, 1 / math.sqrt(math.pi)), (5, 1.16296), (10, 1.53875), (100, 2.50759),
])
def test_expected_max_matches_tables(n, exact):
    assert straggler.expected_max_standard_normal(n) == pytest.approx(exact, rel=1e-4)


def test_expected_max_of_large_fleets_against_simpsons_rule():
    """Fleets of thousands of hosts (a ladder walk asks every size up to max_hosts): the grid's
    table against composite Simpson's rule in plain Python (math.erf, 4,000 panels over the
    density's own span around sqrt(2 ln n)), not rung's grid or numpy; the array and the scalar
    paths give the same numbers, in any order of asking. Beyond 4,096 rung interpolates in
    log n between integrated sizes (800,000 replicas integrated one by one took 22 s a walk):
    9,999, 40,000, 800,000 and 3,000,001 are interpolated."""
    def quad(n):
        centre = math.sqrt(2 * math.log(n))
        a, b, m = centre - 6.0, centre + 4.0, 4000

        def f(x):
            cdf = 0.5 * (1 + math.erf(x / math.sqrt(2)))
            return x * n * math.exp(-x * x / 2) / math.sqrt(2 * math.pi) * cdf ** (n - 1)

        h = (b - a) / m
        return h / 3 * sum((1 if i in (0, m) else 4 if i % 2 else 2) * f(a + i * h) for i in range(m + 1))

    sizes = np.array([9_999, 3, 1_000, 1, 40_000, 2, 800_000, 4_096, 4_097, 3_000_001])
    arr = straggler.expected_max_standard_normal(sizes)
    for n, got in zip(sizes, arr):
        expect = 0.0 if n == 1 else quad(int(n))
        assert got == pytest.approx(expect, rel=1e-5, abs=1e-9)
        assert straggler.expected_max_standard_normal(int(n)) == got


def test_straggler_seconds():
    assert straggler.straggler_seconds(0.2, 0.05, 1) == 0
    assert straggler.straggler_seconds(0.2, 0.0, 64) == 0
    assert straggler.straggler_seconds(0.2, 0.05, 10) == pytest.approx(0.2 * 0.05 * 1.5388, rel=1e-4)  # Harter 1961
    arr = straggler.expected_max_standard_normal(np.array([1, 2, 2, 10]))
    assert list(arr) == pytest.approx([0.0, 0.56419, 0.56419, 1.5388], rel=1e-3)


def test_young_interval_and_sync_goodput_by_hand():
    # delta = 10 s, one failure an hour: tau = sqrt(2 x 10 x 3600) = 268.33 s
    assert preemption.young_interval_seconds(10, 3600) == pytest.approx(268.328, rel=1e-5)
    # Daly's tau / (M e^(R/M) (e^((tau + delta)/M) - 1)): 268.33 / (3600 e^(300/3600)
    # (e^(278.33/3600) - 1)) = 0.8531 (Young's first order 1 - 10/268.33 - (300 + 134.16)/3600
    # = 0.8421; without failures in the restart, M / (M + R) x the rest, 0.8543)
    g = preemption.sync_goodput(1, 1 / 3600, 300, 10)
    assert g == pytest.approx(268.328 / (3600 * math.exp(300 / 3600) * math.expm1(278.328 / 3600)), rel=1e-4)
    assert g == pytest.approx(0.8531, abs=5e-4)
    assert preemption.sync_goodput(4, 0.0, 300, 10) == 1.0
    # more hosts, more failures of the whole job
    assert preemption.sync_goodput(16, 1 / 3600, 300, 10) < g
    # 64 hosts failing 32 times an hour with 5-minute restarts: M = 112.5 s, so a restart
    # waits for 300 s without a failure, e^(300/112.5) = 14.4 times M a cycle, and the job
    # hardly trains: 15 / (112.5 e^2.667 (e^(16/112.5) - 1)) = 0.0606 (0.236 if no host
    # could be lost while the job restarts)
    assert preemption.sync_goodput(64, 0.5 / 3600, 300, 1) == pytest.approx(0.0606, rel=2e-3)
    # a host lost faster than the job restarts, many times over: nothing
    assert preemption.sync_goodput(256, 1 / 60, 300, 1) == pytest.approx(0.0, abs=1e-12)


def test_one_kill_costs_the_steps_since_the_last_checkpoint_and_the_restart():
    # checkpoints after steps 5, 10, ... 40: killed after step 43, the job restarts from 40
    assert preemption.resumed_from_step(43, 5) == 40
    assert preemption.resumed_from_step(45, 5) == 45     # killed right after a checkpoint: nothing lost
    assert preemption.resumed_from_step(4, 5) == 0       # before the first: from the start
    # 80 steps of 0.1 s, killed after 43, restart 6 s: 43 steps, 6 s, then steps 41..80 (40)
    assert preemption.killed_run_seconds(80, 43, 5, 0.1, 6.0) == pytest.approx((43 + 40) * 0.1 + 6.0)
    # checkpoints of 0.2 s: after steps 5..40 before the kill (8), 45..80 after it (8)
    assert preemption.killed_run_seconds(80, 43, 5, 0.1, 6.0, 0.2) == pytest.approx((43 + 40) * 0.1 + 16 * 0.2 + 6.0)


def test_async_goodput_loses_only_the_worker_share():
    # a worker preempted 0.5 times an hour, down 5 minutes: e^(-1/24) = 0.95918 of its time
    # (first order 1 - 1/24 = 0.95833); one whose restarts outlast its hours up: hardly any
    assert preemption.async_goodput(0.5 / 3600, 300) == pytest.approx(math.exp(-0.5 * 300 / 3600))
    assert preemption.async_goodput(0.5 / 3600, 300) == pytest.approx(0.95918, abs=1e-5)
    assert preemption.async_goodput(6 / 3600, 1800) == pytest.approx(math.exp(-3.0))  # 5%, not 1 - 3 < 0
    assert preemption.async_goodput(0, 300) == 1.0


def test_ps_sizing():
    # 32 GB of tables+slots on 256 GiB hosts at 80% usable -> 1 task; 600 GB -> 3
    assert ps.tasks_for_memory(32e9, 256 * 2**30) == 1
    assert ps.tasks_for_memory(600e9, 256 * 2**30) == 3
    # 10 workers x 100 MB each way every 0.1 s = 10 GB/s over 6.25 GB/s NICs at 90% -> 2
    assert ps.tasks_for_bandwidth(10, 100e6, 0.1, 6.25e9, 0.9) == 2
    assert ps.staleness_steps(1) == 0 and ps.staleness_steps(17) == 16
    assert ps.embedding_dominated(4.05e9, 4e9) and not ps.embedding_dominated(1e9, 1e8)
    # a text classifier's 2.6 MB token table is 98% of a small model, but not large
    assert not ps.embedding_dominated(660_000, 650_000)
    # 256 MiB of float32 rows (67,108,864 params) is the smallest "large" table; bf16 halves bytes
    assert ps.embedding_dominated(7e7, 2**26) and not ps.embedding_dominated(7e7, 2**26 - 1)
    assert not ps.embedding_dominated(7e7, 2**26, "bfloat16")
    assert ps.exchange_seconds(1e8, 1e9, 0.9) == pytest.approx(2e8 / 0.9e9)
    # 50 variables at 0.15 ms each, and a remote-transfer rate below the link's
    assert ps.exchange_seconds(1e8, 1e9, 0.9, 50, 1.5e-4) == pytest.approx(2e8 / 0.9e9 + 0.0075)
    assert ps.exchange_seconds(1e8, 1e9, 0.9, transfer_cap=0.5e9) == pytest.approx(2e8 / 0.5e9)


def test_input_bound_threshold():
    assert inputs.is_input_bound(1.0, 0.2)
    assert not inputs.is_input_bound(1.0, 0.199)
    assert inputs.pipeline_step_floor(0.5, 8) == 4.0


def test_batch_variation_is_net_of_noise_and_none_when_mostly_noise():
    """rung.measure.timing.batch_time_cv's arithmetic (`batch_variation`) on set timings: the
    distinct batches' medians spread by a CV of 0.47 against one batch's 0.09 give the
    difference in quadrature; a spread whose variance is under twice the noise's reads as none.
    Each batch is timed three times; the median is kept, so one slow outlier moves nothing."""
    import statistics as st

    from rung.measure.timing import batch_variation

    zs = (-1.5, -1, -0.5, 0, 0.5, 1, 1.5, 0)
    distinct = [10 * (1 + 0.5 * z) for z in zs]
    same = [10 * (1 + 0.1 * z) for z in zs]
    v = batch_variation([[x, x, 99.0] for x in distinct], [[x, 99.0, x] for x in same])
    spread, noise = st.pstdev(distinct) / st.fmean(distinct), st.pstdev(same) / st.fmean(same)
    assert v.distinct_cv == pytest.approx(spread) and v.same_cv == pytest.approx(noise)
    assert v.batch_cv == pytest.approx((spread ** 2 - noise ** 2) ** 0.5) and v.batches == 8
    quiet = batch_variation([[10 * (1 + 0.12 * z)] for z in zs], [[x] for x in same])
    assert quiet.distinct_cv > quiet.same_cv and quiet.batch_cv == 0.0


def test_steps_per_execution_amortises_part_of_the_coordinators_dispatch():
    """The curve a + b / k through k = 2 (equal to one step a dispatch) and k = 8 (the
    measured share), against what psbench measured on this project's 2-core machine
    (2 workers; shares of k = 1): k = 4 0.73-0.75, 16 0.50-0.52, 32 0.51."""
    from rung.model.comm import DEFAULT_LINKS as L

    d1 = L.ps_dispatch_seconds
    share = {k: L.dispatch_seconds(k) / d1 for k in (1, 2, 4, 8, 16, 32)}
    assert share[1] == share[2] == 1.0 and share[8] == pytest.approx(L.ps_looped_dispatch_share)
    assert 0.70 <= share[4] <= 0.78 and 0.48 <= share[16] <= 0.58 and 0.48 <= share[32] <= 0.56
    # by hand: b = 0.38 x 8 / 3 = 1.0133, a = 0.62 - b / 8 = 0.4933; k = 4: a + b / 4 = 0.7467
    assert share[4] == pytest.approx(0.4933 + 1.0133 / 4, abs=1e-4)
    # a machine whose dispatch no loop amortises keeps it; on any, more steps a dispatch never
    # cost more a step, and never less than nothing
    assert L.with_(ps_looped_dispatch_share=1.0).dispatch_seconds(32) == d1
    for measured in (0.05, 0.3, 0.62, 0.9):
        costs = [L.with_(ps_looped_dispatch_share=measured).dispatch_seconds(k) for k in range(1, 200)]
        assert all(a >= b >= 0 for a, b in zip(costs, costs[1:])), measured
