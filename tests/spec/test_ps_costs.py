"""`rung bench --ps-costs FILE`: parameter-server costs measured by an earlier bench (or
by `python -m rung.bench.psbench N`) read back as typed values, and every bad file one
line (exit 2). No TensorFlow: the files are written here or kept from a real bench."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rung.errors import InputError
from rung.examples import workload_examples
from rung.spec.records import load_ps_costs

KEPT = Path(__file__).parents[1] / "report" / "data" / "bench-mlp.json"  # a real bench's output, 2 cores


def test_a_bench_file_gives_its_costs_by_worker_count_marked_as_reused():
    kept = json.loads(KEPT.read_text())["ps_costs"]["2"]
    costs = load_ps_costs(KEPT, cores=2)
    assert list(costs) == ["2"]
    m = costs["2"]
    assert (m.workers, m.keras_dispatch_seconds, m.dispatch_seconds) == (2, kept["keras_dispatch_seconds"],
                                                                         kept["dispatch_seconds"])
    assert m.reused_from == str(KEPT)


def test_the_loopback_figure_is_taken_not_the_test_links(tmp_path):
    # a bench between test hosts added the link's extra round trip to variable_seconds; the
    # bench that reuses the costs adds its own link's
    b = json.loads(KEPT.read_text())
    b["ps_costs"]["2"].update(variable_seconds=5e-4, variable_seconds_loopback=1e-4)
    f = tmp_path / "b.json"
    f.write_text(json.dumps(b))
    from rung.bench.bench import _ps_costs  # what the bench reusing the file predicts with

    assert _ps_costs({"where": "loopback"}, 2, load_ps_costs(f, cores=2)).variable_seconds == 1e-4


def test_a_psbench_line_is_read_too(tmp_path):
    line = {"workers": 3, "dispatch_seconds": 0.002, "keras_dispatch_seconds": 0.007, "variable_seconds": 1e-4,
            "cores": 2}
    f = tmp_path / "ps.json"
    f.write_text(json.dumps(line) + "\n")
    m = load_ps_costs(f, cores=2)["3"]
    assert m.keras_dispatch_seconds == 0.007 and m.reused_from == str(f)
    from rung.bench.bench import _ps_costs

    assert _ps_costs({"where": "loopback"}, 3, {"3": m}).variable_seconds_loopback == 1e-4


@pytest.mark.parametrize("content,field,words", [
    ({"workers": 2, "dispatch_seconds": 0.002, "keras_dispatch_seconds": -1, "variable_seconds": 1e-4},
     "keras_dispatch_seconds", "at least 0"),
    ({"workers": 2, "keras_dispatch_seconds": 0.007, "variable_seconds": 1e-4}, "dispatch_seconds", "missing"),
    ({"rows": []}, None, "received neither"),
    ({"schema": "rung/profile/v1"}, "schema", "rung bench --json"),
    ({"workers": 2, "dispatch_seconds": 0.002, "keras_dispatch_seconds": 0.007, "variable_seconds": 1e-4,
      "cores": 8}, "cores", "8 cores, and this one has 2"),
])
def test_a_bad_file_is_one_line_naming_the_field(tmp_path, content, field, words):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(content))
    with pytest.raises(InputError) as e:
        load_ps_costs(f, cores=2)
    assert e.value.where == str(f) and e.value.field == field and words in e.value.message, e.value.line()


def test_a_bench_without_parameter_servers_has_nothing_to_reuse(tmp_path):
    b = json.loads(KEPT.read_text())
    b["ps_costs"] = None
    f = tmp_path / "b.json"
    f.write_text(json.dumps(b))
    with pytest.raises(InputError, match="no parameter-server costs"):
        load_ps_costs(f, cores=2)


@pytest.mark.parametrize("args,words", [
    (["--runs", "single_device,multi_worker_mirrored:2"], "--runs has none"),
    (["--runs", "parameter_server:2", "--engine", "ray", "--address", "10.0.0.1:6379"], "--engine local"),
    (["--runs", "parameter_server:2", "--ps-costs", "/no/such.json"], "no such"),
])
def test_the_command_refuses_it_before_any_run(tmp_path, args, words):
    if "--ps-costs" not in args:
        args = [*args, "--ps-costs", str(KEPT)]
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(workload_examples()["mlp"]), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_calibration_carries_the_benchs_parameter_server_costs_to_advise():
    """`rung bench --calibrate` with a parameter-server run writes the coordinator's cost
    it measured (Keras fit's whole per-step cost: what rung's own 10 ms default is) and a
    variable's loopback read and update; `rung advise --calibration` decides with them and
    says whose they are."""
    from rung.bench.bench import ps_calibration
    from rung.model.comm import DEFAULT_LINKS
    from rung.spec.calibration import parse_calibration

    kept = json.loads(KEPT.read_text())["ps_costs"]["2"]
    fields = ps_calibration(load_ps_costs(KEPT, cores=2))
    loopback = kept.get("variable_seconds_loopback", kept["variable_seconds"])
    assert fields == {"ps_dispatch_seconds": kept["keras_dispatch_seconds"], "ps_variable_seconds": loopback,
                      "ps_workers": 2, "ps_cores": 2}
    cal = parse_calibration({"schema": "rung/calibration/v1", "fitted": True, "inter_host_hop_seconds": 2e-5,
                             "allreduce_share_of_goodput": 1.0, "measured_at": "2026-12-06T14:00:00Z", **fields})
    links = DEFAULT_LINKS.calibrated(cal)
    assert (links.ps_dispatch_seconds, links.ps_variable_seconds) == (kept["keras_dispatch_seconds"], loopback)
    assert "on 2 cores with 2 local worker(s), 2026-12-06T14:00:00Z" in links.ps_costs_source
    # the share left at 8 steps a call, when measured; over 1 (noise) is taken as 1
    assert DEFAULT_LINKS.calibrated(cal.model_copy(update={"ps_looped_dispatch_share": 0.5})).dispatch_seconds(8) \
        == pytest.approx(0.5 * kept["keras_dispatch_seconds"])
    assert DEFAULT_LINKS.calibrated(cal.model_copy(update={"ps_looped_dispatch_share": 1.2})).ps_looped_dispatch_share == 1
    assert links.ps_looped_dispatch_share == DEFAULT_LINKS.ps_looped_dispatch_share  # not measured in that bench
    # a calibration without them leaves rung's defaults, and says so
    bare = DEFAULT_LINKS.calibrated(cal.model_copy(update={"ps_dispatch_seconds": None, "ps_variable_seconds": None}))
    assert (bare.ps_dispatch_seconds, bare.ps_costs_source) == (0.010, DEFAULT_LINKS.ps_costs_source)


def test_costs_measured_at_several_worker_counts_give_their_median():
    from rung.bench.bench import ps_calibration
    from rung.spec.benchresult import PsCosts

    def costs(n, dispatch, variable):
        return PsCosts(workers=n, dispatch_seconds=0.001, keras_dispatch_seconds=dispatch, variable_seconds=9.0,
                       variable_seconds_loopback=variable, cores=2)

    got = ps_calibration({"1": costs(1, 0.004, 1e-4), "2": costs(2, 0.030, 3e-4), "3": costs(3, 0.010, 2e-4),
                          "4": None})  # psbench failed for 4: not counted
    assert got == {"ps_dispatch_seconds": 0.010, "ps_variable_seconds": 2e-4, "ps_workers": 3, "ps_cores": 2}
    assert ps_calibration(None) == {} and ps_calibration({"2": None}) == {}
    # where psbench also ran the looped fit (8 steps a call): the share it left, the median;
    # a looped fit of another length is not the curve's point and is not counted
    c = {"1": costs(1, 0.004, 1e-4).model_copy(update={"keras_looped_dispatch_seconds": 0.003, "looped_steps": 8}),
         "2": costs(2, 0.010, 1e-4).model_copy(update={"keras_looped_dispatch_seconds": 0.006, "looped_steps": 8}),
         "3": costs(3, 0.010, 1e-4).model_copy(update={"keras_looped_dispatch_seconds": 0.001, "looped_steps": 4})}
    assert ps_calibration(c)["ps_looped_dispatch_share"] == pytest.approx((0.75 + 0.6) / 2)
    # a metric variable's cost, where psbench measured it: the median, carried to advise
    m = {"1": costs(1, 0.004, 1e-4).model_copy(update={"keras_metric_variable_seconds": 1e-4}),
         "2": costs(2, 0.010, 1e-4).model_copy(update={"keras_metric_variable_seconds": 3e-4}),
         "3": costs(3, 0.010, 1e-4)}
    assert ps_calibration(m)["ps_metric_variable_seconds"] == pytest.approx(2e-4)
    assert "ps_metric_variable_seconds" not in ps_calibration(c)
    from rung.model.comm import DEFAULT_LINKS
    from rung.spec.calibration import parse_calibration

    cal = parse_calibration({"schema": "rung/calibration/v1", "fitted": True, "inter_host_hop_seconds": 2e-5,
                             "allreduce_share_of_goodput": 1.0, "measured_at": "2026-12-07T14:00:00Z",
                             **ps_calibration(m)})
    assert DEFAULT_LINKS.calibrated(cal).ps_metric_variable_seconds == pytest.approx(2e-4)


def test_a_merged_calibration_keeps_the_earlier_files_costs_unless_measured_again():
    from rung.spec.calibration import keep_ps_costs, parse_calibration

    base = {"schema": "rung/calibration/v1", "fitted": True, "inter_host_hop_seconds": 2e-5,
            "allreduce_share_of_goodput": 1.0, "measured_at": "2026-12-06T14:00:00Z"}
    earlier = parse_calibration({**base, "ps_dispatch_seconds": 0.006, "ps_variable_seconds": 1e-4, "ps_workers": 2})
    assert keep_ps_costs(dict(base), earlier)["ps_dispatch_seconds"] == 0.006
    assert keep_ps_costs(dict(base), earlier)["ps_workers"] == 2 and "ps_cores" not in keep_ps_costs(dict(base), earlier)
    again = keep_ps_costs({**base, "ps_dispatch_seconds": 0.008, "ps_workers": 3}, earlier)
    assert (again["ps_dispatch_seconds"], again["ps_workers"]) == (0.008, 3)
    assert keep_ps_costs(dict(base), None) == base
