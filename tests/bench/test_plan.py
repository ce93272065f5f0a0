"""Bench plans are data: run specs, TF_CONFIG per task, environments (no TensorFlow)."""

import json

from dataclasses import replace

import pytest

from rung.bench.plan import RunSpec, parse_runs, plan_run, task_environment
from rung.bench.predict import Basis, predict_step_seconds, relative_error
from rung.errors import InputError
from rung.spec.benchresult import PsCosts


def test_parse_runs():
    assert parse_runs("single_device,mirrored:2,multi_worker_mirrored:3,parameter_server") == [
        RunSpec("single_device", 1), RunSpec("mirrored", 2), RunSpec("multi_worker_mirrored", 3),
        RunSpec("parameter_server", 2)]
    for bad, words in (("horovod:2", "unknown strategy"), ("mirrored:x", "whole number"),
                       ("mirrored:0", "1 to 16"), ("single_device:2", "one replica"), ("", "no runs")):
        with pytest.raises(InputError, match=words):
            parse_runs(bad)


@pytest.mark.parametrize("args,words", [
    (["--batch", "0"], "--batch: expected at least 1 examples per replica, received 0"),  # ran at the file's batch
    (["--warmup", "-1"], "--warmup: expected at least 0"),
    (["--steps", "0"], "--steps: expected at least 1"),  # failed the runs one by one, exit 1
    (["--hosts", "0"], "--hosts: expected 1 to 17 test hosts, received 0"),  # ran on loopback
    (["--hosts", "99"], "--hosts: expected 1 to 17"),
    (["--link-mbit", "0"], "--link-mbit: expected a number greater than 0"),
    (["--deadline", "0"], "--deadline: expected a number greater than 0"),  # every run failed, exit 1
])
def test_bench_flags_out_of_range_are_exit_2_before_any_run(args, words):
    """Checked before TensorFlow is imported or a process started: one line, exit 2."""
    import subprocess
    import sys

    from tests.conftest import REPO

    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(REPO / "rung" / "examples" / "workloads" / "mlp.py"),
                        *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"rung: error: {words}"), r.stderr


def test_multi_worker_tf_config_and_keras():
    plan = plan_run(RunSpec("multi_worker_mirrored", 3))
    assert plan.keras == "tf_keras" and [t.role for t in plan.tasks] == ["worker"] * 3
    workers = plan.tasks[0].tf_config["cluster"]["worker"]
    assert len(set(workers)) == 3 and all(w.startswith("127.0.0.1:") for w in workers)
    assert [t.tf_config["task"] for t in plan.tasks] == [{"type": "worker", "index": i} for i in range(3)]
    assert plan.lead is plan.tasks[0]
    env = task_environment({"PATH": "/bin", "TF_CONFIG": "stale"}, plan.tasks[1], plan.keras)
    assert json.loads(env["TF_CONFIG"])["task"]["index"] == 1 and env["TF_USE_LEGACY_KERAS"] == "1"


def test_parameter_server_cluster_on_test_hosts_with_a_straggler():
    plan = plan_run(RunSpec("parameter_server", 2), ["10.77.1.1", "10.77.1.2"], ps_tasks=1, straggler=(1, 3.0))
    roles = [(t.role, t.index, t.host) for t in plan.tasks]
    assert roles == [("chief", 0, 0), ("worker", 0, 0), ("worker", 1, 1), ("ps", 0, 0)]
    cluster = plan.tasks[0].tf_config["cluster"]
    assert cluster["worker"][1].startswith("10.77.1.2:") and cluster["chief"][0].startswith("10.77.1.1:")
    assert [t.straggle for t in plan.tasks] == [1.0, 1.0, 3.0, 1.0]
    assert plan.lead.role == "chief"
    # on the bench's test hosts the PS and the coordinator get a host of their own: every
    # worker crosses a link to its variables
    own = plan_run(RunSpec("parameter_server", 2), ["10.77.1.1", "10.77.1.2"], ps_tasks=2, ps_host=(2, "10.77.1.3"))
    assert [(t.role, t.host) for t in own.tasks] == [("chief", 2), ("worker", 0), ("worker", 1), ("ps", 2), ("ps", 2)]
    cluster = own.tasks[0].tf_config["cluster"]
    assert all(a.startswith("10.77.1.3:") for a in cluster["ps"] + cluster["chief"])
    assert [a.split(":")[0] for a in cluster["worker"]] == ["10.77.1.1", "10.77.1.2"]
    single = plan_run(RunSpec("mirrored", 2))
    assert single.keras == "keras3" and single.tasks[0].tf_config is None


def test_predictions_by_hand():
    from dataclasses import replace

    b = Basis(one_device_step_seconds=0.01, dense_gradient_bytes=16e6, sparse_gradient_bytes=0,
              step_time_cv=0.0, link_bytes_per_second=25e6, link_rtt_seconds=1e-4)
    p = predict_step_seconds(b, "multi_worker_mirrored", 2)
    # two co-located replicas: 2 x 10 ms compute; ring: 2 x 1/2 x 16 MB / 25 MB/s + 2 hops x 50 us
    assert p["compute"] == pytest.approx(0.02)
    assert p["comm"] == pytest.approx(0.64 + 2 * 5e-5)
    # the model's co-location overhead (0.065 of compute) is advise's term, here too; its
    # fixed cost per step is the test bed's own (0 before a calibration), not real hosts' 3 ms
    assert p["sync"] == pytest.approx(0.065 * 0.02)
    # fit all-reduces the loss it logs: one scalar, the ring's 2 hops of 50 us
    assert p["logged_values"] == pytest.approx(2 * 5e-5)
    assert p["step"] == pytest.approx(0.02 + 0.64 + 1e-4 + 0.065 * 0.02 + 1e-4)
    # a test bed's measured cost of a logged value, for a model that logs 4
    four = predict_step_seconds(replace(b, logged_values=4, logged_value_seconds=0.0036), "multi_worker_mirrored", 2)
    assert four["logged_values"] == pytest.approx(4 * 0.0036)
    assert four["step"] - p["step"] == pytest.approx(4 * 0.0036 - 1e-4)
    assert predict_step_seconds(b, "multi_worker_mirrored", 2, efficiency=0.5)["comm"] == pytest.approx(1.28 + 1e-4)
    assert predict_step_seconds(b, "single_device", 1)["step"] == 0.01
    # parameter servers on a test bed: the cores are shared, so the fleet's steps run one
    # after another, each 10 ms of compute + pull and push of 16 MB at 25 MB/s + 6 variables'
    # remote read and update (0.15 ms each) + the coordinator's 10 ms dispatch = 1.3009 s
    ps = replace(b, variables=6)
    assert predict_step_seconds(ps, "parameter_server", 2)["step"] == pytest.approx(0.01 + 1.28 + 0.0009 + 0.01)
    # one of two workers 3x slower in compute: 2 steps per (1.3009 + 1.3209) s
    slow = predict_step_seconds(ps, "parameter_server", 2, straggle=3.0)["step"]
    assert slow == pytest.approx((1.3009 + 1.3209) / 2)
    # the costs rung.bench.psbench measured for 2 workers replace the defaults
    measured = replace(ps, ps_costs={"2": PsCosts(workers=2, dispatch_seconds=0.0, keras_dispatch_seconds=0.02,
                                                  variable_seconds=1e-3, remote_bytes_per_second=16e6)})
    assert predict_step_seconds(measured, "parameter_server", 2)["step"] == pytest.approx(0.01 + 2.0 + 0.006 + 0.02)
    # Keras's own work per step on one device (0.5 ms) is in the one-device step already: the
    # dispatch is the rest, and never less than the bare schedule (1 ms)
    costs = PsCosts(workers=2, keras_dispatch_seconds=0.02, keras_local_step_seconds=0.0005, dispatch_seconds=0.001,
                    variable_seconds=1e-3, remote_bytes_per_second=16e6)
    net = replace(ps, ps_costs={"2": costs})
    assert predict_step_seconds(net, "parameter_server", 2)["step"] == pytest.approx(0.01 + 2.0 + 0.006 + 0.0195)
    floor = replace(ps, ps_costs={"2": costs.model_copy(update={"keras_dispatch_seconds": 0.0012})})
    assert predict_step_seconds(floor, "parameter_server", 2)["step"] == pytest.approx(0.01 + 2.0 + 0.006 + 0.001)
    # a model compiled with steps_per_execution=8, and psbench's looped fit: 12 ms a step on the
    # cluster less 0.1 ms of Keras's own looped step = 11.9 ms, 0.61 of the 19.5 ms at one
    # step a call; at 8 the dispatch is that, at 32 the curve's a + b / 32 (b = 7.6 x 8 / 3 ms,
    # a = 11.9 ms - b / 8)
    looped = costs.model_copy(update={"keras_looped_dispatch_seconds": 0.012, "keras_local_looped_step_seconds": 1e-4,
                                      "looped_steps": 8})
    at = {k: replace(ps, ps_costs={"2": looped}, steps_per_execution=k) for k in (1, 8, 32)}
    assert predict_step_seconds(at[1], "parameter_server", 2)["step"] == pytest.approx(0.01 + 2.0 + 0.006 + 0.0195)
    assert predict_step_seconds(at[8], "parameter_server", 2)["step"] == pytest.approx(0.01 + 2.0 + 0.006 + 0.0119)
    b_ = 0.0076 * 8 / 3
    assert predict_step_seconds(at[32], "parameter_server", 2)["step"] == pytest.approx(
        0.01 + 2.0 + 0.006 + 0.0119 - b_ / 8 + b_ / 32)
    # a model whose fit logs 10 compiled metrics besides its loss: 22 metric variables, 20
    # beyond the loss's tracker (which psbench's dispatch holds), each updated and read on the
    # PS a step at what psbench measured, 0.2 ms: 4 ms more a step; the loss's tracker alone
    # (2) and an uncounted model (None) pay none
    metered = replace(net, ps_costs={"2": costs.model_copy(update={"keras_metric_variable_seconds": 2e-4})})
    base = predict_step_seconds(metered, "parameter_server", 2)["step"]
    assert base == pytest.approx(0.01 + 2.0 + 0.006 + 0.0195)
    assert predict_step_seconds(replace(metered, metric_variables=2), "parameter_server", 2)["step"] == base
    assert predict_step_seconds(replace(metered, metric_variables=22), "parameter_server", 2)["step"] \
        == pytest.approx(base + 20 * 2e-4)
    # psbench lines from before it measured them: the model's default per metric variable
    assert predict_step_seconds(replace(net, metric_variables=22), "parameter_server", 2)["step"] \
        == pytest.approx(base + 20 * 1.7e-4)
    assert relative_error(1.1, 1.0) == pytest.approx(0.1) and relative_error(None, 1.0) is None


def _measured_step(n, share=0.8, cpu_per_byte=5e-9, rate=25e6, cores=2, one=0.01, grads=16e6, rtt=1e-4, fixed=0.0):
    """A multi-worker step written out by hand (not through rung's functions): n co-located
    replicas' compute plus the co-location overhead, ring hops, and the ring's bytes at
    `share` of the goodput, slowed by the cores' share u = n x rate x c / cores, the loss
    fit logs all-reduced (the ring's hops again, for one scalar), plus a fixed cost of
    `fixed` seconds per step."""
    compute = one * n
    u = n * rate / cores * cpu_per_byte
    wire = 2 * (n - 1) / n * grads / rate
    loss = 2 * (n - 1) * rtt / 2
    return compute + 0.065 * compute + 2 * (n - 1) * rtt / 2 + wire / (share * (1 - u)) + loss + fixed


def test_co_located_replicas_share_the_cores_their_one_device_step_kept_busy():
    """Two co-located replicas of a step that kept 1.6 of 2 cores busy ask 3.2 cores' work of
    2: 1.6x the one-device compute, not 2x; a step that kept 0.8 busy leaves room for both
    (1x); three replicas of 1.5 ask 4.5 of 2 (2.25x); unmeasured, 2x as before."""
    from rung.model.testbed import Testbed

    assert Testbed(cores=2, replicas=2, compute_cores=1.6).compute_factor() == pytest.approx(1.6)
    assert Testbed(cores=2, replicas=2, compute_cores=0.8).compute_factor() == 1.0
    assert Testbed(cores=2, replicas=3, compute_cores=1.5).compute_factor() == pytest.approx(2.25)
    assert Testbed(cores=2, replicas=2, compute_cores=2.3).compute_factor() == 2.0  # ticks past the cores
    assert Testbed(cores=2, replicas=2).compute_factor() == 2.0
    b = Basis(one_device_step_seconds=0.01, dense_gradient_bytes=16e6, sparse_gradient_bytes=0,
              step_time_cv=0.0, link_bytes_per_second=25e6, link_rtt_seconds=1e-4, cores=2, step_cpu_cores=1.6)
    for strategy in ("multi_worker_mirrored", "mirrored"):
        p = predict_step_seconds(b, strategy, 2)
        assert p["compute"] == pytest.approx(0.016) and p["sync"] == pytest.approx(0.065 * 0.016)
    assert predict_step_seconds(b, "parameter_server", 2)["compute"] == pytest.approx(0.01)  # a worker's own step
    # parameter servers: a round of both workers' steps takes their compute as the shared
    # cores take it (1.6 x 10 ms), and the rest of each step in turn. By hand, each worker's
    # rest: 16 MB each way at the measured 25 MB/s (1.28 s), 2 variables' remote read and
    # update (0.15 ms each), the coordinator's 10 ms dispatch; unmeasured, 2 x (10 ms + rest)
    ps = replace(b, variables=2)
    rest = 2 * 16e6 / 25e6 + 2 * 0.00015 + 0.01
    assert predict_step_seconds(ps, "parameter_server", 2)["step"] == pytest.approx((0.016 + 2 * rest) / 2)
    assert predict_step_seconds(replace(ps, step_cpu_cores=None), "parameter_server", 2)["step"] == pytest.approx(
        (2 * 0.01 + 2 * rest) / 2)


def test_the_probe_of_a_multi_worker_run_is_read_as_the_test_beds_fixed_cost():
    from rung.bench.bench import _testbed_sync

    b = Basis(one_device_step_seconds=0.01, dense_gradient_bytes=16e6, sparse_gradient_bytes=0,
              step_time_cv=0.2, link_bytes_per_second=25e6, link_rtt_seconds=1e-4)
    probe = {"params": 5, "dense_gradient_bytes": 20, "local_step_seconds": 0.001, "step_seconds": 0.014}
    # by hand, 2 workers: 2 x 1 ms of compute shared, 0.065 x that of co-location, 2 hops of
    # 50 us, 20 bytes at 25 MB/s (0.8 us), and its loss all-reduced (2 hops again); no
    # spread of its own (the probe is one model)
    expected = 0.014 - (0.002 + 0.065 * 0.002 + 2 * 5e-5 + 20 / 25e6 + 2 * 5e-5)
    assert _testbed_sync(probe, b, 2) == pytest.approx(expected, rel=1e-6)
    # 3 workers: 3 x 1 ms, 4 hops, 2 x 2/3 x 20 bytes, the loss's 4 hops
    assert _testbed_sync(dict(probe, step_seconds=0.02), b, 3) == pytest.approx(
        0.02 - (0.003 + 0.065 * 0.003 + 4 * 5e-5 + 2 * 2 / 3 * 20 / 25e6 + 4 * 5e-5), rel=1e-6)
    # a probe that measured what a logged value costs a fit (3 ms): its loss costs that
    assert _testbed_sync(dict(probe, logged_value_seconds=0.003), b, 2) == pytest.approx(
        0.014 - (0.002 + 0.065 * 0.002 + 2 * 5e-5 + 20 / 25e6 + 0.003), rel=1e-6)
    assert _testbed_sync(dict(probe, step_seconds=0.001), b, 2) == 0.0        # never below 0
    assert _testbed_sync({k: v for k, v in probe.items() if k != "local_step_seconds"}, b, 2) is None


def test_workers_on_machines_of_their_own_are_predicted_as_real_hosts():
    """A Ray cluster whose nodes are separate machines: no test-bed terms (each worker has its
    own cores), and the fixed cost the run measured in place of the model's 3 ms."""
    from rung.bench.bench import _testbed_sync
    from rung.bench.predict import with_fixed_cost

    b = Basis(one_device_step_seconds=0.01, dense_gradient_bytes=16e6, sparse_gradient_bytes=0,
              step_time_cv=0.0, link_bytes_per_second=25e6, link_rtt_seconds=1e-4, sync_seconds=0.004)
    own = predict_step_seconds(b, "multi_worker_mirrored", 2, shares_cores=False)
    # by hand: 10 ms of compute (not 2 x 10), the ring's 0.64 s + 2 hops, 4 ms + 0.065 x 10 ms,
    # the loss all-reduced in 2 hops
    assert own["compute"] == pytest.approx(0.01) and own["sync"] == pytest.approx(0.004 + 0.065 * 0.01)
    assert own["step"] == pytest.approx(0.01 + 0.64 + 1e-4 + 0.004 + 0.065 * 0.01 + 1e-4)
    shared = predict_step_seconds(b, "multi_worker_mirrored", 2)
    assert shared["compute"] == pytest.approx(0.02)
    # the probe read without the co-located compute: 14 ms less 1 ms, its overhead, hops, bytes
    probe = {"params": 5, "dense_gradient_bytes": 20, "local_step_seconds": 0.001, "step_seconds": 0.014}
    assert _testbed_sync(probe, b, 2, shares_cores=False) == pytest.approx(
        0.014 - (0.001 + 0.065 * 0.001 + 1e-4 + 20 / 25e6 + 1e-4), rel=1e-6)
    # a run that measured nothing: 0 on the test bed (until a calibration), the model's 3 ms between machines
    assert with_fixed_cost(b, None, shares_cores=True).sync_seconds == 0.0
    assert with_fixed_cost(b, None, shares_cores=False).sync_seconds == pytest.approx(0.003)
    assert with_fixed_cost(b, 0.007, shares_cores=False).sync_seconds == 0.007


def test_calibration_separates_a_fixed_step_cost_with_two_models():
    """Runs written by hand with a fixed 12 ms per multi-worker step, of a model with 16 MB
    of gradients (at 2 and 4 workers, 50 and 200 Mbit/s) and one with 1.5 MB (3 workers
    at 200 Mbit/s): the fit gives back the fixed cost, the share and the CPU cost, and the
    small model's step is predicted as written. The fixed cost adds to every multi-worker step's prediction, never to one
    process's mirrored step."""
    from rung.bench.bench import _calibrate

    points = []
    for grads, rates, workers in ((16e6, (6.25e6, 25e6), (2, 4)), (1.5e6, (25e6,), (3,))):
        for rate in rates:
            b = Basis(one_device_step_seconds=0.01, dense_gradient_bytes=grads, sparse_gradient_bytes=0,
                      step_time_cv=0.0, link_bytes_per_second=rate, link_rtt_seconds=1e-4, cores=2)
            runs = [{"strategy": "single_device", "replicas": 1, "step_seconds_mean": 0.01}]
            runs += [{"strategy": "multi_worker_mirrored", "replicas": n,
                      "step_seconds_mean": _measured_step(n, rate=rate, grads=grads, fixed=0.012)} for n in workers]
            cal = _calibrate(runs, b, {"bytes_per_second": rate, "rtt_seconds": 1e-4}, rate * 8 / 1e6, None, points)
            points = cal["points"]
    assert len(points) == 5
    assert cal["testbed_sync_seconds"] == pytest.approx(0.012, rel=1e-3)
    assert cal["allreduce_share_of_goodput"] == pytest.approx(0.8, rel=1e-3)
    assert cal["testbed_cpu_seconds_per_byte"] == pytest.approx(5e-9, rel=1e-3)
    small = runs[1]
    assert abs(small["calibrated_prediction_error"]) < 1e-3
    # the small model's step, predicted with and without the fitted fixed cost
    fitted = replace(b, cpu_seconds_per_byte=cal["testbed_cpu_seconds_per_byte"],
                     sync_seconds=cal["testbed_sync_seconds"])
    share = cal["allreduce_share_of_goodput"]
    with_f = predict_step_seconds(fitted, "multi_worker_mirrored", 3, efficiency=share)["step"]
    without = predict_step_seconds(replace(fitted, sync_seconds=0.0), "multi_worker_mirrored", 3, efficiency=share)
    assert with_f - without["step"] == pytest.approx(0.012, rel=1e-3)
    mirrored = predict_step_seconds(fitted, "mirrored", 3)["step"]
    assert mirrored == pytest.approx(predict_step_seconds(replace(fitted, sync_seconds=0.0), "mirrored", 3)["step"])
    # the large model's four exact points alone recover it too (small beside their exchange)
    big = _calibrate([], b, {"bytes_per_second": 25e6, "rtt_seconds": 1e-4}, 200.0, None, points[:4])
    assert big["testbed_sync_seconds"] == pytest.approx(0.012, rel=0.05)
    # fewer than three points: no fixed cost is fitted
    two = _calibrate([], b, {"bytes_per_second": 25e6, "rtt_seconds": 1e-4}, 200.0, None, points[:2])
    assert two["testbed_sync_seconds"] == 0.0


def test_calibration_recovers_link_constants_from_hand_written_runs():
    """Runs written by hand from a known share of goodput (0.8) and CPU cost per byte
    streamed (5 ns) are fitted back to those constants, and the calibrated errors vanish."""
    from dataclasses import replace

    from rung.bench.bench import _calibrate
    from rung.spec.calibration import parse_calibration

    b = Basis(one_device_step_seconds=0.01, dense_gradient_bytes=16e6, sparse_gradient_bytes=0,
              step_time_cv=0.0, link_bytes_per_second=25e6, link_rtt_seconds=1e-4, cores=2)
    runs = [{"strategy": "single_device", "replicas": 1, "step_seconds_mean": 0.01}]
    for n in (2, 3, 4):
        runs.append({"strategy": "multi_worker_mirrored", "replicas": n, "step_seconds_mean": _measured_step(n)})
    link = {"bytes_per_second": 25e6, "rtt_seconds": 1e-4}
    cal = _calibrate(runs, b, link, 200.0, None)
    assert cal["fitted"]
    assert cal["allreduce_share_of_goodput"] == pytest.approx(0.8, rel=1e-6)
    assert cal["testbed_cpu_seconds_per_byte"] == pytest.approx(5e-9, rel=1e-6)
    assert cal["inter_host_efficiency"] == pytest.approx(25e6 * 0.8 / 25e6, rel=1e-6)
    assert all(abs(r["calibrated_prediction_error"]) < 1e-9 for r in runs[1:])
    assert parse_calibration(cal).inter_host_efficiency == pytest.approx(0.8)  # what advise reads back
    # one worker count alone fits the share of goodput only (lower: it carries the CPU's share)
    single = _calibrate(runs[:2], b, link, 200.0, None)
    assert single["testbed_cpu_seconds_per_byte"] == 0.0 and 0.5 < single["allreduce_share_of_goodput"] < 0.8
    assert _calibrate(runs[:1], b, link, None, None)["fitted"] is False
    # the same worker count at a second link rate, merged, separates the two constants again
    fast = replace(b, link_bytes_per_second=100e6)
    fast_run = [runs[0], {"strategy": "multi_worker_mirrored", "replicas": 2,
                          "step_seconds_mean": _measured_step(2, rate=100e6)}]
    merged = _calibrate(fast_run, fast, {"bytes_per_second": 100e6, "rtt_seconds": 1e-4}, 800.0, None,
                        single["points"])
    assert merged["fitted_on"] == ["multi_worker_mirrored:2 at 200 Mbit/s",
                                   "multi_worker_mirrored:2 at 800 Mbit/s"]
    assert merged["allreduce_share_of_goodput"] == pytest.approx(0.8, rel=1e-6)
    assert merged["testbed_cpu_seconds_per_byte"] == pytest.approx(5e-9, rel=1e-6)


def test_one_point_of_a_small_model_is_a_fixed_cost_not_a_slow_link():
    """`rung bench --calibrate` on loopback with a 449-parameter model (2026-12-01): one
    multi-worker point, 1.8 KB of gradients (0.5 us on the measured 3.5 GB/s) against
    10.1 ms of exchange. Read with no fixed cost, the all-reduce reached 0.001 of the
    goodput ("achieves 0.00 of the measured link goodput"); it is a fixed cost of the
    step, the share is not fitted, and advise is given no link efficiency from it."""
    from rung.bench.bench import _calibrate
    from rung.spec.calibration import parse_calibration

    b = Basis(one_device_step_seconds=0.002, dense_gradient_bytes=1796, sparse_gradient_bytes=0,
              step_time_cv=0.0, link_bytes_per_second=3.5e9, link_rtt_seconds=6.7e-5, cores=2)
    step = _measured_step(2, rate=3.5e9, grads=1796, rtt=6.7e-5, fixed=0.010, one=0.002, cpu_per_byte=0.0)
    runs = [{"strategy": "single_device", "replicas": 1, "step_seconds_mean": 0.002},
            {"strategy": "multi_worker_mirrored", "replicas": 2, "step_seconds_mean": step}]
    link = {"bytes_per_second": 3.5e9, "rtt_seconds": 6.7e-5}
    cal = _calibrate(runs, b, link, 800.0, None)  # as if on a shaped link: no efficiency from it either
    assert cal["share_fitted"] is False and cal["allreduce_share_of_goodput"] == 1.0
    assert cal["testbed_sync_seconds"] == pytest.approx(0.010, rel=0.01)
    assert cal["inter_host_efficiency"] is None
    assert abs(runs[1]["calibrated_prediction_error"]) < 0.01
    assert parse_calibration(cal).share_fitted is False
    # a large model's single point keeps the reading it had: a share, no fixed cost
    big = replace(b, dense_gradient_bytes=16e6, link_bytes_per_second=25e6)
    one = _calibrate([runs[0], {"strategy": "multi_worker_mirrored", "replicas": 2,
                                "step_seconds_mean": _measured_step(2)}], big,
                     {"bytes_per_second": 25e6, "rtt_seconds": 1e-4}, 200.0, None)
    assert one["share_fitted"] is True and one["testbed_sync_seconds"] == 0.0 and one["inter_host_efficiency"]


def test_testbed_cpu_share_slows_the_all_reduce_and_is_bounded():
    from dataclasses import replace

    from rung.bench.predict import testbed_cpu_share
    from rung.model.testbed import MAX_CPU_SHARE

    b = Basis(one_device_step_seconds=0.001, dense_gradient_bytes=16e6, sparse_gradient_bytes=0,
              step_time_cv=0.0, link_bytes_per_second=50e6, link_rtt_seconds=0.0, cores=2)
    idle = predict_step_seconds(b, "multi_worker_mirrored", 4)
    busy = predict_step_seconds(replace(b, cpu_seconds_per_byte=4e-9), "multi_worker_mirrored", 4)
    assert testbed_cpu_share(replace(b, cpu_seconds_per_byte=4e-9), 4) == pytest.approx(4 * 50e6 / 2 * 4e-9)
    assert busy["comm"] == pytest.approx(idle["comm"] / (1 - 0.4))
    assert testbed_cpu_share(replace(b, cpu_seconds_per_byte=1e-6), 4) == MAX_CPU_SHARE


def test_several_parameter_server_tasks():
    plan = plan_run(RunSpec("parameter_server", 3), ps_tasks=2)
    assert [t.role for t in plan.tasks].count("ps") == 2
    assert len(plan.tasks[0].tf_config["cluster"]["ps"]) == 2
    ports = [a.split(":")[1] for tasks in plan.tasks[0].tf_config["cluster"].values() for a in tasks]
    assert len(set(ports)) == len(ports) == 1 + 3 + 2


def test_test_hosts_need_root(monkeypatch):
    from rung.bench import netns
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    with pytest.raises(InputError, match="need root"):
        netns.check_can_make_hosts()


def test_the_report_says_when_a_kill_never_happened():
    """A run that ends before its kill step must not read as if the worker was killed."""
    import io

    from rich.console import Console

    from rung.report.bench import render

    run = {"strategy": "parameter_server", "replicas": 2, "keras": "tf_keras", "examples_per_second": 100.0,
           "step_seconds_p50": 0.04, "step_seconds_p95": 0.05, "scaling_efficiency": 0.5,
           "gradient_bytes_per_step": 1e6, "predicted_step_seconds": 0.03, "prediction_error": -0.2,
           "kill": {"worker": 1, "step": 6, "happened": False, "steps_lost": 0, "completed_all_steps": True}}
    from rung.spec.benchresult import BenchResult

    b = {"schema": "rung/bench/v1", "workload": "w.py", "per_replica_batch": 8, "steps": 10, "warmup": 2,
         "cores": 2, "hosts": 1, "link_mbit": None,
         "link": {"where": "loopback", "bytes_per_second": 1e9, "rtt_seconds": 1e-4},
         "runs": [run], "calibration": None, "notes": []}
    out = io.StringIO()
    render(BenchResult.model_validate(b), Console(file=out, width=200))
    assert "never killed" in out.getvalue() and "killed at step" not in out.getvalue()
    run["kill"].update(happened=True, killed_at_step=7, restarts=0)
    out = io.StringIO()
    render(BenchResult.model_validate(b), Console(file=out, width=200))
    assert "killed at step 7" in out.getvalue()


def test_runs_take_the_names_the_bench_table_prints():
    # a run copied from the table (`mwms:2`, `ps:2:partitioned`) was "unknown strategy 'mwms'"
    assert parse_runs("mwms:2,ps:3:partitioned") == parse_runs(
        "multi_worker_mirrored:2,parameter_server:3:partitioned")
    with pytest.raises(InputError, match="mwms and ps"):
        parse_runs("mw:2")


def test_runs_take_a_strategy_option():
    from rung.bench.plan import parse_runs
    from rung.errors import InputError

    runs = parse_runs("single_device,mirrored:2:hierarchical,mirrored:2:reduction,parameter_server:2:partitioned")
    assert [(r.strategy, r.replicas, r.option) for r in runs] == [
        ("single_device", 1, None), ("mirrored", 2, "hierarchical"), ("mirrored", 2, "reduction"),
        ("parameter_server", 2, "partitioned")]
    assert runs[1].label == "mirrored:2:hierarchical"
    with pytest.raises(InputError, match="unknown option 'fast'"):
        parse_runs("mirrored:2:fast")
    with pytest.raises(InputError, match="unknown option 'hierarchical'"):
        parse_runs("multi_worker_mirrored:2:hierarchical")


def test_cross_device_ops_predictions_by_hand():
    """Logical devices of one process copy through memory (5 GB/s, no hop latency): 16 MB
    of gradients on 4 devices, ring 2 x 3/4 x 16 MB, tree 2 x log2(4) x 16 MB, one device
    2 x 3 x 16 MB."""
    b = Basis(one_device_step_seconds=0.01, dense_gradient_bytes=16e6, sparse_gradient_bytes=0,
              step_time_cv=0.0, link_bytes_per_second=1e9, link_rtt_seconds=1e-4)
    comm = {o: predict_step_seconds(b, "mirrored", 4, option=o)["comm"] for o in ("nccl", "hierarchical", "reduction")}
    assert comm["nccl"] == pytest.approx(1.5 * 16e6 / 5e9)
    assert comm["hierarchical"] == pytest.approx(4 * 16e6 / 5e9)
    assert comm["reduction"] == pytest.approx(6 * 16e6 / 5e9)


def test_a_parameter_server_step_is_the_median_of_the_epochs_of_one_fit():
    from rung.bench.run import step_stats

    # one fit of 4 epochs of 20 steps, started at 0: the first epoch ends at 0.65 (its 20
    # steps and the fit's fixed cost), then 0.20, 0.26 and 0.22 s an epoch
    result = {"async": True, "steps": 20, "start": 0.0, "end": 1.35, "epoch_ends": [0.65, 0.85, 1.11, 1.33]}
    s = step_stats(result, 3, 32)
    assert s["step_seconds_rounds"] == pytest.approx([0.20 / 20, 0.26 / 20, 0.22 / 20])
    assert s["step_seconds_mean"] == pytest.approx(0.22 / 20)          # the median epoch, not the mean
    assert s["window_seconds"] == pytest.approx(1.33 - 0.65)           # the timed epochs
    assert s["steps_timed"] == 3 * 20                                  # and their steps
    assert s["fit_fixed_seconds"] == pytest.approx(0.65 - 20 * 0.22 / 20)
    assert s["examples_per_second"] == pytest.approx(32 * 20 / 0.22)
    # a fit whose epoch ends were not seen: the whole fit, per step
    one = step_stats({"async": True, "steps": 20, "start": 0.0, "end": 0.5}, 3, 32)
    assert one["step_seconds_mean"] == pytest.approx(0.5 / 20) and one["fit_fixed_seconds"] is None


def test_the_cores_a_runs_steps_kept_busy_are_its_cpu_time_over_the_timed_window():
    from rung.bench.run import step_stats

    # 2 warm-up steps, then 4 timed ones from 1.0 s to 1.4 s; the process's CPU time at each
    # end: 0.9 s at the warm-up's end, 1.56 s at the last, so 0.66 s over 0.4 s: 1.65 cores
    result = {"start": 0.0, "end": 1.5, "warmup": 2, "ends": [0.5, 1.0, 1.1, 1.2, 1.3, 1.4],
              "cpu_ends": [0.4, 0.9, 1.07, 1.23, 1.39, 1.56]}
    assert step_stats(result, 2, 32)["step_cpu_cores"] == pytest.approx(0.66 / 0.4, abs=1e-3)
    # a result that does not hold it (an older task's), or no step past the warm-up: None
    assert step_stats({**result, "cpu_ends": []}, 2, 32)["step_cpu_cores"] is None
    assert step_stats({**result, "ends": result["ends"][:2], "cpu_ends": result["cpu_ends"][:2]}, 2,
                      32)["step_cpu_cores"] is None


def test_the_bench_table_keeps_its_headings_and_figures_whole_at_80_columns():
    """A pipe or a CI log is 80 columns: the headings and figures were cut to "kera…",
    "fail…", "pred…" to make room for the widest run label. The label folds instead."""
    import io

    from rich.console import Console

    from rung.report.bench import render
    from rung.spec.benchresult import BenchResult

    def run(strategy, replicas, keras):
        return {"strategy": strategy, "replicas": replicas, "keras": keras, "examples_per_second": 12345.0,
                "step_seconds_p50": 0.04, "step_seconds_p95": 0.05, "scaling_efficiency": 0.5,
                "gradient_bytes_per_step": 1.6e6, "predicted_step_seconds": 0.03, "prediction_error": -0.2}

    slowed = "multi_worker_mirrored:2 (worker 1 slowed 3x)"
    b = {"schema": "rung/bench/v1", "workload": "w.py", "per_replica_batch": 8, "steps": 10, "warmup": 2,
         "cores": 2, "hosts": 1, "link_mbit": None,
         "link": {"where": "loopback", "bytes_per_second": 1e9, "rtt_seconds": 1e-4},
         "runs": [run("single_device", 1, "keras3"), run("parameter_server", 2, "tf_keras")],
         "failed": [{"run": slowed, "strategy": "multi_worker_mirrored", "replicas": 2, "error": "boom"}],
         "calibration": None, "notes": []}
    out = io.StringIO()
    render(BenchResult.model_validate(b), Console(file=out, width=80))
    text = out.getvalue()
    assert all(len(line) <= 80 for line in text.splitlines())
    # the failed run is named as the runs that finished are (`mwms:2`, not the progress
    # line's `multi_worker_mirrored:2`), in the table and on its error line
    short = "mwms:2 (worker 1 slowed 3x)"
    table = text[text.index("run "):text.index(f"{short} failed: boom")]
    assert "…" not in table and "multi_worker" not in text
    assert table.split("\n")[0].split() == ["run", "keras", "ex/s", "p50", "p95", "eff.", "grad", "B/step",
                                            "predicted", "error"]
    assert table.count("tf_keras") == 1 and table.count("12,345") == 2 and table.count("failed") == 1
    # every character of the folded label is there, in order, in the run column (as wide as
    # its heading's place before "keras")
    lines = table.splitlines()
    width = lines[0].index("keras")
    assert short.replace(" ", "") in "".join(line[:width] for line in lines[1:]).replace(" ", "")
    # and a one-device run's label is whole on its line (at 80 columns, 13 wide at least)
    assert any(line.startswith("single_device ") for line in lines)


def test_runs_that_fail_for_one_reason_are_said_once():
    """A model that does not build on tf-keras fails every run there with the same long line
    (behind each run's own task: "single failed: ", "worker:0 failed: "); the report printed
    it once per run, and rung bench then printed every one again on stderr."""
    import io

    from rich.console import Console

    from rung.report.bench import failed_groups, render
    from rung.spec.benchresult import BenchResult

    why = "InputError: w.py: build_model() raised TypeError: negative_slope (line 18)"
    failed = [{"run": "single_device@tf_keras", "strategy": "single_device", "replicas": 1,
               "error": f"single failed: {why}"},
              {"run": "multi_worker_mirrored:2", "strategy": "multi_worker_mirrored", "replicas": 2,
               "error": f"worker:0 failed: {why}"},
              {"run": "parameter_server:2", "strategy": "parameter_server", "replicas": 2,
               "error": "coordinator failed: the pipeline runs Python"}]
    b = BenchResult.model_validate(
        {"schema": "rung/bench/v1", "workload": "w.py", "per_replica_batch": 8, "steps": 10, "warmup": 2,
         "cores": 2, "hosts": 1, "link_mbit": None,
         "link": {"where": "loopback", "bytes_per_second": 1e9, "rtt_seconds": 1e-4},
         "runs": [], "failed": failed, "calibration": None, "notes": []})
    assert failed_groups(b.failed) == [(["single_device@tf_keras", "mwms:2"], why),
                                       (["ps:2"], "coordinator failed: the pipeline runs Python")]
    out = io.StringIO()
    render(b, Console(file=out, width=200))
    assert out.getvalue().count("negative_slope") == 1
    assert "single_device@tf_keras, mwms:2 failed: InputError" in out.getvalue()


def test_a_ray_parameter_server_run_says_which_workers_shared_a_ps_tasks_node():
    """Ray places a PS run's tasks round the nodes (chief, workers, ps tasks): on two nodes
    with two workers and one ps task, worker 0 lands on the ps task's node. The prediction
    takes every worker across the link, so the run says so, and how many nodes avoid it."""
    from rung.bench.bench import beside_ps_line

    line = beside_ps_line(["10.0.0.2", "10.0.0.1"], ["10.0.0.2"])
    assert line.startswith("1 of 2 worker(s) ran on a node that holds a parameter-server task")
    assert line.endswith("a cluster of 3 nodes or more gives each worker a node without one")
    assert beside_ps_line(["a", "a", "b"], ["a", "c"]).startswith("2 of 3 worker(s)")
    assert "a cluster of 5 nodes" in beside_ps_line(["a", "a", "b"], ["a", "c"])
    assert beside_ps_line(["b", "c"], ["a"]) is None  # every worker on a node of its own: the model's case
    assert beside_ps_line(["a", "a"], ["a"]) is None  # one node: loopback for all, as predicted
