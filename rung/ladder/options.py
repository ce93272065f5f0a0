"""Capacity planning: the ladder walked on the team's hardware and on every offer, and
one decision across them (contract: scenario v1 additions, "Offers").

Each option is the scenario with its hardware block replaced; an offer with another
device and no measured `step_seconds` gets the compute part of the step scaled by the
two devices' effective throughput (`estimate.scale_compute`), its memory traffic (the
optimizer's update, the copy under mirrored variables) by their memory bandwidths
(`estimate.scale_memory`), with its input wait kept, and the decision then carries
STEP_TIME_ESTIMATED (from `confidence.assess`).
Choice: options over budget are out; `prefer: simplicity` takes the lowest rung that
meets the target on any option (ties: cost per example, then fewer hosts); `prefer:
cost` the cheapest per hour that meets it (ties: the lower rung). When nothing meets
the target, the option with the most throughput.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rung import units as u
from rung.ladder import codes as C
from rung.errors import InputError
from rung.ladder.decision import Decision, Finding
from rung.model import estimate
from rung.spec.scenario import Scenario

TEAM = "hardware"
RUNGS = ("single_device", "mirrored", "tpu", "multi_worker_mirrored", "parameter_server", "fix_input_pipeline",
         "needs_sharding")
# A cheaper option on a higher rung is worth naming when it saves at least this share per hour.
CHEAPER_BY = 0.25


@dataclass
class Option:
    name: str
    scenario: Scenario
    usd_per_host_hour: Optional[float]
    estimated: bool
    decision: Optional[Decision] = None

    @property
    def usd_per_hour(self) -> Optional[float]:
        """The plan's hosts an hour: its accelerator hosts, and under parameter servers its
        ps tasks' and coordinator's CPU hosts when their price is given."""
        d = self.decision
        if self.usd_per_host_hour is None or d is None or not d.hosts:
            return None
        return d.hosts * self.usd_per_host_hour + self.ps_hosts_usd_per_hour

    @property
    def ps_hosts_usd_per_hour(self) -> float:
        """A parameter-server plan's ps tasks and coordinator, one CPU host each, at their
        price (0 for other plans, or when it is not given)."""
        d, cpu = self.decision, self.scenario.hardware.usd_per_ps_host_hour
        if d is None or d.verdict != "parameter_server" or cpu is None:
            return 0.0
        return (d.ps_tasks + 1) * cpu

    @property
    def ps_hosts_unpriced(self) -> bool:
        """A parameter-server plan priced by its workers alone (no CPU host price given)."""
        d = self.decision
        return (d is not None and d.verdict == "parameter_server" and self.usd_per_host_hour is not None
                and self.scenario.hardware.usd_per_ps_host_hour is None)

    @property
    def examples_per_second(self) -> Optional[float]:
        p = self.decision.prediction if self.decision else None
        return p.examples_per_second if p is not None and self.decision.verdict != "needs_sharding" else None

    @property
    def usd_per_million_examples(self) -> Optional[float]:
        cost, eps = self.usd_per_hour, self.examples_per_second
        if cost is None or not eps:
            return None
        return cost / (eps * 3600.0) * 1e6

    @property
    def meets(self) -> bool:
        return bool(self.decision and self.decision.meets_goal)

    @property
    def rung(self) -> float:
        """Where the option's plan stands on the ladder, for `prefer: simplicity`. A TPU plan
        for a workload with dynamic shapes costs a static-shape port first ("budget porting
        time, not just cluster time"): it ranks after a multi-worker plan that needs none,
        before asynchronous parameter servers."""
        v = self.decision.verdict
        if v == "tpu" and self.scenario.workload.dynamic_shapes:
            return RUNGS.index("multi_worker_mirrored") + 0.5
        return float(RUNGS.index(v))

    def to_json(self) -> dict:
        d = self.decision
        return {"name": self.name, "verdict": d.verdict, "hosts": d.hosts, "devices": d.devices,
                "meets_goal": d.meets_goal, "examples_per_second": self.examples_per_second,
                "usd_per_hour": self.usd_per_hour, "usd_per_million_examples": self.usd_per_million_examples,
                "step_seconds_estimated": self.estimated, "device": self.scenario.hardware.device}


def ladder_scenario(s: Scenario, d) -> Scenario:
    """The scenario decision `d`'s ladder was walked on: the chosen offer's when one was
    chosen (with the team's proposal), else `s` itself."""
    if d.option == TEAM:
        return s
    chosen = next(o.scenario for o in option_scenarios(s) if o.name == d.option)
    return chosen.model_copy(update={"proposal": s.proposal})


def option_scenarios(s: Scenario) -> list[Option]:
    """The team's hardware, then each offer, as scenarios of their own."""
    out = [Option(TEAM, s.model_copy(update={"offers": []}), s.hardware.usd_per_host_hour, False)]
    for i, o in enumerate(s.offers):
        hw = s.hardware.model_validate({k: v for k, v in o.model_dump().items()
                                        if k not in ("name", "step_seconds")})
        w = s.workload
        estimated = False
        if o.step_seconds is not None:
            w = w.model_copy(update={"step_seconds": o.step_seconds, "input_wait_seconds": min(
                w.input_wait_seconds, 0.999 * o.step_seconds), "step_seconds_ci95": None,
                "input_wait_seconds_ci95": None, "step_seconds_source": "measured"})
        elif o.device != s.hardware.device:
            w = _scaled_workload(s, o.device)
            if w is None:
                raise InputError(s.name or "<scenario>", f"offers.{i}.step_seconds",
                                 f"required: rung cannot scale the step measured on {s.hardware.device} to "
                                 f"{o.device} (the catalog has no throughput for one of them); give the step "
                                 "measured on that device")
            estimated = True
        opt = s.model_copy(update={"hardware": hw, "workload": w, "offers": [], "proposal": None})
        out.append(Option(o.name, opt, o.usd_per_host_hour, estimated))
    return out


def _scaled_workload(s: Scenario, device_name: str):
    from rung.spec import catalog

    w = s.workload
    to = catalog.lookup(device_name)
    compute = w.step_seconds - w.input_wait_seconds
    if to is None or s.hardware.device == "custom":
        return None
    # the optimizer's update is memory traffic: it moves by the devices' memory bandwidths, the
    # rest of the compute by their arithmetic; so does the table copied under mirrored variables
    update = min(w.optimizer_update_seconds, compute)
    scaled = estimate.scale_compute(compute - update, s.device, to, w.param_dtype, w.mixed_precision)
    moved = estimate.scale_memory(update, s.device, to)
    extra = estimate.scale_memory(w.strategy_step_extra_seconds, s.device, to)
    if scaled is None or moved is None or extra is None:
        return None
    scaled += moved
    step = scaled + w.input_wait_seconds
    lo, hi = estimate.interval(scaled)
    return w.model_copy(update={"step_seconds": step, "step_seconds_ci95": [lo + w.input_wait_seconds,
                                                                             hi + w.input_wait_seconds],
                                "input_wait_seconds_ci95": None, "step_seconds_source": "estimated",
                                "optimizer_update_seconds": moved, "strategy_step_extra_seconds": extra})


def choose(options: list[Option], s: Scenario) -> tuple[Option, list[Finding], list[Finding]]:
    """The chosen option, and the reasons and warnings its choice adds."""
    budget = s.goal.max_usd_per_hour
    within = [o for o in options if budget is None or o.usd_per_hour is None or o.usd_per_hour <= budget]
    over = [o for o in options if o not in within]
    pool = within or options
    reasons: list[Finding] = []
    warnings: list[Finding] = []
    # nothing within the budget: the cheapest that meets the target, whatever the preference
    chosen = _pick(pool, s.goal.prefer if within else "cost")
    unconstrained = _pick(options, s.goal.prefer)
    for o in over if within else []:
        if o.meets:
            f = Finding(C.OVER_BUDGET,
                f"{o.name} would meet the target ({o.decision.verdict} on {o.decision.hosts} host(s), "
                f"{u.rate(o.examples_per_second)}) but costs ${o.usd_per_hour:,.2f} an hour, over the budget of "
                f"${budget:,.2f}")
            (reasons if o is unconstrained and o is not chosen else warnings).append(f)
    if not within:
        reasons.append(Finding(C.OVER_BUDGET,
            f"every option costs more than the budget of ${budget:,.2f} an hour: {chosen.name} is the cheapest "
            + ("that meets the target" if chosen.meets else "of them") + f" (${chosen.usd_per_hour or 0:,.2f})"))
    team = options[0]
    if chosen is not team and chosen.meets:
        d = chosen.decision
        if d.verdict == "tpu" and team.decision.verdict != "tpu":
            now = (f"{team.decision.verdict} on {team.decision.hosts} host(s)" if team.meets else
                   f"at most {u.rate(team.examples_per_second or 0)}")
            reasons.insert(0, Finding(C.TPU_OFFERED,
                f"{chosen.name}'s TPUs meet the target at {u.rate(chosen.examples_per_second)} with TPUStrategy, "
                f"where the team's {team.scenario.device.name} hardware {'needs' if team.meets else 'reaches'} "
                f"{now}: a move to TPUs is a port (XLA compiles the whole step; TPUClusterResolver in place of "
                "TF_CONFIG)" + ("; its step is estimated from FLOPs, so measure one there before renting"
                                if chosen.estimated else "")))
        elif team.decision.verdict == "needs_sharding":
            reasons.insert(0, Finding(C.BIGGER_DEVICE,
                f"the model does not fit one {team.scenario.device.name}, but a replica fits one "
                f"{chosen.scenario.device.name} of {chosen.name}: {d.verdict} there meets the target at "
                f"{u.rate(chosen.examples_per_second)}"))
        elif d.hosts == 1 and (not team.meets or (team.decision.hosts or 0) > 1):
            now = (f"needs {team.decision.hosts} hosts" if team.meets else
                   f"reaches only {u.rate(team.examples_per_second or 0)}")
            reasons.insert(0, Finding(C.BIGGER_HOST,
                f"one {chosen.name} host ({d.devices} x {chosen.scenario.device.name}) meets the target at "
                f"{u.rate(chosen.examples_per_second)} with {d.verdict}, where the team's hardware {now}: "
                "rent the bigger box before a fleet"))
    if s.goal.prefer == "simplicity" and chosen.meets and chosen.usd_per_hour:
        cheaper = [o for o in pool if o.meets and o.rung > chosen.rung and o.usd_per_hour is not None
                   and o.usd_per_hour <= (1 - CHEAPER_BY) * chosen.usd_per_hour]
        if cheaper:
            o = min(cheaper, key=lambda x: x.usd_per_hour)
            port = (" after a static-shape port (the workload has dynamic shapes: DYNAMIC_SHAPES)"
                    if o.decision.verdict == "tpu" and o.scenario.workload.dynamic_shapes else "")
            warnings.append(Finding(C.CHEAPER_OPTION,
                f"{o.name} meets the target with {o.decision.verdict} on {o.decision.hosts} host(s){port} for "
                f"${o.usd_per_hour:,.2f} an hour, {1 - o.usd_per_hour / chosen.usd_per_hour:.0%} less than "
                f"{chosen.name}'s ${chosen.usd_per_hour:,.2f}; the simpler plan was kept (prefer: cost "
                "would take it)"))
    if s.goal.prefer == "cost" and chosen.meets and chosen.usd_per_million_examples:
        # the cheapest an hour runs longer when it is slower: for a fixed amount of training
        # what it costs in all is its price per example
        cheaper = [o for o in pool if o.meets and o is not chosen and o.usd_per_million_examples is not None
                   and o.usd_per_million_examples <= (1 - CHEAPER_BY) * chosen.usd_per_million_examples]
        if cheaper:
            o = min(cheaper, key=lambda x: x.usd_per_million_examples)
            warnings.append(Finding(C.CHEAPER_PER_EXAMPLE,
                f"{o.name} meets the target with {o.decision.verdict} on {o.decision.hosts} host(s) at "
                f"${o.usd_per_million_examples:,.2f} per million examples"
                + (" (its step estimated, not measured: STEP_TIME_ESTIMATED)"
                   if o.scenario.workload.step_seconds_source == "estimated" else "") + ", "
                f"{1 - o.usd_per_million_examples / chosen.usd_per_million_examples:.0%} less than {chosen.name}'s "
                f"${chosen.usd_per_million_examples:,.2f}: for a fixed amount of training it costs less in all, "
                f"though ${o.usd_per_hour - chosen.usd_per_hour:,.2f} more an hour; prefer: cost takes the "
                "cheapest an hour (the contract's rule), which suits a job that runs for a fixed time"))
    unpriced = ps_hosts_not_priced(options)
    if unpriced is not None:
        warnings.append(unpriced)
    return chosen, reasons, warnings


def ps_hosts_not_priced(options: list[Option]) -> Optional[Finding]:
    """PS_HOSTS_NOT_PRICED: parameter-server plans priced by their worker hosts alone."""
    unpriced = [o for o in options if o.ps_hosts_unpriced]
    if not unpriced:
        return None
    plans = "; ".join(f"{o.name}: {o.decision.hosts} worker host(s), {o.decision.ps_tasks} ps task(s) and a "
                      "coordinator" for o in unpriced)
    return Finding(C.PS_HOSTS_NOT_PRICED,
        f"parameter-server plans are priced by their worker hosts alone ({plans}): the ps tasks and the "
        "coordinator run on CPU hosts whose price is not given (hardware.usd_per_ps_host_hour, or the offer's), "
        "so their $ an hour and $ per example are low")


def over_budget(team: Option, links) -> Optional[Finding]:
    """OVER_BUDGET without offers: the team's own plan costs more an hour than
    `goal.max_usd_per_hour`. Says what the budget buys instead: as many hosts as it pays
    for, under the same strategy, and their predicted rate (or that one host is beyond it)."""
    from rung.model import throughput

    s, d, budget = team.scenario, team.decision, team.scenario.goal.max_usd_per_hour
    cost, price = team.usd_per_hour, team.usd_per_host_hour
    if budget is None or cost is None or cost <= budget:
        return None
    cpu = s.hardware.usd_per_ps_host_hour if d.verdict == "parameter_server" else None
    ps_cost = team.ps_hosts_usd_per_hour
    head = (f"the plan ({d.verdict} on {d.hosts} host(s) at ${price:,.2f} each"
            + (f", and {d.ps_tasks + 1} CPU hosts for its ps tasks and coordinator at ${cpu:,.2f}" if cpu else "")
            + f") costs ${cost:,.2f} an hour, over the budget of ${budget:,.2f}")
    hosts = int(max(budget - ps_cost, 0.0) // price) if price else 0
    if hosts < 1:
        return Finding(C.OVER_BUDGET, f"{head}; the budget does not pay for one host")
    dev = s.hardware.devices_per_host
    if d.verdict == "parameter_server":
        p = throughput.predict_ps(s, hosts, dev, links)
    elif hosts == 1:
        p = throughput.predict_sync(s, "mirrored" if dev > 1 else "single_device", 1, dev, links)
    else:
        p = throughput.predict_sync(s, d.verdict, hosts, dev, links)
    return Finding(C.OVER_BUDGET,
        f"{head}; it pays for {hosts} host(s), predicted at {u.rate(p.examples_per_second)}"
        f"{u.against_target(p.examples_per_second, s.goal.target_examples_per_second)}")


def _pick(pool: list[Option], prefer: str) -> Option:
    meeting = [o for o in pool if o.meets]
    if not meeting:
        return max(pool, key=lambda o: (o.examples_per_second or 0.0, -o.rung))
    inf = float("inf")
    if prefer == "cost":
        return min(meeting, key=lambda o: (o.usd_per_hour if o.usd_per_hour is not None else inf, o.rung))
    return min(meeting, key=lambda o: (o.rung, o.usd_per_million_examples if o.usd_per_million_examples is not None
                                       else inf, o.decision.hosts or 0))


def advise_options(s: Scenario, decide_one) -> tuple[Decision, Scenario]:
    """Decide every option with `decide_one(scenario) -> Decision`, then choose one.
    Returns the chosen option's decision (with `option`, `options` and the choice's
    reasons) and its scenario. A proposal is reviewed on the team's hardware."""
    options = option_scenarios(s)
    for o in options:
        o.decision = decide_one(o.scenario)
    chosen, reasons, warnings = choose(options, s)
    d = chosen.decision
    d.option = chosen.name
    d.options = [o.to_json() for o in options]
    d.reasons[0:0] = reasons
    d.warnings[0:0] = warnings
    team = options[0].decision
    if chosen is not options[0] and team.review is not None:
        d.review, d.proposal_prediction = team.review, team.proposal_prediction
    return d, chosen.scenario


def sweep_options(s: Scenario, hosts, devices_per_host, inter_host_gbps, per_device_batch) -> dict[str, dict]:
    """`model.sweep.sweep_sync` over every option (the team's hardware and each offer):
    per option, the grid of examples/s with its dollars per hour (hosts x the option's
    price; NaN without one) and per million examples."""
    import numpy as np

    from rung.model.sweep import sweep_sync

    out = {}
    for o in option_scenarios(s):
        g = sweep_sync(o.scenario, hosts, devices_per_host, inter_host_gbps, per_device_batch)
        h = np.asarray(list(hosts), dtype=float)[:, None, None, None]
        price = np.nan if o.usd_per_host_hour is None else o.usd_per_host_hour
        usd = np.broadcast_to(h * price, g["examples_per_second"].shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_million = np.where(g["examples_per_second"] > 0, usd / (g["examples_per_second"] * 3600) * 1e6, np.nan)
        out[o.name] = {**g, "usd_per_hour": usd, "usd_per_million_examples": per_million}
    return out
