"""One multi-worker worker of benchmarks/bench_wire_dtype.py: all-reduces a gradient-sized
set of tensors across the cluster in float32 and in float16, alternately, and prints the
median seconds of each as one JSON line. TF_CONFIG names the cluster and this task."""

import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

params, rounds, tensors = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
options = tf.distribute.experimental.CommunicationOptions(
    implementation=tf.distribute.experimental.CommunicationImplementation.RING)
strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
size = params // tensors


def reducer(dtype):
    grads = [tf.ones((size,), dtype) for _ in range(tensors)]

    @tf.function
    def step():
        def replica():
            return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, grads)
        out = strategy.run(replica)
        return tf.add_n([tf.reduce_sum(tf.cast(t, tf.float32)) for t in out])
    return step


steps = {"float32": reducer(tf.float32), "float16": reducer(tf.float16)}
for s in steps.values():  # build and warm both
    s(); s()
times = {k: [] for k in steps}
for _ in range(rounds):
    for k, s in steps.items():
        t = time.perf_counter()
        s().numpy()
        times[k].append(time.perf_counter() - t)
print(json.dumps({k: statistics.median(v) for k, v in times.items()}), flush=True)
