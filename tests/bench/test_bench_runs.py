"""`rung bench` for real: local processes with TF_CONFIG, test hosts with shaped links,
a straggler, kills, Ctrl-C; and nothing left behind. Small model, few steps (2 cores)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from rung.bench import cpuload
from rung.bench.netns import leftovers
from rung.bench.reproduce import reproduce
from rung.bench.task import PS_ROUNDS
from rung.bench.warm import enabled as warm_enabled
from rung.examples import workload_examples
from rung.model import preemption
from rung.spec.benchresult import BenchResult
from tests.conftest import interruptible, tagged_processes

pytestmark = [pytest.mark.tf, pytest.mark.serial]
MLP = str(workload_examples()["mlp"])
HEAVY = str(workload_examples()["comm_heavy"])
MLP_TEXT = open(MLP).read()
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="test hosts need root")
# Tests that assert nothing on speed and make no test host run in the parallel pass (make
# test): their benches' processes are told from other tests' by their tag (own_tag). Those
# that run parameter servers give them costs written down (written_ps_costs), as a team's
# earlier measurement would be: they assert nothing on what the costs predict.
beside = pytest.mark.parallel


def bench(*args, timeout=400, env=None):
    r = subprocess.run([sys.executable, "-m", "rung", "bench", *args, "--json"], capture_output=True, text=True,
                       timeout=timeout, env=None if env is None else {**os.environ, **env})
    return r, (json.loads(r.stdout) if r.returncode == 0 else None)


def task_processes(tag: str, warm_too: bool = False) -> list[int]:
    """The bench's task processes a test started (`tag`: its own_tag): started cold (their
    command line) or forked from a warm process (their name; their command line is the warm
    process's), and with `warm_too` the warm processes themselves."""
    found = []
    for pid in tagged_processes(tag):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue  # ended meanwhile
        if b"rung.bench.task" in cmd or name == "rung.bench.task" or (warm_too and b"rung.bench.warm" in cmd):
            found.append(pid)
    return found


@pytest.fixture(scope="session")
def ps_costs(tmp_path_factory):
    """Parameter-server costs for 2 workers, measured once by the bench's own function
    (`rung.bench.psbench` in its own processes, about 20 s) and reused by the benches below
    (`--ps-costs`, in the form `python -m rung.bench.psbench 2` prints). Once a session, in
    the serial pass: the parallel pass's benches take written_ps_costs."""
    from rung.bench.bench import _ps_costs

    failures: list[str] = []
    m = _ps_costs({"where": "loopback"}, 2, failures=failures)
    if m is None:
        # psbench failed once here, 14 s in, and passed on every run after (its cause was
        # not captured then): measured again, and said in the summary with the reason
        warnings.warn(f"{failures[-1]}; measured again")
        m = _ps_costs({"where": "loopback"}, 2, failures=failures)
    if m is None:
        pytest.fail("; ".join(failures))
    f = tmp_path_factory.mktemp("ps") / "ps-costs-2.json"
    f.write_text(m.model_dump_json(exclude_none=True))
    return str(f)


@pytest.fixture
def written_ps_costs(tmp_path):
    """Parameter-server costs for 2 workers as `python -m rung.bench.psbench 2` prints them,
    written down (round figures of this machine's order: 2 ms a scheduled step, 6 ms Keras
    fit's, 1 ms a remote variable), for the benches of the parallel pass that only need
    their parameter-server runs to run: measuring them (ps_costs) took 28 s of that pass.
    The serial pass's benches, which check predictions against their runs, measure them."""
    f = tmp_path / "ps-costs-2.json"
    f.write_text(json.dumps({"workers": 2, "dispatch_seconds": 0.002, "keras_dispatch_seconds": 0.006,
                             "variable_seconds": 0.001, "cores": os.cpu_count()}))
    return str(f)


def test_parameter_server_costs_are_measured_here(ps_costs):
    m = json.loads(open(ps_costs).read())
    assert m["workers"] == 2 and m["cores"] == os.cpu_count()
    # a bare scheduled step, Keras fit's step on the cluster, a variable's remote read and
    # update, and the rate of a 4 MiB variable's transfers: each took time here
    assert m["dispatch_seconds"] > 0 and m["keras_dispatch_seconds"] > 0 and m["variable_seconds"] > 0
    assert m["keras_local_step_seconds"] > 0 and m["remote_bytes_per_second"] > 0
    # over loopback: no test link's round trip added
    assert m["variable_seconds_loopback"] == m["variable_seconds"]
    # the same fit at 8 steps a call: Keras's cost per step on the cluster fell (0.59-0.65 of
    # one step a call in every psbench here), and so did its own local work per step
    assert m["looped_steps"] == 8
    assert 0 < m["keras_looped_dispatch_seconds"] < m["keras_dispatch_seconds"], m
    assert 0 < m["keras_local_looped_step_seconds"] < m["keras_local_step_seconds"], m


@beside
def test_a_failed_psbench_says_why():
    """psbench in its own process fails (no workers): the bench gets no costs, and the
    reason, TensorFlow's own last line, instead of a silent fallback to the defaults."""
    from rung.bench.bench import _ps_costs

    failures: list[str] = []
    assert _ps_costs({"where": "loopback"}, 0, failures=failures) is None
    assert failures == ["rung.bench.psbench 0 failed (exit code 1: ValueError: There must be at least one worker.)"]


def colocated(basis: dict, n: int) -> float:
    """N co-located replicas' compute in one replica's, by hand: the cores the basis's steps
    kept busy (measured in its run, so never missing) over the machine's, N times, at least 1."""
    cores, c = basis["cores"], basis["step_cpu_cores"]
    assert 0 < c <= cores + 0.05, basis
    return max(1.0, n * min(c, cores) / cores)


def reused(b: dict, path: str) -> bool:
    """The bench took its 2-worker parameter-server costs from `path`, as they are there."""
    kept = json.loads(open(path).read())
    got = b["ps_costs"]["2"]
    return got["reused_from"] == path and got["keras_dispatch_seconds"] == kept["keras_dispatch_seconds"] \
        and any(n.startswith(f"parameter-server costs for 2 worker(s) reused from {path}") for n in b["notes"])


@pytest.fixture(autouse=True)
def nothing_left_behind(own_tag):
    """Every bench task and warm process the test started has ended (its own, by the tag they
    inherit: tests of the parallel pass run benches beside it), and no test host is left
    (only tests of the serial pass make them)."""
    yield
    deadline = time.monotonic() + 5  # an ended task may take a moment to leave /proc
    while task_processes(own_tag, warm_too=True) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert task_processes(own_tag, warm_too=True) == [], "bench tasks or their warm processes still running"
    if os.geteuid() == 0:
        assert leftovers() == [], "test hosts left behind"


def test_every_strategy_runs_for_real(tmp_path, ps_costs):
    html = tmp_path / "bench.html"
    # MirroredStrategy with each cross_device_ops that runs on CPU devices as well: each a
    # real run with the model's prediction for that option
    r, b = bench(MLP, "--runs", "single_device,mirrored:2,mirrored:2:hierarchical,mirrored:2:reduction,"
                 "multi_worker_mirrored:2,parameter_server:2", "--steps", "6", "--warmup", "2", "--html", str(html),
                 "--ps-costs", ps_costs)
    assert r.returncode == 0, r.stderr[-800:]
    assert b["schema"] == "rung/bench/v1" and b["weak_scaling"]
    runs = {x["strategy"] + (":" + x["option"] if x.get("option") else "")
            + ("@" + x["basis_for_keras"] if x.get("basis_for_keras") else ""): x for x in b["runs"]}
    # a second one-device run, on tf-keras: the basis of the runs on tf-keras
    assert list(runs) == ["single_device", "single_device@tf_keras", "mirrored", "mirrored:hierarchical",
                          "mirrored:reduction", "multi_worker_mirrored", "parameter_server"]
    assert {k: v["keras"] for k, v in runs.items()} == {
        "single_device": "keras3", "single_device@tf_keras": "tf_keras", "mirrored": "keras3",
        "mirrored:hierarchical": "keras3", "mirrored:reduction": "keras3",
        "multi_worker_mirrored": "tf_keras", "parameter_server": "tf_keras"}
    for option in ("hierarchical", "reduction"):
        x = runs[f"mirrored:{option}"]
        assert x["option"] == option and x["examples_per_second"] > 0 and x["predicted_step_seconds"] > 0
        # 399,370 float32 gradients over 2 devices at 5 GB/s: tree 2 x 1 x M, one device 2 x 1 x M
        assert x["predicted_terms"]["comm"] == pytest.approx(2 * 399_370 * 4 / 5e9, rel=1e-6)
    # each run is predicted, and its efficiency taken, from the one-device step on its own
    # Keras: two co-located replicas share the cores that step kept busy; a PS worker
    # computes it once
    one_k3, one_tf = runs["single_device"]["step_seconds_mean"], runs["single_device@tf_keras"]["step_seconds_mean"]
    assert b["bases"]["keras3"]["one_device_step_seconds"] == one_k3 and b["basis"]["one_device_step_seconds"] == one_k3
    assert b["bases"]["tf_keras"]["one_device_step_seconds"] == one_tf
    assert runs["mirrored"]["predicted_terms"]["compute"] == pytest.approx(colocated(b["bases"]["keras3"], 2) * one_k3)
    assert runs["multi_worker_mirrored"]["predicted_terms"]["compute"] == pytest.approx(
        colocated(b["bases"]["tf_keras"], 2) * one_tf)
    assert runs["parameter_server"]["predicted_terms"]["compute"] == pytest.approx(one_tf)
    mw = runs["multi_worker_mirrored"]
    assert mw["scaling_efficiency"] == pytest.approx(one_tf / mw["step_seconds_mean"])
    assert any("predicted from the one-device step on tf_keras" in n for n in b["notes"])
    assert runs["multi_worker_mirrored"]["processes"] == 2 and runs["parameter_server"]["processes"] == 4
    assert reused(b, ps_costs)
    for x in b["runs"]:
        for key in ("strategy", "replicas", "hosts", "link_mbit", "examples_per_second", "step_seconds_p50",
                    "step_seconds_p95", "scaling_efficiency", "predicted_step_seconds", "prediction_error"):
            assert key in x, key
        assert x["examples_per_second"] > 0 and x["step_seconds_p50"] <= x["step_seconds_p95"]
        # the cores the lead task's steps kept busy: its CPU time over their wall time, at most
        # the machine's CPUs; a parameter-server run's steps finish on other processes: none
        cores = x["step_cpu_cores"]
        assert (cores is None) if x["strategy"] == "parameter_server" else 0 < cores <= (os.cpu_count() or 1) + 0.05, x
    # 399,370 float32 gradients; ring all-reduce over 2 replicas sends 2 x 1/2 of them
    assert runs["multi_worker_mirrored"]["gradient_bytes_per_step"] == pytest.approx(399_370 * 4)
    assert any("share this machine's" in n for n in b["notes"])
    # the test bed's fixed cost of a multi-worker step, measured in the run's own cluster
    # with a 5-parameter model, is part of the prediction (whether it brings this 6-step
    # run's prediction closer is a measurement, made in docs/results.md over 13 runs: a
    # loaded machine moves a run this short by more than the probe's figure)
    mw = runs["multi_worker_mirrored"]
    probe, sync = mw["probe"], mw["testbed_sync_seconds"]
    assert 0 < probe["local_step_seconds"] < probe["step_seconds"] and 0 < sync < mw["step_seconds_mean"]
    assert mw["predicted_terms"]["sync"] == pytest.approx(sync + 0.065 * mw["predicted_terms"]["compute"])
    assert "testbed_sync_seconds" not in runs["parameter_server"] and "probe" not in runs["mirrored"]
    # the same runs as a report: measured beside predicted, drawn in Chromium
    from tests.report.browser import open_report, require_chromium
    from tests.report.test_html import check_rendered

    require_chromium()
    page = open_report(html)
    check_rendered(page, ["bench-throughput", "bench-steps"])
    for x in b["runs"]:
        assert f"{x['examples_per_second']:,.0f}" in page.text


@beside
def test_a_workload_that_runs_tensorflow_when_imported_runs_multi_worker():
    # TextVectorization adapted at the top of the file: imported before the strategy was
    # created, TensorFlow refused ("Collective ops must be configured at program startup")
    path = os.path.join(os.path.dirname(__file__), "..", "measure", "workloads", "adapt_at_import.py")
    r, b = bench(path, "--runs", "multi_worker_mirrored:2", "--steps", "4", "--warmup", "1")
    assert r.returncode == 0, r.stderr[-800:]
    mw = next(x for x in b["runs"] if x["strategy"] == "multi_worker_mirrored")
    assert mw["examples_per_second"] > 0 and mw["gradient_bytes_per_step"] > 0


@beside
def test_a_dataset_function_without_an_input_context_runs_multi_worker_and_parameter_servers(tmp_path,
                                                                                            written_ps_costs):
    """`def make_dataset(batch_size)`, as most files write it: every multi-worker and
    parameter-server run called it with the InputContext too and failed on "make_dataset()
    takes 1 positional argument but 2 were given", while rung init's train.py ran it (sharded
    by data). The bench's workers now build it as train.py does."""
    text = MLP_TEXT.replace("def make_dataset(batch_size, input_context=None):", "def make_dataset(batch_size):")
    text = text.replace("    if input_context is not None:\n        ds = ds.shard(input_context.num_input_pipelines, "
                        "input_context.input_pipeline_id)\n", "")
    assert "input_context" not in text
    path = tmp_path / "one_argument.py"
    path.write_text(text)
    r, b = bench(str(path), "--runs", "multi_worker_mirrored:2,parameter_server:2", "--steps", "4", "--warmup", "1",
                 "--ps-costs", written_ps_costs)
    assert r.returncode == 0, r.stderr[-800:]
    assert {x["strategy"] for x in b["runs"]} >= {"multi_worker_mirrored", "parameter_server"}
    assert all(x["examples_per_second"] > 0 for x in b["runs"])


@beside
def test_a_partitioned_embedding_runs_beside_its_prediction(written_ps_costs):
    """Parameter servers with the guide's MinSizePartitioner over two PS tasks: a real run
    with the model's prediction for that option."""
    rec = str(workload_examples()["recommender"])
    r, b = bench(rec, "--runs", "single_device,parameter_server:2:partitioned", "--ps-tasks", "2", "--steps", "6",
                 "--warmup", "2", "--ps-costs", written_ps_costs, timeout=600)
    assert r.returncode == 0, r.stderr[-800:]
    ps = next(x for x in b["runs"] if x["strategy"] == "parameter_server")
    assert ps["option"] == "partitioned" and ps["ps_tasks"] == 2 and ps["examples_per_second"] > 0
    assert ps["predicted_step_seconds"] > 0 and reused(b, written_ps_costs)


def test_synchronized_batch_norm_is_predicted_from_the_small_all_reduce_the_run_measures():
    """Four synchronized BatchNorm layers under multi-worker: 24 small all-reduces a step in
    sequence, each timed by the run's probe in its own cluster. What the layers cost is read
    against their unsynchronized twin, benched in the same test: the difference of the two
    measured multi-worker steps against the difference of the two predictions. The test
    bed's level (the twin's own error, +3% to +32%) cancels there; it does not in each
    prediction's error, which is why a line on the error without the term (too fast) failed
    in CI at +7% (docs/results.md)."""
    path = os.path.join(os.path.dirname(__file__), "sync_bn.py")
    args = ("--runs", "single_device,multi_worker_mirrored:2", "--steps", "40", "--warmup", "3")
    # the twin is benched on either side of the synchronized model, and its two multi-worker
    # steps averaged: its step was the noisy side of the difference (1.51-2.53x its one-device
    # step across sessions; a run at 1.51x took the term to 0.49 of the cost, docs/results.md),
    # and what the machine drifts between benches is on both sides of the synchronized one
    rt, t = bench(path, *args, env={"RUNG_TEST_SYNC_BN": "0"})
    assert rt.returncode == 0, rt.stderr[-800:]
    r, b = bench(path, *args)
    assert r.returncode == 0, r.stderr[-800:]
    rt2, t2 = bench(path, *args, env={"RUNG_TEST_SYNC_BN": "0"})
    assert rt2.returncode == 0, rt2.stderr[-800:]
    assert b["basis"]["sync_batch_norm_layers"] == 4
    assert t["basis"]["sync_batch_norm_layers"] == t2["basis"]["sync_batch_norm_layers"] == 0
    mw = next(x for x in b["runs"] if x["strategy"] == "multi_worker_mirrored")
    twins = [next(x for x in res["runs"] if x["strategy"] == "multi_worker_mirrored") for res in (t, t2)]
    latency = mw["small_allreduce_seconds"]
    assert 0 < latency < 0.05  # a float between two processes on loopback: a few ms at most
    for tw in twins:
        assert tw.get("small_allreduce_seconds") is None  # no synchronized layer, no probe
        assert tw["predicted_terms"].get("sync_batch_norm", 0.0) == 0.0
    bn = mw["predicted_terms"]["sync_batch_norm"]
    assert bn == pytest.approx(4 * 6 * latency)
    twin_measured = sum(tw["step_seconds_mean"] for tw in twins) / 2
    twin_predicted = sum(tw["predicted_step_seconds"] for tw in twins) / 2
    measured, predicted = mw["step_seconds_mean"], mw["predicted_step_seconds"]
    cost = measured - twin_measured  # what the layers cost the step, measured
    said = predicted - twin_predicted  # and predicted: the term, and the one-device steps' difference
    benches = (("synchronized", b), ("twin", t), ("twin again", t2))
    machine = {f"{name} {x['strategy']}": x.get("machine") for name, res in benches for x in res["runs"]}
    figures = (f"measured {measured * 1e3:.1f} ms (twin "
               + " and ".join(f"{tw['step_seconds_mean'] * 1e3:.1f}" for tw in twins) + "), predicted "
               f"{predicted * 1e3:.1f} ms (twin " + " and ".join(f"{tw['predicted_step_seconds'] * 1e3:.1f}"
                                                     for tw in twins)
               + f"), one small all-reduce {latency * 1e3:.2f} ms, one device "
               f"{b['basis']['one_device_step_seconds'] * 1e3:.1f} ms (twin "
               + " and ".join(f"{x['basis']['one_device_step_seconds'] * 1e3:.1f}" for x in (t, t2)) + "), terms "
               + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in mw["predicted_terms"].items())
               + f"; other work's share of the CPU: {machine}")
    # the bench reads what else the machine did while each run was timed, and says so
    busy = [k for k, m in machine.items() if m is not None and m["outside_cpu_share"] >= cpuload.BUSY_SHARE]
    for name, res in benches:
        for x in res["runs"]:
            said_busy = any("work other than its own took" in n for n in x["notes"])
            assert said_busy == (f"{name} {x['strategy']}" in busy), x["notes"]
    if busy:
        # beside busy loops, seven benches of this model read the small all-reduce at 1.0-2.8 ms
        # (1.1-1.5 quiet), their error with the term -2% to +55%; its unsynchronized twin +13%
        # and +55% (docs/results.md): a busy machine moves the test bed as much as the term
        pytest.skip(f"the machine was busy with other work while {', '.join(busy)} ran: {figures}")
    # the layers cost the step what the model says, within a factor of 2 either way, and the
    # term is the bulk of it. Four pairs here: the predicted difference 1.03-1.57x the measured
    # one, the term alone 0.85-1.08x (docs/results.md). Each prediction's own error is the test
    # bed's level, which the twin shows (+21% to +32% in those pairs; the sync model's +13% to
    # +43%, CI's +39%): not asserted here
    assert cost > 0, figures
    assert 0.5 < said / cost < 2.0, figures
    assert 0.5 < bn / cost < 2.0, figures


def test_a_table_updated_sparsely_under_mirrored_variables_is_predicted_from_the_step_under_them():
    """tf-keras's Adagrad copies a sparsely updated embedding table every step under
    mirrored variables (`--keras tf_keras` runs the one-host runs there, as rung init
    --keras does). Predicted from the one-device step alone, mirrored:2 came out 88% too
    fast (2.8 ms against 23.8 ms); the single-device run times the step under a one-device
    MirroredStrategy too, and the prediction carries the difference on every replica."""
    path = str(Path(__file__).parents[1] / "measure" / "workloads" / "embedding_adagrad.py")
    r, b = bench(path, "--runs", "single_device,mirrored:2", "--keras", "tf_keras", "--steps", "20", "--warmup", "3")
    assert r.returncode == 0, r.stderr[-800:]
    assert {x["keras"] for x in b["runs"]} == {"tf_keras"}
    assert any("ran on tf_keras, as asked" in n for n in b["notes"])
    extra = b["basis"]["strategy_step_extra_seconds"]
    assert extra > b["basis"]["one_device_step_seconds"]  # a copy of the table: many sparse updates' time
    mw = next(x for x in b["runs"] if x["strategy"] == "mirrored")
    term = mw["predicted_terms"]["mirrored_variables"]
    # the two co-located replicas' extra on the shared cores: between one (their copies at
    # once) and two (one after the other), and the term takes the middle. Taken as two
    # before: on this machine mirrored:2 came out +64-69% (28.8 ms measured, 48.8 predicted)
    assert term == pytest.approx(1.5 * extra)
    measured, predicted = mw["step_seconds_mean"], mw["predicted_step_seconds"]
    figures = (f"measured {measured * 1e3:.1f} ms, predicted {predicted * 1e3:.1f} ms, the term {term * 1e3:.1f} ms, "
               f"one device {b['basis']['one_device_step_seconds'] * 1e3:.2f} ms")
    busy = [x["strategy"] for x in b["runs"]
            if x.get("machine") and x["machine"]["outside_cpu_share"] >= cpuload.BUSY_SHARE]
    if busy:
        pytest.skip(f"the machine was busy with other work while {', '.join(busy)} ran: {figures}")
    assert (predicted - term) / measured - 1 < -0.5, figures  # without the term: far too fast
    # and the step lies between the two ends (one copy's time, two), a fifth either side: what
    # the term claims. (An error under 40% was asserted too, which a step at the first end
    # fails, as the term takes the middle: a suite's run measured 34.7 ms, predicted 48.9 ms,
    # +41%, with 2.68 ms on one device and a copy of 28.8 ms, the copies overlapping whole)
    assert 0.8 * (predicted - term / 3) < measured < 1.2 * (predicted + term / 3), figures


@root_only
def test_two_test_hosts_on_a_shaped_link(tmp_path, ps_costs):
    cal = tmp_path / "cal.json"
    r, b = bench(HEAVY, "--runs", "single_device,multi_worker_mirrored:2,parameter_server:2", "--hosts", "2",
                 "--link-mbit", "200", "--steps", "3", "--warmup", "1", "--calibrate", "--calibration-out", str(cal),
                 "--ps-costs", ps_costs)
    assert r.returncode == 0, r.stderr[-800:]
    assert b["link"]["where"] == "test hosts 0 -> 1"
    assert 150 <= b["link"]["bytes_per_second"] * 8 / 1e6 <= 205      # tbf at 200 Mbit/s
    mw = next(x for x in b["runs"] if x["strategy"] == "multi_worker_mirrored")
    assert (mw["hosts"], mw["link_mbit"]) == (2, 200)
    # its workers were forked warm into their test hosts' network namespaces (or, with
    # RUNG_WARM_START=0, started cold by `ip netns exec`)
    assert mw["warm_start"] == warm_enabled()
    # 16.8 MB of gradients: a 2-worker ring moves 16.8 MB each way, at most 25 MB/s
    assert mw["step_seconds_mean"] >= 0.9 * 4_207_626 * 4 / 25e6
    # the PS and the coordinator ran on a third test host: every worker's pull and push of
    # the 16.8 MB crossed the PS host's link, at most 25 MB/s each way, whichever worker's
    # step it was (beside worker 0, as they once ran, its exchange took loopback: 0.19 s
    # a fleet step against 1.80 s predicted)
    ps = next(x for x in b["runs"] if x["strategy"] == "parameter_server")
    assert ps["step_seconds_mean"] >= 0.9 * 4_207_626 * 4 / 25e6
    # one load point fits the share of goodput alone; the file it writes is one rung advise takes
    c = json.loads(cal.read_text())
    assert c["fitted"] and c["testbed_cpu_seconds_per_byte"] == 0.0 and 0.4 < c["allreduce_share_of_goodput"] < 1.2
    assert c["fitted_on"] == ["multi_worker_mirrored:2 at 200 Mbit/s"]
    assert abs(mw["calibrated_prediction_error"]) < 0.02                # in-sample: one point, one constant
    # the parameter-server costs the bench predicted its PS run with go to rung advise too:
    # the coordinator's whole per-step cost and a variable's loopback read and update
    m = json.loads(open(ps_costs).read())
    assert c["ps_dispatch_seconds"] == m["keras_dispatch_seconds"] and c["ps_workers"] == 2
    assert c["ps_variable_seconds"] == m.get("variable_seconds_loopback", m["variable_seconds"])
    a = subprocess.run([sys.executable, "-m", "rung", "advise", "--example", "multi-host", "--json",
                        "--calibration", str(cal)], capture_output=True, text=True, timeout=60)
    assert a.returncode == 0, a.stderr
    # the predictions against the runs: the test bed's figures only when nothing else took
    # the machine's CPU while they ran (the bench reads it: `machine.outside_cpu_share`)
    figures = {x["strategy"]: (x.get("prediction_error"), x.get("machine")) for x in (mw, ps)}
    busy = [k for k, (_, m) in figures.items() if m is not None and m["outside_cpu_share"] >= cpuload.BUSY_SHARE]
    if busy:
        pytest.skip(f"the machine was busy with other work while {', '.join(busy)} ran: {figures}")
    assert abs(mw["prediction_error"]) < 0.35, figures
    assert abs(ps["prediction_error"]) < 0.35, figures


def test_a_straggler_slows_synchronous_steps_not_parameter_servers(ps_costs):
    # Worker 1 at an eighth of its speed. A parameter-server run used to be timed by a long
    # fit less a short one (now by epochs of one fit), and those pairs scattered by 30% or
    # more on these two cores. With worker 1 at a quarter of its speed, seven benches of 60
    # steps kept 0.20-1.21 of PS throughput against 0.26-0.43 synchronous, and one of them
    # (a fresh clone's run of the suite) had PS below synchronous. At an eighth,
    # synchronous runs keep about 1/8 plus the fixed costs (0.18, 0.20 in two benches), while
    # PS keeps at least the fast worker's half of the fleet (0.80, 0.51): a wider gap for the
    # same noise. The synchronous slowdown shows at any length
    r, b = bench(MLP, "--runs", "single_device,multi_worker_mirrored:2,parameter_server:2", "--straggler", "1:8",
                 "--steps", "60", "--warmup", "2", "--ps-costs", ps_costs)
    assert r.returncode == 0, r.stderr[-800:]
    assert reused(b, ps_costs)
    slow = {x["strategy"]: x["straggler"] for x in b["runs"] if x.get("straggler")}
    assert slow["multi_worker_mirrored"]["slowdown"] >= 1.8          # every step waits for worker 1
    assert slow["parameter_server"]["throughput_kept"] > slow["multi_worker_mirrored"]["throughput_kept"]
    # the slowed run would slow its probe too: it takes the fixed cost its twin measured
    plain, slowed = [x for x in b["runs"] if x["strategy"] == "multi_worker_mirrored"]
    assert "probe" in plain and "probe" not in slowed
    assert slowed["testbed_sync_seconds"] == plain["testbed_sync_seconds"] > 0


def test_killed_workers_restart_synchronous_and_not_asynchronous_runs(ps_costs):
    # 30 steps: a parameter-server step takes ~40 ms here, and the kill needs the run
    # still going when its progress (polled every 0.1 s) shows step 6
    r, b = bench(MLP, "--runs", "single_device,multi_worker_mirrored:2,parameter_server:2", "--kill", "1@6",
                 "--steps", "30", "--warmup", "2", "--ps-costs", ps_costs)
    assert r.returncode == 0, r.stderr[-800:]
    assert reused(b, ps_costs)
    # every run after the one-device run uses tf-keras: so does the one-device run, their
    # basis (one run, not two)
    assert [x["keras"] for x in b["runs"] if x["strategy"] == "single_device"] == ["tf_keras"]
    assert "bases" not in b and any("single_device ran on tf-keras" in n for n in b["notes"])
    kills = {x["strategy"]: x["kill"] for x in b["runs"] if x.get("kill")}
    mw, ps = kills["multi_worker_mirrored"], kills["parameter_server"]
    assert mw["happened"] and ps["happened"]
    assert 6 <= ps["killed_at_step"] < 2 + 30                         # where the kill landed, not the end
    assert mw["restarts"] == 1 and mw["recovery_seconds"] > 0 and mw["resumed_from_step"] > 0
    assert mw["steps_lost"] <= 5 + 2                                   # at most a save interval (+ lag)
    # it cannot resume from a checkpoint past the step it was killed at
    assert mw["resumed_from_step"] <= mw["killed_at_step"]
    assert mw["steps_lost"] == mw["killed_at_step"] - mw["resumed_from_step"]
    assert ps["restarts"] == 0 and ps["completed_all_steps"] and ps["steps_lost"] == 0
    # every timed epoch's 30 steps, the kill notwithstanding
    assert next(x for x in b["runs"] if x["strategy"] == "parameter_server")["steps_timed"] == PS_ROUNDS * 30
    # the killed synchronous run, timed whole from its own timeline, beside the same run unkilled
    whole = mw["whole_run"]
    plain = next(x for x in b["runs"] if x["strategy"] == "multi_worker_mirrored" and not x.get("kill"))
    assert whole["steps_before_kill"] == mw["killed_at_step"]           # the timeline agrees with the progress
    assert whole["steps_after_restart"] == 2 + 30 - mw["resumed_from_step"]
    assert whole["detection_seconds"] > 0 and whole["restart_first_step_seconds"] > 0
    assert whole["checkpoint_seconds"] > 0                              # a save slows the step that takes it
    # a warm start's start-up counts the import its warm process took (docs/bench.md)
    assert plain["warm_start"] == warm_enabled() and plain["startup_seconds"] > 0
    # the killed run's probe would have been killed too: it takes its twin's fixed cost
    killed = next(x for x in b["runs"] if x["strategy"] == "multi_worker_mirrored" and x.get("kill"))
    assert killed["testbed_sync_seconds"] == plain["testbed_sync_seconds"] > 0 and "probe" not in killed
    # the kill costs at least the restart: the whole run is slower than the unkilled one
    assert whole["examples_per_second"] < plain["examples_per_second"]
    assert whole["window_seconds"] > whole["restart_first_step_seconds"] + whole["detection_seconds"]
    # reproduced: the model's checkpoint rule gives the step TensorFlow resumed from
    sim = {x["run"]: x for x in reproduce(BenchResult.model_validate(b), steps=2000)["runs"]}
    killed = sim["mwms:2 kill w1@6 (whole run)"]
    assert killed["kill"]["predicted_resumed_from_step"] == mw["resumed_from_step"]
    # and the model's one-kill accounting (every step, the lost ones again, every save, the
    # bench's detection, the restart) meets the measured window. It is fed the unkilled run's
    # measured step: on unshaped loopback the modelled step itself is known to be fast
    # (docs/results.md), which is not the kill's accounting. Fed the restart this run took,
    # the accounting alone is checked: 0.98-0.99 in six runs, one beside a busy loop
    # (docs/results.md)
    run = next(x for x in b["runs"] if x.get("kill") and x["strategy"] == "multi_worker_mirrored")
    step = plain["step_seconds_mean"]

    def accounted(restart_first_step):
        wall = preemption.killed_run_seconds(2 + 30, whole["steps_before_kill"], mw["save_freq_steps"], step,
                                             whole["detection_seconds"] + restart_first_step - step,
                                             whole["checkpoint_seconds"])
        return (wall - 2 * step) / whole["window_seconds"]

    assert 0.8 < accounted(whole["restart_first_step_seconds"]) < 1.25, whole
    # the model takes a fresh start for the restart (simulate has no other): the two warm
    # starts' mean, their import added, against the cold restart measured. It is the bulk
    # of this short run's window, so it is checked on its own: 0.88-0.94 in five quiet runs, but
    # one run in eight had a window 2-3 s short of the others', its accounting with the fresh
    # start 1.43 (docs/results.md); beside a busy loop 1.23: fresh starts on two shared cores vary,
    # so within a factor of 2
    fresh = (plain["startup_seconds"] + run["startup_seconds"]) / 2
    assert 0.5 < whole["restart_first_step_seconds"] / fresh < 2.0, (fresh, whole)


def test_ctrl_c_reaps_every_process(tmp_path, own_tag):
    args = [sys.executable, "-m", "rung", "bench", HEAVY, "--runs", "single_device,multi_worker_mirrored:2",
            "--steps", "200"]
    if os.geteuid() == 0:
        args += ["--hosts", "2", "--link-mbit", "50"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    deadline = time.time() + 120
    while time.time() < deadline and len(task_processes(own_tag)) < 2:
        time.sleep(0.5)
    assert len(task_processes(own_tag)) >= 2, "the multi-worker run never started"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "interrupted" in err


@pytest.mark.parametrize("args,words", [
    (["--runs", "horovod:2"], "unknown strategy"),
    (["--runs", "single_device", "--calibrate", "--calibration-out", "/no/such/folder/cal.json"], "does not exist"),
    (["--link-mbit", "100"], "give --hosts too"),
    (["--straggler", "5:2", "--runs", "multi_worker_mirrored:2"], "does not exist"),
    (["--kill", "1@999", "--runs", "parameter_server:2"], "past the run"),
])
@beside
def test_bad_bench_input_exits_2(args, words):
    r = subprocess.run([sys.executable, "-m", "rung", "bench", MLP, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1


@beside
def test_a_broken_workload_exits_2(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_module_rung\n")
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(bad), "--runs", "single_device"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "ModuleNotFoundError" in r.stderr and r.stdout == ""


@beside
def test_a_step_that_fails_at_the_default_batch_is_told_the_batch_size_the_file_keeps(tmp_path):
    """keras.io's DDIM keeps `batch_size` at its top and draws noise of that batch in its own
    train_step: at the bench's default 32 the one-device run failed with TensorFlow's shapes
    alone ("Incompatible shapes: [8,2] vs. [32,2]"). The line now says the file's number and
    the two ways to give it."""
    work = Path(__file__).parents[1] / "measure" / "workloads" / "own_batch.py"
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(work), "--runs", "single_device", "--steps", "2",
                        "--warmup", "1"], capture_output=True, text=True, timeout=300)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1 and "shapes" in last and "Traceback" not in r.stderr, r.stderr[-1500:]
    assert last.endswith("; the file sets batch_size = 8 and rung ran batches of 32, its default (it reads a file's "
                         "batch from BATCH_SIZE): give --batch 8, or name it BATCH_SIZE"), last
    r, b = bench(str(work), "--runs", "single_device", "--steps", "2", "--warmup", "1", "--batch", "8")
    assert r.returncode == 0 and b["runs"][0]["examples_per_second"] > 0, r.stderr[-1500:]
    assert not any("batch_size = 8" in n for n in b["notes"]), b["notes"]  # given: nothing to say


@beside
def test_runs_at_the_default_batch_of_a_file_that_keeps_its_own_say_both_numbers(tmp_path):
    """keras.io's miniature GPT sets batch_size = 128 at the top and its step runs at any
    batch: the bench ran it at rung's default of 32, and said nothing of the file's 128 (rung
    profile and rung advise did: DEFAULT_BATCH). Now a note says both and how to give it;
    with --batch given, nothing (the test above)."""
    from tests.conftest import TINY_BUILD_MODEL

    path = tmp_path / "gpt.py"
    path.write_text("batch_size = 128\n" + TINY_BUILD_MODEL + "\n\ndef make_dataset(b, input_context=None):\n"
                    "    return tf.data.Dataset.from_tensor_slices((tf.zeros((64, 4)), tf.zeros((64, 1))))"
                    ".repeat().batch(b)\n")
    r, b = bench(str(path), "--runs", "single_device", "--steps", "2", "--warmup", "1")
    assert r.returncode == 0 and b["per_replica_batch"] == 32, r.stderr[-1500:]
    assert [n for n in b["notes"] if "batch_size = 128" in n] == [
        "benched at a batch of 32, rung's default (it reads a file's batch from BATCH_SIZE); the file sets "
        "batch_size = 128: if each device trains on 128 examples a step, give --batch 128 or name it BATCH_SIZE "
        "(step times, and what scales, follow the batch)"], b["notes"]


@beside
def test_merging_an_old_or_foreign_calibration_file_exits_2(tmp_path):
    """Points without the fields the fit needs (a file from before the CPU-share model,
    or not a calibration at all) are refused before anything runs."""
    old = tmp_path / "cal.json"
    old.write_text(json.dumps({"points": [{"run": "multi_worker_mirrored:2", "wire_seconds": 1.0,
                                           "cpu_seconds_at_one_second_per_byte": 1.6e7, "comm_seconds": 1.2}]}))
    r = subprocess.run([sys.executable, "-m", "rung", "bench", MLP, "--runs", "single_device", "--calibrate",
                        "--calibration-merge", "--calibration-out", str(old)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "rung/calibration/v1" in r.stderr and "--calibrate" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert r.stdout == "" and "wire_seconds" in old.read_text()  # nothing written over it
    # a v1 file whose points lack a field the fit needs names that field
    old.write_text(json.dumps({"schema": "rung/calibration/v1", "fitted": True, "inter_host_hop_seconds": 1e-4,
                               "allreduce_share_of_goodput": 0.9, "measured_at": "2026-11-30T00:00:00Z",
                               "points": [{"run": "multi_worker_mirrored:2", "workers": 2, "cores": 2,
                                           "link_bytes_per_second": 1e7, "wire_seconds": 1.0, "comm_seconds": 1.2}]}))
    r = subprocess.run([sys.executable, "-m", "rung", "bench", MLP, "--runs", "single_device", "--calibrate",
                        "--calibration-merge", "--calibration-out", str(old)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "points.0.streaming_bytes_per_core" in r.stderr and r.stdout == ""


@beside
def test_a_file_that_runs_every_function_eagerly_says_so_beside_its_runs(tmp_path):
    """tf.config.run_functions_eagerly(True) left in the file: the bench runs what train.py
    would run, op by op (9.2 ms a step of a model whose graph step takes 0.6), and says why."""
    work = tmp_path / "debug_switch.py"
    work.write_text(MLP_TEXT.replace("import tensorflow as tf\n", "import tensorflow as tf\n\n"
                                     "tf.config.run_functions_eagerly(True)\n", 1))
    r, b = bench(str(work), "--runs", "single_device", "--steps", "3", "--warmup", "1")
    assert r.returncode == 0, r.stderr[-800:]
    [run] = b["runs"]
    assert any(n.startswith("ran every tf.function eagerly, as the file asks") for n in run["notes"]), run["notes"]
    r, b = bench(MLP, "--runs", "single_device", "--steps", "3", "--warmup", "1")
    assert not any("eagerly" in n for n in b["runs"][0]["notes"])


@beside
def test_a_failed_run_does_not_lose_the_others():
    """A pipeline that shards its one file across input pipelines trains on one device and
    under MirroredStrategy (one pipeline) and fails under two workers (worker 1 gets no
    data). The bench goes on: the two runs that finished are in the results, the failed
    one is listed with what to change, exit 1, one line on stderr."""
    here = os.path.join(os.path.dirname(__file__), "shard_one_file.py")
    r = subprocess.run([sys.executable, "-m", "rung", "bench", here, "--runs",
                        "single_device,multi_worker_mirrored:2,mirrored:2", "--steps", "5", "--json"],
                       capture_output=True, text=True, timeout=400)
    assert r.returncode == 1, r.stderr[-2000:]
    out = BenchResult.model_validate(json.loads(r.stdout))
    # mirrored ran after the failure (the second one-device run is on tf-keras, the failed run's basis)
    assert [x.label for x in out.runs] == ["single_device", "single_device@tf_keras", "mirrored:2"]
    (failed,) = out.failed
    assert failed.strategy == "multi_worker_mirrored" and failed.replicas == 2
    assert "shard" in failed.error and "Empty logs" in failed.error
    lines = r.stderr.strip().splitlines()
    # the run named once (before: "mwms:2 failed: multi_worker_mirrored:2: worker:1 failed: ...")
    assert len(lines) == 1 and lines[0].startswith("rung bench: mwms:2 failed: worker:1 failed: "), lines


@beside
def test_a_port_taken_between_picking_and_binding_runs_the_cluster_again_on_new_ports(monkeypatch):
    """The bench picks free ports (bound, then released) and its tasks bind them a moment
    later; another process can take one in between (the suite's parallel pass, a busy
    machine). Here the cluster's first pick has worker 1's port held by a socket of the
    test's own: before, the run failed ("worker:1 failed: UnknownError: Could not start
    gRPC server"); now it runs again on new ports and says so. The port is read off gRPC's
    native ERROR line, which TF_CPP_MIN_LOG_LEVEL=3 hides: a process that profiled in-process
    has 3 (rung's measuring commands set it), and its bench's tasks still log at 2."""
    import socket

    import rung.bench.plan as plan
    from rung.bench.bench import bench as run_bench

    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    held, real, picks = blocker.getsockname()[1], plan.free_ports, []

    def first_cluster_taken(n, host="127.0.0.1"):
        ports = real(n, host)
        picks.append(ports)
        first = n > 1 and sum(len(p) > 1 for p in picks) == 1  # (the link's server picks one port)
        return ports[:1] + [held] + ports[2:] if first else ports

    monkeypatch.setattr(plan, "free_ports", first_cluster_taken)
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        r = run_bench(MLP, 32, plan.parse_runs("multi_worker_mirrored:2"), steps=4, warmup=1)
    finally:
        blocker.close()
    assert r["failed"] == [] and sum(len(p) > 1 for p in picks) == 2
    (mw,) = [x for x in r["runs"] if x["strategy"] == "multi_worker_mirrored"]
    assert mw["notes"][0] == (f"started again on new ports: worker:1 could not serve on 0.0.0.0:{held}: the port "
                              "is in use by another process")
    assert mw["steps_timed"] == 4 and mw["examples_per_second"] > 0


@beside
def test_a_pipeline_that_runs_python_fails_its_parameter_server_run_alone(written_ps_costs):
    """from_generator under parameter servers runs in the chief alone, which then did not
    exit after training (tensorflow#48957): the bench's PS run stops before training, as
    train.py does, says why, and the one-device runs stand."""
    gen = os.path.join(os.path.dirname(__file__), "..", "launch", "generator.py")
    r = subprocess.run([sys.executable, "-m", "rung", "bench", gen, "--runs", "single_device,parameter_server:2",
                        "--steps", "4", "--warmup", "1", "--ps-costs", written_ps_costs, "--json"],
                       capture_output=True, text=True, timeout=400)
    assert r.returncode == 1, r.stderr[-2000:]
    out = BenchResult.model_validate(json.loads(r.stdout))
    assert [x.label for x in out.runs] == ["single_device"]
    (failed,) = out.failed
    assert failed.strategy == "parameter_server" and "runs only in the coordinator's process" in failed.error


@beside
def test_steps_per_execution_is_timed_per_step_and_mirrored_runs_on_tf_keras():
    # Keras calls the batch hooks once per 4 steps: before, the bench timed 3 "steps" of 4
    # each (a quarter of the throughput); and Keras 3's mirrored fit of it fails. A warm-up
    # of 3 steps is run as one whole call: the first call's tracing stays out of the timing
    path = os.path.join(os.path.dirname(__file__), "looped_mlp.py")
    r, b = bench(path, "--runs", "single_device,mirrored:2", "--steps", "12", "--warmup", "3")
    assert r.returncode == 0, r.stderr[-800:]
    single, single_tf, mirrored = b["runs"]
    assert single["steps_timed"] == 12 and mirrored["steps_timed"] == 12
    # the mirrored run (tf-keras) is predicted from the one-device step on tf-keras
    assert single_tf["keras"] == "tf_keras" and single_tf["basis_for_keras"] == "tf_keras"
    assert mirrored["predicted_terms"]["compute"] == pytest.approx(colocated(b["bases"]["tf_keras"], 2)
                                                                   * single_tf["step_seconds_mean"])
    for run in (single, single_tf, mirrored):
        # 3 calls of 4 steps each, none of them traced: Keras's train function was traced in
        # the warm-up alone, as its tf.functions' own tracing counts say. (With a warm-up of
        # 3 steps, not the whole first call of 4, they counted 2 traces among the timed
        # steps, and the longest timed call was 63-158x the median.) Timing could not tell
        # a trace from a stall: two fresh-clone runs failed the timing check this replaces,
        # on one call of 84 ms and one of 337 ms among calls of 3-4 ms
        assert run["traced_while_timed"] == 0, run
        assert run["warmup_seconds"] > 0 and run["step_seconds_p95"] <= run["step_seconds_max"]
    assert single["keras"] == "keras3" and mirrored["keras"] == "tf_keras"
    assert any("steps_per_execution=4" in n and "STEPS_PER_EXECUTION" in n for n in b["notes"])


@beside
def test_a_model_whose_optimizer_clips_runs_mirrored_on_tf_keras():
    # Keras 3 clips each replica's share of the gradient under MirroredStrategy, tf-keras the
    # sum (tests/measure/test_profile.py measures both): the mirrored run is tf-keras's, and
    # predicted from the one-device step there
    path = os.path.join(os.path.dirname(__file__), "clipped_mlp.py")
    r, b = bench(path, "--runs", "single_device,mirrored:2", "--steps", "4", "--warmup", "1")
    assert r.returncode == 0, r.stderr[-800:]
    single, single_tf, mirrored = b["runs"]
    assert (single["keras"], single_tf["keras"], mirrored["keras"]) == ("keras3", "tf_keras", "tf_keras")
    assert single_tf["basis_for_keras"] == "tf_keras"
    assert any("clipnorm=1" in n and "CLIPPING_PER_REPLICA" in n for n in b["notes"]), b["notes"]


@beside
def test_a_file_on_tf_keras_itself_runs_every_strategy_on_tf_keras():
    keras2 = os.path.join(os.path.dirname(__file__), "..", "measure", "workloads", "keras2.py")
    r, b = bench(keras2, "--runs", "single_device,mirrored:2", "--steps", "4", "--warmup", "1")
    assert r.returncode == 0, r.stderr[-800:]
    assert [run["keras"] for run in b["runs"]] == ["tf_keras", "tf_keras"]
    assert any("imports tf_keras itself" in n for n in b["notes"])


@beside
def test_a_compiled_loss_on_data_without_labels_says_what_to_change():
    # Keras 3's fit under OneDeviceStrategy builds the compiled loss on labels None; before,
    # the bench stopped with "ValueError: None values not supported." alone
    path = os.path.join(os.path.dirname(__file__), "..", "measure", "workloads", "unlabelled_loss.py")
    r, _ = bench(path, "--runs", "single_device", "--steps", "2", "--warmup", "1")
    assert r.returncode == 1
    [line] = [x for x in r.stderr.splitlines() if x.startswith("rung: run failed")]
    assert "compile without loss=" in line and "OneDeviceStrategy included" in line


@beside
def test_a_pipeline_that_uses_what_the_coordinator_holds_fails_its_parameter_server_run_alone(written_ps_costs):
    """keras.io's FeatureSpace example makes its table dataset when the file is imported,
    and make_dataset builds on it: under parameter servers the workers cannot receive that
    dataset (tests/measure/ps_captured.py shows it on a real cluster). TensorFlow's
    ClosureInputError was read as rung's own InputError (its name ends so): the bench exited
    2 with a line that began "rung: error: : :UNKNOWN", and the one-device run was lost.
    Then the run failed in its cluster, put down to the FeatureSpace; now the task finds the
    dataset before its fit, and says what to change."""
    path = os.path.join(os.path.dirname(__file__), "featurespace.py")
    r, _ = bench(path, "--runs", "single_device,parameter_server:2", "--steps", "4", "--warmup", "1",
                 "--ps-costs", written_ps_costs)
    assert r.returncode == 1, r.stderr[-800:]
    b = json.loads(r.stdout)
    assert [x["strategy"] for x in b["runs"]] == ["single_device"] and b["runs"][0]["examples_per_second"] > 0
    (failed,) = b["failed"]
    assert failed["strategy"] == "parameter_server"
    assert failed["error"].startswith("chief:0 failed: make_dataset builds on a tf.data.Dataset made outside it")
    assert "Make the dataset inside make_dataset" in failed["error"]
    assert "ClosureInputError" not in failed["error"]  # found before the fit, not by it


@beside
def test_a_run_whose_keras_cannot_build_the_model_fails_alone():
    # keras.io's VAE is built from Keras 3's own `import keras`: it runs on one device
    # (Keras 3), and the multi-worker run, which must use tf-keras, cannot build it.
    # Before, that run's error ended the whole bench (exit 2, as if the file were broken).
    # (Parameter servers, also on tf-keras, fail the same way; that run took 20 s more.)
    vae = os.path.join(os.path.dirname(__file__), "..", "measure", "workloads", "vae.py")
    r = subprocess.run([sys.executable, "-m", "rung", "bench", vae, "--runs", "single_device,multi_worker_mirrored:2",
                        "--steps", "3", "--warmup", "1", "--json"], capture_output=True, text=True, timeout=400)
    assert r.returncode == 1, r.stderr[-800:]  # a run failed; the bench itself finished
    b = json.loads(r.stdout)
    assert [run["strategy"] for run in b["runs"]] == ["single_device"] and b["runs"][0]["examples_per_second"] > 0
    (failed,) = b["failed"]
    assert failed["strategy"] == "multi_worker_mirrored"
    assert "Keras 3 model (VAE) under tf-keras" in failed["error"] and "from tensorflow import keras" in failed["error"]
    # no one-device run on tf-keras was tried for it, and the notes say what the run on tf-keras
    # would have been predicted from (before, nothing did)
    assert any(n.startswith("the runs on tf_keras are predicted from the one-device step on keras3: the workload "
                            "imports Keras 3 itself (import keras (line ") for n in b["notes"]), b["notes"]


@beside
def test_a_model_written_for_keras_3_alone_fails_its_runs_on_tf_keras_with_what_to_change():
    # LeakyReLU(negative_slope=...) is Keras 3's argument (tf-keras calls it alpha): the file
    # builds from tf.keras, so the one-device run is on Keras 3 and the runs on tf-keras (the
    # basis for them, and multi-worker) fail to build. Before, they said only what was raised
    path = os.path.join(os.path.dirname(__file__), "..", "measure", "workloads", "keras3_args.py")
    r, _ = bench(path, "--runs", "single_device,mirrored:2,multi_worker_mirrored:2", "--steps", "3", "--warmup", "1")
    assert r.returncode == 1, r.stderr[-800:]
    b = json.loads(r.stdout)
    assert [(x["strategy"], x["keras"]) for x in b["runs"]] == [("single_device", "keras3"), ("mirrored", "keras3")]
    assert [f["run"] for f in b["failed"]] == ["single_device@tf_keras", "multi_worker_mirrored:2"]
    for f in b["failed"]:
        assert "build_model() raised" in f["error"] and "negative_slope" in f["error"], f["error"]
        assert "(line 18)" in f["error"] and "it must build on tf-keras too" in f["error"], f["error"]
    # with runs on tf-keras alone, the one-device run is on tf-keras too: the file cannot run
    # at all (exit 2, one line), and the line says it was tf-keras, chosen by rung
    r, _ = bench(path, "--runs", "single_device,multi_worker_mirrored:2", "--steps", "3", "--warmup", "1")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr[-800:]
    assert "negative_slope" in r.stderr and "(line 18)" in r.stderr
    assert "every run of this bench is on tf-keras" in r.stderr and "must build on tf-keras too" in r.stderr


@beside
def test_a_mixed_float16_model_fails_its_parameter_server_run_alone_with_what_to_use(written_ps_costs):
    """tf-keras refuses the mixed_float16 policy under ParameterServerStrategy. Every run here
    is on tf-keras, and the whole bench stopped as if the file were at fault (exit 2), with
    TensorFlow's line cut in the middle and nothing of what to change. Now that run fails
    alone, first with what to use instead, and the one-device run stands."""
    mixed = Path(__file__).parent.parent / "measure" / "workloads" / "mixed16.py"
    r, _ = bench(str(mixed), "--runs", "single_device,parameter_server:2", "--steps", "3", "--warmup", "1",
                 "--ps-costs", written_ps_costs)
    assert r.returncode == 1, r.stderr[-800:]  # a run failed (exit 1), not the file (exit 2)
    b = json.loads(r.stdout)
    assert [x["strategy"] for x in b["runs"]] == ["single_device"] and b["runs"][0]["keras"] == "tf_keras"
    (failed,) = b["failed"]
    assert failed["run"] == "parameter_server:2"
    assert "InputError: " in failed["error"] and "the model uses the mixed_float16 policy" in failed["error"]
    assert "use mixed_bfloat16" in failed["error"] and "ParameterServerStrategyV2" in failed["error"]
    assert "not on tf-keras" not in failed["error"]  # the one-device run built it on tf-keras
