"""The ladder: walk the rungs bottom up and stop at the lowest that meets the goal.

Order of questions (shared/seed, shared/DESIGN.md): does a replica fit one device;
is the device waiting on its input; is the hardware TPUs; then one device, one host,
several hosts (the fewest that meet the target), and asynchronous parameter servers
only when preemption, stragglers or embedding tables force it and the goal allows
stale gradients. When no rung meets the goal the verdict is the best reachable one,
and a higher rung is never chosen when the model predicts it no faster.
"""

from __future__ import annotations

from rung import units as u
from rung.ladder import codes as C
from rung.ladder.advice import code_for, takes_on
from rung.ladder.context import MIN_GAIN_TO_CLIMB, SYNC_WASTE_LIMIT, Candidate, Context
from rung.ladder.decision import Decision, Finding
from rung.ladder.rejections import mirrored_extra_fix, multi_host_losses, rejections
from rung.ladder.review import beyond_compute, review
from rung.ladder.strategy_options import sharding, splits_tables, strategy_options
from rung.model import comm, memory, throughput
from rung.spec import catalog
from rung.spec.scenario import Scenario

# A multi-host plan that spends this share of its step exchanging between hosts is
# interconnect-bound (more than about half of it).
INTERCONNECT_FRACTION = 0.5


def advise(s: Scenario, links: comm.Links = comm.DEFAULT_LINKS) -> Decision:
    """Decide how to distribute training for scenario `s`, and say how sure it is.
    `links`: the exchange's constants (defaults, or a calibration's)."""
    from rung.ladder.confidence import assess

    if s.offers:
        from rung.ladder.options import advise_options

        d, chosen = advise_options(s, lambda option: decide(option, links))
        larger = _larger_batch(chosen, d, links)
        if larger is not None:
            d.warnings.append(larger)
        assess(chosen, d, links)
        return d
    d = decide(s, links)
    for hint in (_bigger_host_not_offered(s, d, links), _larger_batch(s, d, links)):
        if hint is not None:
            d.warnings.append(hint)
    from rung.ladder.options import option_scenarios

    team = option_scenarios(s)[0]
    team.decision = d
    d.options = [team.to_json()]
    if d.verdict not in ("needs_sharding", "tpu"):
        from rung.ladder.options import over_budget, ps_hosts_not_priced

        unpriced = ps_hosts_not_priced([team])
        if unpriced is not None:
            d.warnings.append(unpriced)
        budget = over_budget(team, links)
        if budget is not None:  # after the verdict's own reason, before its options
            d.reasons.insert(min(1, len(d.reasons)), budget)
    assess(s, d, links)
    return d


# GPUs per host in the largest common hosts of a data-centre GPU: NVIDIA's DGX and HGX
# boards, and the clouds' largest GPU machines (AWS p4d/p5 and g5/g6.48xlarge, GCP
# a2-highgpu-8g and a3-highgpu-8g, Azure ND A100 v4) all carry 8.
LARGEST_COMMON_HOST = 8


def _bigger_host_not_offered(s: Scenario, d: Decision, links: comm.Links):
    """BIGGER_HOST_NOT_OFFERED: the plan spreads synchronous training over hosts of fewer
    than 8 devices, no offers were given to compare, and one host of 8 of the same device
    (its usual link) is predicted to meet the target with MirroredStrategy: "can we rent a
    bigger box?" before a fleet (shared/seed). The team's measured step, on the same device."""
    if d.verdict != "multi_worker_mirrored" or s.is_tpu or s.device.name == "custom" \
            or s.hardware.devices_per_host >= LARGEST_COMMON_HOST:
        return None
    hw = s.hardware.model_copy(update={"devices_per_host": LARGEST_COMMON_HOST, "intra_host": None,
                                       "intra_host_gbps": None, "peer_to_peer": True, "max_hosts": 1})
    big = s.model_copy(update={"hardware": hw, "proposal": None})
    p = throughput.predict_sync(big, "mirrored", 1, LARGEST_COMMON_HOST, links)
    target = s.goal.target_examples_per_second
    if p.examples_per_second is None or p.examples_per_second < target:
        return None
    return Finding(C.BIGGER_HOST_NOT_OFFERED,
        f"the plan needs {d.hosts} hosts of {s.hardware.devices_per_host} {s.device.name}; one host of "
        f"{LARGEST_COMMON_HOST} x {s.device.name} ({big.intra_host_link}, as such hosts come) is predicted at "
        f"{u.rate(p.examples_per_second)} with MirroredStrategy, over the target of {u.rate(target)}, with no "
        "network, no TF_CONFIG and no gang scheduling: ask whether one can be had before running a fleet "
        "(give it under `offers`, with its price, to compare)")


# LARGER_BATCH: a synchronous plan whose replicas reach under this share of linear scaling
# spend longer on what every step pays whatever its batch (the replicas' synchronisation,
# the gradient exchange) than on their compute. rung then predicts the same plan at 2, 4
# and 8 times the per-device batch (while a replica fits), stops at the first that
# reaches LARGER_BATCH_AIM, and says it if it gains at least LARGER_BATCH_GAIN. A plan
# short of the target is looked at under LARGER_BATCH_AIM itself: there a larger batch is
# throughput the team asked for (4 hosts of 8 at 58% of linear, 55% of the target, said
# nothing).
LARGER_BATCH_BELOW = 0.5
LARGER_BATCH_AIM = 0.75
LARGER_BATCH_GAIN = 0.1
LARGER_BATCH_FACTORS = (2, 4, 8)


def at_batch(s: Scenario, batch: int) -> Scenario:
    """The scenario with its per-device batch at `batch` and its step scaled to it
    (linear in the batch, as `throughput._scaled_step` assumes)."""
    w = s.workload
    k = batch / w.per_device_batch

    def times(v):  # a time, or a 95% interval of one, at k times the batch (None stays None)
        return None if v is None else [x * k for x in v] if isinstance(v, list) else v * k

    return s.model_copy(update={"workload": w.model_copy(update={"per_device_batch": batch, **{
        f: times(getattr(w, f)) for f in ("step_seconds", "input_wait_seconds", "step_seconds_ci95",
                                          "pipeline_seconds_per_batch", "pipeline_seconds_per_batch_ci95")}})})


def _larger_batch(s: Scenario, d: Decision, links: comm.Links):
    """LARGER_BATCH: the chosen synchronous plan's replicas reach under half of linear
    scaling (under LARGER_BATCH_AIM when it misses the target), and a larger per-device
    batch (which fits) is predicted to amortise what the step pays whatever its batch:
    the same plan at that batch, and the ladder's own choice there. Or one device was
    kept, short of the target, because several replicas were predicted no faster, and at
    a larger batch the ladder would climb
    (`_larger_batch_to_climb`). A batch already cut to fit (BATCH_TOO_LARGE) cannot grow."""
    p = d.prediction
    if p is None or any(f.code == C.BATCH_TOO_LARGE for f in d.warnings):
        return None
    if d.verdict == "single_device":
        return _larger_batch_to_climb(s, d, links)
    below = LARGER_BATCH_BELOW if d.meets_goal else LARGER_BATCH_AIM
    if d.verdict not in SYNCHRONOUS_REPLICAS or p.devices < 2 or p.scaling_efficiency is None \
            or p.scaling_efficiency >= below:
        return None
    found = None
    for k, scaled in _larger_batches(s):
        q = throughput.predict_sync(scaled, d.verdict, p.hosts, p.devices_per_host, links)
        if q.scaling_efficiency is None:
            break
        found = k, scaled, q
        if q.scaling_efficiency >= LARGER_BATCH_AIM:
            break
    if found is None or found[2].scaling_efficiency < p.scaling_efficiency + LARGER_BATCH_GAIN:
        return None
    k, scaled, q = found
    alt = decide(scaled.model_copy(update={"proposal": None}), links)
    same = alt.verdict == d.verdict and alt.hosts == d.hosts and alt.devices == d.devices
    there = "" if same or alt.prediction is None or alt.prediction.examples_per_second is None else (
        f"; at that batch the ladder would choose {_plan_of(alt)}")
    return Finding(C.LARGER_BATCH,
        f"{p.devices} replicas reach {u.percent(p.scaling_efficiency)} of {p.devices}x one device: "
        f"{_paid_whatever_the_batch(p, links)}. At {_batch_of(s, k, scaled)} the same plan is predicted at "
        f"{u.rate(q.examples_per_second)} ({u.percent(q.scaling_efficiency)} of linear){there}. "
        + _larger_batch_caveats(k, scaled))


def _larger_batch_to_climb(s: Scenario, d: Decision, links: comm.Links):
    """One device kept, short of the target, where the ladder's plan of several replicas
    (one host's devices, or two hosts of one) was predicted no faster than it; at 2, 4 or 8
    times the per-device batch (while a replica fits) the ladder climbs to a plan at least
    MIN_GAIN_TO_CLIMB faster: the first that meets the target, else the fastest."""
    p, hw = d.prediction, s.hardware
    if d.meets_goal or p.examples_per_second is None or hw.devices_per_host * hw.max_hosts < 2:
        return None
    strategy, hosts, per_host = ("mirrored", 1, hw.devices_per_host) if hw.devices_per_host > 1 else \
        ("multi_worker_mirrored", 2, 1)
    many = throughput.predict_sync(s, strategy, hosts, per_host, links)
    if many.examples_per_second is None or many.examples_per_second >= MIN_GAIN_TO_CLIMB * p.examples_per_second:
        return None  # kept for another reason than its speed
    found = None
    for k, scaled in _larger_batches(s):
        alt = decide(scaled.model_copy(update={"proposal": None}), links)
        q = alt.prediction
        if alt.verdict not in SYNCHRONOUS_REPLICAS or q is None or q.examples_per_second is None \
                or q.examples_per_second < MIN_GAIN_TO_CLIMB * p.examples_per_second:
            continue
        if found is None or q.examples_per_second > found[2].prediction.examples_per_second:
            found = k, scaled, alt
        if alt.meets_goal:
            break
    if found is None:
        return None
    k, scaled, alt = found
    return Finding(C.LARGER_BATCH,
        f"one device is kept, short of the target, because {strategy} on {u.plan(hosts, per_host)} is predicted "
        f"no faster ({u.rate(many.examples_per_second)} against {u.rate(p.examples_per_second)}): "
        f"{_paid_whatever_the_batch(many, links)}. At {_batch_of(s, k, scaled)} the ladder would choose "
        f"{_plan_of(alt)}. " + _larger_batch_caveats(k, scaled))


def _larger_batches(s: Scenario):
    """(factor, the scenario at that per-device batch) for LARGER_BATCH_FACTORS, while a
    replica fits the device."""
    usable = memory.usable_device_bytes(s.device_memory_bytes)
    for k in LARGER_BATCH_FACTORS:
        scaled = at_batch(s, s.workload.per_device_batch * k)
        if throughput.replica(scaled).total_bytes > usable:
            return
        yield k, scaled


def _paid_whatever_the_batch(p, links: comm.Links) -> str:
    """What a step of several replicas pays beyond its compute, most of which does not
    grow with the batch; and when most of it is the model's fixed cost of a synchronous
    step, that this is an assumption for real hosts (fitted on published results of long
    steps, which pin it down loosely: benchmarks/bench_published.py)."""
    overhead = p.step_seconds - p.compute_seconds - p.input_wait_seconds
    assumed = "" if links.sync_step_seconds < 0.5 * overhead else (
        f" ({u.seconds(links.sync_step_seconds)} of them are rung's assumed fixed cost of a synchronous step, "
        "which published results pin down loosely: time a few steps on two of your devices to see yours)")
    return (f"{beyond_compute(p)}, against {u.seconds(p.compute_seconds)} of compute, and most of those "
            f"{u.seconds(overhead)} do not grow with the batch{assumed}")


def _batch_of(s: Scenario, k: int, scaled: Scenario) -> str:
    return (f"{scaled.workload.per_device_batch} examples per device ({k}x the {s.workload.per_device_batch}; a "
            f"replica needs {u.gib(throughput.replica(scaled).total_bytes)} of "
            f"{u.gib(memory.usable_device_bytes(s.device_memory_bytes))} usable)")


def _plan_of(d: Decision) -> str:
    q = d.prediction
    return (f"{d.verdict} on {u.plan(q.hosts, q.devices_per_host)}, predicted at {u.rate(q.examples_per_second)}"
            f" ({u.percent(q.scaling_efficiency)} of linear)" + (", meeting the target" if d.meets_goal else ""))


def _larger_batch_caveats(k: int, scaled: Scenario) -> str:
    return (f"This assumes the step grows linearly with the batch (a short step often grows less), and a global "
            f"batch {k}x as large trains differently (scale the learning rate and warm it up): profile at that "
            f"batch to confirm (rung profile --batch {scaled.workload.per_device_batch})")


def decide(s: Scenario, links: comm.Links = comm.DEFAULT_LINKS) -> Decision:
    """The ladder walk alone (no margin analysis): what `advise` re-runs on perturbed inputs."""
    ctx = Context(s, links)
    if not ctx.fits:
        if ctx.embedding_dominated and ctx.ps_worker_fits and not ctx.reproducible and not ctx.tpu:
            d = _ladder(ctx, sync_blocked=True)
        else:
            smaller = memory.largest_batch_that_fits(ctx.replica.state_bytes,
                                                     s.workload.activation_bytes_per_example,
                                                     s.device_memory_bytes)
            if smaller >= 1 and ctx.replica.activation_bytes > 0:
                return _with_smaller_batch(ctx, smaller)
            d = _needs_sharding(ctx)
    elif ctx.input_bound and not ctx.meets(ctx.single):
        d = _fix_input(ctx)
    elif ctx.tpu:
        d = _tpu(ctx)
    else:
        d = _ladder(ctx, sync_blocked=False)
    return _finish(ctx, d)


SYNCHRONOUS_REPLICAS = ("mirrored", "multi_worker_mirrored", "tpu")


def _loss_not_scaled(ctx: Context, d: Decision):
    """LOSS_NOT_SCALED: the plan sums the gradients of several synchronous replicas, and
    the model's own train_step does not divide its loss across them. (Parameter-server
    workers each apply their own gradient: nothing is summed.)"""
    from rung.kerasfit import LOSS_NOT_SCALED_FIX

    p = d.prediction
    if ctx.s.workload.loss_scaled_for_replicas is not False or d.verdict not in SYNCHRONOUS_REPLICAS \
            or p is None or p.devices < 2:
        return None
    w = ctx.s.workload
    if w.compiled_loss_not_scaled:  # Keras's step, the file's loss: Keras 3 alone leaves it undivided
        from rung.kerasfit import compiled_loss_problem, keras3_facts, runs_on_tf_keras

        if runs_on_tf_keras(d.verdict, step_keras=w.step_keras, **keras3_facts(w)):
            return None  # tf-keras divides it (the check read 1.00x there)
        return Finding(C.LOSS_NOT_SCALED,
            f"the replica check found the replicas' gradients summed to N times one device's under N replicas "
            f"on Keras 3, where this plan runs: {compiled_loss_problem(w.compiled_loss_not_scaled, str(p.devices))}")
    if w.compiled_loss_sums:  # Keras's step and loss, made to sum over the batch: on either Keras
        from rung.kerasfit import summed_loss_problem

        return Finding(C.LOSS_NOT_SCALED,
            f"the replica check found the replicas' gradients summed to N times one device's under N replicas: "
            f"{summed_loss_problem(w.compiled_loss_sums, str(p.devices))}")
    clipped = w.step_clipping
    if clipped:  # the check compares the clipped gradients: clipping that bit gives N x alone
        from rung.kerasfit import step_clipping_problem

        return Finding(C.LOSS_NOT_SCALED,
            f"the replica check found the replicas' gradients summed to N times one device's under N replicas "
            f"({p.devices} times the update under the {p.devices} of this plan), and "
            f"{step_clipping_problem(clipped)}: that alone gives N times once clipping bites, as it may have in "
            "the check, so the loss may be divided by the global batch after all. Clip after the sum "
            f"(CLIPPING_PER_REPLICA) and check again (rung profile); if it stays: {LOSS_NOT_SCALED_FIX}")
    return Finding(C.LOSS_NOT_SCALED,
        f"the model's own train_step (or compute_loss) does not divide its loss by the global batch (it averages "
        f"over each replica's batch, or sums): the {p.devices} replicas' gradients are summed, so every update "
        f"would be {p.devices} times what one device takes, and training "
        f"diverges or needs a different learning rate. {LOSS_NOT_SCALED_FIX}")


def _logged_loss_divided(ctx: Context, d: Decision):
    """LOGGED_LOSS_DIVIDED: the plan has several synchronous replicas, and the model's own
    train_step logs its replica's share of the loss (the replica check measured it on the
    step's Keras; a plan on the other Keras is not told: what fit shows there can differ)."""
    from rung.kerasfit import keras3_facts, logged_loss_problem, runs_on_tf_keras

    w, p = ctx.s.workload, d.prediction
    if not w.logged_loss_divided or d.verdict not in SYNCHRONOUS_REPLICAS or p is None or p.devices < 2:
        return None
    plan_keras = "tf_keras" if runs_on_tf_keras(d.verdict, step_keras=w.step_keras, **keras3_facts(w)) else "keras3"
    if w.step_keras and w.step_keras != plan_keras:
        return None
    return Finding(C.LOGGED_LOSS_DIVIDED, logged_loss_problem(str(p.devices)))


def _metric_summed(ctx: Context, d: Decision):
    """METRIC_SUMMED: the plan has several synchronous replicas, and a metric of the file's
    own sets its state with assign, which fit reads as the sum of the replicas' copies (on
    either Keras: measured 1.80x for a maximum under 2 replicas on both)."""
    from rung.kerasfit import metric_summed_problem

    p, found = d.prediction, ctx.s.workload.assigning_metrics
    if not found or d.verdict not in SYNCHRONOUS_REPLICAS or p is None or p.devices < 2:
        return None
    return Finding(C.METRIC_SUMMED, metric_summed_problem(found, str(p.devices)))


def _step_clips(ctx: Context, d: Decision):
    """CLIPPING_PER_REPLICA of the model's own train_step: it runs once per replica, so
    under any synchronous plan of several replicas, on either Keras, each replica's
    gradients are clipped before the optimizer sums them."""
    from rung.kerasfit import STEP_CLIPPING_FIX, step_clipping_problem

    p, clipped = d.prediction, ctx.s.workload.step_clipping
    if not clipped or d.verdict not in SYNCHRONOUS_REPLICAS or p is None or p.devices < 2:
        return None
    return Finding(C.CLIPPING_PER_REPLICA,
        f"{step_clipping_problem(clipped)}: once clipping bites, an update is up to {p.devices} times one device's "
        f"under the {p.devices} replicas of this plan. {STEP_CLIPPING_FIX}")


def _keras3_cannot_run(ctx: Context, d: Decision) -> list:
    """STRING_INPUTS, STEPS_PER_EXECUTION, RAGGED_OR_SPARSE_INPUTS: the plan runs where the
    model fails: Keras 3's fit under MirroredStrategy (rung.kerasfit; tf-keras runs it), or
    strings on a TPU (no string tensors on the device). CLIPPING_PER_REPLICA: Keras 3 under
    MirroredStrategy clips each replica's share of the gradient (tf-keras clips the sum).
    KERAS3_IMPORT: the plan needs tf-keras, and the model
    is built from Keras 3's own `import keras`, which tf-keras cannot train."""
    from rung.kerasfit import KERAS3_FIX, TF_KERAS_STRATEGIES, TF_KERAS_WHY, keras3_facts, keras3_mirrored_failures

    w, p = ctx.s.workload, d.prediction
    if p is None:
        return []
    if d.verdict in TF_KERAS_STRATEGIES and w.keras3_import:
        return [Finding(C.KERAS3_IMPORT, f"{TF_KERAS_WHY}, so rung init's train.py runs on tf-keras "
                                         "(TF_USE_LEGACY_KERAS=1), and the workload file imports Keras 3 itself "
                                         "(`import keras` or `from keras import ...`): tf-keras cannot train a "
                                         f"model built from it: {KERAS3_FIX}, before launching")]
    layers = "map TextVectorization / StringLookup over the tf.data pipeline (dataset.map) so the model takes integers"
    if d.verdict == "tpu":
        return ([Finding(C.STRING_INPUTS, f"the model takes string features, and a TPU takes no string tensors: "
                                          f"{layers}")] if w.string_inputs else []) + _clipping_on_keras3(w, p, "tpu")
    if d.verdict != "mirrored" or p.devices < 2:
        return []
    fixes = {C.STRING_INPUTS: f", or {layers}", C.STEPS_PER_EXECUTION: ", or compile with steps_per_execution=1",
             C.RAGGED_OR_SPARSE_INPUTS: ", or make them dense in the pipeline (RaggedTensor.to_tensor(), "
                                        "tf.sparse.to_dense) so the model takes dense tensors"}
    if w.gradient_clipping:
        fixes[C.CLIPPING_PER_REPLICA] = f", which clips the sum as one device does; or, {_clip_scaled(w, p)}"
    return [Finding(code, f"{what}. Run it on tf-keras (TF_USE_LEGACY_KERAS=1 before TensorFlow starts; rung "
                          f"init's train.py sets it){fixes[code]}")
            for code, what in keras3_mirrored_failures(**keras3_facts(w))] + _clipping_on_keras3(w, p, "mirrored")


def _clip_scaled(w, p) -> str:
    """Keras 3's own fix for per-replica clipping: each replica's share of the gradient is
    about 1/N of the whole, so a threshold N times smaller clips about where one device
    does (exactly when the replicas' gradients are alike)."""
    from rung.kerasfit import SCALED_THRESHOLD

    return (f"on Keras 3, divide the threshold by the {p.devices} replicas ({w.gradient_clipping} becomes "
            + ", ".join(f"{k}={float(v) / p.devices:.3g}" for k, v in
                        (part.split("=") for part in w.gradient_clipping.split(", ")))
            + f"), {SCALED_THRESHOLD}")


def _clipping_on_keras3(w, p, verdict: str) -> list:
    """CLIPPING_PER_REPLICA for a plan of several replicas that stays on Keras 3, which clips
    each replica's share (rung.kerasfit.clipping_problem): a mirrored plan of a file that
    builds its model from Keras 3 itself (tf-keras cannot train it), and a TPU plan (rung's
    train.py runs TPUStrategy on Keras 3, whose optimizer clips before the all-reduce there
    too; not measured: no TPU here). The threshold scaled is the fix."""
    from rung.kerasfit import clipping_problem

    if not w.gradient_clipping or p.devices < 2 or (verdict == "mirrored" and not w.keras3_import):
        return []
    where = "" if verdict == "mirrored" else (" The same optimizer code runs under TPUStrategy (read in Keras's "
                                              "source; not measured on this machine, which has no TPU).")
    return [Finding(C.CLIPPING_PER_REPLICA, f"{clipping_problem(w.gradient_clipping)}.{where} The fix: "
                                           f"{_clip_scaled(w, p)}"
                                           + (", or build the model from tf.keras and run it on tf-keras "
                                              "(TF_USE_LEGACY_KERAS=1), which clips the sum"
                                              if verdict == "mirrored" else ""))]


def _step_on_other_keras(ctx: Context, d: Decision) -> Finding | None:
    """STEP_ON_OTHER_KERAS: the step was measured on Keras 3, and the plan runs on tf-keras
    (multi-worker and parameter-server fit; a mirrored fit Keras 3 cannot run), where the
    same model's step can differ by 2-3x either way (docs/bench.md). Not for a file that
    imports Keras 3 itself: KERAS3_IMPORT says it cannot run there at all. For a measured
    step (one estimated for another device or declared is not this Keras's), and for an
    estimated one of a model with embeddings whose optimizer's update (`optimizer_update_seconds`,
    carried to the device) or whose extra under mirrored variables (`strategy_step_extra_seconds`,
    on a plan with them) is the measured Keras's."""
    from rung.kerasfit import keras3_facts, runs_on_tf_keras

    w = ctx.s.workload
    if w.step_keras != "keras3" or w.keras3_import or d.prediction is None \
            or not runs_on_tf_keras(d.verdict, **keras3_facts(w)):
        return None
    mirrored = d.prediction.devices > 1 and d.verdict in ("mirrored", "multi_worker_mirrored")
    if w.step_seconds_source == "estimated" and w.embedding_params > 0 and (mirrored or w.optimizer_update_seconds):
        # the step is the device's, estimated from FLOPs; what its optimizer's update takes, and
        # what it costs more under mirrored variables (strategy_step_extra_seconds), are still
        # the Keras's they were measured on, and the two Kerases' optimizers update a table
        # differently (Keras 3's Adagrad the whole table, tf-keras's the rows looked up)
        parts = ([f"its optimizer's update ({u.seconds(w.optimizer_update_seconds)} of it, timed here and carried "
                  f"to {ctx.s.hardware.device})"] if w.optimizer_update_seconds else []) \
            + ([f"what it costs more under mirrored variables ({u.seconds(w.strategy_step_extra_seconds)})"]
               if mirrored else [])
        return Finding(C.STEP_ON_OTHER_KERAS,
            f"the step is estimated for {ctx.s.hardware.device} from counted FLOPs, but {' and '.join(parts)} "
            f"{'was' if len(parts) == 1 else 'were'} measured on Keras 3, and rung init's train.py runs "
            f"{d.verdict} on tf-keras, whose optimizers update an embedding table otherwise (Keras 3's Adagrad "
            "adds to its whole accumulator every step, tf-keras's to the rows looked up"
            + (", and copies a sparsely updated table every step under mirrored variables: STRATEGY_STEP_SLOWER"
               if mirrored else "")
            + "): measure it on tf-keras (rung advise WORKLOAD.py --keras tf_keras) and plan from it")
    if w.step_seconds_source != "measured":
        return None
    return Finding(C.STEP_ON_OTHER_KERAS,
        f"the step ({u.seconds(w.step_seconds)}) was measured on Keras 3, and rung init's train.py runs "
        f"{d.verdict} on tf-keras (TF_USE_LEGACY_KERAS=1), where the same model's step can differ by 2-3x either "
        "way (on rung's machine an embedding model with Adagrad took 0.31x its Keras 3 step, the same model with "
        "SGD 1.8x: keras-team/keras#19992). The plan's throughput rests on the Keras 3 step: measure the step on "
        "tf-keras (rung profile --keras tf_keras, or rung advise WORKLOAD.py --keras tf_keras) and plan from it")


def _finish(ctx: Context, d: Decision) -> Decision:
    s = ctx.s
    d.name = s.name
    d.target_examples_per_second = ctx.target
    d.rejected = rejections(ctx, d)
    p = d.prediction
    d.strategy_options, why = strategy_options(s, d.verdict, p.devices_per_host if p else 1, d.ps_tasks, ctx.links)
    d.reasons.extend(why)
    fed = _host_pipeline(ctx, d)
    if fed is not None:  # a reason where it made the plan bigger or kept it short; else a warning
        finding, made_the_plan = fed
        if made_the_plan:
            d.reasons.insert(0, finding)
        else:
            d.warnings.insert(0, finding)
    # each finder's warnings, in this order; those that stop a job or change its numbers go
    # to the front (the last of them found ends up first)
    for find, first in ((_heavy_tails, False), (_loss_not_scaled, True), (_step_clips, False),
                        (_logged_loss_divided, False), (_metric_summed, False),
                        (_keras3_cannot_run, False),
                        (_step_on_other_keras, False), (_run_eagerly, True), (_worker_input, True),
                        (_divides_batch, True), (_dense_embedding_gradients, False), (_sync_batch_norm, False),
                        (_strategy_step_slower, False),
                        (_stateful_rnn, True), (_optimizer_accumulates, True), (_strategy_fails, True)):
        found = find(ctx, d)
        for f in found if isinstance(found, list) else [] if found is None else [found]:
            if first:
                d.warnings.insert(0, f)
            else:
                d.warnings.append(f)
    if d.verdict == "parameter_server" and ctx.s.workload.python_in_pipeline:
        from rung.failures import PS_PYTHON_PROBLEM

        d.warnings.insert(0, Finding(C.PYTHON_PIPELINE, PS_PYTHON_PROBLEM + "; rung init's train.py and rung bench "
                                     "stop before training on such a pipeline under parameter servers"))
    if d.verdict == "parameter_server" and ctx.s.workload.captured_dataset:
        from rung.failures import PS_CAPTURED_DATASET_PROBLEM

        d.warnings.insert(0, Finding(C.CAPTURED_DATASET, PS_CAPTURED_DATASET_PROBLEM + "; rung init's train.py and "
                                     "rung bench stop before training on such a pipeline under parameter servers"))
    if d.verdict == "parameter_server" and ctx.s.workload.mixed_precision_policy == "mixed_float16":
        from rung.failures import MIXED_FLOAT16_PS_PROBLEM

        d.warnings.insert(0, Finding(C.STRATEGY_FAILS, MIXED_FLOAT16_PS_PROBLEM + " (tf-keras: \"Mixed precision is "
                                     "not supported with the tf.distribute.Strategy: ParameterServerStrategyV2\"); "
                                     "rung init's train.py stops on it when it builds the model"))
    if d.verdict == "parameter_server" and ctx.s.workload.jit_compile:
        d.warnings.append(Finding(C.JIT_COMPILE,
            "the model compiles its training step with XLA (compile(jit_compile=True)), and an XLA step on a "
            "worker cannot read the variables the ps tasks hold (it fails: \"Trying to access resource ... "
            "located in device /job:ps\"; XLA's known issue of a variable on another device): rung init's "
            "train.py turns XLA off under ParameterServerStrategy, so the workers run the step without it, "
            "while the one-device step this plan is predicted from ran with it (the difference is not measured)"))
    if d.verdict == "needs_sharding":
        d.sharding = sharding(ctx)
    d.code = code_for(d, ctx)
    d.takes_on = takes_on(d, ctx)
    if s.proposal is not None:
        d.review, d.proposal_prediction, extra = review(ctx, d)
        d.warnings.extend(extra)
    return d


def _pipeline_that_keeps_up(s: Scenario, **workload) -> Scenario:
    """The scenario (without its proposal) as if its input pipeline kept up: none measured,
    with `workload`'s fields changed too. What a fixed pipeline would get."""
    w = s.workload
    return s.model_copy(update={"workload": w.model_copy(update={
        "pipeline_seconds_per_batch": None, "pipeline_seconds_per_batch_ci95": None, **workload}), "proposal": None})


def _host_pipeline(ctx: Context, d: Decision):
    """INPUT_BOUND where one device is fed and the plan's hosts are not: one host's input
    pipeline makes the batches of all its devices (`inputs.host_pipeline_floor`), and the
    plan's step waits for it. With whether it changed the plan: the ladder's choice with a
    pipeline that keeps up (the same scenario, the pipeline not measured), when that choice
    is smaller or the plan misses the target. None where nothing waits on the pipeline, or
    where one device already does (`ctx.input_bound`: the verdict or its warning says so)."""
    w, p = ctx.s.workload, d.prediction
    if p is None or not p.input_capped or ctx.input_bound or not w.pipeline_seconds_per_batch:
        return None
    pipe, k = w.pipeline_seconds_per_batch, w.gradient_accumulation_steps
    own = p.step_seconds - p.input_floor_wait_seconds  # the step without the wait
    feeds = max(1, int(own / (k * pipe)))
    fed = decide(_pipeline_that_keeps_up(ctx.s), ctx.links)
    q = fed.prediction
    smaller = (q is not None and q.examples_per_second is not None and fed.verdict != "needs_sharding"
               and (q.hosts, q.devices) < (p.hosts, p.devices))
    made_the_plan = smaller or not d.meets_goal
    where = ("this machine's CPU, where it was measured (the plan's hosts may have more cores)"
             if w.step_seconds_source == "estimated" else "the host's CPU")
    text = (f"the input pipeline alone takes {u.seconds(pipe)} to make one device's batch of {w.per_device_batch} on "
            f"{where}, and one host's pipeline makes every batch its devices train on: at most "
            f"{u.rate(w.per_device_batch / pipe)} a host, whatever its devices. It keeps about {feeds} of the plan's "
            f"{p.devices_per_host} devices a host fed; each step waits {u.seconds(p.input_floor_wait_seconds)} "
            f"for it ({u.percent(p.input_floor_wait_seconds / p.step_seconds)} of the step). Fix the pipeline before "
            "adding devices or hosts (tf.data: map with num_parallel_calls=tf.data.AUTOTUNE, cache what is decoded, "
            "prefetch; or decode and augment on the devices)")
    if smaller or (not d.meets_goal and q is not None and q.examples_per_second):
        text += f"; with a pipeline that keeps up the ladder would choose {_plan_of(fed)}"
    return Finding(C.INPUT_BOUND, text), made_the_plan


def _strategy_fails(ctx: Context, d: Decision):
    """STRATEGY_FAILS: a plan of several replicas on the Keras the step was measured on,
    where `rung profile`'s replica check saw the step fail under a MirroredStrategy of two
    replicas (a keras.io loss object in a custom train_step under tf-keras, say), or read
    from the model that Keras 3's mirrored fit fails (optimizers of its own, not built, that
    keep slots); a plan of one device too when fit fails under every strategy
    (`strategy_fails_on_one_device`)."""
    from rung.kerasfit import keras3_facts, runs_on_tf_keras

    w, p = ctx.s.workload, d.prediction
    one_device = w.strategy_fails_on_one_device
    if not w.strategy_failure or p is None or (p.devices < 2 and not one_device) or w.step_keras is None:
        return None
    on_tf_keras = runs_on_tf_keras(d.verdict, step_keras=w.step_keras, **keras3_facts(w))
    if on_tf_keras != (w.step_keras == "tf_keras"):
        return None
    keras = "tf-keras" if on_tf_keras else "Keras 3"
    if one_device:
        strategy = C.STRATEGY.get(d.verdict) or C.STRATEGY["single_device"]
        return Finding(C.STRATEGY_FAILS, f"the model's fit fails under every tf.distribute strategy on {keras}, which "
                                         f"{d.verdict} runs on ({strategy} included): {w.strategy_failure}")
    # the replica check saw the step fail under two replicas, or the profile read it from the
    # model (optimizers a train_step builds inside the replicated step): the reason says which
    return Finding(C.STRATEGY_FAILS, f"the model cannot train under a MirroredStrategy of several replicas on "
                                     f"{keras}, which {d.verdict} runs on (rung profile, on this machine): "
                                     f"{w.strategy_failure}. The job would fail before its first step")


def _optimizer_accumulates(ctx: Context, d: Decision):
    """GRADIENT_ACCUMULATION: a plan of several replicas for a model whose optimizer
    accumulates its gradients itself (Keras 3's gradient_accumulation_steps), which no
    replicated strategy runs: the job fails before its first step."""
    from rung.kerasfit import ACCUMULATION_PROBLEM

    k, p = ctx.s.workload.optimizer_accumulation_steps, d.prediction
    if k < 2 or p is None or p.devices < 2:
        return None
    return Finding(C.GRADIENT_ACCUMULATION, f"the model's optimizer accumulates its gradients over {k} steps "
                                            f"(gradient_accumulation_steps={k}), and {ACCUMULATION_PROBLEM}")


def _stateful_rnn(ctx: Context, d: Decision):
    """STATEFUL_RNN: the plan runs on tf-keras (rung.kerasfit.runs_on_tf_keras), which refuses
    to build a stateful RNN under any tf.distribute strategy: the job fails before its
    first step. (Keras 3 builds one under MirroredStrategy and OneDeviceStrategy.)"""
    from rung.kerasfit import STATEFUL_RNN_PROBLEM, keras3_facts, runs_on_tf_keras

    w = ctx.s.workload
    if not w.stateful_rnn_layers or d.prediction is None or not runs_on_tf_keras(
            d.verdict, step_keras=w.step_keras, **keras3_facts(w)):
        return None
    return Finding(C.STATEFUL_RNN, f"rung init's train.py runs {d.verdict} on tf-keras, and {STATEFUL_RNN_PROBLEM}")


def _sync_batch_norm(ctx: Context, d: Decision):
    """SYNC_BATCH_NORM: a synchronous plan of several replicas for a model with synchronized
    BatchNormalization layers: what their statistics' all-reduces cost the predicted step."""
    n, p = ctx.s.workload.sync_batch_norm_layers, d.prediction
    if not n or p is None or d.verdict not in ("mirrored", "multi_worker_mirrored") or p.devices < 2:
        return None
    per_layer = comm.SYNC_BN_COLLECTIVES_PER_LAYER
    return Finding(C.SYNC_BATCH_NORM,
        f"{n} BatchNormalization layer{'s' if n != 1 else ''} {'are' if n != 1 else 'is'} synchronized across "
        f"replicas (synchronized=True): every step each all-reduces its batch's sum, squared sum and count in the "
        f"forward pass and their gradients in the backward pass, {per_layer * n} small all-reduces one after "
        f"another, which the layers that follow wait for: {u.seconds(p.sync_batch_norm_seconds)} of the predicted "
        f"{u.seconds(p.step_seconds)} step ({u.percent(p.sync_batch_norm_seconds / p.step_seconds)}), their "
        "latency" + (" across the network between hosts" if p.hosts > 1 else " inside the host")
        + "; BatchNormalization without synchronized=True normalises each replica's own batch and costs none of it")


def _strategy_step_slower(ctx: Context, d: Decision):
    """STRATEGY_STEP_SLOWER: a synchronous plan of several replicas for a model whose step
    `rung profile` timed slower under a one-device MirroredStrategy than without one
    (`strategy_step_extra_seconds`): what that costs the predicted step, and the fix found."""
    w, p = ctx.s.workload, d.prediction
    extra = w.strategy_step_extra_seconds
    if not extra or p is None or d.verdict not in ("mirrored", "multi_worker_mirrored") or p.devices < 2:
        return None
    where = (f"; carried to {ctx.s.hardware.device} by its memory bandwidth, as the difference is memory traffic"
             if w.step_seconds_source == "estimated" else "")
    fix = mirrored_extra_fix(w)
    return Finding(C.STRATEGY_STEP_SLOWER,
        f"under {C.STRATEGY[d.verdict]} every replica's step takes {u.seconds(extra)} more than on one device "
        f"without a strategy (rung profile timed the step under a one-device MirroredStrategy against the step "
        f"without one{where}): {u.percent(extra / p.step_seconds)} of the predicted {u.seconds(p.step_seconds)} "
        f"step, in the plan's numbers. {fix}")


def _dense_embedding_gradients(ctx: Context, d: Decision):
    """DENSE_EMBEDDING_GRADIENTS: a plan that sends gradients between hosts, for a model whose
    embedding tables get dense gradients (the profile saw them reach the optimizer whole):
    every step moves the whole tables, where lookups alone would move the rows read."""
    from rung.model.memory import BYTES_PER_DTYPE

    w, p = ctx.s.workload, d.prediction
    if not w.dense_embedding_params or p is None or d.verdict not in ("multi_worker_mirrored", "parameter_server"):
        return None
    table_bytes = w.dense_embedding_params * BYTES_PER_DTYPE.get(w.param_dtype, 4)
    share = w.dense_embedding_params / w.params if w.params else 0
    return Finding(C.DENSE_EMBEDDING_GRADIENTS,
        f"{w.dense_embedding_params:,.0f} parameters ({share:.0%} of the model) are embedding tables whose gradient "
        f"reaches the optimizer dense, so every step sends {u.gib(table_bytes)} of them between hosts where lookups "
        "alone would send the rows read (rung profile names the tables). An embeddings_regularizer touches every row: "
        "regularize the rows looked up instead (add_loss on the gathered embeddings), or drop it; a table tied to the "
        "output layer is dense by design. The plan counts them dense, as measured")


def _divides_batch(ctx: Context, d: Decision):
    """BATCH_DIVIDED: make_dataset divides the batch by the InputContext's replicas, where
    rung's train.py passes the per-replica batch. The context's replicas are every replica
    under multi-worker, a worker's own devices under parameter servers (TensorFlow's
    ParameterServerStrategy: its GPUs, else 1, which divides nothing)."""
    w, p = ctx.s.workload, d.prediction
    if not w.divides_batch or p is None or d.verdict not in ("multi_worker_mirrored", "parameter_server"):
        return None
    replicas = p.devices if d.verdict == "multi_worker_mirrored" else p.devices_per_host
    if replicas < 2:
        return None
    b = w.per_device_batch
    return Finding(C.BATCH_DIVIDED,
        f"make_dataset divides the batch it is given by the replicas (input_context.get_per_replica_batch_size, as "
        f"TensorFlow's multi-worker tutorial does for a global batch), and rung's train.py passes the per-replica "
        f"batch ({b:,}): each of the {replicas} replicas would train on {b // replicas:,} examples a step, not the "
        f"{b:,} this plan is predicted for, and rung launch would count {b:,}. Use batch_size as it is")


def _worker_input(ctx: Context, d: Decision):
    """INPUT_NOT_SHARDED and EMPTY_SHARD: a plan of several workers where `rung profile`
    found that every worker would read the same batches, or one would read none. Under
    multi-worker each worker builds its own pipeline from make_dataset(batch, InputContext)
    (`worker_input`); under parameter servers every worker runs a copy of the coordinator's
    (`ps_worker_input`), which is never empty."""
    ps = d.verdict == "parameter_server"
    state = ctx.s.workload.ps_worker_input if ps else ctx.s.workload.worker_input
    if d.verdict not in ("multi_worker_mirrored", "parameter_server") or state not in ("identical", "augmented",
                                                                                        "empty"):
        return None
    workers = d.prediction.hosts if d.prediction is not None else None
    many = f"all {workers} workers" if workers and workers > 1 else "every worker"
    if state in ("identical", "augmented") and ps:
        from rung.failures import PS_AUGMENTED_INPUT, PS_SAME_INPUT, PS_SAME_INPUT_FIX

        same = PS_AUGMENTED_INPUT if state == "augmented" else PS_SAME_INPUT
        return Finding(C.INPUT_NOT_SHARDED,
            f"{same}, and each batch's update would be applied once per worker"
            + (f" ({workers} times)" if workers and workers > 1 else "")
            + f". {PS_SAME_INPUT_FIX[0].upper()}{PS_SAME_INPUT_FIX[1:]}")
    if state == "augmented":
        return Finding(C.INPUT_NOT_SHARDED,
            f"make_dataset takes the InputContext and does not use it: {many} would read the same examples in the "
            "same order, each augmenting them at random (the global batch is one worker's examples, augmented "
            "once per worker, and an epoch of the data takes as many times the steps); the plan's examples per "
            "second count each example once per worker. Shard the pipeline: ds.shard(input_context.num_input_pipelines, "
            "input_context.input_pipeline_id), or shuffle it without a seed")
    if state == "identical":
        what = "the global batch is one worker's batch repeated, so the average of the workers' gradients is one worker's"
        return Finding(C.INPUT_NOT_SHARDED,
            f"make_dataset takes the InputContext and does not use it, and draws nothing at random: {many} would "
            f"read the same batches in the same order ({what}); the plan's examples per second count each example "
            "once per worker. Shard the pipeline: ds.shard(input_context.num_input_pipelines, "
            "input_context.input_pipeline_id), or shuffle it without a seed")
    return Finding(C.EMPTY_SHARD,
        "make_dataset(batch, InputContext) yields no batch on worker 1 of 2 (a shard of fewer files than workers?): "
        f"{many} need a pipeline of their own, and a run cannot train with an empty one. Shard after the files "
        "are read (by data), or give every worker files")


def _run_eagerly(ctx: Context, d: Decision):
    """RUN_EAGERLY: the model is compiled with run_eagerly=True, so Keras's fit runs every
    step op by op in Python; the plan's numbers are those of the graph step. Under
    parameter servers tf-keras refuses it, and rung's train.py turns it off."""
    w = ctx.s.workload
    if not w.run_eagerly:
        return None
    measured = ""
    if w.eager_step_seconds:
        measured = (f" (rung profile timed an eager step at {u.seconds(w.eager_step_seconds)}, "
                    f"{w.eager_step_seconds / w.step_seconds:.1f}x the graph step of {u.seconds(w.step_seconds)})")
    where = ("; tf-keras refuses a compiled run_eagerly=True under ParameterServerStrategy (\"`run_eagerly` is not "
             "supported\"), so rung init's train.py turns it off there and says so (remove a run_functions_eagerly "
             "call yourself)" if d.verdict == "parameter_server" else
             ": remove run_eagerly=True from compile() (or the run_functions_eagerly call) before training at scale")
    return Finding(C.RUN_EAGERLY,
                   "the model runs its steps eagerly (compiled with run_eagerly=True, or the file calls "
                   "tf.config.run_functions_eagerly(True)), so Keras's fit runs every step op by op in Python, "
                   f"without a graph{measured}; this plan's throughput is that of the graph step{where}")


def _heavy_tails(ctx: Context, d: Decision):
    """HEAVY_TAILED_STEPS: the synchronous multi-host numbers wait for a simulated slowest
    worker, not the normal closed form; both, for the plan (or the multi-host rung)."""
    w = ctx.s.workload
    if w.step_time_distribution == "normal" or w.step_time_cv <= 0:
        return None
    p = d.prediction
    if p is None or p.hosts < 2 or p.strategy == "parameter_server":
        p = ctx.mwms.unpaid or ctx.mwms.prediction
    if p is None or p.hosts < 2:
        return None
    from rung.model import straggler

    cv = w.step_time_cv / w.gradient_accumulation_steps ** 0.5
    normal = float(straggler.straggler_seconds(p.compute_seconds, cv, p.hosts, "normal"))
    return Finding(C.HEAVY_TAILED_STEPS,
        f"step times are {w.step_time_distribution} (CV {w.step_time_cv:.2g}), which has no closed form for "
        f"the slowest worker: rung simulated the fleet's steps, and a synchronous step across {p.hosts} hosts "
        f"waits {u.seconds(p.straggler_seconds)} for its slowest worker (normal step times would wait "
        f"{u.seconds(normal)})")


def _decision(ctx: Context, c: Candidate, reasons, warnings) -> Decision:
    p = c.prediction
    return Decision(
        verdict=c.verdict, hosts=p.hosts, devices=p.devices, ps_tasks=p.ps_tasks,
        meets_goal=ctx.meets(c), prediction=p, memory_bytes_per_device=p.memory_bytes_per_device,
        reasons=list(reasons), warnings=list(warnings),
    )


# -- the first questions -----------------------------------------------------------------

def _needs_sharding(ctx: Context) -> Decision:
    r, s = ctx.replica, ctx.s
    shards = memory.devices_to_shard_state(r.state_bytes, s.device_memory_bytes)
    reasons = [Finding(C.DOES_NOT_FIT,
        f"one replica needs {u.gib(r.total_bytes)} (weights {u.gib(r.weights_bytes)}, gradients "
        f"{u.gib(r.gradient_bytes)}, optimizer state {u.gib(r.optimizer_bytes + r.master_copy_bytes)}, "
        f"activations {u.gib(r.activation_bytes)}) but one {s.device.name} device offers {u.gib(ctx.usable_bytes)} "
        f"usable of {u.gib(s.device_memory_bytes)}; every tf.distribute strategy replicates the whole "
        f"model, so more replicas hit the same out-of-memory error (CentralStorageStrategy too: it keeps "
        f"variables on the CPU but every device still computes the whole model's gradients and activations). "
        f"Shard parameters and optimizer state instead: fully sharded, the state alone needs at least "
        f"{shards} devices" + _split_over_host(ctx))]
    warnings = []
    if ctx.embedding_dominated and ctx.reproducible:
        warnings.append(Finding(C.REPRODUCIBILITY_REQUIRED,
            "the excess is embedding tables, which parameter servers could hold in host memory, but "
            "the goal asks for reproducible runs and parameter-server training is asynchronous; shard "
            "the tables across devices instead"))
    elif ctx.embedding_dominated and ctx.tpu:
        warnings.append(Finding(C.EMBEDDING_DOMINATED,
            "the excess is embedding tables: on TPUs shard them with tf.tpu.experimental.embedding "
            "(TPUEmbedding) rather than replicating them"))
    return Decision(verdict="needs_sharding", hosts=None, devices=None, ps_tasks=0, meets_goal=False,
                    prediction=None, memory_bytes_per_device=r.total_bytes,
                    reasons=reasons, warnings=warnings)


def _split_over_host(ctx: Context) -> str:
    d, r = ctx.s.hardware.devices_per_host, ctx.replica
    if d < 2:
        return ""
    each = r.state_bytes / d + r.activation_bytes
    return (f"; split over this host's {d} devices each would hold {u.gib(each)} "
            f"({'fits' if each <= ctx.usable_bytes else 'still over'} the {u.gib(ctx.usable_bytes)} usable)")


def _with_smaller_batch(ctx: Context, batch: int) -> Decision:
    """State fits but activations at this batch do not: decide at the largest batch that fits."""
    w = ctx.s.workload
    d = decide(at_batch(ctx.s, batch), ctx.links)
    d.warnings.insert(0, Finding(C.DOES_NOT_FIT,
        f"at {w.per_device_batch} examples per device a replica needs {u.gib(ctx.replica.total_bytes)} "
        f"of {u.gib(ctx.usable_bytes)} usable; activations are the excess, not the model"))
    d.warnings.insert(1, Finding(C.BATCH_TOO_LARGE,
        f"decided at {batch} examples per device, the largest that fits, assuming step time "
        f"scales linearly with batch; re-measure at that batch (or recompute activations) to confirm"))
    return d


def _fix_input(ctx: Context) -> Decision:
    s, w = ctx.s, ctx.s.workload
    compute = w.step_seconds - w.input_wait_seconds
    fixed_eps = w.per_device_batch / compute
    reasons = [Finding(C.INPUT_BOUND,
        f"the device waits {u.seconds(w.input_wait_seconds)} of each {u.seconds(w.step_seconds)} step "
        f"for input ({u.percent(ctx.wait_fraction)}, at or above 20%): the input pipeline, not the "
        f"device, sets the pace, and adding replicas multiplies cost for no throughput. Fixed, this "
        f"one device would do about {u.rate(fixed_eps)} instead of {u.rate(ctx.one_device_eps)}")]
    # fixed: no wait, and a pipeline that keeps up (not the one measured, which set the pace)
    fixed = _pipeline_that_keeps_up(s, step_seconds=compute, input_wait_seconds=0.0)
    after = decide(fixed, ctx.links)
    p = ctx.single.prediction
    d = Decision(verdict="fix_input_pipeline", hosts=1, devices=1, ps_tasks=0, meets_goal=False,
                 prediction=p, memory_bytes_per_device=p.memory_bytes_per_device, reasons=reasons)
    d.after_fix = {"verdict": after.verdict, "hosts": after.hosts, "devices": after.devices,
                   "meets_goal": after.meets_goal, "predicted": after.predicted()}
    return d


def _tpu(ctx: Context) -> Decision:
    c, s = ctx.tpu_rung, ctx.s
    p = c.prediction
    plan = f"{u.plan(p.hosts, p.devices_per_host)} predicted at {u.rate(p.examples_per_second)}"
    if p.hosts > 1 and s.device.slice_hosts:
        plan = (f"a {catalog.slice_name(s.device, p.hosts, p.devices_per_host)} slice, {plan}; a slice's chips "
                "are joined by ICI across its hosts, so the gradients never cross the data-centre network")
    reasons = [Finding(C.TPU_HARDWARE,
        f"the hardware on offer is {s.device.name}: TPUStrategy is chosen by the hardware, "
        f"not by preference ({plan})")]
    warnings = _input_warning(ctx)
    if not ctx.meets(c):
        reasons.append(_unreachable(ctx, c))
    if s.workload.dynamic_shapes:
        warnings.append(Finding(C.DYNAMIC_SHAPES,
            "the workload has dynamic shapes; XLA on TPUs needs static ones: pad to fixed "
            "sizes (padded_batch with padded_shapes, drop_remainder=True) and budget porting time"))
    warnings.extend(_sync_warnings(ctx, p))
    return _decision(ctx, c, reasons, warnings)


# -- the strategy rungs ------------------------------------------------------------------

def _ladder(ctx: Context, sync_blocked: bool) -> Decision:
    sync = [] if sync_blocked else [ctx.single, ctx.mirrored, ctx.mwms]
    order = [c for c in sync + [ctx.ps] if c.allowed and c.prediction is not None]
    meeting = [c for c in order if ctx.meets(c)]
    if meeting:
        chosen = meeting[0]
        if (chosen is ctx.mwms and ctx.meets(ctx.ps)
                and ctx.sync_waste(chosen.prediction) >= SYNC_WASTE_LIMIT):
            chosen = ctx.ps
    else:
        chosen = order[0]
        for c in order[1:]:
            if c.eps >= MIN_GAIN_TO_CLIMB * chosen.eps and c.pays:
                chosen = c
    return _decision(ctx, chosen, _reasons(ctx, chosen, sync_blocked), _warnings(ctx, chosen))


def _reasons(ctx: Context, c: Candidate, sync_blocked: bool) -> list[Finding]:
    p, s = c.prediction, ctx.s
    out: list[Finding] = []
    met = ctx.meets(c)
    target = u.rate(ctx.target)
    if c.verdict == "single_device" and met:
        out.append(Finding(C.ONE_DEVICE_SUFFICIENT,
            f"one {s.device.name} does {u.rate(p.examples_per_second)}, meeting the target of {target}; "
            "no distribution needed"))
    elif c.verdict == "mirrored" and met:
        need = -(-int(ctx.target) // max(1, int(p.examples_per_second / p.devices)))
        out.append(Finding(C.ONE_HOST_SUFFICIENT,
            f"one host's {p.devices} devices do {u.rate(p.examples_per_second)} "
            f"({u.percent(p.scaling_efficiency)} of linear), meeting {target}; one device does only "
            f"{u.rate(ctx.single.eps)}. One host avoids every network problem"
            + (f" (about {need} of its devices would do)" if need < p.devices else "")))
    elif c.verdict in ("multi_worker_mirrored", "parameter_server") and p.hosts > 1 and not sync_blocked:
        one_host = max(ctx.single.eps, ctx.mirrored.eps if ctx.mirrored.allowed else 0.0)
        out.append(Finding(C.NEEDS_MULTIPLE_HOSTS,
            f"one host tops out at {u.rate(one_host)}, under the target of {target}; "
            f"{u.plan(p.hosts, p.devices_per_host)} are predicted at {u.rate(p.examples_per_second)}"))
    if c.verdict == "parameter_server":
        out.extend(_async_reasons(ctx, c, sync_blocked))
    elif c.verdict == "multi_worker_mirrored" and ctx.reproducible and ctx.async_triggers:
        out.append(Finding(C.REPRODUCIBILITY_REQUIRED,
            f"{' and '.join(t.lower().replace('_', ' ') for t in ctx.async_triggers)} would argue for "
            "asynchronous parameter servers, but the goal asks for reproducible runs: stay synchronous "
            "and make restarts cheap with BackupAndRestore"))
    if not met:
        out.append(_unreachable(ctx, c))
        if c.verdict in ("single_device", "mirrored") and ctx.mwms.allowed and ctx.fits:
            out.extend(multi_host_losses(ctx))
    bound = _interconnect_bound(ctx, c, met)
    if bound is not None:
        out.append(bound)
    return out


def _interconnect_bound(ctx: Context, c: Candidate, met: bool) -> Finding | None:
    """The chosen multi-host plan spends half its step or more exchanging gradients between
    hosts, or misses the target with the exchange as its largest loss."""
    p, s = c.prediction, ctx.s
    # (a TPU slice's exchange runs on its ICI, not between hosts: `throughput.tpu_exchange`)
    if p is None or p.hosts <= 1 or c.verdict not in ("multi_worker_mirrored", "parameter_server"):
        return None
    if p.dispatch_bound:
        # the coordinator's dispatch caps the fleet (COORDINATOR_BOUND): a faster network
        # would shorten every worker's step and the fleet would still do what it does
        return None
    exchange = p.ps_exchange_seconds if c.verdict == "parameter_server" else (
        p.inter_host_seconds + p.sparse_exchange_seconds)
    share = exchange / p.step_seconds
    other_losses = max(p.straggler_seconds, p.input_wait_seconds, p.sync_seconds) / p.step_seconds
    # a missed target is the exchange's doing only when these hosts would meet it without
    # the exchange, or when the walk stopped short of the hosts on offer (more did not pay);
    # a plan short of the target for want of hosts is not interconnect-bound however the
    # exchange ranks among its losses (DenseNet121, 8 hosts on 10 Gb/s: 15% of the step,
    # and 8x one host would still be 56% of the target)
    free = p.examples_per_second * p.step_seconds / (p.step_seconds - exchange) if exchange < p.step_seconds else 0.0
    out_of_reach = not met and free >= ctx.target
    stopped = not met and p.hosts < ctx.max_hosts
    largest = share >= 0.10 and share >= other_losses
    if not (share >= INTERCONNECT_FRACTION or ((out_of_reach or stopped) and largest)):
        return None
    what = "pulling and pushing variables" if c.verdict == "parameter_server" else "exchanging gradients"
    why = ""
    if out_of_reach:
        why = f", and what keeps the target out of reach: without it these hosts would do {u.rate(free)}"
    elif stopped:
        why = (f", the largest loss, and the reason more than {p.hosts} of the {ctx.max_hosts} hosts on offer "
               "do not pay")
    fixes = ("a faster network, or more examples for the same pulls and pushes (a larger per-worker batch: "
             "every step moves the dense variables and their gradients whatever its batch)"
             if c.verdict == "parameter_server" else
             "a faster network, fewer and bigger hosts, or fewer gradient bytes (mixed-precision all-reduce, "
             "gradient accumulation)")
    fixes += " buy more than more hosts"
    latency = _sparse_latency(ctx, c)
    if latency >= 0.5 * exchange:
        # each embedding gradient is gathered in collectives one after another: what the step
        # waits for is their latency, which bandwidth does not shorten
        n = throughput.sparse_gradient_tensors(s)
        fixes = (f"{u.seconds(latency)} of it is latency, not bytes (each of the {n} embedding gradients is "
                 f"gathered in {comm.SPARSE_GATHER_COLLECTIVES_PER_TENSOR} collectives, one after another), so "
                 "fewer embedding gradients (one table for what several tables look up), a larger per-device batch "
                 "(the same collectives for more examples) or fewer and bigger hosts buy more than a faster network "
                 "or more hosts")
    return Finding(C.INTERCONNECT_BOUND,
        f"{what} between hosts over {u.gbps(s.inter_host_bytes_per_second)} takes {u.seconds(exchange)} of "
        f"each {u.seconds(p.step_seconds)} step ({u.percent(share)}) against {u.seconds(p.compute_seconds)} "
        f"of compute{why}; {fixes}")


def _sparse_latency(ctx: Context, c: Candidate) -> float:
    """What a multi-worker step waits on its embedding gradients' gathers beyond their bytes
    (the model's `comm.sparse_gather_latency_seconds` term); 0 for other plans."""
    p = c.prediction
    if c.verdict != "multi_worker_mirrored" or p.sparse_exchange_seconds <= 0:
        return 0.0
    one = comm.small_allreduce_seconds(p.hosts, p.devices_per_host, ctx.links)
    return float(comm.sparse_gather_latency_seconds(throughput.sparse_gradient_tensors(ctx.s), one))


def _async_reasons(ctx: Context, c: Candidate, sync_blocked: bool) -> list[Finding]:
    p, s, out = c.prediction, ctx.s, []
    mw = ctx.mwms.unpaid or ctx.mwms.prediction  # the fastest count, where the triggers were read
    if ctx.preemptible:
        sync_note = (f"; synchronous training on {mw.hosts} hosts would keep only {u.percent(mw.goodput)} "
                     f"of its time after restarts") if mw is not None and not sync_blocked else ""
        out.append(Finding(C.PREEMPTIBLE_WORKERS,
            f"hosts are preempted {s.preemptions_per_host_second * 3600:g} times an hour each and a "
            f"synchronous job stops for {u.seconds(s.fleet.restart_seconds)} whenever any one goes"
            f"{sync_note}; asynchronous workers lose only their own share "
            f"(goodput {u.percent(p.goodput)})"))
    if ctx.stragglers and mw is not None:
        out.append(Finding(C.STRAGGLERS,
            f"with step-time CV {s.workload.step_time_cv:.2g} a synchronous step across {mw.hosts} hosts "
            f"waits {u.seconds(mw.straggler_seconds)} for its slowest worker; asynchronous workers do not wait"))
    if ctx.embedding_dominated:
        w = s.workload
        extra = (f"; a full replica ({u.gib(ctx.replica.total_bytes)}) does not fit a device "
                 f"({u.gib(ctx.usable_bytes)} usable), but the tables fit parameter servers' host memory "
                 f"and workers need only the rows they look up — not a sharding case") if sync_blocked else ""
        out.append(Finding(C.EMBEDDING_DOMINATED,
            f"{w.embedding_params / w.params:.0%} of the parameters are embedding tables{extra}. "
            + (f"{p.ps_tasks} parameter-server tasks hold them, split across the tasks with a variable_partitioner"
               if splits_tables(s, p.ps_tasks) else
               f"{p.ps_tasks} parameter-server task(s) hold them whole (too small to split across tasks)"
               if p.ps_tasks > 1 else "1 parameter-server task holds them")))
    return out


def _unpaid(ctx: Context, against: float) -> str:
    """HOSTS_DO_NOT_PAY's words for the faster of the multi-host rungs whose fastest count was
    passed over because its hosts do not pay (and is 10% above `against`); empty when none."""
    said = [(c.unpaid.examples_per_second, words) for c in (ctx.mwms, ctx.ps)
            if (words := ctx.hosts_unpaid(c, against))]
    return max(said)[1] if said else ""


def _unreachable(ctx: Context, c: Candidate) -> Finding:
    """TARGET_UNREACHABLE, with what a multi-host rung's fastest count would give when it was
    not taken because its hosts do not pay (HOSTS_DO_NOT_PAY): the rung passed over, or, when
    it is the verdict, its hosts beyond the count that pays."""
    p, unpaid = c.prediction, _unpaid(ctx, c.eps)
    return Finding(C.TARGET_UNREACHABLE,
        f"no rung reaches {u.rate(ctx.target)} on the hardware on offer; the best "
        f"{'that pays for its hosts ' if unpaid else ''}is "
        f"{c.verdict} on {u.plan(p.hosts, p.devices_per_host)} at {u.rate(p.examples_per_second)} "
        f"({u.percent(c.eps / ctx.target)} of the target)" + (f"; {unpaid}" if unpaid else ""))


def _input_warning(ctx: Context) -> list[Finding]:
    if not ctx.input_bound:
        return []
    w = ctx.s.workload
    return [Finding(C.INPUT_BOUND,
        f"the device waits {u.percent(ctx.wait_fraction)} of each step for input; the target is met "
        f"anyway, but fixing the pipeline would give about "
        f"{u.rate(w.per_device_batch / (w.step_seconds - w.input_wait_seconds))} per device")]


def _warnings(ctx: Context, c: Candidate) -> list[Finding]:
    p, out = c.prediction, _input_warning(ctx)
    if c.verdict == "parameter_server":
        out.append(Finding(C.STALE_GRADIENTS,
            f"with {p.hosts} asynchronous workers an update is computed against parameters about "
            f"{p.staleness_steps} steps old: convergence differs from synchronous training (retune the "
            "learning rate), runs are not reproducible step for step, and there is no global step to debug from"))
        if p.dispatch_bound:
            out.append(Finding(C.COORDINATOR_BOUND,
                f"one coordinator dispatches every worker's steps ({ctx.dispatch_words()}), so "
                f"the fleet completes at most {1 / ctx.dispatch_seconds():,.0f} steps a second whatever its size; "
                + (ctx.looped_words() if ctx.s.workload.steps_per_execution == 1 else
                   "a larger per-worker batch raises that cap (a larger steps_per_execution, little: "
                   "part of the cost stays with every step)")))
    else:
        out.extend(_sync_warnings(ctx, p))
    if c.verdict in ("multi_worker_mirrored", "parameter_server"):
        eff = ctx.host_scaling(p)
        if eff is not None and eff < 0.8:
            out.append(Finding(C.SCALING_BELOW_LINEAR,
                f"{p.hosts} hosts reach {u.percent(eff)} of {p.hosts}x one host: {beyond_compute(p)}"))
    return out


# LOAD_IMBALANCE is said when the wait for the slowest batch is at least this share of the step
LOAD_IMBALANCE_SHARE = 0.10


def _tables_replicated(ctx: Context, p) -> Finding:
    """Embedding tables dominate, and a synchronous plan replicates them anyway: what that
    costs each replica and each step, and why parameter servers (whose case this is) are not
    the plan."""
    w = ctx.s.workload
    tables = w.embedding_params * memory.BYTES_PER_DTYPE[w.param_dtype]
    if ctx.tpu:
        why = "on TPUs shard them with tf.tpu.experimental.embedding (TPUEmbedding) rather than replicating them"
    elif ctx.reproducible:
        why = "the goal asks for reproducible runs, which rules out their asynchronous updates"
    elif p.examples_per_second >= ctx.target:
        why = "this synchronous plan meets the target, so they are not needed"
    else:
        why = "they are predicted no faster here (see rejected)"
    cost = (f"; all-gathering the rows each step looks up costs {u.seconds(p.sparse_exchange_seconds)} of its "
            f"{u.seconds(p.step_seconds)}" if p.sparse_exchange_seconds > 0 else "")
    return Finding(C.EMBEDDING_DOMINATED,
        f"{w.embedding_params / w.params:.0%} of the parameters are embedding tables ({u.gib(tables)}), the case "
        f"parameter servers are made for; {why}. Each of the {p.devices} replicas holds the whole tables with "
        f"their optimizer slots{cost}")


def _sync_warnings(ctx: Context, p) -> list[Finding]:
    s, out = ctx.s, []
    if p.hosts > 1 and ctx.tpu:
        out.append(Finding(C.GANG_SCHEDULING,
            f"the slice's {p.hosts} hosts are rented, started and lost together (TPUClusterResolver with the "
            "slice's name finds them all: no TF_CONFIG) and every step runs at the pace of the slowest host's "
            "input; a lost host stops the slice until restart"))
    elif p.hosts > 1:
        out.append(Finding(C.GANG_SCHEDULING,
            f"all {p.hosts} workers must be up at once (TF_CONFIG on each, gang-scheduled) and every "
            "step runs at the pace of the slowest; a dead worker stalls the collective until restart"))
    if ctx.preemptible:
        interval = p.checkpoint_interval_seconds
        out.append(Finding(C.PREEMPTIBLE_WORKERS,
            f"hosts are preempted {s.preemptions_per_host_second * 3600:g} times an hour each; a "
            f"synchronous job restarts from its last checkpoint and keeps {u.percent(p.goodput)} of its "
            f"time" + (f"; checkpoint every {u.seconds(interval)} (Young's interval) with "
                       f"tf.keras.callbacks.BackupAndRestore, each save {u.seconds(p.checkpoint_seconds)} "
                       + ("(as measured: fleet.checkpoint_seconds)" if s.fleet.checkpoint_seconds is not None
                          else "(the state at an assumed 1 GB/s; measure it with rung profile)")
                       if interval else "")))
    if p.hosts > 1 and p.straggler_seconds >= 0.1 * p.step_seconds:
        out.append(Finding(C.STRAGGLERS,
            f"with step-time CV {s.workload.step_time_cv:.2g} each step waits {u.seconds(p.straggler_seconds)} "
            f"for the slowest of {p.hosts} workers"))
    if ctx.embedding_dominated and p.devices > 1:
        out.append(_tables_replicated(ctx, p))
    if p.devices > 1 and p.load_imbalance_seconds >= LOAD_IMBALANCE_SHARE * p.step_seconds:
        out.append(Finding(C.LOAD_IMBALANCE,
            f"batches of different shapes take different times (CV {s.workload.batch_time_cv:.2g} batch against "
            f"batch on one device), and a synchronous step lasts as long as its slowest replica's batch: "
            f"{p.devices} replicas wait {u.seconds(p.load_imbalance_seconds)} a step for it "
            f"({u.percent(p.load_imbalance_seconds / p.step_seconds)} of the step); batches of like lengths "
            "(tf.data's bucket_by_sequence_length, or padding to a few fixed shapes) cost each replica the same"))
    return out
