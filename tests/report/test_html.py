"""The HTML report: what the page holds (no browser), what the command refuses, and
that every plot renders in headless Chromium with no console error and no request
leaving the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rung import units as u
from rung.cli import main
from rung.examples import scenario_examples
from rung.ladder import advise
from rung.model import comm
from rung.report.html import ReportInputs, render
from rung.spec import load_scenario
from rung.spec.records import load_bench, load_simulation
from tests.report.browser import open_report, require_chromium

DATA = Path(__file__).parent / "data"
BENCH = DATA / "bench-mlp.json"            # a real `rung bench --json` of the mlp example, 20 steps
SIMULATION = DATA / "simulation-preemptible-64.json"  # `rung simulate` of preemptible-fleet, 64 x 500
BASE_PLOTS = ["scaling", "step", "memory", "goodput"]


def page_for(name: str, **extra) -> tuple:
    s = load_scenario(scenario_examples()[name])
    d = advise(s)
    return s, d, render(ReportInputs(scenario=s, decision=d, **extra))


@pytest.mark.parametrize("name", list(scenario_examples()))
def test_every_example_page_holds_its_decision_and_its_plots(name):
    s, d, page = page_for(name)
    assert page.count("* plotly.js v") == 1, "plotly.js is inlined exactly once"
    assert "src=\"http" not in page and "src='http" not in page
    assert f"Verdict: {d.verdict}" in page
    if d.prediction is not None and d.prediction.examples_per_second:
        assert u.rate(d.prediction.examples_per_second) in page
    assert u.rate(s.goal.target_examples_per_second) in page
    for code in d.codes:
        assert code in page, code
    for r in d.rejected:  # the ladder table: every rung with its codes
        for code in r.codes:
            assert code in page, code
    plots = [p.split('"')[0] for p in page.split('data-plot="')[1:]]
    priced = len(d.options) > 1 and any(o["usd_per_hour"] is not None for o in d.options)
    expected = (["options"] if priced else []) + BASE_PLOTS
    if not any(p is not None and p.fits for p in [d.prediction] + [r.prediction for r in d.rejected]):
        expected.remove("step")  # nothing runs: no step to break down
    assert plots == expected


def test_the_step_breakdown_stacks_every_term_of_the_step():
    """The bars of each rung add up to its predicted step (a term the model adds and the
    plot forgets would leave a gap)."""
    from rung.report import figures

    capped = 0
    for name in ("multi-host", "preemptible-fleet", "embeddings", "slow-network", "one-box", "input-bound",
                 "host-pipeline"):
        if name == "host-pipeline":  # one host's pipeline feeds about 3 of its 8 devices
            s = load_scenario(scenario_examples()["multi-host"])
            s = s.model_copy(update={"workload": s.workload.model_copy(update={"pipeline_seconds_per_batch": 0.06})})
        else:
            s = load_scenario(scenario_examples()[name])
        d = advise(s)
        fig = figures.step_breakdown(d)
        rows = figures._rung_predictions(d)
        for i, (verdict, p) in enumerate(rows):
            bars = sum(t.x[i] for t in fig.data if not t.name.startswith("restarts"))
            # a step the pipeline caps has its wait for the pipeline as a bar of its own
            capped += p.input_capped
            assert bars == pytest.approx(p.step_seconds * 1e3, rel=1e-9), (name, verdict)
    assert capped >= 2  # the input-bound example's rungs and the host pipeline's


def test_the_curves_pass_through_the_decision_and_linear_scaling():
    """The plan's point sits on its rung's curve; the linear line is devices x one device."""
    from rung.report import figures

    s = load_scenario(scenario_examples()["multi-host"])
    d = advise(s)
    fig = figures.scaling_curves(s, d, comm.DEFAULT_LINKS)
    curve = next(t for t in fig.data if t.name == "multi-worker mirrored")
    i = list(curve.x).index(d.devices)
    assert curve.y[i] == pytest.approx(d.prediction.examples_per_second, rel=1e-9)
    linear = fig.data[0]
    one = s.workload.per_device_batch / s.workload.step_seconds
    assert linear.y[-1] == pytest.approx(linear.x[-1] * one)
    # 8 hosts x 8 devices: every count is drawn when there are few
    assert list(curve.x) == [8 * h for h in range(1, s.hardware.max_hosts + 1)]


def test_goodput_curves_meet_the_model_at_the_fleets_rate():
    from rung.model import preemption, throughput
    from rung.report import figures

    s = load_scenario(scenario_examples()["preemptible-fleet"])
    d = advise(s)
    fig = figures.goodput_curves(s, d)
    asyn = fig.data[1]
    # hand arithmetic: one worker is down `restart` seconds per preemption
    lam = asyn.x[0] / 3600
    assert asyn.y[0] == pytest.approx(1 - lam * s.fleet.restart_seconds)
    sync = fig.data[0]
    assert sync.y[0] > sync.y[-1]  # more preemption, less goodput
    delta = preemption.checkpoint_seconds(throughput.replica(s).state_bytes)
    assert sync.y[-1] == pytest.approx(preemption.sync_goodput(d.hosts, 1 / 3600, s.fleet.restart_seconds, delta))


def test_the_report_command_writes_the_file_and_advise_html_matches_advise_json(tmp_path, capsys):
    out = tmp_path / "r.html"
    example = str(scenario_examples()["multi-host"])
    assert main(["advise", "--scenario", example, "--json", "--html", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    page = out.read_text()
    embedded = json.loads(page.split('id="rung-decision">')[1].split("</script>")[0])
    assert embedded == printed
    assert oct(out.stat().st_mode & 0o044) == oct(0o044 & ~_umask()), "readable like any file the user writes"
    report = tmp_path / "full.html"
    assert main(["report", "--scenario", example, "--bench", str(BENCH), "--simulation", str(SIMULATION),
                 "--out", str(report)]) == 0
    full = report.read_text()
    bench = load_bench(BENCH)
    for run in bench.runs:
        assert run.name in full and f"{run.examples_per_second:,.0f}" in full
    # the synchronous runs, reproduced by the simulation from the bench's inputs, beside them
    from rung.bench.reproduce import reproduce

    for r in reproduce(bench, steps=4000)["runs"]:
        assert f"{r['simulated_examples_per_second']:,.0f}" in full, r["run"]
    assert f"{load_simulation(SIMULATION).workers:,} workers" in full


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


@pytest.mark.parametrize("args, words", [
    (["--scenario", "{scenario}", "--out", "{tmp}/no/such/dir/r.html"], "does not exist"),
    (["--scenario", "{scenario}", "--out", "{tmp}"], "is a directory"),
    (["--out", "{tmp}/r.html"], "nothing to report"),
    (["--scenario", "{scenario}", "--bench", "{scenario}", "--out", "{tmp}/r.html"], "rung/bench/v1"),
    (["--scenario", "{scenario}", "--simulation", "{broken_sim}", "--out", "{tmp}/r.html"], "sync.goodput"),
    (["--scenario", "{scenario}", "--profile", "{tmp}/missing.json", "--out", "{tmp}/r.html"], "no such"),
    (["--scenario", "{scenario}", "--example", "one-box", "--out", "{tmp}/r.html"], "give one of"),
])
def test_bad_report_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, words):
    sim = json.loads(SIMULATION.read_text())
    del sim["sync"]["goodput"]
    (tmp_path / "broken.json").write_text(json.dumps(sim))
    fill = {"scenario": str(scenario_examples()["one-box"]), "tmp": str(tmp_path),
            "broken_sim": str(tmp_path / "broken.json")}
    r = subprocess.run([sys.executable, "-m", "rung", "report", *[a.format(**fill) for a in args]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr
    assert not (tmp_path / "r.html").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["broken.json"], "no temporary file left"


# -- in the browser ----------------------------------------------------------------------

def check_rendered(page, names: list[str]) -> None:
    assert page.errors == [], page.errors
    assert page.requests == [], f"the page fetched {page.requests}: it must be self-contained"
    assert [p["name"] for p in page.plots] == names
    for p in page.plots:
        assert p["traces"] > 0 and p["marks"] > 0, p
        assert p["width"] > 300 and p["height"] > 200, p
    assert page.screenshot[:8] == b"\x89PNG\r\n\x1a\n" and len(page.screenshot) > 50_000


def test_every_plot_renders_in_chromium_with_the_decisions_numbers(tmp_path):
    require_chromium()
    out = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-m", "rung", "report", "--example", "preemptible-fleet",
                        "--bench", str(BENCH), "--simulation", str(SIMULATION), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    page = open_report(out)
    check_rendered(page, BASE_PLOTS + ["bench-throughput", "bench-steps", "simulation"])
    # what `rung advise --json` decides (another process) is what the page shows
    a = subprocess.run([sys.executable, "-m", "rung", "advise", "--example", "preemptible-fleet", "--json"],
                       capture_output=True, text=True, timeout=120)
    d = json.loads(a.stdout)
    assert page.decision == d
    assert f"Verdict: {d['verdict']}" in page.text
    assert u.rate(d["predicted"]["examples_per_second"]) in page.text
    assert f"{d['ps_tasks']} parameter-server task(s)" in page.text
    for f in d["reasons"] + d["warnings"]:
        assert f["code"] in page.text
    for run in load_bench(BENCH).runs:
        assert f"{run.examples_per_second:,.0f}" in page.text
    bars = next(p for p in page.plots if p["name"] == "bench-throughput")
    assert bars["traces"] == 3   # measured, predicted, simulated


def test_options_render_side_by_side_in_chromium(tmp_path):
    require_chromium()
    out = tmp_path / "options.html"
    assert main(["report", "--example", "cheaper-option", "--out", str(out)]) == 0
    page = open_report(out)
    check_rendered(page, ["options"] + BASE_PLOTS)
    for o in page.decision["options"]:
        assert o["name"] in page.text
        if o["usd_per_hour"] is not None:
            assert f"{o['usd_per_hour']:,.2f}" in page.text


def test_a_killed_run_shows_its_whole_run_beside_its_rate_after_the_restart():
    b = load_bench(DATA / "bench-mlp-kill.json")
    _, _, page = page_for("preemptible-fleet", bench=b)
    killed = next(r for r in b.runs if r.kill)
    name = "mwms:2 kill w1@40 (whole run)"
    assert name in page
    assert f"{killed.kill.whole_run.examples_per_second:,.0f}" in page     # measured whole
    assert f"{killed.examples_per_second:,.0f}" in page                     # after the restart
    from rung.bench.reproduce import reproduce
    from rung.report import figures

    simulated = {x["run"]: x["simulated_examples_per_second"] for x in reproduce(b, steps=4000)["runs"]}
    fig = figures.bench_measured(b, simulated)
    measured, _, sim = fig.data
    i = list(measured.x).index(name)
    assert measured.y[i] == killed.kill.whole_run.examples_per_second and sim.y[i] == simulated[name]


def test_a_failed_run_and_an_unscaled_loss_are_on_the_page():
    """A bench that went on past a failed run lists it with its error; a profile whose
    train_step's loss is not scaled for replicas says so beside the other measurements."""
    from rung.spec.benchresult import BenchResult
    from rung.spec.profile import Profile

    data = json.loads((DATA / "bench-mlp.json").read_text())
    data["failed"] = [{"run": "multi_worker_mirrored:2", "strategy": "multi_worker_mirrored", "replicas": 2,
                       "error": "worker:1 failed: <empty shard>"}]
    profile = Profile.model_validate({
        "schema": "rung/profile/v1", "workload": "custom_step.py", "device": "CPU:0", "device_name": "x86_64",
        "params": 16810, "optimizer": "adam", "per_device_batch": 16, "step_seconds": 0.002,
        "replica_check": {"checked": True, "replicas": 2, "gradient_ratio": 2.0, "verdict": "not_scaled"},
        "loss_scaled_for_replicas": False})
    data["runs"][0]["notes"] = ["while this run was timed, work other than its own took 44% of this machine's CPU time"]
    data["notes"] = ["weak scaling <per replica>"]
    _, _, page = page_for("preemptible-fleet", bench=BenchResult.model_validate(data), profile=profile)
    assert ('<td class="l">mwms:2</td><td class="l">-</td><td class="">failed: worker:1 failed: &lt;empty shard&gt;'
            in page)
    # the runs' notes and the bench's, as the terminal's report gives them
    assert ("<li>single_device: while this run was timed, work other than its own took 44% of this machine&#x27;s "
            "CPU time</li>") in page
    assert "<li>weak scaling &lt;per replica&gt;</li>" in page
    assert "NOT scaled" in page and "2.00x" in page
