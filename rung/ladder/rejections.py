"""Why every rung not chosen was passed over, each with its codes and numbers."""

from __future__ import annotations

from rung import units as u
from rung.ladder import codes as C
from rung.ladder.context import MIN_GAIN_TO_CLIMB, Candidate, Context
from rung.ladder.decision import Decision, Finding, Rejection
from rung.ladder.review import beyond_compute
from rung.model import memory, throughput

# A loss (communication, straggler wait, restarts) this large a share of the
# multi-host step is named as a cause of multi-host training not paying.
CAUSE_FRACTION = 0.10
RUNG_ORDER = ("single_device", "mirrored", "multi_worker_mirrored", "parameter_server")


def multi_host_losses(ctx: Context) -> list[Finding]:
    """What costs the multi-host synchronous rung its scaling: network, stragglers, restarts."""
    p = ctx.mwms.unpaid or ctx.mwms.prediction  # the fastest count, when more hosts did not pay
    if p is None:
        return []
    s = ctx.s
    exchange = p.inter_host_seconds + p.sparse_exchange_seconds
    grad_bytes = throughput.exchanged_gradient_bytes(s)
    rows = throughput.sparse_bytes_per_example(s) * s.workload.per_device_batch
    what = f"{u.gib(grad_bytes)} of gradients" + (
        f" and all-gathering {u.gib(rows)} of embedding rows per replica" if rows else "")
    losses = [
        (exchange / p.step_seconds, Finding(C.INTERCONNECT_BOUND,
            f"exchanging {what} across {p.hosts} hosts over "
            f"{u.gbps(s.inter_host_bytes_per_second)} takes {u.seconds(exchange)} per step against "
            f"{u.seconds(p.compute_seconds)} of compute: {u.plan(p.hosts, p.devices_per_host)} give "
            f"{u.rate(p.examples_per_second)}, one host {u.rate(_one_host_eps(ctx))}")),
        (p.straggler_seconds / p.step_seconds, Finding(C.STRAGGLERS,
            f"each synchronous step across {p.hosts} hosts waits {u.seconds(p.straggler_seconds)} for "
            f"the slowest (step-time CV {s.workload.step_time_cv:.2g})")),
        (1.0 - p.goodput, Finding(C.PREEMPTIBLE_WORKERS,
            f"with {p.hosts} preemptible hosts the synchronous job restarts so often that it keeps "
            f"{u.percent(p.goodput)} of its time")),
        (p.mirrored_variables_seconds / p.step_seconds, Finding(C.STRATEGY_STEP_SLOWER,
            f"under mirrored variables every replica's step takes {u.seconds(p.mirrored_variables_seconds)} more "
            f"than on one device without a strategy (rung profile timed both), of a {u.seconds(p.step_seconds)} "
            f"step across {p.hosts} hosts. {mirrored_extra_fix(s.workload)}")),
        (p.load_imbalance_seconds / p.step_seconds, Finding(C.LOAD_IMBALANCE,
            f"each synchronous step across {p.hosts} hosts waits {u.seconds(p.load_imbalance_seconds)} for the "
            f"replica whose batch takes longest (batch-time CV {s.workload.batch_time_cv:.2g})")),
        # synchronising the replicas has no code of its own (LARGER_BATCH's warning says what
        # amortises it): it is weighed, so a smaller loss is not named as the cause in its place
        (p.sync_seconds / p.step_seconds, None),
    ]
    named = [f for share, f in losses if share >= CAUSE_FRACTION and f is not None]
    if not named:
        largest = max(losses, key=lambda x: x[0])[1]
        named = [largest] if largest is not None else []
    return named


def mirrored_extra_fix(w) -> str:
    """What makes a step slower under mirrored variables, and the fix found, by the Keras the
    step was measured on (STRATEGY_STEP_SLOWER)."""
    if w.step_keras == "tf_keras":
        return ("On tf-keras the optimizers copy an embedding table that they update sparsely once a step under "
                "mirrored variables (an Adagrad table of 1M x 64 rows took 0.3 ms a step without a strategy and 22 ms "
                "under one, the time of one copy of it, on rung's machine); tf.keras.optimizers.legacy's (Adagrad, "
                "SGD, Adam) update the rows alone there, without the copy")
    return "The model's step reads or writes more under the strategy's mirrored variables than without them"


def _one_host_eps(ctx: Context) -> float:
    return max(ctx.single.eps, ctx.mirrored.eps if ctx.mirrored.allowed else 0.0)


def rejections(ctx: Context, d: Decision) -> list[Rejection]:
    out = []
    for v in C.VERDICTS:
        if v != d.verdict:
            codes, message, pred = _why(ctx, d, v)
            out.append(Rejection(v, tuple(codes), message, pred))
    return out


def _why(ctx: Context, d: Decision, v: str):
    s = ctx.s
    if v == "fix_input_pipeline":
        if not ctx.input_bound:
            waits = (f"the device waits {u.percent(ctx.wait_fraction)} of each step for input, under 20%"
                     if s.workload.input_wait_seconds > 0 else "no input wait was measured")
            p = d.prediction
            hosts_wait = (f", though not the plan's {p.devices_per_host} devices a host (INPUT_BOUND)"
                          if p is not None and p.input_capped else "")
            return [C.NOT_INPUT_BOUND], f"{waits}: the pipeline keeps one device fed{hosts_wait}", None
        if not ctx.fits and d.verdict == "needs_sharding":
            return [C.DOES_NOT_FIT], "memory comes first: the model does not fit one device", None
        return [C.ONE_DEVICE_SUFFICIENT], (f"input-bound, but one device meets the target anyway "
                                           f"({u.rate(ctx.single.eps)})"), None
    if v == "needs_sharding":
        if ctx.fits:
            return [C.FITS_ONE_DEVICE], (f"a replica needs {u.gib(ctx.replica.total_bytes)} of "
                                         f"{u.gib(ctx.usable_bytes)} usable on one {s.device.name} device"), None
        return [C.EMBEDDING_DOMINATED], ("the excess over device memory is embedding tables, which "
                                         "parameter servers hold in host memory"), None
    if v == "tpu":
        if not ctx.tpu:
            return [C.NOT_TPU_HARDWARE], f"the hardware on offer is {s.device.name}, not TPUs", None
        return _blocked_by_first_questions(ctx, d, ctx.tpu_rung)
    cand = {"single_device": ctx.single, "mirrored": ctx.mirrored,
            "multi_worker_mirrored": ctx.mwms, "parameter_server": ctx.ps}[v]
    if ctx.tpu:
        return [C.TPU_HARDWARE], f"the hardware is {s.device.name}: TPUs run under TPUStrategy", None
    if d.verdict in ("fix_input_pipeline", "needs_sharding"):
        return _blocked_by_first_questions(ctx, d, cand)
    if v != "parameter_server" and not ctx.fits:
        return [C.DOES_NOT_FIT], (f"a full replica needs {u.gib(ctx.replica.total_bytes)}, over "
                                  f"{u.gib(ctx.usable_bytes)} usable"), cand.prediction
    return {"single_device": _single, "mirrored": _mirrored,
            "multi_worker_mirrored": _mwms, "parameter_server": _ps}[v](ctx, d, cand)


def _blocked_by_first_questions(ctx: Context, d: Decision, cand: Candidate):
    p = cand.prediction
    if d.verdict == "fix_input_pipeline" and cand is ctx.single:
        return [C.INPUT_BOUND], (f"{u.rate(cand.eps)} today, waiting {u.percent(ctx.wait_fraction)} of each "
                                 "step for input, under the target"), p
    if d.verdict == "fix_input_pipeline":
        return [C.INPUT_BOUND], (f"input-bound: predicted {u.rate(cand.eps)} on "
                                 f"{u.plan(p.hosts, p.devices_per_host) if p else '-'} against "
                                 f"{u.rate(ctx.single.eps)} on one device; fix the pipeline first"), p
    if cand is ctx.ps and not ctx.embedding_dominated:
        return [C.DOES_NOT_FIT], (f"parameter servers could hold the optimizer state, but a dense model is not "
                                  f"a parameter-server case: every worker still computes with all "
                                  f"{u.gib(ctx.replica.weights_bytes)} of weights, pulled and pushed back as "
                                  "gradients every step; a model whose state does not fit one device is "
                                  "sharded"), p
    return [C.DOES_NOT_FIT], (f"replicates a model that needs {u.gib(ctx.replica.total_bytes)} per "
                              f"device, over {u.gib(ctx.usable_bytes)} usable"), p


def _below(ctx: Context, c: Candidate) -> str:
    p = c.prediction
    return f"{u.plan(p.hosts, p.devices_per_host)} give {u.rate(c.eps)}, under the target of {u.rate(ctx.target)}"


def _chosen_rank(d: Decision) -> int:
    return RUNG_ORDER.index(d.verdict) if d.verdict in RUNG_ORDER else -1


def _single(ctx: Context, d: Decision, c: Candidate):
    return [C.BELOW_TARGET], _below(ctx, c), c.prediction


def _one_device_kept(d: Decision, c: Candidate):
    """Why a synchronous rung above one device was not climbed when one device is the
    verdict: it meets the target (ONE_DEVICE_SUFFICIENT), or, short of the target, this
    rung is predicted no faster by MIN_GAIN_TO_CLIMB (NOT_FASTER). None otherwise."""
    if d.verdict != "single_device":
        return None
    if d.meets_goal:
        return [C.ONE_DEVICE_SUFFICIENT], "one device already meets the target", c.prediction
    p = c.prediction
    if p is not None and p.examples_per_second is not None and c.eps < MIN_GAIN_TO_CLIMB * d_eps(d):
        return [C.NOT_FASTER], (f"{u.plan(p.hosts, p.devices_per_host)} give {u.rate(c.eps)}, not "
                                f"{MIN_GAIN_TO_CLIMB - 1:.0%} above one device's {u.rate(d_eps(d))}: "
                                f"{beyond_compute(p)}"), p
    return None


def _mirrored(ctx: Context, d: Decision, c: Candidate):
    if not c.allowed:
        return [C.ONE_DEVICE_PER_HOST], "each host has one device: there is nothing to mirror across", c.prediction
    kept = _one_device_kept(d, c)
    if kept is not None:
        return kept
    codes = [C.NEEDS_MULTIPLE_HOSTS, C.BELOW_TARGET] if not ctx.meets(c) else [C.SYNCHRONOUS_SUFFICIENT]
    return codes, _below(ctx, c) if not ctx.meets(c) else "meets the target", c.prediction


def _mwms(ctx: Context, d: Decision, c: Candidate):
    if not c.allowed:
        return [C.ONE_HOST_ON_OFFER], "max_hosts is 1: no second host is on offer", None
    unpaid = ctx.hosts_unpaid(c, d_eps(d))
    kept = _one_device_kept(d, c)
    if kept is not None and not unpaid:
        return kept
    if d.verdict == "mirrored" and d.meets_goal:
        return [C.ONE_HOST_SUFFICIENT], ("one host already meets the target; several hosts add a "
                                         "network, gang scheduling and stragglers"), c.prediction
    losses = multi_host_losses(ctx)
    detail = "; ".join(f.message for f in losses) or (beyond_compute(c.prediction) if c.prediction else "")
    if d.verdict == "parameter_server":
        # beside asynchronous workers the synchronous rung is shown at its fastest count,
        # where the triggers were read, whether or not its hosts pay; passed over for its
        # hosts, it was 10% above one host and was not climbed to (HOSTS_DO_NOT_PAY)
        unpaid = ctx.hosts_unpaid(c, ctx.one_host_eps)
        c = Candidate(c.verdict, c.unpaid or c.prediction, c.allowed)
        triggers = list(ctx.async_triggers)
        if not ctx.fits:
            return [C.DOES_NOT_FIT] + triggers, (f"a full replica needs {u.gib(ctx.replica.total_bytes)}, "
                                                 f"over {u.gib(ctx.usable_bytes)} usable"), c.prediction
        if ctx.meets(c):
            return triggers, (f"meets the target but loses {ctx.sync_waste(c.prediction):.0%} of its time "
                              f"to restarts, stragglers and embedding all-gathers: {detail}"), c.prediction
        if unpaid:
            return triggers + [C.HOSTS_DO_NOT_PAY], f"{unpaid}: {detail}", c.prediction
        return triggers + [C.BELOW_TARGET], f"{_below(ctx, c)}: {detail}", c.prediction
    slower = c.eps < MIN_GAIN_TO_CLIMB * d_eps(d)
    codes = [f.code for f in losses] + [C.HOSTS_DO_NOT_PAY if unpaid else C.NOT_FASTER if slower else C.BELOW_TARGET]
    return codes, f"{unpaid + ': ' if unpaid else ''}{detail} (target {u.rate(ctx.target)})", (
        c.unpaid if unpaid else c.prediction)


def d_eps(d: Decision) -> float:
    p = d.prediction
    return p.examples_per_second if p is not None and p.examples_per_second else 0.0


def _tables_not_forcing(ctx: Context) -> str:
    """Why a model's embedding tables, when it has some, are no reason for parameter servers:
    small (parameter servers pay for tables of EMBEDDING_LARGE_BYTES and more), a minority of
    the parameters, or tables whose gradients come dense, which workers would push whole."""
    from rung.model import ps

    w = ctx.s.workload
    size = memory.BYTES_PER_DTYPE[w.param_dtype]
    if w.dense_embedding_params >= max(w.embedding_params, 1.0):
        return (f" (its {w.dense_embedding_params:,.0f} parameters of embedding tables get dense gradients, "
                "DENSE_EMBEDDING_GRADIENTS: workers would push them whole to parameter servers too)")
    if not w.embedding_params:
        return ""
    tables = w.embedding_params * size
    if tables < ps.EMBEDDING_LARGE_BYTES:
        return (f" (its embedding tables hold {u.gib(tables)}, under the {u.gib(ps.EMBEDDING_LARGE_BYTES)} from "
                "which holding them on parameter servers pays; every replica keeps a copy cheaply)")
    return (f" (its embedding tables are {w.embedding_params / w.params:.0%} of the parameters, under the "
            f"{ps.EMBEDDING_DOMINANCE_FRACTION:.0%} at which they dominate)")


def _ps(ctx: Context, d: Decision, c: Candidate):
    stale = C.STALE_GRADIENTS
    if ctx.reproducible:
        return [C.REPRODUCIBILITY_REQUIRED, stale], ("the goal asks for reproducible runs; asynchronous "
                                                     "updates are computed against stale parameters"), c.prediction
    if not ctx.async_triggers:
        return [C.SYNCHRONOUS_PREFERRED, stale], (f"no preemption, stragglers or embedding tables force asynchrony"
                                                  f"{_tables_not_forcing(ctx)}; stale gradients would be a cost for "
                                                  "nothing"), c.prediction
    if d.meets_goal:
        return [C.SYNCHRONOUS_SUFFICIENT, stale], (f"{d.verdict} meets the target synchronously; "
                                                   "asynchrony would add stale gradients"), c.prediction
    unpaid = ctx.hosts_unpaid(c, d_eps(d))
    if unpaid:  # faster than the plan, on hosts that do not pay for their number
        return [C.HOSTS_DO_NOT_PAY, stale], unpaid, c.unpaid
    codes, why = [C.NOT_FASTER, stale], (f"predicted {u.rate(c.eps)}, not enough above {d.verdict}'s "
                                         f"{u.rate(d_eps(d))} to pay for stale gradients")
    p = c.prediction
    if p is not None and p.dispatch_bound:  # what holds it back is its one coordinator
        codes.insert(1, C.COORDINATOR_BOUND)
        why += (f"; one coordinator dispatches every worker's steps ({ctx.dispatch_words()}), "
                f"at most {1 / ctx.dispatch_seconds():,.0f} worker steps a second of "
                f"{p.devices_per_host * ctx.s.workload.per_device_batch:,} examples whatever the fleet's size: "
                "a larger per-worker batch raises that cap"
                + (f"; {ctx.looped_words()}" if ctx.s.workload.steps_per_execution == 1 else ""))
    return codes, why, p
