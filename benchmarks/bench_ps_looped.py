"""Parameter servers and compile(steps_per_execution=k): one coordinator dispatches every
call of the step, and a call runs k steps, so part of its cost per step goes
(`Links.dispatch_seconds`: a + b / k, through k = 2 and the share psbench measures at 8).
This runs `rung bench` on a small MLP compiled at k = 1, 4, 8 and 32 (the workload is
written here; nothing was fitted on it) with one and two parameter-server workers, and
sets each run's prediction beside it twice: the bench's own (with the looped dispatch) and
the same model without it (the dispatch of one step a call, whatever k). Every run is
from the same bench as its prediction's psbench costs and one-device step.

    python benchmarks/bench_ps_looped.py [--rounds 2] [--steps 64] [--k 1,4,8,32]
    python benchmarks/bench_ps_looped.py --again benchmarks/out/ps-looped.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from rung.bench import predict  # noqa: E402
from rung.bench.reproduce import basis_of  # noqa: E402
from rung.spec.benchresult import BenchResult  # noqa: E402

WORKLOAD = '''import tensorflow as tf


def build_model():
    m = tf.keras.Sequential([tf.keras.layers.Input((64,)), tf.keras.layers.Dense(128, activation="relu"),
                             tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)])
    m.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              steps_per_execution={k})
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.normal([2048, 64])
    y = tf.random.uniform([2048], 0, 10, dtype=tf.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size)
'''


def rows_of(b: dict, k: int) -> list[dict]:
    """Each parameter-server run of bench `b`: measured, predicted (the bench's model),
    and predicted as if a call's dispatch were paid by every step."""
    typed = BenchResult.model_validate(b)
    basis, _ = basis_of(typed, "bench")
    flat = {n: (m.model_copy(update={"keras_looped_dispatch_seconds": None}) if m else m)
            for n, m in (basis.ps_costs or {}).items()}
    out = []
    for r in typed.runs:
        if r.strategy != "parameter_server" or not r.step_seconds_mean:
            continue
        n, measured = r.replicas, r.step_seconds_mean
        looped = predict.predict_step_seconds(basis, "parameter_server", n)["step"]
        unlooped = predict.predict_step_seconds(replace(basis, ps_costs=flat, steps_per_execution=1),
                                                "parameter_server", n)["step"]
        out.append({"k": k, "workers": n, "measured": measured, "predicted": looped, "without": unlooped,
                    "error": looped / measured - 1, "error_without": unlooped / measured - 1,
                    "steps_per_execution_read": basis.steps_per_execution})
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--k", default="1,4,8,32")
    ap.add_argument("--again", type=Path, help="benches kept by an earlier call: predict them again, run nothing")
    a = ap.parse_args()
    ks = [int(x) for x in a.k.split(",")]
    kept = json.loads(a.again.read_text()) if a.again else None
    benches, rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds if kept is None else 1):
            for k in ks if kept is None else []:
                f = Path(tmp) / f"mlp_spe{k}.py"
                f.write_text(WORKLOAD.format(k=k))
                r = subprocess.run([sys.executable, "-m", "rung", "bench", str(f), "--runs",
                                    "single_device,parameter_server:1,parameter_server:2", "--steps", str(a.steps),
                                    "--json"], capture_output=True, text=True, timeout=1800, check=True)
                b = json.loads(r.stdout)
                benches.append({"k": k, "round": i + 1, "bench": b})
        for kb in kept or benches:
            for row in rows_of(kb["bench"], kb["k"]):
                row["round"] = kb["round"]
                rows.append(row)
                print(f"round {row['round']} k={row['k']:>2} ps:{row['workers']}: measured {row['measured'] * 1e3:5.2f} ms, "
                      f"predicted {row['predicted'] * 1e3:5.2f} ms ({row['error']:+.0%}), without the looped "
                      f"dispatch {row['without'] * 1e3:5.2f} ms ({row['error_without']:+.0%})", flush=True)
    print("\nmedian error by k (with the looped dispatch / without it):")
    for k in ks:
        e = [r["error"] for r in rows if r["k"] == k]
        w = [r["error_without"] for r in rows if r["k"] == k]
        if e:
            print(f"  k={k:>2}: {statistics.median(e):+.0%} / {statistics.median(w):+.0%}  ({len(e)} runs; "
                  f"with: {min(e):+.0%} to {max(e):+.0%})")
    if kept is None:
        out = REPO / "benchmarks" / "out" / "ps-looped.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(benches))
        print(f"benches kept in {out.relative_to(REPO)} (--again predicts them with the model as it is then)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
