"""Parameter-server predictions on this machine (issue: one model, measured against the
world): `rung bench mlp --runs single_device,parameter_server:1,2,3` repeated, each run's
prediction (rung advise's model with the PS costs rung.bench.psbench measured, and the
test bed's terms) against its measured step. Reports every error and the median per
worker count: this 2-core machine's neighbours move single runs by 20-50%, so one run
proves nothing either way.

    python benchmarks/bench_ps.py [--rounds 4] [--steps 60] [--workload FILE.py]
    python benchmarks/bench_ps.py --again benchmarks/out/ps-benches.json

`--again FILE` runs nothing: it predicts the runs of benches kept by an earlier call with
the model as it is now (their basis and psbench costs as they were measured), so two
versions of the model are compared on the same measurements.
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
from rung.spec.benchresult import BenchResult  # noqa: E402
MLP = REPO / "rung" / "examples" / "workloads" / "mlp.py"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--workers", default="1,2,3")
    ap.add_argument("--workload", type=Path, default=MLP, help="the workload file (default: the bundled mlp)")
    ap.add_argument("--again", type=Path, help="benches kept by an earlier call: predict them again, run nothing")
    a = ap.parse_args()
    runs = ",".join(["single_device"] + [f"parameter_server:{w}" for w in a.workers.split(",")])
    errors: dict[int, list[float]] = {}
    rows, benches = [], []
    kept = json.loads(a.again.read_text()) if a.again else None
    for i in range(len(kept) if kept else a.rounds):
        if kept:
            b = _predicted_again(kept[i])
        else:
            r = subprocess.run([sys.executable, "-m", "rung", "bench", str(a.workload), "--runs", runs, "--steps",
                                str(a.steps), "--json"], capture_output=True, text=True, timeout=1800, check=True)
            b = json.loads(r.stdout)
        benches.append(b)
        for x in [x for x in b["runs"] if x["strategy"] == "parameter_server"]:
            # the one-device step the run was predicted from: on its own Keras when the bench measured it
            one = BenchResult.model_validate(b).basis_for(x.get("keras")).one_device_step_seconds
            errors.setdefault(x["replicas"], []).append(x["prediction_error"])
            rows.append({"round": i + 1, "workers": x["replicas"], "measured": x["step_seconds_mean"],
                         "predicted": x["predicted_step_seconds"], "error": x["prediction_error"], "single_device_step_seconds": one})
            print(f"round {i + 1}: parameter_server:{x['replicas']} measured {x['step_seconds_mean'] * 1e3:5.1f} ms, "
                  f"predicted {x['predicted_step_seconds'] * 1e3:5.1f} ms ({x['prediction_error']:+.0%}); "
                  f"one device {one * 1e3:.1f} ms", flush=True)
    summary = {w: {"median": statistics.median(e), "min": min(e), "max": max(e)} for w, e in sorted(errors.items())}
    for w, s in summary.items():
        print(f"parameter_server:{w}: median error {s['median']:+.0%} (range {s['min']:+.0%} to {s['max']:+.0%})")
    out = REPO / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    tag = "" if a.workload.resolve() == MLP.resolve() else f"-{a.workload.stem}"  # the mlp's files keep their names
    (out / (f"ps-again{tag}.json" if kept else f"ps{tag}.json")).write_text(
        json.dumps({"rows": rows, "summary": summary}, indent=2))
    if not kept:  # every bench whole: its basis and ps_costs let a later model predict the same runs again
        (out / f"ps-benches{tag}.json").write_text(json.dumps(benches))
    return 0 if all(abs(s["median"]) <= 0.25 for s in summary.values()) else 1


def _predicted_again(b: dict) -> dict:
    """A kept bench with each parameter-server run predicted by the model as it is now."""
    from rung.bench import predict
    from rung.bench.reproduce import basis_of

    kept = BenchResult.model_validate(b)
    runs = [x for x in b["runs"] if x["strategy"] == "single_device"]
    for x in b["runs"]:
        if x["strategy"] != "parameter_server":
            continue
        basis, _ = basis_of(kept, "kept bench", keras=x.get("keras"))
        p = predict.predict_step_seconds(basis, "parameter_server", x["replicas"], 1.0, 1.0, x.get("option"))["step"]
        runs.append(dict(x, predicted_step_seconds=p, prediction_error=predict.relative_error(p, x["step_seconds_mean"])))
    return dict(b, runs=runs)


if __name__ == "__main__":
    sys.exit(main())
