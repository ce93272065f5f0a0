"""A local parameter-server cluster for the PS microbenchmarks: one PS task and N workers
as real `tf.distribute.Server`s in their own processes (as `rung.bench.psbench` starts
them), and a `ParameterServerStrategy` here that coordinates them over loopback."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys


@contextlib.contextmanager
def ps_strategy(workers: int):
    """Yields (tf, strategy); the server processes are killed and reaped on the way out."""
    from rung.bench.plan import free_ports

    ports = free_ports(1 + workers)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}
    tasks = [("ps", 0)] + [("worker", i) for i in range(workers)]
    procs = [subprocess.Popen([sys.executable, "-m", "rung.bench.psbench", "serve", role, str(i), json.dumps(cluster)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
             for role, i in tasks]
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
