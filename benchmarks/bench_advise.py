"""Benchmark for `rung advise` (issue: the ladder decision).

1. `rung advise --scenario FILE --json`, start-up included, as a user runs it: the
   median of N runs, beside a bare `python -c pass` in the same run (a ratio, since
   shared machines are noisy), and whether TensorFlow was imported (it must not be).
2. The same with a scenario of 10 offers (capacity planning: the ladder on every option).
3. A vectorised sweep of >= 100,000 configurations (hosts x devices per host x
   inter-host bandwidth x per-device batch) through the model: configurations/s,
   beside the scalar model's rate on a sample (the speed-up from vectorising); and the
   sweep over every option of the 10-offer scenario, with dollars per hour.

    python benchmarks/bench_advise.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "rung" / "examples" / "scenarios" / "04-multi-host.yaml"


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def offers_scenario() -> Path:
    """The multi-host example with 10 offers of catalog GPUs, written to a temporary file."""
    import tempfile

    import yaml

    data = yaml.safe_load(SCENARIO.read_text())
    devices = ["A100-80GB", "H100-80GB", "A10G", "L4", "V100-32GB"]
    data["offers"] = [{"name": f"offer-{i}", "usd_per_host_hour": 2.0 + 3.0 * i, "device": devices[i % 5],
                       "devices_per_host": (1, 4, 8)[i % 3], "inter_host_gbps": (25, 100, 400)[i % 3],
                       "max_hosts": (1, 4, 16)[i % 3]} for i in range(10)]
    path = Path(tempfile.mkdtemp()) / "ten-offers.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def fleet_scenario(max_hosts: int) -> Path:
    """The multi-host example offered `max_hosts` hosts: every fleet size up to it is walked
    (before the straggler term's table, 10,000 hosts took 12 s and 100,000 about 2 minutes)."""
    import tempfile

    import yaml

    data = yaml.safe_load(SCENARIO.read_text())
    data["hardware"]["max_hosts"] = max_hosts
    path = Path(tempfile.mkdtemp()) / f"fleet-{max_hosts}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def bench_cli(runs: int, scenario: Path = SCENARIO) -> dict:
    advise = [sys.executable, "-m", "rung", "advise", "--scenario", str(scenario), "--json"]
    bare = [sys.executable, "-c", "pass"]
    wall(advise)  # warm the file cache
    a = [wall(advise) for _ in range(runs)]
    b = [wall(bare) for _ in range(runs)]
    probe = subprocess.run([sys.executable, "-c",
                            "import sys; from rung.cli import main; import io, contextlib;\n"
                            "with contextlib.redirect_stdout(io.StringIO()): "
                            f"main(['advise', '--scenario', {str(scenario)!r}, '--json'])\n"
                            "print(any(m.split('.')[0] in ('tensorflow', 'keras', 'tf_keras') for m in sys.modules))"],
                           capture_output=True, text=True, check=True)
    return {"runs": runs, "advise_median_seconds": statistics.median(a), "advise_max_seconds": max(a),
            "bare_python_median_seconds": statistics.median(b),
            "advise_over_bare_python": statistics.median(a) / statistics.median(b),
            "tensorflow_imported": probe.stdout.strip() == "True"}


def bench_sweep() -> dict:
    from rung.model import throughput
    from rung.model.sweep import sweep_sync
    from rung.spec import load_scenario

    s = load_scenario(SCENARIO)
    axes = dict(hosts=range(1, 65), devices_per_host=[1, 2, 4, 8, 16],
                inter_host_gbps=np.linspace(1, 400, 40), per_device_batch=[16, 32, 64, 128, 256, 512, 1024, 2048])
    sweep_sync(s, **axes)  # warm-up
    times, n = [], 0
    for _ in range(5):
        t = time.perf_counter()
        g = sweep_sync(s, **axes)
        times.append(time.perf_counter() - t)
        n = g["examples_per_second"].size
    sample = 2000
    t = time.perf_counter()
    for i in range(sample):
        throughput.predict_sync(s, "x", 1 + i % 64, 8)
    scalar_rate = sample / (time.perf_counter() - t)
    best = min(times)
    return {"configurations": int(n), "seconds_median": statistics.median(times), "seconds_best": best,
            "configurations_per_second": n / statistics.median(times),
            "scalar_configurations_per_second": scalar_rate,
            "vectorised_over_scalar": (n / statistics.median(times)) / scalar_rate}


def bench_sweep_options(path: Path) -> dict:
    from rung.ladder.options import sweep_options
    from rung.spec import load_scenario

    s = load_scenario(path)
    axes = dict(hosts=range(1, 33), devices_per_host=[1, 2, 4, 8], inter_host_gbps=[10, 25, 100, 400],
                per_device_batch=[32, 64, 128, 256])
    sweep_options(s, **axes)
    t = time.perf_counter()
    grids = sweep_options(s, **axes)
    seconds = time.perf_counter() - t
    n = sum(g["examples_per_second"].size for g in grids.values())
    return {"options": len(grids), "configurations": n, "seconds": seconds, "configurations_per_second": n / seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    ten = offers_scenario()
    out = {"cli": bench_cli(args.runs), "cli_ten_offers": bench_cli(args.runs, ten),
           "cli_10000_hosts": bench_cli(max(3, args.runs // 5), fleet_scenario(10_000)), "sweep": bench_sweep(),
           "sweep_options": bench_sweep_options(ten)}
    c, w, o, f = out["cli"], out["sweep"], out["cli_ten_offers"], out["cli_10000_hosts"]
    print(f"rung advise --json: median {c['advise_median_seconds']:.3f} s over {c['runs']} runs "
          f"(max {c['advise_max_seconds']:.3f} s; {c['advise_over_bare_python']:.1f}x a bare `python -c pass` "
          f"at {c['bare_python_median_seconds']:.3f} s); TensorFlow imported: {c['tensorflow_imported']}")
    print(f"rung advise --json, 10 offers: median {o['advise_median_seconds']:.3f} s (max {o['advise_max_seconds']:.3f} s; "
          f"{o['advise_over_bare_python']:.1f}x a bare python); TensorFlow imported: {o['tensorflow_imported']}")
    print(f"rung advise --json, max_hosts 10,000: median {f['advise_median_seconds']:.3f} s over {f['runs']} runs "
          f"({f['advise_median_seconds'] / c['advise_median_seconds']:.1f}x max_hosts 8)")
    so = out["sweep_options"]
    print(f"sweep over {so['options']} options: {so['configurations']:,} configurations with $/hour in "
          f"{so['seconds'] * 1e3:.0f} ms = {so['configurations_per_second']:,.0f}/s")
    print(f"sweep: {w['configurations']:,} configurations in {w['seconds_median'] * 1e3:.1f} ms (median of 5) = "
          f"{w['configurations_per_second']:,.0f}/s; {w['vectorised_over_scalar']:,.0f}x the scalar model "
          f"({w['scalar_configurations_per_second']:,.0f}/s)")
    dest = REPO / "benchmarks" / "out"
    dest.mkdir(exist_ok=True)
    (dest / "advise.json").write_text(json.dumps(out, indent=2))
    ok = c["advise_median_seconds"] < 0.5 and not c["tensorflow_imported"] and w["configurations"] >= 100_000 \
        and o["advise_median_seconds"] < 0.5 and not o["tensorflow_imported"] \
        and w["seconds_median"] <= 1.0 and f["advise_median_seconds"] < 2.0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
