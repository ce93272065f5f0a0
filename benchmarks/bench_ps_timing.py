"""How should a parameter-server step be timed on this machine? Two ways, side by side.

Pairs: the median of 3 pairs of a short and a long fit, the way `rung bench` timed a
parameter-server run until `dc51b0a`: each fit pays a fixed cost, and the pair's
difference is the steps alone. Epochs, the way it times one now (and psbench its Keras
dispatch): one fit of several epochs, with an epoch-level callback (parameter-server fit
takes those, not batch-level ones), and the interval between consecutive epoch ends per
step (each epoch joins its scheduled steps).

A local cluster of one PS task and two workers (real `tf.distribute.Server`s, as
`rung.bench.psbench` starts them) and a coordinator here train the bundled mlp's shape
(784-256-256-10, Adam, batch 32), each way in turn, `--reps` times.

    python benchmarks/bench_ps_timing.py [--steps 60] [--reps 3]

Writes benchmarks/out/ps-timing.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _ps_cluster import ps_strategy  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60, help="steps of a long fit (an epoch is half of it)")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()

    rows = []

    with ps_strategy(2) as (tf, strategy):
        with strategy.scope():
            inp = tf.keras.Input((784,))
            h = tf.keras.layers.Dense(256, activation="relu")(inp)
            h = tf.keras.layers.Dense(256, activation="relu")(h)
            model = tf.keras.Model(inp, tf.keras.layers.Dense(10)(h))
            model.compile(tf.keras.optimizers.Adam(1e-3),
                          tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        data = tf.keras.utils.experimental.DatasetCreator(
            lambda ctx: tf.data.Dataset.from_tensors((tf.zeros([32, 784]), tf.zeros([32], tf.int32))).repeat())

        def fit_seconds(steps: int) -> float:
            t = time.perf_counter()
            model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
            return time.perf_counter() - t

        fit_seconds(5)  # trace and warm
        n, half = a.steps, a.steps // 2
        for rep in range(a.reps):
            pairs = []
            for _ in range(3):
                short = fit_seconds(2)
                pairs.append((fit_seconds(n) - short) / (n - 2))
            ends: list[float] = []
            marker = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: ends.append(time.perf_counter()))
            model.fit(data, epochs=6, steps_per_epoch=half, verbose=0, callbacks=[marker])
            epochs = [(b - e) / half for e, b in zip(ends, ends[1:])]
            rows.append({"pairs_seconds": pairs, "epochs_seconds": epochs})
            print(f"rep {rep + 1}: pairs {', '.join(f'{x * 1e3:.1f}' for x in pairs)} ms "
                  f"(median {statistics.median(pairs) * 1e3:.1f}); epochs {', '.join(f'{x * 1e3:.1f}' for x in epochs)} "
                  f"ms (median {statistics.median(epochs) * 1e3:.1f})", flush=True)

    def spread(key: str) -> float:
        medians = [statistics.median(r[key]) for r in rows]
        return max(medians) / min(medians)

    print(f"max/min of the reps' medians: pairs {spread('pairs_seconds'):.2f}, epochs {spread('epochs_seconds'):.2f}")
    out = REPO / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "ps-timing.json").write_text(json.dumps({"steps": a.steps, "reps": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
