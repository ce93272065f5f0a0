"""The load-imbalance term against real runs: two multi-worker workers, each pinned to a core
of its own (taskset), so a worker whose batch is short waits for the other's at the
all-reduce (on shared cores it would lend its core and hide the wait).

1. One process on one core times a batch of each length (32, 96, ..., 480; mean 256) with
   rung.measure.timing.batch_time_cv, as `rung profile` does for dynamic shapes: the mean
   step and its coefficient of variation.
2. Rounds of two runs each: both workers on batches of length 256 (`fixed`), then on lengths
   drawn independently per worker and step (`varied`, the same mean cost).
3. The model's term, `throughput.load_imbalance_seconds(mean, cv, 2 replicas)`, against the
   measured difference varied - fixed; and the varied step predicted as the fixed step plus
   the term, against the varied step measured (without the term: the fixed step).

    python benchmarks/bench_imbalance.py [--rounds 2] [--steps 336]

Needs `taskset` and two cores; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKER = REPO / "benchmarks" / "imbalance" / "worker.py"
sys.path.insert(0, str(REPO))


def run(args: list[str], core: int, env: dict) -> subprocess.Popen:
    return subprocess.Popen(["taskset", "-c", str(core), sys.executable, str(WORKER), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def last_json(p: subprocess.Popen) -> dict:
    out, _ = p.communicate(timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"a worker failed (exit {p.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def pair(mode: str, steps: int) -> float:
    port = random.randint(20000, 40000)
    cluster = {"worker": [f"localhost:{port}", f"localhost:{port + 1}"]}
    procs = []
    for i in range(2):
        env = {**os.environ, "PYTHONPATH": str(REPO),
               "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})}
        procs.append(run([mode, str(steps)], i, env))
    results = [last_json(p) for p in procs]
    return statistics.fmean(r["mean"] for r in results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=336)
    args = ap.parse_args()
    from rung.model import throughput

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TF_CONFIG", None)
    prof = last_json(run(["profile", "0"], 0, env))
    fixed, varied = [], []
    for r in range(args.rounds):
        fixed.append(pair("fixed", args.steps))
        varied.append(pair("varied", args.steps))
        print(f"round {r + 1}: fixed {fixed[-1] * 1e3:.2f} ms, varied {varied[-1] * 1e3:.2f} ms a step", flush=True)
    f, v = statistics.median(fixed), statistics.median(varied)
    term = float(throughput.load_imbalance_seconds(prof["mean_seconds"], prof["batch_cv"], 2))
    measured = v - f
    out = {"profile": prof, "fixed_seconds": fixed, "varied_seconds": varied,
           "predicted_extra_seconds": term, "measured_extra_seconds": measured,
           "varied_error_with_term": (f + term) / v - 1, "varied_error_without_term": f / v - 1}
    print(f"one core, batch against batch: mean step {prof['mean_seconds'] * 1e3:.2f} ms, CV {prof['batch_cv']:.3f} "
          f"net of noise (distinct {prof['distinct_cv']:.3f}, one batch again {prof['same_cv']:.3f})")
    print(f"two pinned workers: fixed {f * 1e3:.2f} ms, varied {v * 1e3:.2f} ms (medians of {args.rounds} rounds of "
          f"{args.steps} steps): the wait for the slower batch measured {measured * 1e3:.2f} ms, the model's term "
          f"{term * 1e3:.2f} ms ({term / measured:.2f}x)")
    print(f"the varied step predicted as fixed + term: {out['varied_error_with_term']:+.1%}; without the term "
          f"{out['varied_error_without_term']:+.1%}")
    dest = REPO / "benchmarks" / "out"
    dest.mkdir(exist_ok=True)
    (dest / "imbalance.json").write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
