"""How sure a decision is: the measured inputs it rests on, their noise, and the margin
by which the verdict holds.

The margin is found by deciding again with the measured step (compute and input wait
together) scaled slower and faster: the smallest change that moves the verdict (or
whether the goal is met) is the margin, and the decision it moves to is named. When
that change lies inside the step time's 95% interval, or moving the input wait across
its own interval changes the verdict, the decision is a close call (CLOSE_CALL): two
measurements of the same model could honestly land on either side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rung import units as u
from rung.ladder import codes as C
from rung.ladder.decision import Decision, Finding
from rung.model import comm, estimate, inputs
from rung.spec.scenario import Scenario

# The least noise a step time carries, measured or declared (assumption, stated): whole
# profiles of one model minutes apart differ by 5-15% on a shared machine (docs/results.md),
# more than the interval of one run's own samples says.
MIN_NOISE = 0.05
# The margin search looks this far either way: a verdict that survives the step being
# 4x slower or faster is not in doubt.
SEARCH_FACTOR = 4.0
# Bisection steps: 2^-12 of the search range, far finer than any measurement.
SEARCH_STEPS = 12


@dataclass(frozen=True)
class Outcome:
    verdict: str
    meets_goal: bool


@dataclass(frozen=True)
class Flip:
    factor: float        # step time x factor changes the outcome
    outcome: Outcome


def _scaled(s: Scenario, step_factor: float = 1.0, wait: Optional[float] = None) -> Scenario:
    w = s.workload
    new_wait = w.input_wait_seconds * step_factor if wait is None else wait
    step = w.step_seconds * step_factor
    if wait is not None:  # the wait moves inside the measured step: compute stays
        step = w.step_seconds - w.input_wait_seconds + wait
    changes = {"step_seconds": step, "input_wait_seconds": min(new_wait, 0.999 * step),
               "step_seconds_ci95": None, "input_wait_seconds_ci95": None}
    return s.model_copy(update={"workload": w.model_copy(update=changes), "proposal": None})


def _outcome(s: Scenario, links: comm.Links) -> Outcome:
    from rung.ladder.walk import decide

    d = decide(s, links)
    return Outcome(d.verdict, d.meets_goal)


def _search(s: Scenario, base: Outcome, far: float, links: comm.Links) -> Optional[Flip]:
    """The factor closest to 1 (towards `far`) at which the outcome changes, or None."""
    if _outcome(_scaled(s, far), links) == base:
        return None
    near = 1.0
    for _ in range(SEARCH_STEPS):
        mid = (near * far) ** 0.5  # geometric: slower and faster are symmetric in log
        if _outcome(_scaled(s, mid), links) == base:
            near = mid
        else:
            far = mid
    return Flip(far, _outcome(_scaled(s, far), links))


def noise_band(s: Scenario) -> tuple[float, float, str]:
    """The step time's 95% interval as factors of it, and where the step time comes from."""
    w = s.workload
    if w.step_seconds_ci95 is not None:
        lo, hi = (x / w.step_seconds for x in w.step_seconds_ci95)
    elif w.step_seconds_source == "estimated":
        lo, hi = (x / w.step_seconds for x in estimate.interval(w.step_seconds))
    else:
        lo, hi = 1.0, 1.0
    return min(lo, 1.0 - MIN_NOISE), max(hi, 1.0 + MIN_NOISE), w.step_seconds_source


def _describe(o: Outcome, base: Outcome) -> str:
    if o.verdict == base.verdict:
        return f"{o.verdict} {'meeting' if o.meets_goal else 'short of'} the goal"
    return o.verdict + ("" if o.meets_goal else " (short of the goal)")


def _band_words(source: str, interval: bool, device: str, lo: float, hi: float) -> str:
    """CLOSE_CALL's band, and what separates the two outcomes, by where the step comes
    from: measuring again here cannot narrow an estimate for another device, and a step
    given without an interval carries the least noise (MIN_NOISE)."""
    band = f"{1 - lo:.0%} faster to {hi - 1:.0%} slower"
    if source == "estimated":
        return (f"the estimate's 95% interval ({band}): both are candidates; a step measured on {device} "
                "separates them (--target-step-seconds, rung profile there, or an offer's step_seconds)")
    if interval:
        return (f"the measurement's noise ({band}): both are candidates; measure again with more --steps on a "
                "quiet machine to separate them")
    return (f"the least noise any step time carries ({band}): both are candidates; a step measured with "
            "rung profile (more --steps, on a quiet machine) separates them")


def assess(s: Scenario, d: Decision, links: comm.Links = comm.DEFAULT_LINKS) -> None:
    """Fill d.inputs and d.confidence; warn CLOSE_CALL and STEP_TIME_ESTIMATED."""
    w = s.workload
    base = Outcome(d.verdict, d.meets_goal)
    lo, hi, source = noise_band(s)
    slower = _search(s, base, SEARCH_FACTOR, links)
    faster = _search(s, base, 1.0 / SEARCH_FACTOR, links)
    close = []
    if slower is not None and slower.factor <= hi:
        close.append(("slower", slower))
    if faster is not None and faster.factor >= lo:
        close.append(("faster", faster))
    wait_flip = None
    if w.input_wait_seconds_ci95 is not None:
        bound = inputs.is_input_bound(w.step_seconds, w.input_wait_seconds)
        for wait in w.input_wait_seconds_ci95:
            corner = _scaled(s, wait=wait)
            crosses = inputs.is_input_bound(corner.workload.step_seconds, corner.workload.input_wait_seconds) != bound
            o = _outcome(corner, links) if crosses else base
            if o != base:
                wait_flip = (wait, o)
    pipe_flip = None
    if w.pipeline_seconds_per_batch is not None and w.pipeline_seconds_per_batch_ci95 is not None:
        for pipe in w.pipeline_seconds_per_batch_ci95:
            o = _outcome(s.model_copy(update={"workload": w.model_copy(update={"pipeline_seconds_per_batch": pipe}),
                                              "proposal": None}), links)
            if o != base:
                pipe_flip = (pipe, o)
    sizes = plan_sizes(s, d, lo, hi, links)
    d.inputs = {"workload": w.model_dump(exclude_none=True)}
    d.confidence = {
        "step_seconds": {"value": w.step_seconds, "ci95": w.step_seconds_ci95, "source": source},
        "input_wait_seconds": {"value": w.input_wait_seconds, "ci95": w.input_wait_seconds_ci95},
        "step_time_cv": w.step_time_cv,
        "noise_band": [lo, hi],
        "slower": _flip_json(slower),
        "faster": _flip_json(faster),
        "close_call": bool(close or wait_flip or pipe_flip),
    }
    if sizes:
        d.confidence["plan_in_noise_band"] = sizes
    findings = []
    if source == "estimated":
        findings.append(Finding(C.STEP_TIME_ESTIMATED,
            f"the step time ({u.seconds(w.step_seconds)}) is an estimate for {s.device.name}, not a measurement: "
            f"its 95% interval is {u.seconds(w.step_seconds * lo)}-{u.seconds(w.step_seconds * hi)}; measure "
            "one step on that device (--target-step-seconds, rung profile there, or an offer's step_seconds) "
            "before you rent a fleet"))
    for direction, flip in close:
        findings.append(Finding(C.CLOSE_CALL,
            f"a step {abs(flip.factor - 1):.0%} {direction} would make it {_describe(flip.outcome, base)}, inside "
            f"{_band_words(source, w.step_seconds_ci95 is not None, s.device.name, lo, hi)}"))
    if wait_flip is not None:
        wait, o = wait_flip
        findings.append(Finding(C.CLOSE_CALL,
            f"an input wait of {u.seconds(wait)} (inside its 95% interval) would make it {_describe(o, base)}: "
            "whether the device waits on its pipeline is not settled by this measurement"))
    if pipe_flip is not None:
        pipe, o = pipe_flip
        findings.append(Finding(C.CLOSE_CALL,
            f"an input pipeline of {u.seconds(pipe)} a batch (inside its 95% interval) would make it "
            f"{_describe(o, base)}: whether one host's pipeline keeps its devices fed is not settled by this "
            "measurement"))
    d.warnings[0:0] = findings


def plan_sizes(s: Scenario, d: Decision, lo: float, hi: float, links: comm.Links) -> Optional[dict]:
    """The plan's size at the two ends of the step's noise band, when the verdict stays and
    the size does not: the fleet the measurement can promise is the one at the slow end."""
    from rung.ladder.walk import decide

    ends = {}
    for end, factor in (("fast", lo), ("slow", hi)):
        e = decide(_scaled(s, factor), links)
        if e.verdict == d.verdict and (e.hosts, e.devices) != (d.hosts, d.devices):
            ends[end] = {"factor": factor, "hosts": e.hosts, "devices": e.devices, "meets_goal": e.meets_goal}
    return ends or None


def _flip_json(f: Optional[Flip]) -> Optional[dict]:
    if f is None:
        return None
    return {"factor": f.factor, "verdict": f.outcome.verdict, "meets_goal": f.outcome.meets_goal}
