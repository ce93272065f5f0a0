"""The oracle for rung.measure.pipeline.captured_datasets, run as a script in its own
process: a real parameter-server cluster on loopback (one ps task, one worker, each a
tf.distribute.Server process) and a coordinator here, which builds each worker's dataset
as ParameterServerStrategy does (ClusterCoordinator.create_per_worker_dataset traces the
function and runs it on the worker). Two pipelines that differ in one thing: where the
source dataset is made. Prints one JSON object: for each, what captured_datasets counts and
what the cluster did with it ("ran", or TensorFlow's error)."""

import json
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # parameter servers run on tf-keras
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

from rung.bench.plan import free_ports  # noqa: E402
from rung.bench.psbench import start_servers  # noqa: E402
from rung.measure.pipeline import captured_datasets  # noqa: E402

X = tf.random.normal((16, 4))
OUTSIDE = tf.data.Dataset.from_tensor_slices(X)  # made when the file is imported


def made_outside(batch_size, input_context=None):
    return OUTSIDE.map(lambda x: x * 2.0).repeat().batch(batch_size)


def made_inside(batch_size, input_context=None):
    return tf.data.Dataset.from_tensor_slices(X).map(lambda x: x * 2.0).repeat().batch(batch_size)


def main():
    cluster, procs = start_servers(free_ports(2))
    out = {}
    try:
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec(cluster),
                                                                        rpc_layer="grpc")
        strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
        coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)

        @tf.function
        def step(iterator):
            return tf.reduce_sum(next(iterator))

        for name, fn in (("outside", made_outside), ("inside", made_inside)):
            result = {"captured": captured_datasets(tf, fn, 4)}
            try:
                per_worker = coordinator.create_per_worker_dataset(lambda fn=fn: fn(4))
                value = coordinator.schedule(step, args=(iter(per_worker),))
                coordinator.join()
                value.fetch()
                result["cluster"] = "ran"
            except Exception as e:  # noqa: BLE001 - what the cluster said is the finding
                result["cluster"] = f"{type(e).__name__}: {e}"[:2000]
            out[name] = result
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=10)
    print(json.dumps(out))
    os._exit(0)  # skip the eager context's teardown, which reports the servers just stopped


if __name__ == "__main__":
    main()
