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
    (["--runs", "parameter_server:2", "--engine", "ray"], "--engine local"),
    (["--runs", "parameter_server:2", "--ps-costs", "/no/such.json"], "no such"),
])
def test_the_command_refuses_it_before_any_run(tmp_path, args, words):
    if "--ps-costs" not in args:
        args = [*args, "--ps-costs", str(KEPT)]
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(workload_examples()["mlp"]), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
