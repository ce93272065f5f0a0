"""Benchmark for rung init / tf-config / check-tf-config / launch (issue: rung launch).

1. Start-up: `rung init`, `rung tf-config --all` and `rung check-tf-config` as a user
   runs them, median of N runs beside a bare `python -c pass` (a ratio), and whether
   TensorFlow or Ray was imported (neither may be).
2. Throughput: 2-worker MultiWorkerMirrored training of the same workload launched by
   `rung launch --engine local` (the generated train.py; as it is, and with its
   collective timeout off, RUNG_COLLECTIVE_TIMEOUT=0) and written by hand the TensorFlow
   guide's way with its fault tolerance (benchmarks/hand_written_mwms.py --backup; and
   the same with rung's collective timeout, --timeout 600: like for like), in
   interleaved rounds on this machine; ratios of steady-state examples/s (the last epoch).
3. Ray: the same job through `rung launch --engine ray`: Ray's start-up apart from the
   steady-state throughput, against the local launch's.

    python benchmarks/bench_launch.py [--pairs 3] [--steps 40] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = REPO / "rung" / "examples" / "workloads" / "mlp.py"
OUT = REPO / "benchmarks" / "out"


def wall(cmd, stdin=None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, input=stdin, text=True)
    return time.perf_counter() - t


def startup(runs: int) -> dict:
    tmp = Path(tempfile.mkdtemp())
    rung = [sys.executable, "-m", "rung"]
    cfg = '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 0}}'
    cmds = {
        "init": lambda i: wall(rung + ["init", str(WORKLOAD), "--strategy", "parameter_server", "--k8s",
                                       "--out", str(tmp / f"o{i}")]),
        "tf-config": lambda i: wall(rung + ["tf-config", "--strategy", "multi_worker_mirrored",
                                            "--workers", "a:1,b:2", "--all"]),
        "check-tf-config": lambda i: wall(rung + ["check-tf-config", "-"], stdin=cfg),
        "python -c pass": lambda i: wall([sys.executable, "-c", "pass"]),
    }
    out = {}
    for name, fn in cmds.items():
        fn(-1)
        out[name] = statistics.median(fn(i) for i in range(runs))
    probe = ("import sys; from rung.cli import main; main(['tf-config', '--strategy', 'multi_worker_mirrored', "
             "'--workers', 'a:1,b:2']); print(any(m.split('.')[0] in ('tensorflow', 'ray') for m in sys.modules))")
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.split()[-1]
    return {"median_seconds": out, "ratio_to_bare_python": {k: v / out["python -c pass"] for k, v in out.items()},
            "imports_tensorflow_or_ray": imported == "True"}


def launched(steps: int, engine: str = "local", timeout: str | None = None) -> dict:
    env = {**os.environ, **({"RUNG_COLLECTIVE_TIMEOUT": timeout} if timeout is not None else {})}
    r = subprocess.run([sys.executable, "-m", "rung", "launch", str(WORKLOAD), "--strategy", "multi_worker_mirrored",
                        "--workers", "2", "--engine", engine, "--steps", str(steps), "--epochs", "2", "--json"],
                       capture_output=True, text=True, check=True, env=env)
    return json.loads(r.stdout)


def hand_written(steps: int, backup: bool = False, timeout: float = 0) -> float:
    from rung.bench.plan import free_ports

    ports = free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    scratch = [tempfile.mkdtemp(prefix="rung-hand-") for _ in range(2)] if backup else []
    for i in range(2):
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
               "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})}
        procs.append(subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "hand_written_mwms.py"),
                                       str(WORKLOAD), "--steps", str(steps), "--epochs", "2", "--batch", "32"]
                                      + (["--backup", scratch[i]] if backup else [])
                                      + (["--timeout", str(timeout)] if timeout else []),
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    try:
        outs = [p.communicate(timeout=600)[0] for p in procs]
    finally:
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)
    lines = [json.loads(ln) for ln in outs[0].splitlines() if ln.startswith("{")]
    return lines[-1]["examples_per_second"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--no-startup", action="store_true")
    a = ap.parse_args()
    result = {}
    if not a.no_startup:
        s = result["startup"] = startup(a.runs)
        print("start-up, median seconds (ratio to a bare python start):")
        for k, v in s["median_seconds"].items():
            print(f"  {k:<16} {v:.3f} s  ({s['ratio_to_bare_python'][k]:.1f}x)")
        print(f"  imports TensorFlow or Ray: {s['imports_tensorflow_or_ray']}")
    # rung's train.py always backs up (BackupAndRestore): against the guide's plain fit and
    # against the guide's fault-tolerant fit, in interleaved triples, rotating the order
    pairs = []
    # rung's default keeps a collective timeout (a dead peer fails the step instead of
    # hanging it), which the guide's code does not set; "rung, no timeout" is like for like
    # "hand+backup+timeout" is the guide's code given the same CommunicationOptions timeout
    names = ("rung", "rung, no timeout", "hand+backup", "hand+backup+timeout")
    runs = {"rung": lambda: launched(a.steps)["examples_per_second"],
            "rung, no timeout": lambda: launched(a.steps, timeout="0")["examples_per_second"],
            "hand+backup": lambda: hand_written(a.steps, backup=True),
            "hand+backup+timeout": lambda: hand_written(a.steps, backup=True, timeout=600)}
    compare = (("rung", "hand+backup"), ("rung, no timeout", "hand+backup"), ("rung", "hand+backup+timeout"))
    for i in range(a.pairs):
        k = i % len(names)
        got = {who: runs[who]() for who in names[k:] + names[:k]}
        pairs.append(got)
        print(f"round {i + 1}: " + ", ".join(f"{k} {v:,.0f} ex/s" for k, v in got.items()) + "; ratios "
              + ", ".join(f"{x}/{y} {got[x] / got[y]:.3f}" for x, y in compare), flush=True)
    for x, y in compare:
        ratios = [p[x] / p[y] for p in pairs]
        key = f"{x} / {y}"
        result[key] = {"median": statistics.median(ratios), "of_means": statistics.fmean(
            p[x] for p in pairs) / statistics.fmean(p[y] for p in pairs)}
        print(f"{key}, steady state: median {statistics.median(ratios):.3f}, of means {result[key]['of_means']:.3f}")
    result["rounds"] = pairs
    if not a.no_ray:
        r = launched(a.steps, "ray")
        local = statistics.fmean(p["rung"] for p in pairs)  # both with the collective timeout
        result["ray"] = {"ray_start_seconds": r["ray_start_seconds"], "wall_seconds": r["wall_seconds"],
                         "examples_per_second": r["examples_per_second"],
                         "ratio_to_local_launch": r["examples_per_second"] / local}
        print(f"ray: start-up {r['ray_start_seconds']:.1f} s of {r['wall_seconds']:.1f} s; steady state "
              f"{r['examples_per_second']:,.0f} ex/s ({result['ray']['ratio_to_local_launch']:.2f}x the local launch)")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bench_launch.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
