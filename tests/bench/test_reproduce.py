"""`rung simulate --bench`: a bench run reproduced by the simulation from its inputs.
On a recorded real bench (tests/report/data/bench-mlp.json), no TensorFlow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rung.bench import predict
from rung.bench.reproduce import basis_of, reproduce
from rung.spec.benchresult import BenchResult

BENCH = Path(__file__).parents[1] / "report" / "data" / "bench-mlp.json"


def bench(**straggler) -> BenchResult:
    data = json.loads(BENCH.read_text())
    if straggler:
        for r in data["runs"]:
            if r["strategy"] == "multi_worker_mirrored":
                r["straggler"] = straggler
    return BenchResult.model_validate(data)


def test_each_synchronous_run_is_simulated_beside_what_was_measured():
    out = reproduce(bench(), steps=4000)
    assert [r["run"] for r in out["runs"]] == ["mirrored:2", "mwms:2"]   # parameter servers are not simulated
    for r in out["runs"]:
        # the simulation's expectation and the closed form share every term but the slowest worker's wait
        assert r["simulated_examples_per_second"] == pytest.approx(r["closed_form_examples_per_second"], rel=0.03)
        assert r["simulated_over_measured"] == pytest.approx(
            r["simulated_examples_per_second"] / r["measured_examples_per_second"])


def test_a_straggler_is_one_workers_draws_times_its_factor():
    b = bench(worker=1, factor=3.0)
    basis, _ = basis_of(b, "test")
    mwms = next(r for r in reproduce(b, steps=4000)["runs"] if r["strategy"] == "multi_worker_mirrored")
    compute = predict.predict_step_seconds(basis, "multi_worker_mirrored", 2)["compute"]
    # hand arithmetic: the slowed worker takes 3 x compute; the other rarely catches up
    assert mwms["simulated_straggler_seconds"] == pytest.approx(2.0 * compute, rel=0.03)
    plain = next(r for r in reproduce(bench(), steps=4000)["runs"] if r["strategy"] == "multi_worker_mirrored")
    assert mwms["simulated_examples_per_second"] < plain["simulated_examples_per_second"]


def test_the_command_prints_a_table_or_json_and_refuses_bad_input(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "rung", "simulate", *args], capture_output=True, text=True,
                              timeout=120)

    r = run("--bench", str(BENCH))
    assert r.returncode == 0 and "mwms:2" in r.stdout and "simulated / measured" in r.stdout, r.stderr
    j = run("--bench", str(BENCH), "--json")
    assert json.loads(j.stdout)["schema"] == "rung/bench-simulation/v1"
    old = json.loads(BENCH.read_text())
    del old["basis"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    for args, words in ((["--bench", str(tmp_path / "old.json")], "basis"),
                        (["--bench", str(BENCH), "--workers", "4"], "--workers"),
                        ([], "give one of"),
                        (["--scenario", "x.yaml", "--bench", str(BENCH)], "give one of")):
        bad = run(*args)
        assert bad.returncode == 2 and words in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


KILLED = Path(__file__).parents[1] / "report" / "data" / "bench-mlp-kill.json"  # a real `--kill 1@40`, 80 steps


def test_a_killed_run_is_reproduced_whole_from_its_checkpoints_and_a_fresh_start():
    b = BenchResult.model_validate(json.loads(KILLED.read_text()))
    killed_run = next(r for r in b.runs if r.kill)
    plain_run = next(r for r in b.runs if r.strategy == "multi_worker_mirrored" and not r.kill)
    w = killed_run.kill.whole_run
    out = reproduce(b, steps=4000)
    plain, whole = out["runs"]
    assert plain["run"] == "mwms:2" and whole["run"] == "mwms:2 kill w1@40 (whole run)"
    k = whole["kill"]
    # the model's checkpoint rule meets what TensorFlow's BackupAndRestore did in the real run
    assert k["predicted_resumed_from_step"] == k["resumed_from_step"] == killed_run.kill.resumed_from_step
    # a save costs the step that takes it: seen in the run's own steps, slower than the unkilled run's
    assert w.checkpoint_seconds > 0 and w.step_seconds_before_kill > plain_run.step_seconds_mean
    # by hand on the run's timeline: from the warm-up's end, the steps before the kill with
    # their checkpoints (after steps 5, 10 ... 40), the bench's detection, a fresh start to
    # the first step (the mean of the two runs' first starts), the rest of the steps from
    # the restored step 40 with theirs (45 ... 80)
    step = 2 * b.per_replica_batch / plain["simulated_examples_per_second"]   # the same simulated steps
    total, kill_at, resumed = b.steps + b.warmup, w.steps_before_kill, killed_run.kill.resumed_from_step
    fresh = (plain_run.startup_seconds + killed_run.startup_seconds) / 2
    saves = (kill_at // 5 - b.warmup // 5) + (total // 5 - resumed // 5)
    window = ((kill_at - b.warmup) * step + w.detection_seconds + fresh + (total - resumed - 1) * step
              + saves * w.checkpoint_seconds)
    assert whole["simulated_examples_per_second"] == pytest.approx(b.steps * 2 * b.per_replica_batch / window)
    assert whole["measured_examples_per_second"] == w.examples_per_second
    # the same accounting on the unkilled run's measured step: the kill's cost alone
    twin = plain_run.step_seconds_mean
    window = ((kill_at - b.warmup) * twin + w.detection_seconds + fresh + (total - resumed - 1) * twin
              + saves * w.checkpoint_seconds)
    assert k["from_unkilled_run"]["step_seconds"] == twin
    assert k["from_unkilled_run"]["examples_per_second"] == pytest.approx(b.steps * 2 * b.per_replica_batch / window)
    # the kill costs throughput, in the simulation as in the run
    assert whole["simulated_examples_per_second"] < plain["simulated_examples_per_second"]


def test_a_slowed_worker_killed_too_is_reproduced_from_its_own_slow_start():
    # a real `--straggler 1:2 --kill 1@20`: both runs are killed; the slowed one starts slowly
    b = BenchResult.model_validate(json.loads((KILLED.parent / "bench-mlp-kill-slow.json").read_text()))
    rows = {r["run"]: r for r in reproduce(b, steps=4000)["runs"]}
    plain, slowed = rows["mwms:2 kill w1@20 (whole run)"], rows["mwms:2 w1×2 kill w1@20 (whole run)"]
    slow_run = next(r for r in b.runs if r.straggler)
    plain_run = next(r for r in b.runs if r.strategy == "multi_worker_mirrored" and not r.straggler)
    # each from the fresh starts of its own configuration: a start-up under SIGSTOP is not a plain one
    assert slowed["kill"]["fresh_starts_seconds"] == [slow_run.startup_seconds]
    assert slowed["kill"]["from_unkilled_run"] is None  # every run of this bench was killed: no twin
    assert plain["kill"]["fresh_starts_seconds"] == [plain_run.startup_seconds]
    assert slow_run.startup_seconds > plain_run.startup_seconds
    for r, run in ((plain, plain_run), (slowed, slow_run)):
        assert r["kill"]["predicted_resumed_from_step"] == run.kill.resumed_from_step
    assert slowed["simulated_examples_per_second"] < plain["simulated_examples_per_second"]


def test_a_run_on_tf_keras_is_reproduced_from_the_one_device_step_on_tf_keras():
    """A bench whose one-device step was measured on both Kerases (multi-worker runs on
    tf-keras): the multi-worker run is reproduced from the tf-keras step, the mirrored run
    (Keras 3) from the Keras 3 one. Hand arithmetic: two co-located replicas compute twice
    the one-device step, so halving tf-keras's step halves the multi-worker compute and
    leaves the mirrored one alone."""
    data = json.loads(BENCH.read_text())
    assert {r["keras"] for r in data["runs"] if r["strategy"] == "multi_worker_mirrored"} == {"tf_keras"}
    one = data["basis"]["one_device_step_seconds"]
    data["bases"] = {"keras3": data["basis"], "tf_keras": dict(data["basis"], one_device_step_seconds=one / 2)}
    b = BenchResult.model_validate(data)
    assert basis_of(b, "test", keras="tf_keras")[0].one_device_step_seconds == one / 2
    assert basis_of(b, "test", keras="keras3")[0].one_device_step_seconds == one
    assert basis_of(b, "test")[0].one_device_step_seconds == one                # the bench's own basis
    before = {r["run"]: r for r in reproduce(bench(), steps=4000)["runs"]}
    after = {r["run"]: r for r in reproduce(b, steps=4000)["runs"]}
    assert after["mirrored:2"]["closed_form_examples_per_second"] == before["mirrored:2"]["closed_form_examples_per_second"]
    assert after["mwms:2"]["closed_form_examples_per_second"] > before["mwms:2"]["closed_form_examples_per_second"]
    basis = basis_of(b, "test", keras="tf_keras")[0]
    mw = next(r for r in b.runs if r.strategy == "multi_worker_mirrored")
    closed = predict.predict_step_seconds(predict.with_fixed_cost(basis, mw.testbed_sync_seconds), "multi_worker_mirrored",
                                          2)
    assert closed["compute"] == pytest.approx(2 * one / 2)
    assert after["mwms:2"]["closed_form_examples_per_second"] == pytest.approx(2 * b.per_replica_batch / closed["step"])
