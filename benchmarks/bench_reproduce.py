"""Benchmark: does the fleet simulation reproduce real bench runs from their inputs?

Calibrate the shaped test-host links (as bench_accuracy does: comm_heavy at 2 and 4
workers, 50 and 500 Mbit/s), then run rounds of the mlp workload on 3 test hosts with a
shaped link, each round a plain MultiWorkerMirrored run and the same run with worker 1
slowed by a factor (`rung bench --straggler 1:F`), and a longer plain run beside the
same run with worker 1 killed halfway (`rung bench --kill 1@K`: every worker restarts
and resumes from its last BackupAndRestore checkpoint, timed whole). The first R rounds also calibrate
(`--calibrate --calibration-merge`: their plain runs join the link's points, as a team
calibrates on its own earlier runs); the next R rounds are fresh, and each is
reproduced by `rung simulate --bench` from its own inputs (the one-device step and its
measured spread, gradient bytes, link, shared cores, the straggler) with that
calibration: out of sample. A killed run is reproduced whole: its steps, the steps
since the last checkpoint again, the bench's own detection of the kill (from the run)
and a fresh start to the first step (from the run without the kill). The check: the
simulated throughput against the fresh runs' spread across rounds, for plain, slowed
and killed runs; and, for the killed runs, the same kill accounting on the measured step
of the bench's unkilled twin (the kill's own cost, apart from the modelled step's
level). With `--no-merge`, only the corner (or given) calibration is used.
Needs root (test hosts).

    python benchmarks/bench_reproduce.py [--rounds 3] [--rate 500] [--factor 3] [--steps 30]
                                         [--kill-steps 80] [--calibration FILE] [--no-merge]
    python benchmarks/bench_reproduce.py --resimulate DIR --calibration FILE   # saved rounds, current model
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
HEAVY = REPO / "rung" / "examples" / "workloads" / "comm_heavy.py"
MLP = REPO / "rung" / "examples" / "workloads" / "mlp.py"
OUT = REPO / "benchmarks" / "out"


def rung(*args) -> dict:
    r = subprocess.run([sys.executable, "-m", "rung", *map(str, args), "--json"], capture_output=True, text=True,
                       timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"rung {args[0]} failed: {r.stderr[-1000:]}")
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=500.0, help="link rate of the test hosts, Mbit/s")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--factor", type=float, default=3.0, help="the straggler's slowdown")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--kill-steps", type=int, default=80, help="steps of the killed runs (killed halfway)")
    ap.add_argument("--calibration", help="an existing corner calibration file (skips calibrating the corners)")
    ap.add_argument("--no-merge", action="store_true", help="no calibration rounds: the corners' calibration only")
    ap.add_argument("--resimulate", metavar="DIR",
                    help="run nothing: simulate the bench files an earlier run left in DIR "
                         "(reproduce-bench-*.json) again with --calibration, e.g. after a change to the model")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    if args.resimulate and not args.calibration:
        raise SystemExit("--resimulate needs --calibration (the file those rounds were simulated with)")
    cal_file = Path(args.calibration) if args.calibration else OUT / "reproduce-calibration.json"
    if args.resimulate:
        args.no_merge = True
    if not args.calibration:
        cal_file.unlink(missing_ok=True)
        for i, rate in enumerate((50, 500)):
            print(f"calibrating at {rate} Mbit/s ...", flush=True)
            rung("bench", HEAVY, "--runs", "single_device,multi_worker_mirrored:2,multi_worker_mirrored:4",
                 "--hosts", 4, "--link-mbit", rate, "--steps", 4 if rate == 50 else 16, "--warmup", 2,
                 "--calibrate", "--calibration-out", cal_file, *(["--calibration-merge"] if i else []))
    runs = ("bench", MLP, "--runs", f"single_device,multi_worker_mirrored:{args.workers}", "--hosts", args.workers,
            "--link-mbit", args.rate, "--straggler", f"1:{args.factor:g}", "--steps", args.steps)
    if not args.no_merge:
        merged = OUT / "reproduce-calibration-merged.json"
        merged.write_text(cal_file.read_text())
        for i in range(args.rounds):
            print(f"calibration round {i} (mlp, its plain run joins the fit) ...", flush=True)
            rung(*runs, "--calibrate", "--calibration-merge", "--calibration-out", merged)
        cal_file = merged
    cal = json.loads(cal_file.read_text())
    print(f"calibration: all-reduce at {cal['allreduce_share_of_goodput']:.3f} of goodput, streaming "
          f"{(cal.get('testbed_cpu_seconds_per_byte') or 0) * 1e9:.2f} ns of CPU per byte, a fixed "
          f"{(cal.get('testbed_sync_seconds') or 0) * 1e3:.1f} ms per multi-worker step; fitted on "
          f"{len(cal['fitted_on'])} runs")
    rows = []
    for i in range(args.rounds):
        killed = ("bench", MLP, "--runs", f"single_device,multi_worker_mirrored:{args.workers}", "--hosts",
                  args.workers, "--link-mbit", args.rate, "--steps", args.kill_steps,
                  "--kill", f"1@{args.kill_steps // 2}")
        for tag, what in (("", runs), ("-kill", killed)):
            if args.resimulate:
                path = Path(args.resimulate) / f"reproduce-bench-{i}{tag}.json"
                if not path.exists():
                    continue
            else:
                b = rung(*what)
                path = OUT / f"reproduce-bench-{i}{tag}.json"
                path.write_text(json.dumps(b))
            sim = rung("simulate", "--bench", path, "--calibration", cal_file, "--seed", i)
            for r in sim["runs"]:
                kind = "killed" if r.get("kill") else "slowed" if r["straggler_factor"] > 1 else "plain"
                rows.append({"round": i, "kind": kind, **r})
                print(f"round {i}  {r['run']:<18} measured {r['measured_examples_per_second']:8,.0f} ex/s  "
                      f"simulated {r['simulated_examples_per_second']:8,.0f} ({r['simulated_over_measured']:.2f})  "
                      f"closed form {r['closed_form_examples_per_second']:8,.0f}"
                      + (f"  resumed from {r['kill']['resumed_from_step']} (predicted "
                         f"{r['kill']['predicted_resumed_from_step']})" if r.get("kill") else ""), flush=True)
    (OUT / "reproduce.json").write_text(json.dumps({"calibration": cal, "rows": rows}, indent=2))
    print("fresh rounds (out of sample):")
    ok = True
    for kind in ("plain", "slowed", "killed", "killed, on the unkilled run's measured step"):
        twin = kind.startswith("killed, ")
        sel = [r for r in rows if r["kind"] == "killed" and r["kill"].get("from_unkilled_run")] if twin \
            else [r for r in rows if r["kind"] == kind]
        if not sel:
            continue
        measured = [r["measured_examples_per_second"] for r in sel]
        simulated = [r["kill"]["from_unkilled_run"]["examples_per_second"] if twin
                     else r["simulated_examples_per_second"] for r in sel]
        lo, hi, mean = min(measured), max(measured), statistics.fmean(measured)
        sim = statistics.fmean(simulated)
        spread = (hi - lo) / mean
        inside = lo <= sim <= hi
        within = abs(sim / mean - 1) <= spread
        ok = ok and within
        print(f"{kind:<8} measured {lo:,.0f}..{hi:,.0f} ex/s (mean "
              f"{mean:,.0f}, spread {spread:.1%}); {'accounted' if twin else 'simulated'} {sim:,.0f} "
              f"({sim / mean - 1:+.1%} of the mean): "
              f"{'inside the measured range' if inside else 'outside the measured range'}, "
              f"{'within' if within else 'not within'} the spread")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
