"""A local parameter-server cluster for the PS microbenchmarks: one PS task and N workers
as real `tf.distribute.Server`s in their own processes (`rung.bench.psbench.start_servers`),
and a `ParameterServerStrategy` here that coordinates them over loopback."""

from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def ps_strategy(workers: int):
    """Yields (tf, strategy); the server processes are killed and reaped on the way out."""
    from rung.bench.plan import free_ports
    from rung.bench.psbench import start_servers

    cluster, procs = start_servers(free_ports(1 + workers))
    try:
        os.environ["TF_USE_LEGACY_KERAS"] = "1"  # parameter servers need tf-keras
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec(cluster),
                                                                        rpc_layer="grpc")
        yield tf, tf.distribute.experimental.ParameterServerStrategy(resolver)
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=30)
