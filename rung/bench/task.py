"""One bench task, in its own process: `python -m rung.bench.task CONFIG.json`.

The runner writes CONFIG.json (workload, strategy, role, batch, steps...) and sets
TF_CONFIG and the Keras choice in the environment. The lead task (the single process,
MWMS worker 0, or the PS chief) writes RESULT.json with its step timestamps, writes its
step count to a progress file the runner reads for its display and, in synchronous
runs, appends each step's end to a timeline file as the step ends.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback

# A parameter-server run times this many epochs of its steps, after one that pays the fit's fixed cost (`run`).
PS_ROUNDS = 3
# The probe of a multi-worker run (`_probe`): steps timed after a warm-up that traces.
PROBE_STEPS = 20
PROBE_WARMUP = 3
# The probe's small all-reduce (`_small_allreduce_seconds`): chains of this many all-reduces
# against chains of one, timed in this many pairs after a warm-up that traces.
PROBE_CHAIN = 17
# The probe's logged values: its model compiled with this many metrics more than its loss
PROBE_METRICS = 4
PROBE_CALLS = 15
# A multi-worker task other than the lead, done, keeps its process (and the gRPC server its
# peers read from) until the runner ends it, as it does once the lead's result is written;
# at most this long. Its last all-reduce is done when it has read its peers' buffers, not
# when they have read its own: exiting at once closed the socket the lead was still reading
# from ("Aborting RingReduce with UNAVAILABLE: Socket closed ... RecvBuf"), which failed the
# lead's probe twice in 44 benches on a loaded machine (and once in CI).
LINGER_SECONDS = 120.0


def _devices(tf, cfg) -> list[str]:
    """The GPUs present when there are enough of them, else logical CPU devices (made
    before any op runs). The GPU branch is written for GPU machines and not measured on
    the CPU-only machine rung is developed on."""
    n = cfg["replicas"] if cfg["strategy"] == "mirrored" else 1
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) >= n:
        return [f"/gpu:{i}" for i in range(n)]
    if n > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
    return [f"/cpu:{i}" for i in range(n)]


def _strategy(tf, cfg, devices):
    s = cfg["strategy"]
    if s == "single_device":
        return tf.distribute.OneDeviceStrategy(devices[0])
    if s == "mirrored":
        ops = {"nccl": tf.distribute.NcclAllReduce, "hierarchical": tf.distribute.HierarchicalCopyAllReduce,
               "reduction": tf.distribute.ReductionToOneDevice}.get(cfg.get("option"))
        return tf.distribute.MirroredStrategy(devices, cross_device_ops=ops() if ops else None)
    if s == "multi_worker_mirrored":
        opts = tf.distribute.experimental.CommunicationOptions(timeout_seconds=cfg["collective_timeout"])
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=opts)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    partitioner = None
    if cfg.get("option") == "partitioned":  # the TensorFlow PS guide's partitioner
        partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
            min_shard_bytes=256 << 10, max_shards=cfg["ps_tasks"])
    return tf.distribute.experimental.ParameterServerStrategy(resolver, variable_partitioner=partitioner)


def per_worker_dataset(w, batch: int):
    """Each worker's pipeline of per-replica batches, as rung init's train.py builds it
    (sharded_input.py.tmpl): make_dataset(batch, InputContext) shards itself; a
    make_dataset(batch_size) that takes no InputContext is sharded by data, each worker
    keeping every N-th batch (it was called with the context anyway, and every
    multi-worker and parameter-server run of such a file failed on "make_dataset() takes
    1 positional argument but 2 were given")."""
    from rung.measure.workload import takes_input_context

    takes_context = takes_input_context(w.make_dataset)

    def per_worker(ctx):
        if takes_context:
            return w.make_dataset(batch, ctx)
        return w.make_dataset(batch).shard(ctx.num_input_pipelines, ctx.input_pipeline_id)

    return per_worker


def _timing_callback(tf, cfg, sync: bool):
    progress = cfg.get("progress")
    # every step's end as it happens (the result holds them only when the task finishes):
    # what a killed attempt leaves of its timeline. perf_counter is CLOCK_MONOTONIC, one
    # clock for every process on the machine, the runner's included
    timeline = open(cfg["timeline"], "a", buffering=1) if cfg.get("timeline") else None

    class Timing(tf.keras.callbacks.Callback):
        """One end per step. A model compiled with steps_per_execution=k runs k steps per
        call, and Keras calls the batch hooks once per call, with the first and the last
        step's index: the call's time is shared evenly among its steps (their p50, p95
        and CV are then those of whole calls)."""

        def __init__(self):
            super().__init__()
            self.ends = []
            # the process's CPU time (every thread's: time.process_time) at each end: how many
            # cores the steps kept busy (`step_cpu_cores`)
            self.cpu_ends = []
            self.began, self.first = None, 0
            # the times Keras's train function was traced: after the call before this one,
            # and when the timed steps began (warm_up: the warm-up's steps, set by the task)
            self.warm_up, self.traced, self.traced_before_timing, self.timed = None, None, None, False
            self.logged = None  # the values a step logs (multi-worker fit all-reduces each)

        def tracing_count(self):
            return _tracing_count(getattr(self.model, "train_function", None))

        def on_train_begin(self, logs=None):
            self.traced = self.tracing_count()  # fit has made its train function, not yet traced

        def on_train_batch_begin(self, batch, logs=None):
            self.began, self.first = time.perf_counter(), batch

        def on_train_batch_end(self, batch, logs=None):
            if logs is not None:
                self.logged = len(logs)
            if sync and logs and "loss" in logs:
                float(logs["loss"])  # read back: the step is done
            now = time.perf_counter()
            n = max(1, batch - self.first + 1)
            start = self.ends[-1] if (self.ends and n > 1) else (self.began or now)
            new = [start + (now - start) * j / n for j in range(1, n)] + [now]
            traced = self.tracing_count()
            if self.warm_up is not None and not self.timed and len(self.ends) + len(new) >= self.warm_up:
                # a call that ends the warm-up on its last step leaves its trace to the
                # warm-up; one whose steps run past it (a call of k steps across the line)
                # has steps timed, and its trace among them
                exact = len(self.ends) + len(new) == self.warm_up
                self.traced_before_timing, self.timed = (traced if exact else self.traced), True
            self.traced = traced
            self.ends.extend(new)
            self.cpu_ends.extend([time.process_time()] * len(new))
            if timeline:
                timeline.write("".join(f"{t!r}\n" for t in new))
            if progress:
                with open(progress, "w") as f:
                    f.write(str(len(self.ends)))

    return Timing()


def _tracing_count(fn, depth: int = 2):
    """How many times the tf.functions behind Keras's train function were traced: tf-keras's
    is one; Keras 3's is a Python function whose closure holds them (the loop over an
    iterator's steps, the step on one batch), some behind a wrapper of its own. None when
    none is found (a model that runs eagerly)."""
    count = getattr(fn, "experimental_get_tracing_count", None)
    if callable(count):
        return int(count())
    if depth == 0 or not callable(fn):
        return None
    found = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
        if getattr(inner, "__closure__", None) is not None or hasattr(inner, "experimental_get_tracing_count"):
            n = _tracing_count(inner, depth - 1)
            if n is not None:
                found.append(n)
    return sum(found) if found else None


def _poll_iterations(model, cfg):
    import threading

    from rung.measure.counts import optimizers_of

    stop = threading.Event()
    progress = cfg.get("progress")
    # the step count: the most any of the model's optimizers has taken (a model stepping
    # with optimizers of its own leaves the one Keras compiled in at 0)
    optimizers = optimizers_of(model)

    def loop():
        while progress and not stop.wait(0.1):
            try:
                n = max(int(o.iterations.numpy()) for o in optimizers)
            except Exception:  # noqa: BLE001 - a read may race with start-up; try again
                continue
            with open(progress, "w") as f:
                f.write(str(n))

    threading.Thread(target=loop, daemon=True).start()
    return stop


def _small_allreduce_seconds(tf, strategy) -> float:
    """One all-reduce of a float between the run's workers, measured in its cluster (what a
    synchronized BatchNorm layer launches six times a step: `comm.sync_batch_norm_seconds`):
    a function of PROBE_CHAIN all-reduces, each waiting for the one before, against the same
    function of one, called in pairs; the median pair's difference over PROBE_CHAIN - 1.
    One stall of a shared machine does not set it. Every worker runs it (the collectives
    need them all)."""
    def chain(n):
        @tf.function
        def f():
            def body():
                ctx = tf.distribute.get_replica_context()
                x = tf.constant(1.0)
                for _ in range(n):
                    x = ctx.all_reduce(tf.distribute.ReduceOp.SUM, x) * 0.5
                return x
            return strategy.run(body)
        return f

    def timed(f) -> float:
        start = time.perf_counter()
        float(strategy.experimental_local_results(f())[0])
        return time.perf_counter() - start

    short, long = chain(1), chain(PROBE_CHAIN)
    for _ in range(3):  # traces, then warm
        short(), long()
    # In pairs, one call of each: a machine whose load drifts during the probe slows both
    # of a pair alike, where two blocks of calls would each see a different load.
    pairs = [timed(long) - timed(short) for _ in range(PROBE_CALLS)]
    return max(0.0, statistics.median(pairs) / (PROBE_CHAIN - 1))


def _probe(tf, strategy, lead: bool, small_allreduce: bool = False, logged_values: bool = False) -> dict:
    """The test bed's fixed cost of a multi-worker step, measured in the run's own cluster:
    a model of 5 parameters (its gradients take microseconds to move, its compute is
    Keras's own per-step work) trained for a few steps under the run's strategy, and, on
    the lead alone while the other workers wait in the first collective, the same model
    trained on its own. What the multi-worker step takes beyond what the model predicts
    for these two is the fixed cost (`rung.bench.bench._testbed_sync`). Median steps: one
    stall of a shared machine does not set a fixed cost. `small_allreduce`: also the latency of
    one small all-reduce (`_small_allreduce_seconds`), for a model that launches them.
    `logged_values`: also what one more value fit logs costs a multi-worker step (the same
    model compiled with PROBE_METRICS metrics, against it with its loss alone: the
    difference of the two steps over PROBE_METRICS), for a model that logs more than its loss."""
    def tiny(metrics: int = 0):
        inp = tf.keras.Input((4,))
        m = tf.keras.Model(inp, tf.keras.layers.Dense(1)(inp))
        m.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse",
                  metrics=[tf.keras.metrics.MeanAbsoluteError(name=f"probe_{i}") for i in range(metrics)] or None)
        return m

    def data():
        d = tf.data.Dataset.from_tensors((tf.zeros([8, 4]), tf.zeros([8, 1]))).repeat()
        opts = tf.data.Options()
        opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        return d.with_options(opts)

    class Ends(tf.keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def on_train_batch_end(self, batch, logs=None):
            if logs and "loss" in logs:
                float(logs["loss"])  # read back: the step is done
            self.ends.append(time.perf_counter())

    def median_step(model) -> float:
        ends = Ends()
        model.fit(data(), epochs=1, steps_per_epoch=PROBE_WARMUP + PROBE_STEPS, verbose=0, callbacks=[ends])
        timed = ends.ends[PROBE_WARMUP - 1:]
        return statistics.median(b - a for a, b in zip(timed, timed[1:]))

    out = {"params": 5, "dense_gradient_bytes": 20, "steps": PROBE_STEPS}
    if lead:
        out["local_step_seconds"] = median_step(tiny())
    with strategy.scope():
        model = tiny()
    out["step_seconds"] = median_step(model)
    if small_allreduce:
        out["small_allreduce_seconds"] = _small_allreduce_seconds(tf, strategy)
    if logged_values:
        with strategy.scope():
            more = tiny(PROBE_METRICS)
        out["logged_value_seconds"] = max(0.0, (median_step(more) - out["step_seconds"]) / PROBE_METRICS)
    return out


def run(cfg) -> dict:
    from rung.measure import counts, shapes, tfenv
    from rung.measure.timing import jit_compiled, runs_eagerly
    from rung.measure.workload import build_checked_model, load_workload, make_checked_dataset

    tf = tfenv.import_tensorflow(None)  # the runner set TF_USE_LEGACY_KERAS as needed
    devices = _devices(tf, cfg) if cfg["strategy"] in ("single_device", "mirrored") else []
    if cfg["strategy"] == "parameter_server" and cfg["role"] in ("worker", "ps"):
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=cfg["role"], task_index=cfg["index"],
                                      protocol="grpc", start=True)
        server.join()
        return {}
    # the strategy before the workload: a workload file that runs TensorFlow when imported
    # (a TextVectorization adapted at the top of the file) would start the runtime before
    # MultiWorkerMirroredStrategy can configure its collectives (as rung's train.py does)
    strategy = _strategy(tf, cfg, devices)
    w = load_workload(cfg["workload"])
    with strategy.scope():
        model = build_checked_model(w, tf)
    unbuilt = counts.unbuilt_for_keras3_fit(model)  # Keras 3's fit builds it first under the strategy
    marked_built, unbuilt_layers = model.built, counts.unbuilt_layers(model) if unbuilt else []
    counts.check_batch(model, cfg["batch"])
    xla_off = cfg["strategy"] == "parameter_server" and jit_compiled(model)
    if xla_off:  # as rung init's train.py does: an XLA step cannot read the ps tasks' variables
        model.jit_compile = False
    if cfg["strategy"] == "parameter_server":
        # as train.py does: the chief alone would run that Python; the workers cannot receive a
        # dataset made outside make_dataset
        from rung.failures import PS_CAPTURED_DATASET_PROBLEM, PS_PYTHON_PROBLEM
        from rung.measure.pipeline import captured_datasets, python_in_pipeline

        # this run's failure, not the file's: the other strategies run it (the bench goes on)
        if python_in_pipeline(tf, w.make_dataset(cfg["batch"])):
            raise RuntimeError(PS_PYTHON_PROBLEM)
        if captured_datasets(tf, w.make_dataset, cfg["batch"]):
            raise RuntimeError(PS_CAPTURED_DATASET_PROBLEM)
    eager_off = cfg["strategy"] == "parameter_server" and runs_eagerly(model)
    if eager_off:  # as train.py does: tf-keras refuses run_eagerly under parameter servers
        model.run_eagerly = False
    batch, replicas = cfg["batch"], cfg["replicas"]
    if cfg["strategy"] in ("single_device", "mirrored"):
        data = w.make_dataset(batch * replicas) if cfg["strategy"] == "mirrored" else w.make_dataset(batch)
    else:
        # one replica per worker process: weak scaling, fixed per-replica batch
        data = tf.keras.utils.experimental.DatasetCreator(per_worker_dataset(w, batch))
    callbacks = []
    if cfg.get("backup_dir"):
        callbacks.append(tf.keras.callbacks.BackupAndRestore(cfg["backup_dir"], save_freq=cfg["save_freq"],
                                                             delete_checkpoint=False))
    sync = cfg["strategy"] != "parameter_server"
    timing = _timing_callback(tf, cfg, sync)
    if sync:
        callbacks.append(timing)
    grads = None
    if cfg["strategy"] == "single_device":
        # counted as rung profile counts them: one eager step of the model's own train_step,
        # on a model of its own outside any strategy (the run's model belongs to its scope)
        one = make_checked_dataset(w, tf, batch)  # what rung profile checks: batches, endless, 1-3 parts
        sample = next(iter(one))
        counted = build_checked_model(w, tf)
        g = counts.gradient_counts(tf, counted, sample)
        opt = counts.optimizer_info(counted, g.params, g.param_dtype, g.optimizers)
        grads = {"dense": g.dense_bytes, "sparse": g.sparse_bytes, "params": g.params, "variables": g.variables,
                 "non_trainable_params": counts.non_trainable_params(counted, g.params),
                 "optimizer": opt["optimizer"],
                 "string_inputs": bool(shapes.string_inputs(tf, one.element_spec)),
                 "ragged_or_sparse_inputs": bool(shapes.ragged_or_sparse_inputs(tf, one.element_spec)),
                 "steps_per_execution": counts.steps_per_execution(counted),
                 "gradient_clipping": counts.gradient_clipping(counted),
                 "sync_batch_norm_layers": counts.synchronized_batch_norms(tf, counted),
                 "sparse_tensors": g.sparse_tensors}
        if g.sparse_tensors:  # as rung profile times it: the step under mirrored variables against without
            from rung.measure.timing import STRATEGY_ROUND_STEPS, make_step_function, sparse_table_bytes, strategy_extra

            it = iter(one)
            table = sparse_table_bytes(g.embedding_params, g.params, opt["optimizer_slot_bytes"])
            try:
                found = strategy_extra(tf, lambda: build_checked_model(w, tf), make_step_function(tf, counted),
                                       [next(it) for _ in range(STRATEGY_ROUND_STEPS)], devices[0], table)
                grads["strategy_extra"] = found.extra_seconds
            except Exception:  # noqa: BLE001 - a model that fails under the strategy: its mirrored runs
                grads["strategy_extra"] = 0.0  # fail and say why; the one-device run and its basis stand
    info = {"keras": tfenv.keras_flavor(tf), "replicas_in_sync": int(strategy.num_replicas_in_sync),
            "gradients": grads, "devices": devices, "jit_compile_off": xla_off,
            "run_eagerly_off": eager_off, "functions_run_eagerly": bool(tf.config.functions_run_eagerly())}
    if not sync:
        # PS fit takes no batch-level callbacks, and its steps finish asynchronously: time its
        # epochs (each joins every step it scheduled) after a warm-up fit, and report progress
        # from the optimizer's step counter, which lives on the parameter servers.
        stop = _poll_iterations(model, cfg)
        ends: list[float] = []
        marker = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: ends.append(time.perf_counter()))
        try:
            model.fit(data, epochs=1, steps_per_epoch=max(1, cfg["warmup"]), verbose=0, callbacks=callbacks)
            # PS_ROUNDS + 1 epochs of the timed steps in one fit: every epoch joins its steps, so
            # the interval between two epoch ends is one epoch's steps alone. A fit's own fixed
            # cost (0.1-0.5 s, moving from fit to fit by more than 60 steps take here) falls
            # before the first end; pairs of a short and a long fit, which paid it twice, put
            # the median of one configuration 1.4-1.9x apart between repetitions, epoch ends
            # 1.0-1.2x (benchmarks/bench_ps_timing.py)
            start = time.perf_counter()
            model.fit(data, epochs=PS_ROUNDS + 1, steps_per_epoch=cfg["steps"], verbose=0,
                      callbacks=callbacks + [marker])
            end = time.perf_counter()
        finally:
            stop.set()
        return {**info, "async": True, "ends": [], "start": start, "end": end, "steps": cfg["steps"],
                "epoch_ends": ends}
    # warm-up in whole calls: a model compiled with steps_per_execution=k traces its first
    # call of k steps, which must not leak into the timed steps
    k = counts.steps_per_execution(model)
    warmup = -(-cfg["warmup"] // k) * k
    timing.warm_up = warmup
    start = time.perf_counter()
    began: list[bool] = []  # fit's on_train_begin: after Keras 3's build under the strategy
    begins = tf.keras.callbacks.LambdaCallback(on_train_begin=lambda _logs: began.append(True))
    try:
        model.fit(data, epochs=1, steps_per_epoch=warmup + cfg["steps"], verbose=0, callbacks=callbacks + [begins])
    except Exception as e:  # noqa: BLE001 - what to change, where rung knows it, not Keras's line alone
        spec = getattr(data, "element_spec", None)
        if isinstance(e, ValueError) and spec is not None and counts.unlabelled_compiled_loss(tf, model, spec) \
                and "None values" in str(e):
            from rung.kerasfit import UNLABELLED_LOSS_PROBLEM

            raise RuntimeError(UNLABELLED_LOSS_PROBLEM) from e
        from rung.failures import KERAS3_BUILD_FAILED, hint

        marked_or_layers = marked_built or bool(unbuilt_layers)  # the hint's "mark it built" would not do
        if unbuilt and not began and (hint(str(e)) is None or (KERAS3_BUILD_FAILED in str(e) and marked_or_layers)):
            # the model was not built, and fit failed before it began training: the build
            # (Keras hides its own frames from the traceback, so the callback tells). What to
            # change names the layers not built (a model marked built whose layers are not)
            from rung.failures import message_line
            from rung.kerasfit import keras3_build_problem

            raise RuntimeError(keras3_build_problem(message_line(str(e), type(e).__name__), marked_built,
                                                    unbuilt_layers)) from e
        raise
    end = time.perf_counter()
    if grads is not None and timing.logged is not None:
        grads["logged_values"] = timing.logged
    if grads is not None:  # the run's own model, its metrics built by its steps
        grads["metric_variables"] = counts.metric_variables(model)
    if cfg.get("probe") and cfg["strategy"] == "multi_worker_mirrored":
        try:  # the run is measured: a probe that fails costs its figure, not the run
            info["probe"] = _probe(tf, strategy, cfg.get("index", 0) == 0,
                                   small_allreduce=bool(cfg.get("small_allreduce")),
                                   logged_values=bool(cfg.get("logged_values")))
        except Exception as e:  # noqa: BLE001 - reported in the run's notes
            from rung.failures import failure_line

            info["probe_error"] = failure_line(type(e).__name__, str(e))
    traced = None
    if timing.traced is not None and timing.traced_before_timing is not None:
        traced = timing.traced - timing.traced_before_timing
    return {**info, "ends": timing.ends, "cpu_ends": timing.cpu_ends, "start": start, "end": end, "warmup": warmup,
            "traced_while_timed": traced}


def error_line(e: BaseException) -> str:
    """A task's failure as the first line of its error file: rung's own line about the file
    (an InputError) whole, with what to change put first when rung knows the failure and the
    line does not say it (a build that fails only under a strategy); TensorFlow's with what
    to change first, cut to a line (`failures.failure_line`)."""
    from rung.errors import InputError
    from rung.failures import failure_line, hint

    if isinstance(e, InputError):  # kept whole, as "InputError: FILE: ..." (the bench reads it so)
        # only a line that passes on what the user's function raised; rung's own lines say what to change
        found = hint(str(e)) if "() raised " in e.message else None
        if found is not None and found[0] not in e.message:  # what to change, first (once)
            e = InputError(e.where, e.field, f"{found[0]} ({e.message})")
        return f"InputError: {e}"
    return failure_line(type(e).__name__, str(e))


def main(argv=None) -> int:
    from rung.bench.orphans import exit_with_parent

    exit_with_parent()  # a bench that dies without ending its tasks does not leave them running
    path = (argv or sys.argv[1:])[0]
    with open(path) as f:
        cfg = json.load(f)
    try:
        out = run(cfg)
        if cfg.get("result"):
            tmp = cfg["result"] + ".tmp"
            with open(tmp, "w") as f:
                json.dump(out, f)
            os.replace(tmp, cfg["result"])
        elif cfg.get("strategy") == "multi_worker_mirrored":
            time.sleep(LINGER_SECONDS)  # the runner ends it sooner (LINGER_SECONDS)
        return 0
    except Exception as e:  # noqa: BLE001 - reported to the runner through the error file
        if cfg.get("error"):
            with open(cfg["error"], "w") as f:
                f.write(f"{error_line(e)}\n{traceback.format_exc()[-3000:]}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
