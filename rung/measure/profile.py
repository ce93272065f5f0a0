"""`rung profile`: measure the team's own model on one device (profile v1)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Callable, Optional

from rung.errors import InputError
from rung.measure import counts, pipeline, shapes, tfenv, timing
from rung.measure.workload import build_checked_model, load_workload, make_checked_dataset
from rung.model.inputs import INPUT_BOUND_FRACTION
from rung.stats import percentile

SCHEMA = "rung/profile/v1"
DEFAULT_STEPS = 30
DEFAULT_WARMUP = 3


def summarize(times: timing.StepTimes) -> dict:
    totals = times.totals
    mean = statistics.fmean(totals)
    wait = statistics.fmean(times.waits)
    return {
        "step_seconds": mean,
        "input_wait_seconds": wait,
        "compute_seconds": statistics.fmean(times.computes),
        "step_seconds_p50": statistics.median(totals),
        "step_seconds_p95": percentile(totals, 0.95),
        "step_time_cv": statistics.pstdev(totals) / mean if mean > 0 else 0.0,
        "input_wait_fraction": wait / mean if mean > 0 else 0.0,
        "input_bound": wait / mean >= INPUT_BOUND_FRACTION if mean > 0 else False,
    }


def profile(path: str | Path, batch: Optional[int] = None, steps: int = DEFAULT_STEPS,
            warmup: int = DEFAULT_WARMUP, keras: Optional[str] = None, try_fixes: bool = False,
            on_phase: Optional[Callable[[str], None]] = None,
            on_step: Optional[Callable[[int, int], None]] = None) -> dict:
    """Profile a workload file on one device and return profile v1 as a dict."""
    if steps < 1 or warmup < 0:
        raise InputError("--steps", None, f"expected at least 1 timed step, received {steps}")
    phase = on_phase or (lambda _msg: None)
    phase("importing TensorFlow")
    tf = tfenv.import_tensorflow(keras)
    phase("loading the workload")
    w = load_workload(path)
    batch = batch or w.default_batch
    if batch < 1:
        raise InputError("--batch", None, f"expected a batch of at least 1, received {batch}")
    device = tfenv.device_description(tf)
    with tf.device(device["device"]):
        model = build_checked_model(w, tf)
        ds = make_checked_dataset(w, tf, batch)
        if device["reports_memory"]:
            tf.config.experimental.reset_memory_stats(device["device"])
        phase(f"timing {steps} steps after {warmup} warm-up")
        times = timing.time_steps(tf, model, ds, steps, warmup, w.where, batch, on_step=on_step)
        peak = tf.config.experimental.get_memory_info(device["device"])["peak"] if device["reports_memory"] else None
        phase("counting parameters, gradients and activations")
        sample = next(iter(ds))
        g = counts.gradient_counts(tf, model, sample)
        opt = counts.optimizer_info(model, g.params, g.param_dtype)
        act, kept = counts.activation_bytes_per_example(tf, model, sample)
        dyn, shape_notes = shapes.dynamic_shape_details(tf, ds.element_spec, model)
        pipe = pipeline.inspect_pipeline(tf, ds)
        summary = summarize(times)
        fixes = None
        if try_fixes:
            phase("re-measuring with the pipeline fixes rung can apply")
            fixed_ds, applied = pipeline.apply_fixes(tf, make_checked_dataset(w, tf, batch))
            fixed = summarize(timing.time_steps(tf, model, fixed_ds, steps, warmup, w.where, batch, on_step=on_step))
            fixes = {"applied": applied, "step_seconds": fixed["step_seconds"],
                     "input_wait_seconds": fixed["input_wait_seconds"],
                     "input_wait_fraction": fixed["input_wait_fraction"], "input_bound": fixed["input_bound"],
                     "speedup": summary["step_seconds"] / fixed["step_seconds"]}
    notes = list(shape_notes)
    if not device["reports_memory"]:
        notes.append("peak device memory not measured on this machine (CPU does not report it); "
                     "activation bytes are an estimate from the tensors kept for the backward pass")
    notes.append("step_time_cv is the variation across steps on this one device, a proxy for the "
                 "variation across workers")
    policy = counts.precision_policy(tf, model)
    return {
        "schema": SCHEMA,
        "workload": str(path),
        "device": device["device"],
        "device_name": device["device_name"],
        "tensorflow_version": tf.__version__,
        "keras": tfenv.keras_flavor(tf),
        "params": g.params,
        "embedding_params": g.embedding_params,
        "param_dtype": g.param_dtype,
        # Keras mixed precision keeps float32 variables, which are the master copy: no
        # extra copy on top of param_dtype, so the scenario's mixed_precision stays false.
        "mixed_precision": False,
        "mixed_precision_policy": policy,
        **opt,
        "activation_bytes_per_example": act,
        "activation_bytes_estimated": not device["reports_memory"],
        "activation_tensors_counted": kept,
        "per_device_batch": batch,
        **{k: summary[k] for k in ("step_seconds", "input_wait_seconds", "step_time_cv", "input_bound",
                                   "input_wait_fraction", "step_seconds_p50", "step_seconds_p95",
                                   "compute_seconds")},
        "dynamic_shapes": bool(dyn),
        "dynamic_shape_details": dyn,
        "gradient_bytes_dense": g.dense_bytes,
        "gradient_bytes_sparse": g.sparse_bytes,
        "sparse_gradient_bytes_per_example": g.sparse_bytes / batch,
        "peak_memory_bytes": peak,
        "steps_timed": steps,
        "warmup_steps": warmup,
        "pipeline": pipe,
        "fixes": fixes,
        "notes": notes,
    }
