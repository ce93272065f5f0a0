"""Timing real training steps on one device, splitting input wait from compute.

rung's own loop (not profiler step markers): the iterator's next() is timed apart from
the train step, each step is forced to finish (its outputs are read back) before the
clock stops, and warm-up steps (tracing, compilation, pipeline start) are discarded.

Taking a batch from an iterator costs something even when the batch is ready (Python,
the iterator's C++ call, wrapping the tensors): the iterator's fixed cost. It is
measured on an in-memory, prefetched dataset of the same structure, one call beside
every timed step (before the real next() on even steps, after it on odd ones, so
neither gets the warmer cache), and its median is subtracted from every wait: a
device that is fed is not called input-bound.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable, Optional

from rung.errors import InputError
from rung.measure.counts import graph_kernels
from rung.measure.workload import features, user_error


@dataclass
class StepTimes:
    waits: list[float]        # raw: time in next(), the iterator's fixed cost included
    computes: list[float]
    iterator_overhead: float = 0.0
    # the leaves of what the step returned (train_step's logs: loss, each output's loss, each
    # metric), which tf-keras's fit all-reduces one by one under MultiWorkerMirroredStrategy
    outputs: Optional[int] = None

    @property
    def totals(self) -> list[float]:
        return [w + c for w, c in zip(self.waits, self.computes)]

    @property
    def net_waits(self) -> list[float]:
        """Waits net of the iterator's fixed cost: time the device really waited for data."""
        return [max(0.0, w - self.iterator_overhead) for w in self.waits]


def jit_compiled(model) -> bool:
    """Whether the model compiles its step with XLA (compile(jit_compile=True); Keras 3's
    default "auto" resolves to it on a machine with a GPU, never on CPU alone)."""
    return bool(getattr(model, "jit_compile", False) or getattr(model, "_jit_compile", False))


def runs_eagerly(model) -> bool:
    """Whether the model is compiled with run_eagerly=True: Keras's fit then runs every
    step op by op in Python, without a graph (tf-keras's property refuses to answer under
    parameter servers, so its attribute is read too)."""
    try:
        return bool(getattr(model, "run_eagerly", False))
    except ValueError:
        return bool(getattr(model, "_run_eagerly", False))


# Steps timed eagerly (after one warm-up) when the model runs eagerly: enough for a factor.
EAGER_STEPS = 5


def make_step_function(tf, model):
    """The model's own train_step as one graph function, compiled as the model says."""
    return tf.function(model.train_step, reduce_retracing=True, jit_compile=jit_compiled(model))


def _finish(tf, outputs) -> None:
    """Read every output back to the host: the step is done when this returns."""
    for t in tf.nest.flatten(outputs):
        if hasattr(t, "numpy"):
            t.numpy()


def _in_memory_twin(tf, batch):
    """An endless prefetched dataset that yields `batch` itself: next() on it costs only
    the iterator's fixed cost."""
    return iter(tf.data.Dataset.from_tensors(batch).repeat().prefetch(tf.data.AUTOTUNE))


def _timed_next(it) -> float:
    t0 = time.perf_counter()
    next(it)
    return time.perf_counter() - t0


def run_step(tf, step_fn, batch, where: str, batch_size: int, keras_step: bool = True) -> int:
    """One training step, finished; the user's model failing is the user's error. Returns
    how many tensors the step returned (the leaves of its logs). `keras_step`: the model
    trains with Keras' own train_step, which needs (features, labels) batches (one of its
    own takes what it takes: keras.io's diffusion model trains on images alone)."""
    try:
        outputs = step_fn(batch)
        _finish(tf, outputs)
        return len(tf.nest.flatten(outputs))
    except tf.errors.ResourceExhaustedError:
        raise InputError(where, None, f"a batch of {batch_size} does not fit on the device (out of "
                                      "memory); try a smaller --batch") from None
    except Exception as e:  # noqa: BLE001 - the model's own train_step raised
        what = "the training step (model.train_step on a batch of make_dataset) failed"
        if keras_step and not isinstance(batch, tuple):
            what += (" (make_dataset yields features alone, no labels: a model trained by Keras' own train_step "
                     "needs (features, labels) batches)")
        raise user_error(where, what, e) from None


def next_batch(tf, it, where: str, i: int, batch_size: int, repeats: bool):
    try:
        return next(it)
    except (StopIteration, tf.errors.OutOfRangeError):
        if i == 0 and repeats:
            raise InputError(where, None, f"make_dataset({batch_size}) yields no batch of {batch_size}: the "
                                          "data holds fewer examples (batch with drop_remainder=True drops "
                                          "them) or a filter drops them all; try a smaller --batch") from None
        raise InputError(where, None, f"the dataset ended after {i} batches; expected an endless dataset "
                                      "(end make_dataset with .repeat())") from None
    except Exception as e:  # noqa: BLE001 - the user's pipeline raised while producing a batch
        raise user_error(where, "the input pipeline (make_dataset) failed while producing a batch", e) from None


def time_steps(tf, model, dataset, steps: int, warmup: int, where: str, batch_size: int,
               on_step: Optional[Callable[[int, int], None]] = None, step_fn=None,
               repeats: bool = False) -> StepTimes:
    """Warm up, then time `steps` steps. `on_step(done, total)` reports progress."""
    from rung.measure.replicas import keras_own_train_step

    step_fn = step_fn or make_step_function(tf, model)
    keras_step = keras_own_train_step(model)
    it = iter(dataset)
    twin = None
    waits, computes, fixed = [], [], []
    total = warmup + steps
    for i in range(total):
        if twin is not None and i % 2 == 0:
            fixed.append(_timed_next(twin))
        t0 = time.perf_counter()
        batch = next_batch(tf, it, where, i, batch_size, repeats)
        t1 = time.perf_counter()
        if twin is not None and i % 2 == 1:
            fixed.append(_timed_next(twin))
        if i == 0:
            got = int(tf.nest.flatten(features(batch))[0].shape[0])
            if got != batch_size:
                raise InputError(where, None, f"make_dataset({batch_size}) yielded a batch of {got} examples; "
                                              "expected batches of batch_size (the per-replica batch)")
            twin = _in_memory_twin(tf, batch)
            for _ in range(3):  # start its prefetch thread
                next(twin)
        t1b = time.perf_counter()
        outputs = run_step(tf, step_fn, batch, where, batch_size, keras_step)
        t2 = time.perf_counter()
        if i >= warmup:
            waits.append(t1 - t0)
            computes.append(t2 - t1b)
        if on_step:
            on_step(i + 1, total)
    return StepTimes(waits, computes, statistics.median(fixed[-steps:]) if fixed else 0.0, outputs if total else None)


# The pipeline alone is timed for `batches` batches and at least this long (at most
# PIPELINE_MAX_BATCHES): a fast pipeline's 20 batches are a few milliseconds, half of them
# out of its prefetch buffer, and four profiles of one model read 0.18-0.93 ms a batch.
PIPELINE_MIN_SECONDS = 0.5
PIPELINE_MAX_BATCHES = 2000


def pipeline_seconds_per_batch(tf, dataset, batches: int, warmup: int, where: str, batch_size: int,
                               repeats: bool = False) -> tuple[float, tuple[float, float]]:
    """The pipeline alone, no training step: mean seconds per batch after a warm-up (what
    the pipeline can deliver to a device of any speed on this machine's CPU), and the 95%
    interval of that mean from the batches' own times (`rung.stats.mean_ci95`)."""
    from rung.stats import mean_ci95

    it = iter(dataset)
    for i in range(warmup):
        next_batch(tf, it, where, i, batch_size, repeats)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < max(1, batches) or (time.perf_counter() - start < PIPELINE_MIN_SECONDS
                                           and len(times) < PIPELINE_MAX_BATCHES):
        t0 = time.perf_counter()
        if len(times) < max(1, batches):
            next_batch(tf, it, where, warmup + len(times), batch_size, repeats)
        else:  # past the batches the profile needs, a dataset that ends ends the timing, not the profile
            try:
                next(it)
            except (StopIteration, tf.errors.OutOfRangeError):
                break
            except Exception as e:  # noqa: BLE001 - the user's pipeline raised while producing a batch
                raise user_error(where, "the input pipeline (make_dataset) failed while producing a batch",
                                 e) from None
        times.append(time.perf_counter() - t0)
    return statistics.fmean(times), mean_ci95(times, floor_at_min=True)


# rung.measure.timing.strategy_extra: alternating rounds of steps, without a strategy and
# under a one-device MirroredStrategy, on the same batches.
STRATEGY_ROUNDS = 3
STRATEGY_ROUND_STEPS = 5
# A difference under this share of the plain step is taken as none: two medians of 15 steps
# of the same work differ by a few percent on a shared machine, and the effect this looks
# for (a copy of an embedding table every step) is many times the step of a sparse update.
STRATEGY_NOISE_SHARE = 0.25
# Copies of a sparsely updated table and its optimizer slots a step could add under mirrored
# variables: one copy of the table was measured (docs/model.md: 22 ms a step against 18 ms for
# one copy of a 1M x 64 table); four of the table and every slot of it bound it from above.
STRATEGY_COPIES_BOUND = 4


def strategy_extra_can_show(table_bytes: float, copy_bytes_per_second: float, step_seconds: float) -> bool:
    """Whether timing the step under a one-device MirroredStrategy could find anything: what it
    looks for is memory traffic, copies of the sparsely updated tables (and their slots,
    `table_bytes`) at this device's copy rate, and a difference under STRATEGY_NOISE_SHARE of
    the step is taken as none. keras.io's ViT (a 144 x 64 position table, a 475 ms step on
    this CPU) spent 25 s of a 66 s profile timing a difference that could not pass that line."""
    if copy_bytes_per_second <= 0 or step_seconds <= 0:
        return True
    return STRATEGY_COPIES_BOUND * table_bytes / copy_bytes_per_second > STRATEGY_NOISE_SHARE * step_seconds


@dataclass
class StrategyExtra:
    plain_seconds: float      # median compute of a step without a strategy
    strategy_seconds: Optional[float]  # ... under a one-device MirroredStrategy (None: not timed, `skipped`)
    extra_seconds: float      # the difference, 0 when within STRATEGY_NOISE_SHARE of the plain step
    copy_bytes_per_second: Optional[float] = None  # this device's copy rate, read for the bound
    skipped: Optional[str] = None  # why the step was not timed under the strategy (strategy_extra_can_show)


def strategy_extra(tf, build, plain_step_fn, batches: list, device: str, table_bytes: Optional[float] = None,
                   step_seconds: Optional[float] = None) -> StrategyExtra:
    """What a step costs more under the mirrored variables of MirroredStrategy and
    MultiWorkerMirroredStrategy than on one device without a strategy, on this device.
    The model is built again in a one-device MirroredStrategy's scope and its train_step
    run as fit runs it there (strategy.run inside one tf.function); the plain step is the
    profile's own. Timed in alternating rounds on the same batches, median against median.
    Found on tf-keras: a sparsely updated embedding table (Adagrad, 1M x 64) took 0.3 ms a
    step without a strategy and 22 ms under one, one copy of the table (docs/model.md).
    With `table_bytes` (the sparsely updated tables and their slots), nothing is built or
    timed under the strategy when their copies could not show (`strategy_extra_can_show`)
    against the plain step (`step_seconds`, else its median over one round timed here)."""
    from rung.units import gib, seconds

    rate = None
    if table_bytes is not None:
        if step_seconds is None:
            for b in batches[:2]:  # tracing
                _finish(tf, plain_step_fn(b))
            alone = []
            for b in batches[:STRATEGY_ROUND_STEPS]:
                t0 = time.perf_counter()
                _finish(tf, plain_step_fn(b))
                alone.append(time.perf_counter() - t0)
            step_seconds = statistics.median(alone)
        rate = copy_bytes_per_second(tf, device, table_bytes)
        if not strategy_extra_can_show(table_bytes, rate, step_seconds):
            why = (f"{STRATEGY_COPIES_BOUND} copies of its sparsely updated tables and their optimizer slots "
                   f"({gib(table_bytes)}) take {seconds(STRATEGY_COPIES_BOUND * table_bytes / rate)} here, under "
                   f"{STRATEGY_NOISE_SHARE:.0%} of its {seconds(step_seconds)} step")
            return StrategyExtra(step_seconds, None, 0.0, rate, why)
    strategy = tf.distribute.MirroredStrategy([device])
    with strategy.scope():
        model = build()

    @tf.function(reduce_retracing=True)
    def mirrored_step(batch):
        return strategy.run(model.train_step, args=(batch,))

    timed = {"plain": [], "strategy": []}
    fns = {"plain": plain_step_fn, "strategy": mirrored_step}
    for name in fns:  # warm-up: tracing, the optimizer's variables
        for b in batches[:2]:
            _finish(tf, fns[name](b))
    for _ in range(STRATEGY_ROUNDS):
        for name, fn in fns.items():
            for b in batches[:STRATEGY_ROUND_STEPS]:
                t0 = time.perf_counter()
                _finish(tf, fn(b))
                timed[name].append(time.perf_counter() - t0)
    plain, under = statistics.median(timed["plain"]), statistics.median(timed["strategy"])
    extra = under - plain
    return StrategyExtra(plain, under, extra if extra > STRATEGY_NOISE_SHARE * plain else 0.0, rate)


def sparse_table_bytes(embedding_params: float, params: float, optimizer_slot_bytes: float) -> float:
    """The bytes a step under mirrored variables could copy for its sparsely updated tables:
    float32 rows, and the optimizer's slots in the model's share of slot bytes per parameter."""
    return embedding_params * 4 * (1 + optimizer_slot_bytes / max(1.0, params * 4))


# rung.measure.timing.batch_time_cv: distinct batches against one batch timed again
BATCH_VARIATION_BATCHES = 12
BATCH_VARIATION_ROUNDS = 3
BATCH_VARIATION_BUDGET_SECONDS = 20.0  # no round begins after this long
BATCH_VARIATION_NOISE_RATIO = 2.0  # the batches' variance must be at least this many times the noise's


@dataclass
class BatchVariation:
    mean_seconds: float        # the mean of the distinct batches' median steps
    batch_cv: float            # their spread, net of the same batch's: what the batches' shapes vary
    distinct_cv: float         # the distinct batches' medians' coefficient of variation
    same_cv: float             # one batch timed as often: the machine's own noise, on the same footing
    batches: int


def batch_time_cv(tf, step_fn, batches: list) -> BatchVariation:
    """How much one batch's step differs from another's on this device, net of noise: each of
    the distinct `batches` (a dataset with dynamic shapes: lengths, object counts) is stepped
    BATCH_VARIATION_ROUNDS times in alternating rounds beside the first batch stepped as often,
    each batch's median kept. The distinct medians' coefficient of variation, less in
    quadrature the same batch's (the machine's noise, relative to its own mean): the
    coefficient of variation `load_imbalance_seconds` takes. Every batch is stepped once first
    (a new shape traces the step)."""
    same = batches[0]
    for b in batches:
        _finish(tf, step_fn(b))
    distinct: list[list[float]] = [[] for _ in batches]
    repeated: list[list[float]] = [[] for _ in batches]
    start = time.perf_counter()
    for r in range(BATCH_VARIATION_ROUNDS):
        if r and time.perf_counter() - start > BATCH_VARIATION_BUDGET_SECONDS:
            break  # a slow step: fewer rounds (each batch's median of what was timed)
        for i, b in enumerate(batches):
            for into, batch in ((distinct[i], b), (repeated[i], same)):
                t0 = time.perf_counter()
                _finish(tf, step_fn(batch))
                into.append(time.perf_counter() - t0)
    return batch_variation(distinct, repeated)


def batch_variation(distinct: list[list[float]], repeated: list[list[float]]) -> BatchVariation:
    """`batch_time_cv`'s arithmetic on its timings: each distinct batch's steps, and the same
    batch's as often."""
    m = [statistics.median(x) for x in distinct]
    f = [statistics.median(x) for x in repeated]
    mean = statistics.fmean(m)
    spread, noise = statistics.pstdev(m) / mean, statistics.pstdev(f) / statistics.fmean(f)
    # the noise as a share of its own mean (it grows with the step), taken off in quadrature;
    # a spread whose variance is mostly the noise's is taken as none (a noisy machine would
    # otherwise read a few percent into batches that cost the same)
    net = (spread ** 2 - noise ** 2) ** 0.5 if spread ** 2 >= BATCH_VARIATION_NOISE_RATIO * noise ** 2 else 0.0
    return BatchVariation(mean, net, spread, noise, len(distinct))


def copy_bytes_per_second(tf, device: str, nbytes: float) -> float:
    """This device's memory rate for a copy: a float32 tensor of `nbytes` (16-256 MB) read
    and written once by one element-wise op, median of 5, counted as 2 x nbytes moved."""
    n = int(min(max(nbytes, 16e6), 256e6) // 4)
    with tf.device(device):
        x = tf.ones([n], tf.float32)
    op = tf.function(lambda t: t * 2.0)
    op(x).numpy()[:1]
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        y = op(x)
        y[:1].numpy()
        times.append(time.perf_counter() - t0)
    return 2.0 * n * 4 / statistics.median(times)


# rung.measure.timing.optimizer_update: the update alone, after tracing
UPDATE_WARMUP = 2
UPDATE_STEPS = 10
UPDATE_BUDGET_SECONDS = 5.0  # no timed update begins after this long (a large model's on a CPU)


@dataclass
class OptimizerUpdate:
    seconds: float   # median of the update alone, this device
    ops: int         # its kernel-launching operations (rung.measure.counts' count of a graph)


def optimizer_update(tf, calls: list) -> Optional[OptimizerUpdate]:
    """What one step's optimizer updates cost alone, on this device: the gradients the
    step handed its optimizers (`counts.optimizer_calls`, recorded once) applied again by
    the same optimizers in one graph function, median of up to UPDATE_STEPS after
    UPDATE_WARMUP. Mostly memory traffic (every parameter and slot read and written once per
    update it touches), which `rung.cli._plan` carries to a plan's device by its memory
    bandwidth; the counted FLOPs leave it out (the step's graph is traced without the
    optimizer's ops). What it finds: Keras 3's Adagrad adds the squared gradient of an
    embedding table to its whole accumulator every step (ops.square of the IndexedSlices makes
    it dense), tf-keras's updates the rows looked up (keras-team/keras#19992). None when the
    step handed no gradients. The model's weights take those few extra updates. The kernels
    are counted as the step's are (`counts.ops_per_step`, which leaves the update out), for the
    launch cost a GPU pays for each."""
    calls = [([g for g in grads if g is not None], [v for g, v in zip(grads, tvars) if g is not None], opt)
             for grads, tvars, opt in calls]
    calls = [(grads, tvars, opt) for grads, tvars, opt in calls if grads]
    if not calls:
        return None
    last = calls[-1][1][-1]

    @tf.function
    def update():
        for grads, tvars, opt in calls:
            opt.apply_gradients(list(zip(grads, tvars)))
        return tf.reduce_sum(tf.reshape(last, [-1])[:1])  # read after the writes: the update has finished

    for _ in range(UPDATE_WARMUP):
        update().numpy()
    times, start = [], time.perf_counter()
    while len(times) < UPDATE_STEPS and (len(times) < 3 or time.perf_counter() - start < UPDATE_BUDGET_SECONDS):
        t0 = time.perf_counter()
        update().numpy()
        times.append(time.perf_counter() - t0)
    return OptimizerUpdate(statistics.median(times), graph_kernels(tf, update.get_concrete_function().graph))
