"""`rung profile`: measure the team's own model on one device (profile v1)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Callable, Optional

from rung.errors import InputError
from rung.kerasfit import (assigning_metric_calls, keras3_imports, step_clipping_calls, tf_keras_imports,
                           tf_keras_reason, workload_text)
from rung.measure import checkpoint, counts, pipeline, replicas, shapes, tfenv, timing
from rung.measure.workload import (DEFAULT_BATCH, build_checked_model, dataset_repeats, load_workload,
                                   make_checked_dataset)
from rung.model.inputs import INPUT_BOUND_FRACTION
from rung.stats import mean_ci95, median_of_means, percentile, t975

SCHEMA = "rung/profile/v1"
DEFAULT_STEPS = 30
DEFAULT_WARMUP = 3
# --try-fixes alternates this many blocks of the pipeline as written and as fixed, so
# the speed-up comes with an interval from the blocks' spread (machine load drifts).
FIX_ROUNDS = 4
PIPELINE_BATCHES = 20  # batches timed of the pipeline alone (after the warm-up)
SHAPE_BATCHES = 8  # batches read to tell a dimension the spec leaves unknown from one that varies
# a Keras 3 update of embedding tables this share of the step or more: the note says tf-keras may differ
UPDATE_SHARE_TO_SAY = 0.25


def summarize(times: timing.StepTimes) -> dict:
    totals, waits = times.totals, times.net_waits
    mean = statistics.fmean(totals)
    # the wait that decides input-boundness: a pipeline too slow for the device makes
    # every step wait; one step stalled by the machine must not make a fed pipeline look
    # input-bound (a 1.5 ms step read 20-48% "input wait" in 1 of 12-20 profiles on the
    # plain mean, from one stalled next())
    wait = median_of_means(waits)
    return {
        "step_seconds": mean,
        "step_seconds_ci95": list(mean_ci95(totals, floor_at_min=True)),
        "input_wait_seconds": wait,
        "input_wait_seconds_mean": statistics.fmean(waits),
        "input_wait_seconds_ci95": [max(0.0, x) for x in mean_ci95(waits)],
        "input_wait_seconds_raw": statistics.fmean(times.waits),
        "iterator_overhead_seconds": times.iterator_overhead,
        "compute_seconds": statistics.fmean(times.computes),
        "step_seconds_p50": statistics.median(totals),
        "step_seconds_p95": percentile(totals, 0.95),
        "step_time_cv": statistics.pstdev(totals) / mean if mean > 0 else 0.0,
        "input_wait_fraction": wait / mean if mean > 0 else 0.0,
        "input_bound": wait / mean >= INPUT_BOUND_FRACTION if mean > 0 else False,
    }


def _try_fixes(tf, w, model, step_fn, batch, steps, repeats, on_step) -> dict:
    """The pipeline as written against rung's fixes, in alternating blocks: a speed-up is
    reported only when its 95% interval excludes 1 (no change)."""
    per_block = max(3, steps // 2)
    fixed_ds, applied = pipeline.apply_fixes(tf, make_checked_dataset(w, tf, batch))
    plain_ds = make_checked_dataset(w, tf, batch)
    ratios, fixed_times = [], []
    for r in range(FIX_ROUNDS):
        plain = timing.time_steps(tf, model, plain_ds, per_block, 1, w.where, batch, step_fn=step_fn, repeats=repeats)
        fixed = timing.time_steps(tf, model, fixed_ds, per_block, 1, w.where, batch, step_fn=step_fn, repeats=repeats)
        ratios.append(statistics.fmean(plain.totals) / statistics.fmean(fixed.totals))
        fixed_times.append(fixed)
        if on_step:
            on_step(r + 1, FIX_ROUNDS)
    mean = statistics.fmean(ratios)
    half = t975(len(ratios) - 1) * statistics.stdev(ratios) / len(ratios) ** 0.5
    merged = timing.StepTimes([x for t in fixed_times for x in t.waits], [x for t in fixed_times for x in t.computes],
                              fixed_times[0].iterator_overhead)
    fx = summarize(merged)
    return {"applied": applied, "step_seconds": fx["step_seconds"], "input_wait_seconds": fx["input_wait_seconds"],
            "input_wait_fraction": fx["input_wait_fraction"], "input_bound": fx["input_bound"],
            "speedup": mean, "speedup_ci95": [mean - half, mean + half],
            "significant": not (mean - half <= 1.0 <= mean + half), "rounds": FIX_ROUNDS,
            "steps_per_block": per_block}


def _batches(ds, n: int) -> list:
    """Up to n batches from a fresh iterator over the dataset."""
    out = []
    for b in ds.take(n):
        out.append(b)
    return out


def _count(what, fn, notes, default=None):
    """A count rung takes from the model; one that fails is a note, not a failed profile."""
    try:
        return fn()
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - counting is rung's work on a model it did not write
        from rung.measure.workload import one_line

        notes.append(f"{what} could not be counted on this model ({type(e).__name__}: {one_line(e)})")
        return default


def _batch_for(model, asked: Optional[int], default: Callable[[], int], notes: list) -> int:
    """The batch to profile at: --batch, else the one the model fixes (`counts.fixed_batch`),
    else the workload's default (read only then: a BATCH_SIZE rung cannot use is refused only
    when it is the one used). A --batch the model cannot take is refused before anything runs."""
    fixed = counts.fixed_batch(model)
    batch = asked or fixed or default()
    counts.check_batch(model, batch)
    if fixed is not None:
        notes.append(f"the model fixes its batch at {fixed} (keras.Input(batch_size={fixed})): it was profiled at "
                     f"{fixed} a device, and every strategy must give each replica exactly that (rung passes "
                     "make_dataset the per-replica batch)")
    return batch


def profile(path: str | Path, batch: Optional[int] = None, steps: int = DEFAULT_STEPS,
            warmup: int = DEFAULT_WARMUP, keras: Optional[str] = None, try_fixes: bool = False,
            check_replicas: bool = False, on_phase: Optional[Callable[[str], None]] = None,
            on_step: Optional[Callable[[int, int], None]] = None) -> dict:
    """Profile a workload file on one device and return profile v1 as a dict."""
    if steps < 2:
        raise InputError("--steps", None, f"expected at least 2 timed steps, received {steps}")
    if warmup < 0:  # (it said --steps, received the steps given)
        raise InputError("--warmup", None, f"expected at least 0 warm-up steps, received {warmup}")
    phase = on_phase or (lambda _msg: None)
    legacy = tf_keras_imports(*workload_text(path)) if keras is None else []
    if legacy:  # its model is a tf-keras model, whatever tf.keras would be
        keras = "tf_keras"
    phase("importing TensorFlow")
    tf = tfenv.import_tensorflow(keras)
    # a workload may set Keras's global mixed-precision policy: it is this profile's only,
    # not the next one's in the same process
    policy = tf.keras.mixed_precision.global_policy()
    try:
        out = _measure(tf, path, batch, steps, warmup, try_fixes, phase, on_step)
    finally:
        tf.keras.mixed_precision.set_global_policy(policy)
    if legacy:
        out["notes"].append(f"profiled on tf-keras: {tf_keras_reason(legacy)}, so its "
                            "model is a tf-keras model (rung bench and init run it on tf-keras too)")
    own_step = out.pop("_keras_train_step")
    unlabelled = out.pop("_unlabelled_loss")
    build_failure = out.pop("_strategy_build_failure")
    slot_optimizers = out.pop("_unbuilt_slot_optimizers")
    unseeded = out.pop("_unseeded_draws")
    if check_replicas and own_step:  # Keras' own step scales its loss: nothing to run
        add_replica_check(out, dict(replicas.KERAS_STEP))
    elif check_replicas:
        phase(f"checking the loss's scale under {replicas.REPLICAS} replicas (a fresh process)")
        add_replica_check(out, replicas.check(path, out["per_device_batch"], out["keras"]))
    from rung.kerasfit import UNLABELLED_LOSS_PROBLEM, UNSEEDED_RANDOM_PROBLEM, unbuilt_optimizers_problem

    # Keras 3's fit fails before the first step under every strategy, one device's too, on a
    # compiled loss with no labels and on a model whose build under a strategy fails (what to
    # change, then why); replicas fail on optimizers built in the step and unseeded draws. Each
    # found is said, in that order: keras.io's DDIM has all but the optimizers, and said one at
    # a time, each fix met the next failure
    on_one_device = ([UNLABELLED_LOSS_PROBLEM] if unlabelled else []) + ([build_failure] if build_failure else [])
    problems = on_one_device + ([unbuilt_optimizers_problem(slot_optimizers)] if slot_optimizers else []) \
        + ([UNSEEDED_RANDOM_PROBLEM] if unseeded else [])
    if on_one_device:
        out["strategy_failure"] = "; and ".join(problems)
        out["strategy_fails_on_one_device"] = True
    elif problems and not out.get("strategy_failure"):  # one device runs it; replicas do not
        out["strategy_failure"] = "; and ".join(problems)
    return out


def add_replica_check(out: dict, check: dict) -> None:
    """The replica check's result, `loss_scaled_for_replicas` from it, and a note saying what it means."""
    out["replica_check"] = check
    # the step failed under a strategy on this Keras: every plan of several replicas there would
    out["strategy_failure"] = check.get("fails")
    v = check.get("verdict")
    out["loss_scaled_for_replicas"] = {"scaled": True, "not_scaled": False, "over_scaled": False}.get(v)
    out["logged_loss_divided"] = check.get("logged_loss_divided")
    if check.get("logged_loss_divided"):
        from rung.kerasfit import logged_loss_problem

        out["notes"].append(f"{logged_loss_problem()} (LOGGED_LOSS_DIVIDED)")
    if check.get("keras_train_step"):
        return
    if not check.get("checked"):
        out["notes"].append(f"the loss's scale under several replicas was not checked: {check.get('why')}")
        return
    n, r = check["replicas"], check["gradient_ratio"]
    seen = (f"under {n} replicas the gradients summed for one update were {r:.2f}x the one-device gradient of the "
            f"same {n} batches")
    own = check.get("compiled_losses")
    if own and v == "not_scaled":  # Keras's own step, the file's compiled loss
        from rung.kerasfit import compiled_loss_problem

        if check.get("keras") == "keras3":
            out["compiled_loss_not_scaled"] = ", ".join(own)
            out["notes"].append(f"{seen}: {compiled_loss_problem(own)} (LOSS_NOT_SCALED)")
        else:  # tf-keras divides what a loss returns, unless the loss's own reduction opts out
            out["notes"].append(f"{seen}: the compiled loss {', '.join(own)} is not divided across replicas as "
                                "Keras's own losses are, likely by a reduction of its own: return per-example losses "
                                "with the default reduction (LOSS_NOT_SCALED)")
        return
    summed = check.get("summed_losses")
    if summed and v == "not_scaled":  # Keras's step and loss, made to sum: on either Keras
        from rung.kerasfit import summed_loss_problem

        out["compiled_loss_sums"] = ", ".join(summed)
        out["notes"].append(f"{seen}: {summed_loss_problem(summed)} (LOSS_NOT_SCALED)")
        return
    over = check.get("loss_over_batch")  # one more one-device step, on the batches joined: mean, sum or None
    meaning = {
        "not_scaled": (": the train_step (or compute_loss) sums its loss over the batch (its gradient on the "
                       f"{n} batches joined was their sum), so the update grows with the global batch: N times a "
                       "one-device step's under N replicas (LOSS_NOT_SCALED). If that is not meant, divide by the "
                       "global batch: tf.nn.compute_average_loss(per_example_loss)" if over == "sum" else
                       ": the train_step (or compute_loss) averages its loss over each replica's batch, so every "
                       "update is N times too large under N replicas (LOSS_NOT_SCALED). Divide by the global batch: "
                       "tf.nn.compute_average_loss(per_example_loss), or use the compiled loss (Keras's own "
                       "compute_loss)" if over == "mean" else
                       ": the train_step (or compute_loss) does not divide its loss by the global batch, so every "
                       "update is N times a one-device step's under N replicas (LOSS_NOT_SCALED); whether it "
                       "averages over each replica's batch or sums was not told apart (a step on the batches "
                       "joined is not run for a model with BatchNormalization, whose statistics would differ, or "
                       "for one that fixes its batch). Divide by the global batch: "
                       "tf.nn.compute_average_loss(per_example_loss), or use the compiled loss (Keras's own "
                       "compute_loss)"),
        "over_scaled": ": the loss is divided across replicas twice, so every update is N times too small",
        "unclear": f" (1 when the loss is scaled for replicas, {n} when it is not divided by the global batch): "
                   "random layers or per-replica statistics blur it; rung draws no conclusion",
    }.get(v)
    if meaning:
        out["notes"].append(seen + meaning)


def _strategy_extra(tf, w, step_fn, ds, device: dict, table_bytes: float, step_seconds: float, notes: list) -> dict:
    """The step under a one-device MirroredStrategy against the step without one
    (`timing.strategy_extra`; not timed, and said in a note, when copies of the sparsely
    updated tables could not show against the step), and this device's copy rate (to carry
    the difference, memory traffic, to a plan's device), as profile fields."""
    try:
        found = timing.strategy_extra(tf, lambda: build_checked_model(w, tf), step_fn,
                                      _batches(ds, timing.STRATEGY_ROUND_STEPS), device["device"], table_bytes,
                                      step_seconds)
    except InputError as e:  # the model fails under the strategy: a note here (the replica check says more)
        raise RuntimeError(str(e).removeprefix("rung: error: ")) from None
    if found.skipped:
        notes.append(f"the step was not timed again under a one-device MirroredStrategy: {found.skipped}: "
                     "mirrored variables add nothing that shows")
        return {"strategy_step_extra_seconds": 0.0, "strategy_step_seconds_measured": None,
                "memory_copy_bytes_per_second": None}
    rate = (found.copy_bytes_per_second or timing.copy_bytes_per_second(tf, device["device"], table_bytes)) \
        if found.extra_seconds else None
    return {"strategy_step_extra_seconds": found.extra_seconds,
            "strategy_step_seconds_measured": [found.plain_seconds, found.strategy_seconds],
            "memory_copy_bytes_per_second": rate}


def _measure(tf, path, batch, steps, warmup, try_fixes, phase, on_step) -> dict:
    phase("loading the workload")
    # TensorFlow's runtime started before the import, as rung bench, rung launch and train.py
    # start it (their strategies' devices): a file that sets threads or devices at the top is
    # refused here in the line they would give, not profiled and refused later
    tf.config.list_logical_devices("CPU")
    w = load_workload(path)
    # tf.config.run_functions_eagerly(True) left in the file (a debugging switch): every
    # tf.function runs op by op, the step rung times included. Timed as fit runs without it,
    # and with it for the factor (as run_eagerly=True), then put back as the file set it.
    functions_eager = bool(tf.config.functions_run_eagerly())
    if functions_eager:
        tf.config.run_functions_eagerly(False)
    try:
        return _measure_loaded(tf, w, path, batch, steps, warmup, try_fixes, phase, on_step, functions_eager)
    finally:
        if functions_eager:
            tf.config.run_functions_eagerly(True)


def _measure_loaded(tf, w, path, batch, steps, warmup, try_fixes, phase, on_step, functions_eager) -> dict:
    if batch is not None and batch < 1:
        raise InputError("--batch", None, f"expected a batch of at least 1, received {batch}")
    device = tfenv.device_description(tf)
    notes: list[str] = []
    with tf.device(device["device"]):
        counts.clear_global_seed_generator()
        model = build_checked_model(w, tf)
        unbuilt = counts.unbuilt_for_keras3_fit(model)  # before a step builds it
        slot_optimizers = counts.unbuilt_optimizers_with_slots(tf, model)  # and its optimizers
        # a file that keeps another batch under a name rung does not read, profiled at rung's
        # default: a step that fails says so, and one that runs has it noted (`Workload.kept_batch`)
        own_batch = w.kept_batch(DEFAULT_BATCH) if batch is None and counts.fixed_batch(model) is None else None
        batch = _batch_for(model, batch, lambda: w.default_batch, notes)
        ds = make_checked_dataset(w, tf, batch)
        repeats = dataset_repeats(tf, ds)
        if device["reports_memory"]:
            tf.config.experimental.reset_memory_stats(device["device"])
        # made before the first step (eagerly at build, or by the pipeline), not by the step
        seeds_before_steps = counts.global_seed_generator_made()
        phase(f"timing {steps} steps after {warmup} warm-up")
        step_fn = timing.make_step_function(tf, model)
        try:
            times = timing.time_steps(tf, model, ds, steps, warmup, w.where, batch, on_step=on_step,
                                      step_fn=step_fn, repeats=repeats)
        except InputError as e:
            if own_batch and e.where == w.where and e.message.startswith("the training step"):
                from rung.kerasfit import batch_hint

                raise InputError(e.where, e.field, f"{e.message}; {batch_hint(own_batch, batch)}") from None
            raise
        if own_batch:  # the step ran at 32 all the same: the file's batch may be the one it trains at
            from rung.kerasfit import default_batch_note

            notes.append(default_batch_note(own_batch, batch))
        peak = tf.config.experimental.get_memory_info(device["device"])["peak"] if device["reports_memory"] else None
        # keras.random drawn without a seed in the step: its generator's variable made inside it
        unseeded = not seeds_before_steps and counts.global_seed_generator_made()
        phase("timing the input pipeline alone")
        pipe_seconds, pipe_ci = timing.pipeline_seconds_per_batch(tf, make_checked_dataset(w, tf, batch),
                                                         min(steps, PIPELINE_BATCHES), warmup, w.where, batch,
                                                         repeats)
        phase("counting parameters, gradients, activations and FLOPs")
        sample = next(iter(ds))
        g = counts.gradient_counts(tf, model, sample)
        if not g.observed:
            notes.append("the model's train_step handed no gradients to its optimizer: gradient bytes assume "
                         "one dense gradient per trainable variable")
        opt = counts.optimizer_info(model, g.params, g.param_dtype, g.optimizers)
        under = None
        if g.sparse_tensors:  # a table updated sparsely: what the strategies' mirrored variables cost it
            phase("timing the step under a one-device MirroredStrategy against the step without one")
            table = timing.sparse_table_bytes(g.embedding_params, g.params, opt["optimizer_slot_bytes"])
            under = _count("the step under MirroredStrategy", lambda: _strategy_extra(
                tf, w, step_fn, ds, device, table, statistics.median(times.computes), notes), notes)
        graphs = counts.TrainGraphs(tf, model, sample)  # each batch size's train_step traced once
        act, act_fixed, kept = _count("activation bytes", lambda: counts.activation_bytes(tf, model, sample, graphs),
                                      notes, default=(None, 0, 0))
        flops = _count("FLOPs", lambda: counts.flops_per_example(tf, model, sample, graphs), notes)
        kernels = _count("operations per step", lambda: counts.ops_per_step(tf, model, sample, graphs), notes)
        dyn, shape_notes = shapes.dynamic_shape_details(tf, ds.element_spec, model,
                                                        lambda: _batches(ds, SHAPE_BATCHES))
        varied = None
        if dyn:  # batches of different shapes: how much their steps differ (LOAD_IMBALANCE)
            phase("timing batches of different shapes against one batch timed again")
            varied = _count("the steps of batches of different shapes", lambda: timing.batch_time_cv(
                tf, step_fn, _batches(ds, timing.BATCH_VARIATION_BATCHES)), notes)
        strings = shapes.string_inputs(tf, ds.element_spec)
        composite = shapes.ragged_or_sparse_inputs(tf, ds.element_spec)
        pipe = pipeline.inspect_pipeline(tf, ds)
        phase("building each worker's pipeline as multi-worker and parameter-server runs would")
        across, across_why = pipeline.worker_input(tf, w.make_dataset, batch)
        ps_across, ps_why = pipeline.ps_worker_input(tf, w.make_dataset, batch)
        pipe["findings"].extend(pipeline.worker_input_findings(across, ps_across))
        captured = pipeline.captured_datasets(tf, w.make_dataset, batch) > 0
        if captured:
            from rung.failures import PS_CAPTURED_DATASET_PROBLEM

            pipe["findings"].append({"code": "CAPTURED_DATASET", "message": PS_CAPTURED_DATASET_PROBLEM})
        shared_caches = pipeline.shared_file_caches(tf, w.make_dataset, batch)
        if shared_caches:
            pipe["findings"].append(pipeline.shared_file_cache_finding(shared_caches))
        divided = pipeline.divides_batch(tf, w.make_dataset, batch)
        if divided:
            pipe["findings"].append(pipeline.divides_batch_finding(batch))
        phase("timing a checkpoint save")
        saved = _count("the checkpoint save's time",
                       lambda: checkpoint.checkpoint_save(tf, model, g.optimizers or counts.optimizers_of(model)),
                       notes, default={})
        phase("timing the optimizer's update alone")
        update = _count("the optimizer's update alone", lambda: timing.optimizer_update(tf, g.calls), notes)
        g.calls.clear()  # a step's gradients, as large as the model: not held past this
        rate = (under or {}).get("memory_copy_bytes_per_second")
        if update and not rate:  # this device's copy rate, which carries the update to a plan's device
            rate = _count("this device's copy rate", lambda: timing.copy_bytes_per_second(
                tf, device["device"], g.params * 4), notes)
        summary = summarize(times)
        eager = None
        if timing.runs_eagerly(model) or functions_eager:
            said = "tf.config.run_functions_eagerly(True)" if functions_eager else "run_eagerly=True"
            phase(f"timing {timing.EAGER_STEPS} steps eagerly, as fit runs them with {said}")
            eager = timing.time_steps(tf, model, ds, timing.EAGER_STEPS, 1, w.where, batch,
                                      step_fn=model.train_step, repeats=repeats)
        fixes = None
        if try_fixes:
            phase(f"the pipeline as written against rung's fixes, {FIX_ROUNDS} alternating rounds")
            fixes = _try_fixes(tf, w, model, step_fn, batch, steps, repeats, on_step)
    notes.extend(shape_notes)
    policy = counts.precision_policy(tf, model)
    mixed = policy.startswith("mixed_")
    if not device["reports_memory"]:
        notes.append("peak device memory not measured on this machine (CPU does not report it); "
                     "activation bytes are an estimate from the tensors kept for the backward pass")
    if mixed and device["device"].startswith("CPU"):
        notes.append(f"the {policy} policy runs 16-bit math that this CPU emulates: the step time here says "
                     "nothing about a GPU or TPU; plan from FLOPs (rung advise estimates the target device)")
    notes.append("step_time_cv is the variation from step to step on this one device, not across workers: "
                 "planning uses the fleet's declared step_time_cv (or what rung bench measures across workers)")
    if saved:
        notes.append("checkpoint_seconds is one save of the model and its optimizer (as BackupAndRestore makes "
                     "it) to this machine's disk: a job saving to a bucket or network file system pays that "
                     "storage's rate (set fleet.checkpoint_seconds in the scenario to it)")
    if eager is not None:
        said = ("the file calls tf.config.run_functions_eagerly(True), so every tf.function, Keras's fit step "
                "included, runs op by op" if functions_eager else
                "the model is compiled with run_eagerly=True, so Keras's fit runs each step op by op")
        gone = "that call" if functions_eager else "run_eagerly=True"
        notes.append(f"{said}: {statistics.median(eager.totals) / summary['step_seconds']:.1f}x the graph step timed "
                     f"above (median of {timing.EAGER_STEPS} eager steps). rung plans with the graph step, which is "
                     f"what fit runs once {gone} is removed (RUN_EAGERLY)")
    if under and under["strategy_step_extra_seconds"]:
        plain, mirrored = under["strategy_step_seconds_measured"]
        notes.append(f"under a one-device MirroredStrategy the step took {mirrored * 1e3:.2f} ms against "
                     f"{plain * 1e3:.2f} ms without a strategy ({mirrored / plain:.1f}x): MirroredStrategy and "
                     "MultiWorkerMirroredStrategy plans pay the difference every step (STRATEGY_STEP_SLOWER)")
    if update and g.sparse_tensors and tfenv.keras_flavor(tf) == "keras3" \
            and update.seconds >= UPDATE_SHARE_TO_SAY * summary["step_seconds"]:
        notes.append(f"the optimizer's update alone took {update.seconds * 1e3:.2f} ms of the "
                     f"{summary['step_seconds'] * 1e3:.2f} ms step, with embedding tables updated through IndexedSlices: Keras 3's optimizers mostly "
                     "update a whole table (Adagrad squares the gradient into its whole accumulator), tf-keras's "
                     "the rows looked up (keras-team/keras#19992): measure it on tf-keras too (rung profile "
                     "--keras tf_keras; rung advise WORKLOAD.py does when its plan runs there)")
    notes.append(f"input wait is net of the iterator's fixed cost ({times.iterator_overhead * 1e3:.3f} ms per "
                 "next() on an in-memory prefetched dataset of the same structure)")
    unlabelled = counts.unlabelled_compiled_loss(tf, model, sample)
    return {
        "schema": SCHEMA,
        "workload": str(path),
        "device": device["device"],
        "device_name": device["device_name"],
        "tensorflow_version": tf.__version__,
        "keras": tfenv.keras_flavor(tf),
        "params": g.params,
        "non_trainable_params": counts.non_trainable_params(model, g.params),
        "embedding_params": g.embedding_params,
        # Embedding tables whose gradient came dense (an embeddings_regularizer, a tied output)
        "dense_embedding_params": sum(n for _, n, _ in g.dense_tables),
        "sync_batch_norm_layers": counts.synchronized_batch_norms(tf, model),
        # the values a step logs: multi-worker fit all-reduces each, every step
        "logged_values": times.outputs,
        # its metrics' variables: parameter-server steps update and read each on the PS
        "metric_variables": counts.metric_variables(model),
        "sparse_gradient_tensors": g.sparse_tensors,
        "stateful_rnn_layers": counts.stateful_rnns(tf, model),
        "dense_embedding_tables": [f"{name} ({n:,} parameters{', ' + why if why else ''})"
                                   for name, n, why in g.dense_tables],
        "trainable_variables": g.variables,
        "param_dtype": g.param_dtype,
        # Keras mixed precision keeps float32 variables (the master copy) and casts them
        # to 16 bits in every layer: param_dtype float32 with mixed_precision true.
        "mixed_precision": mixed,
        "mixed_precision_policy": policy,
        **opt,
        "activation_bytes_per_example": act,
        "activation_bytes_fixed": act_fixed,
        "activation_bytes_estimated": not device["reports_memory"],
        "activation_tensors_counted": kept,
        "flops_per_example": flops,
        "ops_per_step": kernels,
        "per_device_batch": batch,
        "file_batch_size": own_batch,
        **summary,
        # the pipeline alone, net of the iterator's fixed cost (which fit's in-graph loop does not pay)
        "pipeline_seconds_per_batch": max(0.0, pipe_seconds - times.iterator_overhead),
        "pipeline_seconds_per_batch_ci95": [max(0.0, x - times.iterator_overhead) for x in pipe_ci],
        "dynamic_shapes": bool(dyn),
        "batch_time_cv": varied.batch_cv if varied is not None else 0.0,
        "batch_time_cv_raw": ([varied.distinct_cv, varied.same_cv] if varied is not None else None),
        "dynamic_shape_details": dyn,
        "string_inputs": bool(strings),
        "string_input_details": strings,
        "ragged_or_sparse_inputs": bool(composite),
        "ragged_or_sparse_input_details": composite,
        "steps_per_execution": counts.steps_per_execution(model),
        "optimizer_accumulation_steps": counts.optimizer_accumulation_steps(model),
        "gradient_clipping": counts.gradient_clipping(model),
        "jit_compile": timing.jit_compiled(model),
        "python_in_pipeline": any(f["code"] == "PYTHON_IN_PIPELINE" for f in pipe.get("findings", [])),
        "captured_dataset": captured,
        "worker_input": across,
        "ps_worker_input": ps_across,
        "ps_worker_input_detail": ps_why or None,
        "divides_batch": divided,
        "worker_input_detail": across_why or None,
        "run_eagerly": eager is not None,
        "functions_run_eagerly": functions_eager,
        "eager_step_seconds": statistics.median(eager.totals) if eager is not None else None,
        "keras3_imports": keras3_imports(*workload_text(path)),
        "step_clipping": "; ".join(step_clipping_calls(*workload_text(path))) or None,
        "assigning_metrics": "; ".join(assigning_metric_calls(*workload_text(path))) or None,
        **(under or {}),
        # the gradients of one step applied again alone (memory traffic, which the counted FLOPs
        # leave out), and the copy rate that carries it to a plan's device (rung.cli._plan)
        "optimizer_update_seconds": update.seconds if update else None,
        "optimizer_update_ops": update.ops if update else None,
        "memory_copy_bytes_per_second": rate,
        "gradient_bytes_dense": g.dense_bytes,
        "gradient_bytes_sparse": g.sparse_bytes,
        "gradients_observed": g.observed,
        "sparse_gradient_bytes_per_example": g.sparse_bytes / batch,
        "peak_memory_bytes": peak,
        "checkpoint_seconds": saved.get("checkpoint_seconds"),
        "checkpoint_seconds_first": saved.get("checkpoint_seconds_first"),
        "checkpoint_bytes": saved.get("checkpoint_bytes"),
        "steps_timed": steps,
        "warmup_steps": warmup,
        "pipeline": pipe,
        "fixes": fixes,
        "notes": notes,
        "_keras_train_step": replicas.keras_scales_the_loss(model),
        "_unlabelled_loss": unlabelled,
        "_unbuilt_slot_optimizers": slot_optimizers,
        "_unseeded_draws": unseeded,
        # (a compiled loss without labels fails the same build first: said by its own finding,
        # and the build tried without it)
        "_strategy_build_failure": counts.keras3_strategy_build_failure(
            tf, lambda: build_checked_model(w, tf), sample, device["device"], without_loss=unlabelled)
        if unbuilt else None,
    }
