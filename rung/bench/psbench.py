"""A microbenchmark of parameter-server overheads on the machine in use, like `linkbench`
for the network: a local cluster of one PS task and N workers (real
`tf.distribute.Server`s in their own processes) and a `ClusterCoordinator` here.

- dispatch: one scheduled step that touches no variable (schedule, run on a worker,
  return), per step;
- keras dispatch: Keras fit's own per-step cost on that cluster (a one-layer model of
  two variables, SGD, so its compute is nil), the coordinator's share of every step:
  timed by the epochs of one fit, as `rung bench` times a parameter-server run (every
  epoch joins its steps, so the interval between two epoch ends is one epoch's steps
  alone, without the fixed cost every fit also pays);
- keras local step: the same model's step outside the strategy, on one device (timed
  the same way): Keras's work per step that a measured one-device step already holds;
- looped: both again with compile(steps_per_execution=8), 8 steps a dispatch (what the
  model's `Links.dispatch_seconds` curve passes through);
- per variable: a step that reads and updates V small variables on the PS, at two
  values of V; the slope is one variable's remote read plus update;
- per metric variable: the keras-dispatch model's fit again with METRICS compiled metrics
  (two variables each, on the PS like every variable made in the strategy's scope, updated
  and read by every step); the difference from the fit without them, less the same
  difference on one device (the metrics' own work, which a measured one-device step
  already holds), per variable;
- transfer: a step that reads and updates a 4 MiB variable: the rate remote variable
  transfers reach (gRPC tensor transfer, below raw TCP).

The scheduled-step figures are each the best of several rounds (the least disturbed on a
shared machine); Keras's two are the median of the epochs of one fit.

    python -m rung.bench.psbench [WORKERS]   -> one JSON line
    python -m rung.bench.psbench serve ROLE INDEX CLUSTER_JSON   (the servers it starts)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

STEPS = 40
ROUNDS = 3
# Keras's per-step costs: the median of this many epochs of STEPS steps, after the first
# epoch of the same fit (which pays the fit's fixed cost)
EPOCHS = 5
VARIABLES = (4, 64)
# steps a dispatch in the looped fit (compile's steps_per_execution); STEPS is a multiple
LOOPED = 8
BIG_FLOATS = 1 << 20  # a 4 MiB variable
# compiled metrics of the model fit with them (Keras's mean-wrapped metrics: a total and a
# count each), against the same model's fit with its loss's tracker alone
METRICS = 8


def serve(role: str, index: int, cluster: dict) -> None:
    from rung.bench.orphans import exit_with_parent

    exit_with_parent()  # a psbench that crashes skips its `finally`: its servers end anyway
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=role, task_index=index,
                                  protocol="grpc", start=True)
    server.join()


def start_servers(ports: list[int]) -> tuple[dict, list[subprocess.Popen]]:
    """A local cluster over loopback: one PS task on ports[0] and a worker on each other
    port, each a `tf.distribute.Server` in its own process (`serve`). Returns the cluster
    spec and the processes (the caller kills them)."""
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}
    tasks = [("ps", 0)] + [("worker", i) for i in range(len(ports) - 1)]
    procs = [subprocess.Popen([sys.executable, "-m", "rung.bench.psbench", "serve", role, str(i), json.dumps(cluster)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
             for role, i in tasks]
    return cluster, procs


def _best(fn, steps: int, rounds: int = ROUNDS) -> float:
    """Seconds per step of fn(steps), best of `rounds` after one warm-up."""
    fn(max(2, steps // 4))
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn(steps)
        out.append((time.perf_counter() - t) / steps)
    return min(out)


def _epoch_step(fit, steps: int, epochs: int = EPOCHS) -> tuple[float, float]:
    """Seconds per step of one fit of `epochs` + 1 epochs of `steps` (the median of the
    intervals between epoch ends, each divided by `steps`), and the fit's fixed cost (its
    start to the first epoch's end, less one epoch). On a shared machine the difference of
    a short and a long fit scattered 1.4-1.9x between repetitions, epoch ends 1.0-1.2x
    (`benchmarks/bench_ps_timing.py`)."""
    from rung.stats import epoch_step_seconds

    ends: list[float] = []
    start = time.perf_counter()
    fit(steps, epochs + 1, lambda: ends.append(time.perf_counter()))
    _, per, fixed = epoch_step_seconds(start, ends, steps)
    return per, fixed


def _metered(tf):
    """The dispatch model (one Dense layer, SGD) compiled with METRICS metrics besides its loss."""
    inp = tf.keras.Input((4,))
    model = tf.keras.Model(inp, tf.keras.layers.Dense(4)(inp))
    model.compile("sgd", "mse", metrics=[tf.keras.metrics.MeanSquaredError(name=f"m{i}") for i in range(METRICS)])
    return model


def measure(workers: int = 1, steps: int = STEPS) -> dict:
    from rung.bench.linkbench import rtt_loopback
    from rung.bench.plan import free_ports
    from rung.measure import tfenv

    cluster, procs = start_servers(free_ports(1 + workers))
    try:
        os.environ["TF_USE_LEGACY_KERAS"] = "1"  # parameter servers need tf-keras (Keras 3 cannot run them)
        tf = tfenv.import_tensorflow(None)
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec(cluster),
                                                                        rpc_layer="grpc")
        strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
        coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
        with strategy.scope():
            sets = {v: [tf.Variable(tf.zeros([16])) for _ in range(v)] for v in VARIABLES}
            big = [tf.Variable(tf.zeros([BIG_FLOATS]))]
            inp = tf.keras.Input((4,))
            model = tf.keras.Model(inp, tf.keras.layers.Dense(4)(inp))
            model.compile("sgd", "mse")
            # the same model run LOOPED steps a dispatch (compile's steps_per_execution)
            looped_inp = tf.keras.Input((4,))
            looped = tf.keras.Model(looped_inp, tf.keras.layers.Dense(4)(looped_inp))
            looped.compile("sgd", "mse", steps_per_execution=LOOPED)
            # the same model again with compiled metrics: their variables live on the PS too
            metered = _metered(tf)

        def scheduled(step_fn):
            def run(n):
                for _ in range(n):
                    coordinator.schedule(step_fn)
                coordinator.join()
            return run

        @tf.function
        def nothing():
            return tf.constant(1.0)

        def touching(vs):
            @tf.function
            def step():
                for v in vs:
                    v.assign_add(v.read_value() * 0.0 + 1.0)
                return tf.constant(1.0)
            return step

        data = tf.keras.utils.experimental.DatasetCreator(
            lambda ctx: tf.data.Dataset.from_tensors((tf.zeros([8, 4]), tf.zeros([8, 4]))).repeat())

        def fitter(m, d):
            def fit(n, epochs=1, on_epoch_end=None):
                callbacks = [tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: on_epoch_end())] \
                    if on_epoch_end else []
                m.fit(d, epochs=epochs, steps_per_epoch=n, verbose=0, callbacks=callbacks)
            return fit

        # the same model outside the strategy: Keras's own work per step on one device, which
        # the one-device step the model starts from already holds
        local_inp = tf.keras.Input((4,))
        local_model = tf.keras.Model(local_inp, tf.keras.layers.Dense(4)(local_inp))
        local_model.compile("sgd", "mse")
        local_looped = tf.keras.Model(local_inp, tf.keras.layers.Dense(4)(local_inp))
        local_looped.compile("sgd", "mse", steps_per_execution=LOOPED)
        local_data = tf.data.Dataset.from_tensors((tf.zeros([8, 4]), tf.zeros([8, 4]))).repeat()

        fit, fit_local, fit_looped = fitter(model, data), fitter(local_model, local_data), fitter(looped, data)
        fit_local_looped = fitter(local_looped, local_data)
        fit_metered = fitter(metered, data)
        fit_local_metered = fitter(_metered(tf), local_data)

        dispatch = _best(scheduled(nothing), steps)
        fit(max(2, steps // 4))  # warm-up: trace the step, connect to the workers
        keras, fit_fixed = _epoch_step(fit, steps)
        fit_looped(max(2 * LOOPED, steps // 4))
        keras_looped, _ = _epoch_step(fit_looped, steps)
        fit_local(max(2, steps // 4))
        keras_local, _ = _epoch_step(fit_local, steps)
        fit_local_looped(max(2 * LOOPED, steps // 4))
        keras_local_looped, _ = _epoch_step(fit_local_looped, steps)
        fit_metered(max(2, steps // 4))
        keras_metered, _ = _epoch_step(fit_metered, steps)
        fit_local_metered(max(2, steps // 4))
        keras_local_metered, _ = _epoch_step(fit_local_metered, steps)
        metric_variables = sum(len(m.variables) for m in metered.metrics) - sum(len(m.variables) for m in model.metrics)
        remote_metrics = (keras_metered - keras) - (keras_local_metered - keras_local)
        times = {v: _best(scheduled(touching(vs)), steps) for v, vs in sets.items()}
        lo, hi = VARIABLES
        per_var = max(0.0, (times[hi] - times[lo]) / (hi - lo))
        big_step = _best(scheduled(touching(big)), max(5, steps // 4))
        moved = 2 * 4 * BIG_FLOATS  # read to the worker, update back
        per_byte = max(0.0, big_step - dispatch - per_var) / moved
        return {"workers": workers, "dispatch_seconds": dispatch, "keras_dispatch_seconds": keras,
                "keras_local_step_seconds": keras_local,
                "keras_looped_dispatch_seconds": keras_looped, "keras_local_looped_step_seconds": keras_local_looped,
                "looped_steps": LOOPED,
                "keras_fit_fixed_seconds": fit_fixed,
                "keras_metric_variable_seconds": max(0.0, remote_metrics) / metric_variables,
                "keras_metered_dispatch_seconds": keras_metered, "keras_local_metered_step_seconds": keras_local_metered,
                "metric_variables": metric_variables,
                "variable_seconds": per_var, "remote_bytes_per_second": (1.0 / per_byte) if per_byte > 0 else None,
                "step_seconds_by_variables": {str(k): v for k, v in times.items()},
                "loopback_rtt_seconds": rtt_loopback(), "steps": steps, "rounds": ROUNDS, "epochs": EPOCHS, "cores": os.cpu_count()}
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=30)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "serve":
        serve(argv[1], int(argv[2]), json.loads(argv[3]))
        return 0
    print(json.dumps(measure(int(argv[0]) if argv else 1)), flush=True)
    os._exit(0)  # skip the eager context's teardown, which reports the servers it just stopped


if __name__ == "__main__":
    sys.exit(main())
