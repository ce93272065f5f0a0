"""Timing real training steps on one device, splitting input wait from compute.

rung's own loop (not profiler step markers): the iterator's next() is timed apart from
the train step, each step is forced to finish (its outputs are read back) before the
clock stops, and warm-up steps (tracing, compilation, pipeline start) are discarded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from rung.errors import InputError


@dataclass
class StepTimes:
    waits: list[float]
    computes: list[float]

    @property
    def totals(self) -> list[float]:
        return [w + c for w, c in zip(self.waits, self.computes)]


def make_step_function(tf, model):
    """The model's own train_step as one graph function, compiled as the model says."""
    jit = bool(getattr(model, "jit_compile", False) or getattr(model, "_jit_compile", False))
    return tf.function(model.train_step, reduce_retracing=True, jit_compile=jit)


def _finish(tf, outputs) -> None:
    """Read every output back to the host: the step is done when this returns."""
    for t in tf.nest.flatten(outputs):
        if hasattr(t, "numpy"):
            t.numpy()


def time_steps(tf, model, dataset, steps: int, warmup: int, where: str, batch_size: int,
               on_step: Optional[Callable[[int, int], None]] = None, step_fn=None) -> StepTimes:
    """Warm up, then time `steps` steps. `on_step(done, total)` reports progress."""
    step_fn = step_fn or make_step_function(tf, model)
    it = iter(dataset)
    waits, computes = [], []
    total = warmup + steps
    for i in range(total):
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except (StopIteration, tf.errors.OutOfRangeError):
            raise InputError(where, None, f"the dataset ended after {i} batches; expected an endless dataset "
                                          "(end make_dataset with .repeat())") from None
        t1 = time.perf_counter()
        if i == 0:
            got = int(tf.nest.flatten(batch[0])[0].shape[0])
            if got != batch_size:
                raise InputError(where, None, f"make_dataset({batch_size}) yielded a batch of {got} examples; "
                                              "expected batches of batch_size (the per-replica batch)")
        try:
            _finish(tf, step_fn(batch))
        except tf.errors.ResourceExhaustedError:
            raise InputError(where, None, f"a batch of {batch_size} does not fit on the device (out of "
                                          "memory); try a smaller --batch") from None
        t2 = time.perf_counter()
        if i >= warmup:
            waits.append(t1 - t0)
            computes.append(t2 - t1)
        if on_step:
            on_step(i + 1, total)
    return StepTimes(waits, computes)
