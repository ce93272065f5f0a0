"""One worker of benchmarks/bench_imbalance.py, pinned to a core of its own by the driver.

    python worker.py MODE STEPS          MODE: fixed | varied | profile

`fixed`: every batch 32 sequences of length 256. `varied`: lengths drawn from 32, 96, ...,
480 (mean 256) per batch, independently on each worker. With TF_CONFIG set: a
MultiWorkerMirroredStrategy custom loop, the mean step after 16 warm-up steps on stdout.
`profile` (no TF_CONFIG): one process times the batches of every length with
rung.measure.timing.batch_time_cv, as `rung profile` does, and prints it.
"""

import json
import os
import sys
import time

mode, steps = sys.argv[1], int(sys.argv[2])
import tensorflow as tf  # noqa: E402

LENGTHS = [32, 96, 160, 224, 288, 352, 416, 480]  # mean 256
BATCH = 32
WARM = 16

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
multi = "TF_CONFIG" in os.environ
strategy = tf.distribute.MultiWorkerMirroredStrategy() if multi else tf.distribute.get_strategy()


def length(i):
    if mode != "varied":
        return tf.constant(256, tf.int64)
    pick = tf.random.stateless_uniform([], seed=tf.stack([i, tf.constant(7, tf.int64)]), maxval=len(LENGTHS),
                                       dtype=tf.int64)
    return tf.gather(tf.constant(LENGTHS, tf.int64), pick)


def per_worker(ctx):
    idx = tf.data.Dataset.range(1 << 30)
    if ctx is not None and ctx.num_input_pipelines > 1:
        idx = idx.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
    return idx.map(lambda i: (tf.random.normal((BATCH, tf.cast(length(i), tf.int32), 16)),
                              tf.random.normal((BATCH, 1)))).prefetch(4)


with strategy.scope():
    inp = tf.keras.Input((None, 16))
    x = tf.keras.layers.Conv1D(64, 5, padding="same", activation="relu")(inp)
    x = tf.keras.layers.Conv1D(64, 5, padding="same", activation="relu")(x)
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(tf.keras.layers.GlobalAveragePooling1D()(x)))
    opt = tf.keras.optimizers.SGD(0.01)


def replica_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function(reduce_retracing=True)
def step(x, y):
    return strategy.run(replica_step, args=(x, y)) if multi else replica_step(x, y)


if mode == "profile":
    from rung.measure import timing

    batches = [(tf.random.normal((BATCH, n, 16)), tf.random.normal((BATCH, 1))) for n in LENGTHS]
    v = timing.batch_time_cv(tf, lambda b: step(*b), batches)
    print(json.dumps({"mean_seconds": v.mean_seconds, "batch_cv": v.batch_cv, "distinct_cv": v.distinct_cv,
                      "same_cv": v.same_cv}))
    sys.exit(0)

it = iter(strategy.distribute_datasets_from_function(per_worker)) if multi else iter(per_worker(None))
times = []
for s in range(steps):
    x, y = next(it)
    t0 = time.perf_counter()
    loss = step(x, y)
    float(strategy.reduce("SUM", loss, axis=None) if multi else loss)
    times.append(time.perf_counter() - t0)
print(json.dumps({"mode": mode, "mean": sum(times[WARM:]) / len(times[WARM:]), "steps": len(times) - WARM}))
