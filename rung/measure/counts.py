"""What a model holds and moves, counted from the real model, optimizer and gradients."""

from __future__ import annotations

import math
from dataclasses import dataclass

# Keras optimizer class -> scenario v1 optimizer (slot layout); others map by slot count.
_OPTIMIZERS = {"adam": "adam", "adamw": "adamw", "adagrad": "adagrad", "rmsprop": "rmsprop",
               "adafactor": "adafactor", "nadam": "adam", "adamax": "adam", "lion": "momentum",
               "ftrl": "adagrad", "lamb": "adam", "adadelta": "adam"}
_SCENARIO_DTYPES = ("float32", "bfloat16", "float16")


def _n(shape) -> int:
    return int(math.prod(int(d) for d in shape))


def _dtype_name(dtype) -> str:
    return str(getattr(dtype, "name", dtype))


def _size(dtype) -> int:
    import numpy as np

    return int(np.dtype(_dtype_name(dtype).replace("bfloat16", "float16")).itemsize)


def unpack(batch):
    x, y = batch[0], batch[1]
    sw = batch[2] if len(batch) > 2 else None
    return x, y, sw


@dataclass
class GradientCounts:
    params: int
    embedding_params: int
    dense_bytes: int
    sparse_bytes: int
    param_dtype: str


def gradient_counts(tf, model, batch) -> GradientCounts:
    """One real backward pass: which gradients are dense and which are IndexedSlices
    (embedding lookups), and their bytes per step."""
    x, y, sw = unpack(batch)
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = model.compute_loss(x=x, y=y, y_pred=pred, sample_weight=sw)
    grads = tape.gradient(loss, variables)
    dense = sparse = emb = 0
    for v, g in zip(variables, grads):
        if g is None:
            continue
        if isinstance(g, tf.IndexedSlices):
            sparse += _n(g.values.shape) * g.values.dtype.size + _n(g.indices.shape) * g.indices.dtype.size
            emb += _n(v.shape)
        else:
            dense += _n(g.shape) * g.dtype.size
    dtypes = {_dtype_name(v.dtype) for v in variables}
    dtype = next((d for d in _SCENARIO_DTYPES if d in dtypes), "float32")
    return GradientCounts(sum(_n(v.shape) for v in variables), emb, dense, sparse, dtype)


def optimizer_info(model, params: int, param_dtype: str) -> dict:
    """The optimizer's kind and the bytes of its slot variables (after a step created them)."""
    opt = model.optimizer
    inner = getattr(opt, "inner_optimizer", None) or opt  # LossScaleOptimizer wraps the real one
    variables = inner.variables() if callable(getattr(inner, "variables", None)) else inner.variables
    slot_bytes = sum(_n(v.shape) * _size(v.dtype) for v in variables if len(v.shape) > 0)
    cls = type(inner).__name__
    kind = _OPTIMIZERS.get(cls.lower())
    if cls.lower() == "sgd":
        momentum = float(getattr(inner, "momentum", 0.0) or 0.0)
        kind = "momentum" if momentum > 0 else "sgd"
    if kind is None:  # unknown class: by slots per parameter
        slots = slot_bytes / max(1, params * _size(param_dtype))
        kind = "sgd" if slots < 0.5 else "momentum" if slots < 1.5 else "adam"
    return {"optimizer": kind, "optimizer_class": cls, "optimizer_slot_bytes": int(slot_bytes)}


def precision_policy(tf, model) -> str:
    policy = getattr(model, "dtype_policy", None)
    name = getattr(policy, "name", None)
    if name is None:
        name = tf.keras.mixed_precision.global_policy().name
    return str(name)


_NOT_ACTIVATIONS = {"ReadVariableOp", "Const", "VarHandleOp", "Shape", "Size", "Rank",
                    "ResourceGather", "NoOp"}


def activation_bytes_per_example(tf, model, batch) -> tuple[int | None, int]:
    """Estimate activations kept for the backward pass: trace loss + gradients as a graph
    and add up every forward tensor a gradient op reads (inputs and layer outputs;
    weights excluded), at the real batch shape. Returns (bytes per example or None when
    some kept tensor has no static shape, number of tensors counted)."""
    x, y, sw = unpack(batch)
    variables = model.trainable_variables

    @tf.function
    def loss_and_grads(x, y):
        with tf.GradientTape() as tape:
            pred = model(x, training=True)
            loss = model.compute_loss(x=x, y=y, y_pred=pred, sample_weight=sw)
        return tape.gradient(loss, variables)

    spec = lambda t: tf.TensorSpec(t.shape, t.dtype)  # noqa: E731
    graph = loss_and_grads.get_concrete_function(tf.nest.map_structure(spec, x),
                                                 tf.nest.map_structure(spec, y)).graph
    ops = graph.get_operations()
    forward = {op for op in ops if not op.name.startswith("gradient_tape/")}
    kept = {}
    for op in ops:
        if op in forward:
            continue
        for t in op.inputs:
            if t.op in forward and t.op.type not in _NOT_ACTIVATIONS and t.dtype != tf.resource:
                kept[t.name] = t
    total, unknown = 0, False
    for t in kept.values():
        if not t.shape.is_fully_defined():
            unknown = True
            continue
        if t.shape.rank == 0:
            continue
        total += t.shape.num_elements() * t.dtype.size
    batch_size = int(tf.nest.flatten(x)[0].shape[0])
    return (None if unknown and total == 0 else total // max(1, batch_size)), len(kept)
