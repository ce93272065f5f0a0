"""Does the model's own train_step scale its loss for several replicas?

Under tf.distribute every replica computes gradients on its share of the global batch,
and the strategy *sums* them across replicas before the update. Keras' built-in
train_step divides each replica's loss by the number of replicas (its losses scale for
distribution), so the sum is the gradient of the mean over the global batch, as on one
device. A custom train_step that takes `tf.reduce_mean` of its per-example losses gets
N times the update under N replicas, silently: measured 2x with 2 replicas in Keras 3
and tf-keras alike (docs/measurement.md).

Keras' own train_step and compute_loss scale the losses Keras defines, so only a model that
overrides one of them, or compiles a loss of its own, is checked: Keras 3 leaves a compiled
loss that returns one number (a function ending in `tf.reduce_mean`) undivided, 2x the
update under 2 replicas, where tf-keras divides it (`own_losses`). The
check runs the model's own train_step on two batches, from the same weights: on one
device, once per batch, and under a MirroredStrategy of two logical CPU devices, one
batch per replica, so each replica sees exactly what one of the one-device steps saw
(the same batch statistics in BatchNormalization: a joined batch of both would not). It
compares the gradients handed to the optimizers (the update itself is skipped:
gradients, not updates, because Adam's first update does not depend on the gradient's
scale): the norm of the replicas' sum over the norm of the one-device gradients'
average, `gradient_ratio`, is 1 when the loss is scaled for replicas and 2 when it is
not.

It runs in a fresh process: logical devices must be set before TensorFlow starts, and
the profile's own measurement runs on the device as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

REPLICAS = 2
# gradient_ratio bands: within these the loss is scaled as Keras scales it; at or beyond
# the outer ones the update is about N times too large (or too small). Between them
# (dropout, batch statistics per replica) rung says what it saw and warns of nothing.
SCALED = (0.75, 1.33)
NOT_SCALED_ABOVE = 1.6
OVER_SCALED_BELOW = 0.625
TIMEOUT_SECONDS = 600
# the joined-batch step names a mean (gradient 1x the batches' average) or a sum (N x) only
# this close: a name for the message, not a verdict
JOINED_TOLERANCE = 0.1
# the replicas' logged loss is called the replica's share (1/N of one device's) this close
LOGGED_TOLERANCE = 0.1
_MARK = "RUNG_REPLICA_CHECK "


# the result for a model that trains with Keras' own train_step (not run under replicas)
KERAS_STEP = {"checked": False, "keras_train_step": True, "verdict": "scaled",
              "why": "the model uses Keras' own train_step, which scales its loss for replicas"}


def verdict(ratio: Optional[float], replicas: int = REPLICAS) -> str:
    """'scaled', 'not_scaled' (about N times the update), 'over_scaled' (about 1/N) or
    'unclear' for a gradient ratio."""
    if ratio is None:
        return "unclear"
    if SCALED[0] <= ratio <= SCALED[1]:
        return "scaled"
    if ratio >= NOT_SCALED_ABOVE * replicas / 2:
        return "not_scaled"
    if ratio <= OVER_SCALED_BELOW * 2 / replicas:
        return "over_scaled"
    return "unclear"


def check(path: str | Path, batch: int, keras: Optional[str] = None,
          timeout: float = TIMEOUT_SECONDS) -> dict:
    """Run the check in a fresh process. Returns {"checked": True, "replicas", "gradient_ratio",
    "verdict"} or {"checked": False, "why"}; never raises for the workload's own failures."""
    cmd = [sys.executable, "-m", "rung.measure.replicas", str(path), "--batch", str(batch)]
    if keras:
        cmd += ["--keras", keras]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"checked": False, "why": f"the check took over {timeout:.0f} s"}
    for line in reversed(r.stdout.splitlines()):
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK):])
    tail = [x for x in (r.stderr or "").strip().splitlines() if x.strip()]
    return {"checked": False, "why": f"the check's process exited {r.returncode}"
                                     + (f": {tail[-1][:300]}" if tail else "")}


def _gradients(tf, model, calls) -> dict:
    """Gradient per trainable variable (by its place in the model), summed over calls."""
    place = {id(v): i for i, v in enumerate(model.trainable_variables)}
    out: dict = {}
    for grads, tvars, _ in calls:
        for g, v in zip(grads, tvars):
            if g is None:
                continue
            key = place.get(id(v), getattr(v, "path", None) or getattr(v, "name", None))
            if isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            g = tf.cast(g, tf.float64)
            out[key] = out[key] + g if key in out else g
    return out


def _keras_defines(model, name: str) -> bool:
    """Whether the model's `name` method is the one Keras (3 or tf-keras) defines."""
    for cls in type(model).__mro__:
        if name in vars(cls):
            return cls.__module__.split(".")[0] in ("keras", "tf_keras")
    return True


def keras_own_train_step(model) -> bool:
    """Whether the model trains with the train_step Keras (3 or tf-keras) defines."""
    return _keras_defines(model, "train_step")


def keras_scales_the_loss(model) -> bool:
    """Whether Keras's own code makes the loss: its train_step and its compute_loss, from
    losses Keras defines. A model that overrides compute_loss (the Keras 3 idiom for a
    custom loss, tf-keras has the hook too) under Keras's train_step takes whatever it
    returns: a `tf.reduce_mean` there is a per-replica mean, 2x the update under 2 replicas
    (measured: gradient ratio 2.00). So is a compiled loss of the file's own that returns
    one number on Keras 3 (`own_losses`)."""
    return keras_own_train_step(model) and _keras_defines(model, "compute_loss") and not own_losses(model) \
        and not summed_losses(model)


def own_losses(model) -> list[str]:
    """The names of the compiled losses that are not Keras's own (functions and Loss classes
    of the workload's, in the order compile took them). Keras 3 divides a loss across
    replicas in its reduction of the per-example values (`reduce_values`), which leaves a
    loss that returns one number as it is: a function ending in `tf.reduce_mean` is then a
    per-replica mean, and the replicas' summed gradients are N times one device's (measured
    2.00x under 2 replicas; tf-keras divides whatever the loss returns, 1.00x). Whether the
    file's loss returns one number the replica check measures."""
    from rung.measure.workload import compiled_leaves

    found: list[str] = []
    for x in compiled_leaves(getattr(model, "loss", None)):
        fn = getattr(x, "fn", None)  # a LossFunctionWrapper of the file's function
        inner = fn if callable(fn) else x
        where = getattr(inner, "__module__", None) or type(inner).__module__
        if str(where).split(".")[0] not in ("keras", "tf_keras", "tensorflow"):
            found.append(getattr(inner, "__name__", None) or type(inner).__name__)
    return list(dict.fromkeys(found))


def summed_losses(model) -> list[str]:
    """Keras's own compiled losses made with a reduction that sums over the batch,
    "MeanSquaredError(reduction='sum')". Under N synchronous replicas each replica sums
    its own batch and the gradients are summed: the update is the sum over the global
    batch, N times one device's step at the same per-device batch, on either Keras
    (measured 2.00x under 2 replicas for 'sum' and 'none'). The replica check measures it."""
    from rung.kerasfit import SUMMING_REDUCTIONS
    from rung.measure.workload import compiled_leaves

    found: list[str] = []
    for x in compiled_leaves(getattr(model, "loss", None)):
        reduction = getattr(x, "reduction", None)
        if isinstance(reduction, str) and reduction.lower() in SUMMING_REDUCTIONS \
                and type(x).__module__.split(".")[0] in ("keras", "tf_keras", "tensorflow"):
            found.append(f"{type(x).__name__}(reduction={reduction.lower()!r})")
    return list(dict.fromkeys(found))


def _norm(tf, grads: dict, keys) -> float:
    return float(tf.sqrt(sum(tf.reduce_sum(tf.square(grads[k])) for k in keys)))


def _seed_states(model) -> list:
    """The state variables of the Keras 3 seed generators the model's layers draw from
    (RandomFlip, RandomZoom, Dropout...), in the model's order: each step advances them, so
    two steps on the same batch draw different random numbers. Empty on tf-keras."""
    flatten = getattr(model, "_flatten_layers", None)
    layers = flatten(include_self=True, recursive=True) if flatten else []
    return [sg.state for layer in layers for sg in getattr(layer, "_seed_generators", None) or ()]


def _run(path: str, batch: int, keras: Optional[str]) -> dict:
    from rung.measure import counts, tfenv
    from rung.measure.workload import build_checked_model, load_workload, make_checked_dataset, one_line

    tf = tfenv.import_tensorflow(keras)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * REPLICAS)
    w = load_workload(path)
    devices = [f"/cpu:{i}" for i in range(REPLICAS)]
    with tf.device(devices[0]):
        one = build_checked_model(w, tf)
        if keras_scales_the_loss(one):
            return dict(KERAS_STEP)
        it = iter(make_checked_dataset(w, tf, batch))
        parts = [next(it) for _ in range(REPLICAS)]
        # every step, here and in each replica, draws from the same seed states: random
        # augmentation in the step (keras.io's SimCLR) read 1.52-2.00 over three checks
        # of the same model, moving its verdict, before
        states = _seed_states(one)
        start = [v.numpy() for v in states]
        logged = []  # the loss each batch's step logs, its metrics reset before it
        with counts.optimizer_calls(one, passthrough=False) as calls:
            for part in parts:
                for v, s in zip(states, start):
                    v.assign(s)
                one.reset_metrics()
                logged.append(_logged_loss(tf, one.train_step(part)))
    if not calls:
        return {"checked": False, "why": "the model's train_step handed no gradients to its optimizer"}
    single = {k: g / REPLICAS for k, g in _gradients(tf, one, calls).items()}  # the global batch's mean
    strategy = tf.distribute.MirroredStrategy(devices)
    try:
        values = strategy.experimental_distribute_values_from_function(
            lambda ctx: parts[ctx.replica_id_in_sync_group])
        with strategy.scope():
            many = w.build_model()
            if len(many.weights) != len(one.weights):  # a subclassed model builds on its first call
                _build_replicated(strategy, many, parts[0], values)
            many.set_weights(one.get_weights())
            theirs = _seed_states(many)
            if len(theirs) == len(start):
                for v, s in zip(theirs, start):
                    v.assign(s)
        with counts.optimizer_calls(many, passthrough=False) as calls:
            strategy.run(many.train_step, args=(values,))
    except Exception as e:  # noqa: BLE001  (the workload's own failure under a strategy)
        from rung.failures import hint

        found = hint(str(e))
        # TensorFlow's own line, cut at a word (its sentences run long), not mid-word
        what = f"{found[0]} (TensorFlow: {textwrap.shorten(found[1], 160, placeholder=' …')})" if found \
            else one_line(e)
        return {"checked": False, "why": f"the model did not run under MirroredStrategy: {what}", "fails": what}
    if not calls:
        return {"checked": False, "why": "under MirroredStrategy the train_step handed no gradients to its optimizer"}
    summed = _gradients(tf, many, calls)
    keys = [k for k in single if k in summed]
    if not keys:
        return {"checked": False, "why": "the gradients under MirroredStrategy matched no variable of the model"}
    base = _norm(tf, single, keys)
    if base == 0.0:
        return {"checked": False, "why": "the one-device gradient is zero"}
    ratio = _norm(tf, summed, keys) / base
    # after the replicas took their copy of the weights: a step that assigns weights itself
    # (an EMA copy) changes them, and the comparison above is made from the same ones
    for v, s in zip(states, start):  # the joined step draws from them too
        v.assign(s)
    over_batch = _loss_over_batch(tf, one, parts, single, devices[0])
    logged_ratio = _logged_ratio(_fit_logged_loss(tf, many, parts), logged)
    out = {"checked": True, "replicas": REPLICAS, "gradient_ratio": ratio, "verdict": verdict(ratio),
           "keras": tfenv.keras_flavor(tf), "loss_over_batch": over_batch, "logged_loss_ratio": logged_ratio,
           "logged_loss_divided": None if logged_ratio is None else
           abs(logged_ratio * REPLICAS - 1) <= LOGGED_TOLERANCE}
    if keras_own_train_step(one) and _keras_defines(one, "compute_loss"):
        out["compiled_losses"] = own_losses(one)  # Keras's step: what was checked is the file's compiled loss
        out["summed_losses"] = summed_losses(one)  # ... or Keras's own loss, made to sum over the batch
    return out


def _build_replicated(strategy, model, batch, values) -> None:
    """Build a subclassed model made under the strategy (its variables made on its first
    call) so that the one-device model's weights can be set on it: called on a batch of the
    pipeline's features (not batch[0][0], one image of a pipeline of x alone), or, where its
    call() takes something else, by one step of its own train_step under the strategy, the
    update skipped. keras.io's graph attention network holds its graph and calls itself on
    it, [node_states, edges], in a train_step fed node indices: called on the indices, it
    failed ("too many values to unpack") and the check said the model did not run under
    MirroredStrategy, where fit runs it."""
    from rung.measure import counts
    from rung.measure.workload import features

    try:
        model(features(batch))
        return
    except Exception:  # noqa: BLE001 - a call() that does not take the batch's features: its own step builds it
        pass
    with counts.optimizer_calls(model, passthrough=False):
        strategy.run(model.train_step, args=(values,))


def _logged_loss(tf, logs) -> Optional[float]:
    """The "loss" a train_step returns among its logs, as a number (None without one)."""
    v = logs.get("loss") if isinstance(logs, dict) else None
    try:
        return float(tf.reduce_mean(tf.cast(v, tf.float64))) if v is not None else None
    except (TypeError, ValueError):
        return None


def _fit_logged_loss(tf, model, parts) -> Optional[float]:
    """The loss `fit` shows for one step of the replicas, each on its batch (the batches
    joined into one global batch, which the strategy splits in order), the update skipped.
    fit, not the step: what it shows depends on the Keras and on how the step logs (a
    divided loss returned as it is reads 0.50 on Keras 3 and 1.00 on tf-keras, whose fit
    sums the replicas' logs; fed to a Mean tracker, 0.50 on both). None if it fails."""
    from rung.measure import counts

    try:
        joined = tf.nest.map_structure(lambda *xs: tf.concat(xs, axis=0), *parts)
        size = int(tf.nest.flatten(joined)[0].shape[0])
        ds = tf.data.Dataset.from_tensor_slices(joined).batch(size)
        model.reset_metrics()
        with counts.optimizer_calls(model, passthrough=False):
            history = model.fit(ds, epochs=1, verbose=0)
        return float(history.history["loss"][-1]) if "loss" in history.history else None
    except Exception:  # noqa: BLE001 - the user's model in fit at this batch: no answer, not a failure
        return None


def _logged_ratio(theirs: Optional[float], logged: list) -> Optional[float]:
    """The loss fit showed for the replicas' step over the mean the one-device steps logged on
    the same batches: 1 when fit shows each batch's loss, 1/N when it shows the replica's
    share of the global batch's (a loss divided for the sum of gradients, as keras.io's and
    TensorFlow's custom steps divide it, and logged so that fit does not add it back).
    Keras's own train_step logs the loss multiplied back."""
    if theirs is None or any(x is None for x in logged):
        return None
    ours = sum(logged) / len(logged)
    return theirs / ours if ours else None


def _loss_over_batch(tf, model, parts, single: dict, device: str) -> Optional[str]:
    """'mean' or 'sum': how the train_step reduces its loss over a batch, from one more
    one-device step on the batches joined into one. A mean's gradient on the joined batch
    is the average of the two batches' gradients; a sum's is their sum, twice that. Both
    are N times the update under N replicas, for different reasons (a sum grows with the
    global batch). None when the batches cannot be joined (a model that fixes its batch),
    for a model with BatchNormalization (its statistics over the joined batch differ:
    MobileNetV2 read 1.72 against separate batches, docs/measurement.md), or when the ratio
    is near neither."""
    from rung.measure import counts

    if counts.batch_norms(tf, model):
        return None
    try:
        joined = tf.nest.map_structure(lambda *xs: tf.concat(xs, axis=0), *parts)
        with tf.device(device), counts.optimizer_calls(model, passthrough=False) as calls:
            model.train_step(joined)
    except Exception:  # noqa: BLE001 - the user's model at a batch it may not take: no answer, not a failure
        return None
    whole = _gradients(tf, model, calls)
    keys = [k for k in single if k in whole]
    base = _norm(tf, single, keys) if keys else 0.0
    if not base:
        return None
    r = _norm(tf, whole, keys) / base
    if abs(r - 1) <= JOINED_TOLERANCE:
        return "mean"
    if abs(r - REPLICAS) <= JOINED_TOLERANCE * REPLICAS:
        return "sum"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="rung's loss-scaling check (run by rung profile)")
    ap.add_argument("workload")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--keras", choices=("keras3", "tf_keras"))
    args = ap.parse_args(argv)
    from rung.errors import InputError

    try:
        out = _run(args.workload, args.batch, args.keras)
    except InputError as e:
        out = {"checked": False, "why": str(e)}
    print(_MARK + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
