"""The `rung` command: exit codes, decision JSON shape, one-line errors, the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rung.cli import main
from tests.conftest import BUNDLED, valid_scenario, without_frameworks

TOP_KEYS = {"schema", "verdict", "strategy", "hosts", "devices", "ps_tasks", "meets_goal",
            "predicted", "reasons", "warnings", "rejected"}
PREDICTED = {"examples_per_second", "scaling_efficiency", "step_seconds", "memory_bytes_per_device"}


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "rung", *args], capture_output=True, text=True, timeout=120)


def test_advise_json_is_decision_v1(capsys):
    assert main(["advise", "--scenario", str(BUNDLED / "03-one-box.yaml"), "--json"]) == 0
    out = capsys.readouterr()
    d = json.loads(out.out)
    assert TOP_KEYS <= set(d) and d["schema"] == "rung/decision/v1"
    assert set(d["predicted"]) == PREDICTED
    assert d["strategy"] == "tf.distribute.MirroredStrategy"
    assert {"review", "proposal_predicted"} <= set(d)
    assert set(d["proposal_predicted"]) == PREDICTED
    for r in d["rejected"]:
        assert {"verdict", "codes", "message"} <= set(r)
    for f in d["reasons"] + d["warnings"] + d["review"]:
        assert set(f) == {"code", "message"} and f["message"]
    assert out.err == ""


def test_a_scenario_given_where_the_workload_goes_is_read_as_one(capsys, tmp_path):
    """`rung advise my-scenario.yaml`: the file was taken for a workload, and the line asked
    for --hardware and --target, which a scenario carries. The same decision as --scenario."""
    path = str(BUNDLED / "03-one-box.yaml")
    assert main(["advise", path, "--json"]) == 0
    positional = json.loads(capsys.readouterr().out)
    assert main(["advise", "--scenario", path, "--json"]) == 0
    assert positional == json.loads(capsys.readouterr().out)
    out = tmp_path / "r.html"
    assert main(["report", path, "--out", str(out)]) == 0 and out.stat().st_size > 0
    capsys.readouterr()
    # with --scenario too, it is one input too many, as a workload would be
    assert main(["advise", path, "--scenario", path]) == 2
    assert "not both" in capsys.readouterr().err


def test_no_proposal_means_no_review_keys(capsys):
    assert main(["advise", "--scenario", str(BUNDLED / "04-multi-host.yaml"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert "review" not in d and "proposal_predicted" not in d


def test_advise_without_arguments_runs_the_bundled_example(capsys):
    assert main(["advise"]) == 0
    out = capsys.readouterr().out
    assert "bundled example" in out and "The ladder, bottom up" in out and "Verdict" in out


def test_every_example_renders_a_report(capsys):
    from rung.examples import scenario_examples
    for name in scenario_examples():
        assert main(["advise", "--example", name]) == 0
        out = capsys.readouterr().out
        assert "Recommendation" in out and "Passed over" in out, name


def test_list_examples_and_catalog(capsys):
    assert main(["advise", "--list-examples"]) == 0
    out = capsys.readouterr().out
    assert "multi-host" in out and "(default)" in out
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    for name in ("A100-80GB", "H100-PCIe", "TPU-v5p-8", "T4", "B200"):
        assert name in out
    assert main(["catalog", "--json"]) == 0
    cat = json.loads(capsys.readouterr().out)
    assert len(cat["devices"]) == 15 and all(d["source"] for d in cat["devices"])


@pytest.mark.parametrize("content,expect", [
    (None, "no such scenario file"),
    ("", "is empty"),
    ("workload: [\n", "not valid YAML"),
    (json.dumps(valid_scenario(workload={"params": -1})), "workload.params"),
    (json.dumps(valid_scenario(hardware={"device": "Z80"})), "hardware.device"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, content, expect):
    path = tmp_path / "bad.yaml"
    if content is not None:
        path.write_text(content)
    r = run_cli("advise", "--scenario", str(path), "--json")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and expect in lines[0]
    assert "Traceback" not in r.stderr


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["advise", "--bogus"])
    assert e.value.code == 2
    # one line that names the subcommand's own --help, where what it takes is listed (it
    # named `rung --help`, which lists the subcommands alone)
    assert capsys.readouterr().err == "rung: error: unrecognized arguments: --bogus (see `rung advise --help`)\n"
    with pytest.raises(SystemExit) as e:
        main(["profile", "w.py", "--out", "p.json"])
    assert e.value.code == 2
    assert capsys.readouterr().err == \
        "rung: error: unrecognized arguments: --out p.json (see `rung profile --help`)\n"
    with pytest.raises(SystemExit) as e:
        main(["--bogus"])
    assert e.value.code == 2 and capsys.readouterr().err.endswith("(see `rung --help`)\n")
    assert main(["advise", "--example", "nope"]) == 2
    assert "unknown example" in capsys.readouterr().err
    assert main([]) == 2


def test_planning_never_imports_tensorflow():
    r = without_frameworks(f"main(['advise', '--scenario', {str(BUNDLED / '09-embeddings.yaml')!r}, '--json'])\n"
                           "main(['advise', '--example', 'tpu']); main(['catalog'])")
    assert r.returncode == 0, r.stderr[-300:]


def test_help_names_the_flags_and_imports_no_framework():
    # (how fast it starts is measured in benchmarks/bench_advise.py, as a ratio to a bare python)
    r = without_frameworks("try: main(['advise', '--help'])\nexcept SystemExit: pass")
    assert r.returncode == 0, r.stderr[-300:]
    assert "--scenario" in r.stdout and "--json" in r.stdout and "--calibration" in r.stdout


def test_every_option_of_every_command_says_what_it_does():
    """`rung launch --help` listed `--engine {local,ray}`, a required option, with no word on
    what either does; the hardware flags and tf-config's did the same."""
    import argparse

    from rung.cli import build_parser

    bare = []
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                bare += [f"{name} {'/'.join(a.option_strings)}" for a in sub._actions
                         if a.option_strings and not a.help]
    assert not bare, bare


def test_advise_uses_a_stored_calibration(tmp_path):
    """A slower measured link (rung bench --calibrate) lowers multi-host predictions."""
    scenario = str(BUNDLED / "04-multi-host.yaml")
    default = json.loads(run_cli("advise", "--scenario", scenario, "--json").stdout)
    cal = tmp_path / "cal.json"
    good = {"schema": "rung/calibration/v1", "fitted": True, "inter_host_efficiency": 0.05,
            "inter_host_hop_seconds": 1e-4, "allreduce_share_of_goodput": 0.05,
            "measured_at": "2026-11-30T00:00:00Z"}
    cal.write_text(json.dumps(good))
    r = run_cli("advise", "--scenario", scenario, "--json", "--calibration", str(cal))
    assert r.returncode == 0, r.stderr
    slow = json.loads(r.stdout)
    mwms = lambda d: next((x for x in d["rejected"] if x["verdict"] == "multi_worker_mirrored"), d)  # noqa: E731
    assert mwms(slow)["predicted"]["examples_per_second"] < mwms(default)["predicted"]["examples_per_second"]
    bad = [({**good, "inter_host_efficiency": -1}, "inter_host_efficiency"),
           ({k: v for k, v in good.items() if k != "schema"}, "rung/calibration/v1"),
           ({**good, "schema": "rung/calibration/v0"}, "schema"),
           ({**good, "efficiency": 0.5}, "unknown key"),
           ({**good, "inter_host_hop_seconds": "fast"}, "inter_host_hop_seconds"),
           ({**good, "points": [{"run": "x"}]}, "points.0"),
           ({**good, "ps_dispatch_seconds": 0}, "ps_dispatch_seconds"),
           ({**good, "ps_workers": 1.5}, "ps_workers")]
    for data, words in bad:
        cal.write_text(json.dumps(data))
        r = run_cli("advise", "--scenario", scenario, "--json", "--calibration", str(cal))
        assert r.returncode == 2 and words in r.stderr and r.stdout == "", (data, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_top_level_help_lists_every_subcommand():
    r = run_cli("--help")
    assert r.returncode == 0
    for cmd in ("advise", "profile", "bench", "catalog"):
        assert cmd in r.stdout


@pytest.mark.parametrize("command", ["profile", "advise"])
def test_an_unwritable_scenario_out_is_refused_before_measuring(tmp_path, command):
    workload = tmp_path / "w.py"
    workload.write_text("raise RuntimeError('imported')\n")
    plan = ["--device", "A100-80GB", "--target", "100"] if command == "advise" else []
    r = run_cli(command, str(workload), *plan, "--scenario-out", "/no/such/folder/s.yaml")
    assert r.returncode == 2 and "does not exist" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "--scenario-out" in r.stderr and "imported" not in r.stdout + r.stderr


@pytest.mark.parametrize("flags,expect", [
    (["advise", "--device", "TPU-v4", "--target", "100"], "unknown device 'TPU-v4'"),
    (["advise", "--device", "A100-80GB", "--inter-host-gbps", "-3", "--target", "100"], "hardware.inter_host_gbps"),
    (["profile", "--device", "TPU-v4", "--scenario-out", "SCENARIO"], "did you mean 'TPU-v4-8'"),
    # alone (no --device): before, checked only with --hardware or --device, after the measurement
    (["profile", "--max-hosts", "0", "--scenario-out", "SCENARIO"], "hardware.max_hosts: expected a number of at least 1"),
    # without --scenario-out the plan's flags were taken and dropped without a word
    (["profile", "--device", "nope"], "--device: goes with --scenario-out"),
    (["profile", "--preemptible"], "--preemptible: goes with --scenario-out"),
    (["profile", "--warmup", "-1"], "--warmup: expected at least 0 warm-up steps, received -1"),
    # the hardware file's offers are checked as the scenario's are
    (["advise", "--hardware", "OFFERS", "--target", "100"], "offers.0.device: unknown device 'A100-80'"),
    # a whole scenario given as the hardware file (it said "name: unknown key")
    (["advise", "--hardware", "WHOLE", "--target", "100"], "workload: this is a whole scenario"),
])
def test_a_bad_offer_is_refused_before_the_workload_is_even_imported(tmp_path, flags, expect):
    # the workload would stop the command with its own error if it were imported: the
    # offer's mistake must come first (it used to come after a whole profile)
    workload = tmp_path / "w.py"
    workload.write_text("raise RuntimeError('imported')\n")
    (tmp_path / "offers.yaml").write_text("hardware: {device: T4, max_hosts: 2}\noffers:\n"
                                          "  - {name: big, usd_per_host_hour: 30, device: A100-80, devices_per_host: 8, "
                                          "inter_host_gbps: 100, max_hosts: 1}\n")
    (tmp_path / "whole.yaml").write_text("schema: rung/scenario/v1\nname: x\nworkload: {params: 1}\n"
                                         "hardware: {device: T4}\n")
    files = {"SCENARIO": tmp_path / "s.yaml", "OFFERS": tmp_path / "offers.yaml", "WHOLE": tmp_path / "whole.yaml"}
    flags = [str(files[f]) if f in files else f for f in flags]
    r = run_cli(flags[0], str(workload), *flags[1:])
    assert r.returncode == 2 and expect in r.stderr and "imported" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "s.yaml").exists()


@pytest.mark.parametrize("flags,missing", [
    ([], ["--hardware HW.yaml or --device NAME", "--target EXAMPLES_PER_SECOND"]),
    (["--target", "100"], ["--hardware HW.yaml or --device NAME"]),
    (["--device", "A100-80GB"], ["--target EXAMPLES_PER_SECOND"]),
])
def test_advise_on_a_workload_names_everything_it_still_needs_in_one_line(tmp_path, flags, missing):
    # a newcomer's first `rung advise model.py` was told of --hardware, then, on the second
    # try, of --target: both are named at once now
    workload = tmp_path / "w.py"
    workload.write_text("raise RuntimeError('imported')\n")
    r = run_cli("advise", str(workload), *flags)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    named = [f for f in ("--hardware HW.yaml or --device NAME", "--target EXAMPLES_PER_SECOND") if f in r.stderr]
    assert named == missing and "imported" not in r.stderr


def _on_a_terminal(args: list[str]) -> str:
    """Run rung with stdout and stderr on a pseudo-terminal; everything it wrote there."""
    import os
    import pty

    main_fd, child_fd = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "rung", *args], stdout=child_fd, stderr=child_fd,
                         stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "120", "TERM": "xterm"})
    os.close(child_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=120)
    os.close(main_fd)
    assert p.returncode == 0
    return b"".join(chunks).decode(errors="replace")


def test_progress_shows_on_a_terminal_and_never_with_json(tmp_path):
    scenario = str(BUNDLED / "06-preemptible-fleet.yaml")
    shown = _on_a_terminal(["simulate", "--scenario", scenario, "--workers", "2000", "--steps", "500"])
    assert "fleet" in shown and "\x1b[" in shown           # rich's progress line, then the table
    quiet = _on_a_terminal(["simulate", "--scenario", scenario, "--workers", "2000", "--steps", "500", "--json"])
    assert "fleet:" not in quiet and "\x1b[" not in quiet
    assert json.loads(quiet.replace("\r\n", "\n"))["schema"] == "rung/simulation/v1"
    report = _on_a_terminal(["report", "--scenario", scenario, "--out", str(tmp_path / "r.html")])
    assert "report:" in report and "report written to" in report


def test_a_goal_missed_on_a_defaulted_offer_names_the_flags(tmp_path):
    """`rung advise WORKLOAD.py --device X --target Y`, decided by the CLI's own `decide`
    from a saved profile (nothing measured): the offer defaults to 1 host x 1 device, the
    goal is out of its reach, and the decision says which flags would offer more; given
    them, it says nothing."""
    from rung.cli import build_parser
    from rung.cli._decide import decide
    from rung.cli._plan import links
    from rung.spec.profile import Profile

    profile = Profile.model_validate({
        "schema": "rung/profile/v1", "workload": "w.py", "device": "CPU:0", "device_name": "this machine",
        "params": 1e6, "embedding_params": 0, "param_dtype": "float32", "mixed_precision": False,
        "optimizer": "adam", "activation_bytes_per_example": 1e5, "per_device_batch": 64, "step_seconds": 0.1,
        "input_wait_seconds": 0.0, "step_time_cv": 0.05, "dynamic_shapes": False})
    parser = build_parser()

    def decision(*flags):
        args = parser.parse_args(["advise", "w.py", "--target", "100000", "--target-step-seconds", "0.1", *flags])
        return decide(args, links(None), profile)[1]

    codes = lambda d: [f.code for f in d.warnings]  # noqa: E731
    d = decision("--device", "A100-80GB")
    assert not d.meets_goal and "OFFER_NOT_GIVEN" in codes(d)
    said = next(f.message for f in d.warnings if f.code == "OFFER_NOT_GIVEN")
    assert "1 host(s) x 1 device(s)" in said and "--devices-per-host and --max-hosts" in said
    only_hosts = decision("--device", "A100-80GB", "--devices-per-host", "8")
    assert "--max-hosts was not given" in next(f.message for f in only_hosts.warnings if f.code == "OFFER_NOT_GIVEN")
    hw = tmp_path / "hw.yaml"
    hw.write_text("hardware: {device: A100-80GB, devices_per_host: 1, max_hosts: 1}\n")
    assert "OFFER_NOT_GIVEN" not in codes(decision("--hardware", str(hw)))   # said in the file: meant
    met = decision("--device", "A100-80GB", "--devices-per-host", "8", "--max-hosts", "64")
    assert "OFFER_NOT_GIVEN" not in codes(met)


def test_bench_keras3_on_a_tf_keras_model_is_refused_before_any_run():
    keras2 = Path(__file__).parents[1] / "measure" / "workloads" / "keras2.py"
    r = run_cli("bench", str(keras2), "--runs", "single_device", "--keras", "keras3", "--json")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "--keras" in r.stderr and "keras3 cannot run this workload" in r.stderr and "import tf_keras" in r.stderr


def test_a_step_slower_under_mirrored_variables_is_carried_to_the_plans_device_by_memory_bandwidth():
    """Measured here: 20 ms more under a one-device MirroredStrategy, this CPU copying at
    10 GB/s. On an A100 (its datasheet's HBM rate) the same copy takes rate / bandwidth of
    it; on hosts like this one (a custom device), as measured."""
    from types import SimpleNamespace

    from rung.cli._plan import plan_scenario
    from rung.spec import catalog
    from rung.spec.profile import Profile

    prof = Profile.model_validate({
        "schema": "rung/profile/v1", "workload": "w.py", "device": "CPU:0", "device_name": "x86_64", "params": 2e7,
        "embedding_params": 1.9e7, "optimizer": "adagrad", "per_device_batch": 64, "step_seconds": 0.002,
        "flops_per_example": 1e6, "strategy_step_extra_seconds": 0.02, "memory_copy_bytes_per_second": 1e10})
    args = SimpleNamespace(hardware=None, device="A100-80GB", devices_per_host=8, max_hosts=2, inter_host_gbps=100,
                           target=1e5, reproducible=None, preemptible=None, target_step_seconds=None,
                           step_time_cv=None)
    s, _ = plan_scenario(prof, args, where="test")
    hbm = catalog.lookup("A100-80GB").throughput.memory_bytes_per_second
    assert hbm > 1e12 and s.workload.strategy_step_extra_seconds == pytest.approx(0.02 * 1e10 / hbm)
    args.device = None
    s, _ = plan_scenario(prof, args, where="test", require=False)
    assert s.hardware.device == "custom" and s.workload.strategy_step_extra_seconds == 0.02
    # the team's own step on hosts like this one: used (before, ignored without a word)
    args.target_step_seconds = 0.05
    s, caveats = plan_scenario(prof, args, where="test", require=False)
    assert s.hardware.device == "custom" and s.workload.step_seconds == 0.05
    assert s.workload.strategy_step_extra_seconds == 0.02
    assert any("--target-step-seconds" in f.message for f in caveats if f.code == "MEASURED_ON_THIS_MACHINE")


def test_a_plan_from_a_step_profiled_at_the_default_batch_of_a_file_that_keeps_its_own_says_so_first():
    """keras.io's miniature GPT sets batch_size = 128 and its step runs at any batch: profiled
    at rung's default of 32, its plan (7 hosts of 8 A100s for 60,000 ex/s) was for 32 per
    device without a word. The caveat comes first, with the file's number and the flag."""
    from types import SimpleNamespace

    from rung.cli._plan import plan_scenario
    from rung.report.terminal import UP_FRONT
    from rung.spec.profile import Profile

    base = {"schema": "rung/profile/v1", "workload": "w.py", "device": "CPU:0", "device_name": "x86_64",
            "params": 1e7, "optimizer": "adam", "per_device_batch": 32, "step_seconds": 0.6,
            "flops_per_example": 2.8e9}
    args = SimpleNamespace(hardware=None, device="A100-80GB", devices_per_host=8, max_hosts=8, inter_host_gbps=100,
                           target=6e4, reproducible=None, preemptible=None, target_step_seconds=None,
                           step_time_cv=None)
    _, caveats = plan_scenario(Profile.model_validate({**base, "file_batch_size": 128}), args, where="test")
    [said] = [f.message for f in caveats if f.code == "DEFAULT_BATCH"]
    assert said == ("the step was profiled at a per-device batch of 32, rung's default; the file sets batch_size = "
                    "128: if each device trains on 128 examples a step, give --batch 128 (or name it "
                    "BATCH_SIZE): the step time, its memory and this plan follow the batch")
    assert "DEFAULT_BATCH" in UP_FRONT
    _, caveats = plan_scenario(Profile.model_validate(base), args, where="test")
    assert "DEFAULT_BATCH" not in [f.code for f in caveats]


def test_an_estimated_step_adds_the_optimizers_update_carried_by_memory_bandwidth():
    """The FLOPs rung counts leave the optimizer's update out, and Keras 3's Adagrad adds to
    the whole accumulator of an embedding table every step: 47 ms of a 64 ms step here for 38M
    rows, against 0.45 ms of counted FLOPs on a T4. The estimate for a T4 now adds the update
    as timed here, carried by the copy rate against the T4's 320 GB/s, and its kernels at 5 µs
    each; the decision says the update was Keras 3's where the plan runs on tf-keras.
    By hand: 47 ms x 14.75 GB/s / 320 GB/s = 2.166 ms, + 50 x 5 µs = 2.416 ms."""
    from types import SimpleNamespace

    from rung.cli._plan import plan_scenario
    from rung.ladder import advise
    from rung.spec.profile import Profile

    base = {"schema": "rung/profile/v1", "workload": "w.py", "device": "CPU:0", "device_name": "x86_64",
            "params": 38.4e6, "embedding_params": 38.4e6, "optimizer": "adagrad", "per_device_batch": 256,
            "step_seconds": 0.064, "flops_per_example": 25e3, "keras": "keras3", "step_keras": "keras3",
            "sparse_gradient_bytes_per_example": 264}
    args = SimpleNamespace(hardware=None, device="T4", devices_per_host=4, max_hosts=8, inter_host_gbps=25,
                           target=1e5, reproducible=None, preemptible=None, target_step_seconds=None,
                           step_time_cv=None)
    flops_only = plan_scenario(Profile.model_validate(base), args, where="test")[0].workload
    with_update = Profile.model_validate({**base, "optimizer_update_seconds": 0.047, "optimizer_update_ops": 50,
                                          "memory_copy_bytes_per_second": 14.75e9})
    s, _ = plan_scenario(with_update, args, where="test")
    assert s.workload.optimizer_update_seconds == pytest.approx(2.416e-3, rel=1e-3)
    assert s.workload.step_seconds == pytest.approx(flops_only.step_seconds + 2.416e-3, rel=1e-3)
    assert flops_only.optimizer_update_seconds == 0 and s.workload.step_seconds > 4 * flops_only.step_seconds
    # a target a T4 meets on the counted FLOPs alone, not with the update: several hosts, on
    # tf-keras, from an update measured on Keras 3
    args.target = 256 / flops_only.step_seconds * 0.9
    assert advise(plan_scenario(Profile.model_validate(base), args, where="test")[0]).verdict == "single_device"
    d = advise(plan_scenario(with_update, args, where="test")[0])
    assert d.verdict != "single_device"
    [said] = [f.message for f in d.warnings if f.code == "STEP_ON_OTHER_KERAS"]
    assert "its optimizer's update (2.42 ms of it" in said and "--keras tf_keras" in said, said
    # the team's own step on the device: nothing is added, and nothing said of an update
    args.target_step_seconds = 0.001
    s, _ = plan_scenario(with_update, args, where="test")
    assert s.workload.step_seconds == 0.001 and s.workload.optimizer_update_seconds == 0
    # hosts like this one: the step as measured, and the update timed apart from it never
    # more than its compute (a busy moment while it was timed made a scenario rung refused)
    args.device, args.target_step_seconds = None, None
    slow = Profile.model_validate({**base, "optimizer_update_seconds": 0.07, "memory_copy_bytes_per_second": 1e10})
    s, _ = plan_scenario(slow, args, where="test", require=False)
    assert s.hardware.device == "custom" and s.workload.optimizer_update_seconds == s.workload.step_seconds == 0.064


def test_offers_in_the_hardware_file_are_walked_beside_the_teams_hardware(tmp_path):
    """`rung advise WORKLOAD.py --hardware HW.yaml` took hardware, fleet and goal, and an
    `offers` list there was "unknown key": a team planning from its model could not ask
    whether a bigger box would do. The offers now reach the scenario, as written."""
    from types import SimpleNamespace

    from rung.cli._plan import plan_scenario
    from rung.ladder import advise
    from rung.spec.profile import Profile

    hw = tmp_path / "hw.yaml"
    hw.write_text("hardware: {device: T4, devices_per_host: 1, inter_host_gbps: 10, max_hosts: 4, "
                  "usd_per_host_hour: 0.5}\n"
                  "offers:\n  - {name: box, usd_per_host_hour: 30, device: T4, devices_per_host: 8, max_hosts: 1}\n")
    prof = Profile.model_validate({
        "schema": "rung/profile/v1", "workload": "w.py", "device": "CPU:0", "device_name": "x86_64", "params": 1e6,
        "optimizer": "sgd", "per_device_batch": 64, "step_seconds": 0.05, "flops_per_example": 1e9})
    args = SimpleNamespace(hardware=str(hw), device=None, devices_per_host=None, max_hosts=None,
                           inter_host_gbps=None, target=1.0, reproducible=None, preemptible=None,
                           target_step_seconds=None, step_time_cv=None)
    one_t4 = plan_scenario(prof, args, where="test")[0].workload
    args.target = 64 / one_t4.step_seconds * 5  # five T4s' worth: the team's 4 hosts cannot do it
    s, _ = plan_scenario(prof, args, where="test")
    assert [o.name for o in s.offers] == ["box"] and s.offers[0].devices_per_host == 8
    d = advise(s)
    assert d.option == "box" and d.verdict == "mirrored" and "BIGGER_HOST" in d.codes


def test_a_pipeline_about_as_fast_as_the_estimated_device_is_a_close_call():
    """Planned for an A100 from a CPU profile: the wait is what this machine's pipeline
    cannot deliver against the device's estimated compute. A pipeline 1.1x that compute is
    under the 20% line at its mean and over it at the top of its own interval: before, the
    verdict moved between one device and fix_input_pipeline from one profile to the next,
    and no CLOSE_CALL said so (the estimated step carried no interval for its wait)."""
    from types import SimpleNamespace

    from rung.cli._plan import plan_scenario
    from rung.ladder import advise
    from rung.model import estimate
    from rung.spec import catalog
    from rung.spec.profile import Profile

    a100 = catalog.lookup("A100-80GB")
    compute = estimate.compute_seconds(1e7, 64, a100, "float32", False, 0)
    pipe = 1.1 * compute
    prof = Profile.model_validate({
        "schema": "rung/profile/v1", "workload": "w.py", "device": "CPU:0", "device_name": "x86_64", "params": 1e6,
        "optimizer": "adam", "per_device_batch": 64, "step_seconds": 0.05, "flops_per_example": 1e7,
        "pipeline_seconds_per_batch": pipe, "pipeline_seconds_per_batch_ci95": [0.9 * compute, 2.0 * compute]})
    args = SimpleNamespace(hardware=None, device="A100-80GB", devices_per_host=1, max_hosts=1, inter_host_gbps=100,
                           target=64 / compute / 2, reproducible=None, preemptible=None, target_step_seconds=None,
                           step_time_cv=None)
    s, _ = plan_scenario(prof, args, where="test")
    w = s.workload
    assert w.input_wait_seconds / w.step_seconds < 0.2  # at the mean: not input-bound
    d = advise(s)
    said = [f.message for f in d.warnings if f.code == "CLOSE_CALL"]
    assert d.verdict == "single_device" and any("fix_input_pipeline" in m for m in said), (d.verdict, said)
