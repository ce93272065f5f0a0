"""The host-pipeline floor (`rung.model.inputs.host_pipeline_floor`) against real runs.

On a GPU host the devices compute while the host's CPU runs the input pipeline, and one
pipeline makes every device's batch: a step of D devices takes at least D x the pipeline's
time for one device's batch, however fast the devices. This machine has no GPU, and CPU
replicas compute on the cores the pipeline needs, so the bench's test bed leaves the term
out. Here a stand-in device that takes time without taking the CPU makes the case real: each
replica's step is a 50 ms wait (`tf.numpy_function(time.sleep, stateful=False)`, so the
replicas wait at once, as devices would), under MirroredStrategy on N logical CPU devices,
fed by a tf.data pipeline whose map works the CPU (parallel, AUTOTUNE).

For each pipeline (light, heavy) and N in 1, 2, 4, 8, one process:
1. times the pipeline alone at the per-device batch, as `rung profile` does
   (`rung.measure.timing.pipeline_seconds_per_batch`): P;
2. times the step under N replicas (global batch N x 16): measured;
3. predicts it as max(own step, N x P) (the term), and as the own step without it, where the
   own step is the one-replica step measured in the same round.

    python benchmarks/bench_host_pipeline.py [--rounds 2] [--json FILE]

Run it on a quiet machine: the pipeline's CPU is what is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BATCH, WAIT, STEPS = 16, 0.05, 30
WORK = {"light": 60, "heavy": 900}  # matmul-tanh rounds per example in the map

CHILD = r"""
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf
from rung.measure.timing import pipeline_seconds_per_batch
n, work, batch, wait, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                           [tf.config.LogicalDeviceConfiguration()] * 8)
tf.config.threading.set_inter_op_parallelism_threads(32)

def heavy(x):
    m = tf.reshape(x, (8, 8))
    for _ in range(work):
        m = tf.tanh(tf.matmul(m, m) * 0.1 + 0.01)
    return tf.reshape(m, (64,))

def dataset(b):
    x = tf.random.uniform((4096, 64))
    return (tf.data.Dataset.from_tensor_slices(x).repeat().map(heavy, num_parallel_calls=tf.data.AUTOTUNE)
            .batch(b).prefetch(tf.data.AUTOTUNE))

pipe, _ = pipeline_seconds_per_batch(tf, dataset(batch), 40, 5, "bench", batch)

def device(x):  # a device busy for `wait` seconds that leaves the CPU to the pipeline
    def busy(v):
        time.sleep(wait)
        return v
    return tf.numpy_function(busy, [x], tf.float32, stateful=False)

strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(n)])
with strategy.scope():
    v = tf.Variable(1.0)

@tf.function
def step(b):
    return strategy.run(lambda x: device(tf.reduce_sum(x) * v), args=(b,))

it = iter(strategy.experimental_distribute_dataset(dataset(batch * n)))
for _ in range(5):
    step(next(it))
t = time.perf_counter()
for _ in range(steps):
    step(next(it))
print(pipe, (time.perf_counter() - t) / steps)
"""


def one(n: int, work: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-c", CHILD, str(n), str(work), str(BATCH), str(WAIT), str(STEPS)],
                       capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"bench_host_pipeline: the run of {n} replicas failed: {r.stderr.strip()[-600:]}")
    pipe, step = (float(x) for x in r.stdout.split()[-2:])
    return pipe, step


def main() -> int:
    from rung.model import inputs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rows = []
    print(f"{'pipeline':8} {'N':>2} {'P (ms)':>7} {'N x P':>7} {'measured':>9} {'with term':>10} {'error':>7} "
          f"{'without':>8} {'error':>7}")
    for r in range(a.rounds):
        for name, work in WORK.items():
            own = None
            for n in (1, 2, 4, 8):
                pipe, step = one(n, work)
                if n == 1:
                    own = step
                floor = float(inputs.host_pipeline_floor(pipe, n))
                with_term = max(own, floor)
                rows.append({"round": r, "pipeline": name, "replicas": n, "pipeline_seconds": pipe,
                             "measured_seconds": step, "predicted_seconds": with_term, "without_term_seconds": own})
                print(f"{name:8} {n:>2} {pipe * 1e3:7.1f} {floor * 1e3:7.1f} {step * 1e3:8.1f}ms "
                      f"{with_term * 1e3:8.1f}ms {with_term / step - 1:+7.0%} {own * 1e3:6.1f}ms {own / step - 1:+7.0%}",
                      flush=True)
    for name in WORK:
        capped = [x for x in rows if x["pipeline"] == name and x["replicas"] > 1]
        err = [abs(x["predicted_seconds"] / x["measured_seconds"] - 1) for x in capped]
        err0 = [abs(x["without_term_seconds"] / x["measured_seconds"] - 1) for x in capped]
        print(f"{name}: median |error| of N > 1 with the term {statistics.median(err):.0%}, "
              f"without it {statistics.median(err0):.0%}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
