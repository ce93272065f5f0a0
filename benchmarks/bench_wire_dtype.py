"""The gradient dtype on the wire against real runs: two multi-worker workers on two test
hosts (network namespaces, each link shaped with tc to --mbit) all-reduce gradient-sized
tensors, float32 and float16 alternately, as MultiWorkerMirroredStrategy's RING collective
does a step's gradients. Beside each, the model's inter-host exchange for that scenario
(`throughput.predict_sync`, what `rung advise` decides with; `workload.gradient_dtype`
float16 against the variables' float32): seconds, and the float16 / float32 ratio.

    python benchmarks/bench_wire_dtype.py [--params 4e6] [--mbit 200] [--rounds 15] [--json OUT]

Needs root (network namespaces), `ip` and `tc`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKER = REPO / "benchmarks" / "wire" / "worker.py"
sys.path.insert(0, str(REPO))

from rung.bench import netns  # noqa: E402
from rung.model import throughput  # noqa: E402
from rung.spec import parse_scenario  # noqa: E402


def measure(params: int, mbit: float, rounds: int, tensors: int) -> dict:
    netns.check_can_make_hosts()
    port = random.randint(20000, 40000)
    with netns.TestNet(2, mbit) as net:
        cluster = {"worker": [f"{net.address(i)}:{port}" for i in range(2)]}
        procs = []
        for i in range(2):
            env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}),
                       CUDA_VISIBLE_DEVICES="")
            cmd = net.wrap(i, [sys.executable, str(WORKER), str(params), str(rounds), str(tensors)])
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=900)
            if p.returncode != 0:
                raise SystemExit(f"a worker failed (exit {p.returncode}): {err.strip().splitlines()[-1:]}")
            outs.append(json.loads(out.strip().splitlines()[-1]))
    return {k: max(o[k] for o in outs) for k in outs[0]}


def predicted(params: int, mbit: float) -> dict:
    """The model's inter-host exchange of `params` gradients between 2 one-device hosts."""
    out = {}
    for dtype in ("float32", "float16"):
        s = parse_scenario({
            "schema": "rung/scenario/v1", "name": f"wire {dtype}",
            "workload": {"params": params, "optimizer": "sgd", "per_device_batch": 1, "step_seconds": 1.0,
                         "gradient_dtype": dtype},
            "hardware": {"device": "custom", "accelerator": "cpu", "device_memory_gib": 64, "devices_per_host": 1,
                         "inter_host_gbps": mbit / 1000.0, "max_hosts": 2},
            "goal": {"target_examples_per_second": 1.0}}, "bench_wire_dtype")
        out[dtype] = float(throughput.predict_sync(s, "multi_worker_mirrored", 2, 1).inter_host_seconds)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=float, default=4e6, help="gradient elements all-reduced a step")
    ap.add_argument("--mbit", type=float, default=200.0, help="each test host's link, Mbit/s")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--tensors", type=int, default=8, help="tensors the gradients are split into")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    params = int(a.params)
    print(f"two test hosts on {a.mbit:g} Mbit/s links, {params:,} gradient elements in {a.tensors} tensors, "
          f"{a.rounds} rounds", flush=True)
    m, p = measure(params, a.mbit, a.rounds, a.tensors), predicted(params, a.mbit)
    for k in ("float32", "float16"):
        print(f"  {k}: measured {m[k] * 1e3:8.1f} ms, model {p[k] * 1e3:8.1f} ms ({p[k] / m[k]:.2f}x)")
    ratio_m, ratio_p = m["float16"] / m["float32"], p["float16"] / p["float32"]
    print(f"  float16 / float32: measured {ratio_m:.3f}, model {ratio_p:.3f}")
    # what halving the bytes saves, the fixed costs of a collective (launch, the test hosts'
    # rendezvous) taken out: the model's byte term alone
    saved_m, saved_p = m["float32"] - m["float16"], p["float32"] - p["float16"]
    print(f"  saved by float16: measured {saved_m * 1e3:.1f} ms, model {saved_p * 1e3:.1f} ms "
          f"({saved_p / saved_m:.2f}x)")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"params": params, "mbit": a.mbit, "measured": m, "predicted": p,
                                      "ratio_measured": ratio_m, "ratio_predicted": ratio_p,
                                      "saved_measured": saved_m, "saved_predicted": saved_p}, indent=2))


if __name__ == "__main__":
    main()
