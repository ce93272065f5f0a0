"""Benchmark for `rung simulate`: how fast (workers x steps per second, 10,000 workers x
1,000 steps) and how close to the closed forms (straggler wait, goodput, staleness) the
fleet simulation is, with normal step times, and how far the normal closed form is
from heavy-tailed (lognormal) step times.

    python benchmarks/bench_simulate.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rung.model.simulate import simulate  # noqa: E402
from rung.spec import parse_scenario  # noqa: E402
from tests.conftest import valid_scenario  # noqa: E402


def scenario(cv=0.1, **fleet):
    return parse_scenario(valid_scenario(workload={"step_time_cv": cv}, hardware={"max_hosts": 100_000},
                                         fleet=fleet or {"preemptible": False}))


def main() -> int:
    out = {}
    s = scenario()
    simulate(s, 100, 100)  # warm-up
    t = time.perf_counter()
    simulate(s, 10_000, 1_000, seed=1)
    wall = time.perf_counter() - t
    out["speed"] = {"workers": 10_000, "steps": 1_000, "seconds": wall, "worker_steps_per_second": 1e7 / wall}
    print(f"10,000 workers x 1,000 steps (sync and async): {wall:.2f} s = {1e7 / wall:,.0f} worker-steps/s")
    rows = []
    for n in (4, 64, 1024, 10_000):
        r = simulate(s, n, 1000 if n < 10_000 else 200, seed=2)
        cf = r["closed_form"]
        rows.append({"workers": n,
                     "straggler_error": r["sync"]["straggler_seconds_mean"] / cf["sync"]["straggler_seconds_mean"] - 1,
                     "staleness_error": r["async"]["staleness_mean"] / cf["async"]["staleness_mean"] - 1})
        print(f"{n:>6} workers: straggler wait {rows[-1]['straggler_error']:+.1%} against the closed form, "
              f"staleness {rows[-1]['staleness_error']:+.1%}")
    for rate, restart in ((0.05, 300), (0.2, 300), (1.0, 300)):
        r = simulate(scenario(preemptible=True, preemptions_per_host_hour=rate, restart_seconds=restart), 16, 200,
                     seed=3)
        g, cf = r["sync"]["goodput"], r["closed_form"]["sync"]["goodput"]
        rows.append({"preemptions_per_host_hour": rate, "restart_seconds": restart, "goodput": g,
                     "closed_form_goodput": cf})
        print(f"16 hosts, {rate:g}/host/hour, {restart} s restarts: goodput {g:.3f} simulated, {cf:.3f} closed form "
              f"({(g - cf) * 100:+.1f} points)")
    heavy = simulate(scenario(cv=0.5), 64, 2000, seed=4, distribution="lognormal")
    ratio = heavy["sync"]["straggler_seconds_mean"] / heavy["closed_form"]["sync"]["straggler_seconds_mean"]
    out["heavy_tail_straggler_ratio"] = ratio
    print(f"lognormal step times, cv 0.5, 64 workers: the straggler wait is {ratio:.2f}x the normal closed form's")
    out["agreement"] = rows
    dest = REPO / "benchmarks" / "out"
    dest.mkdir(exist_ok=True)
    (dest / "simulate.json").write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
