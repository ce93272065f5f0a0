"""What `rung advise` and `rung report` share: where the decision's scenario comes from
(WORKLOAD.py profiled here, a scenario file, or a bundled example) and the decision."""

from __future__ import annotations

from pathlib import Path

from rung import units as u
from rung.cli import _hardware, _plan
from rung.errors import InputError


# A file given where WORKLOAD.py goes with one of these suffixes is a scenario (YAML or JSON).
SCENARIO_SUFFIXES = (".yaml", ".yml", ".json")


def add_sources(parser, workload_help: str, example_help: str, title: str):
    """WORKLOAD.py, --scenario and --example; returns the group for more inputs."""
    parser.add_argument("workload", nargs="?", metavar="WORKLOAD.py",
                        help=workload_help + "; a .yaml or .json file here is read as --scenario")
    src = parser.add_argument_group(title)
    src.add_argument("--scenario", metavar="FILE", help="scenario v1 file (YAML or JSON)")
    src.add_argument("--example", metavar="NAME", help=example_help)
    return src


def scenario_path(args) -> str:
    """--scenario, else the bundled example named (or the default one)."""
    from rung.examples import DEFAULT_SCENARIO, pick, scenario_examples

    if args.scenario and args.example:
        raise InputError("--example", None, "give either --scenario or --example, not both")
    if args.scenario:
        return args.scenario
    return str(pick(scenario_examples(), args.example or DEFAULT_SCENARIO))


def decide(args, links, profile=None):
    """(scenario, decision, where it came from, profile). With WORKLOAD.py: profiled on
    this machine (unless `profile`, a saved one, is given), then planned for the hardware
    and goal given; else the scenario file or bundled example, decided as it stands."""
    from rung.ladder import advise

    given = args.workload and Path(args.workload).suffix.lower() in SCENARIO_SUFFIXES
    if given and not (args.scenario or args.example):
        # `rung advise my-scenario.yaml`: a scenario given where a workload goes is taken as one
        args.scenario, args.workload = args.workload, None
    if not args.workload:
        if _hardware.given(args) or _plan.given(args):
            raise InputError("--hardware", None, "hardware and target flags go with WORKLOAD.py; "
                                                 "a scenario file has its own")
        from rung.spec import load_scenario

        path = scenario_path(args)
        scenario = load_scenario(path)
        return scenario, advise(scenario, links), path, profile
    if args.scenario or args.example:
        raise InputError("WORKLOAD.py", None, "give a workload file or --scenario/--example, not both")
    from rung.cli.profile import measure

    _hardware.checked_blocks(args, where=args.hardware or "--device")  # before the (slow) measurement
    _plan.check_flags(args)
    measured_here = profile is None
    if profile is None:
        profile = measure(args, args.workload)
    scenario, caveats = _plan.plan_scenario(profile, args, where=args.hardware or "--device")
    decision = advise(scenario, links)
    if measured_here and args.keras is None:
        scenario, decision, profile, caveats = _on_the_plans_keras(args, links, scenario, decision, profile, caveats)
        scenario, decision, profile, caveats = _where_fit_runs(args, links, scenario, decision, profile, caveats)
    decision.warnings[0:0] = caveats
    if decision.verdict == "fix_input_pipeline":
        decision.warnings.extend(_plan.pipeline_fixes(profile))
    missing = _hardware.defaulted(args)
    if missing and not decision.meets_goal:
        # the goal is missed on an offer the user may never have meant to make
        from rung.ladder import codes as C
        from rung.ladder.decision import Finding

        flags = " and ".join(f"--{k.replace('_', '-')}" for k in missing)
        decision.warnings.append(Finding(C.OFFER_NOT_GIVEN,
            f"the plan had {scenario.hardware.max_hosts} host(s) x {scenario.hardware.devices_per_host} device(s) "
            f"on offer because {flags} {'was' if len(missing) == 1 else 'were'} not given (nor in --hardware): "
            "give what you could use and rung plans over it"))
    return scenario, decision, args.workload, profile


def scenario_text(scenario, decision, source: str, profile=None) -> str:
    """The scenario a decision was made on, as YAML for `rung advise --scenario-out`: with a
    profile, the measured workload as planned (its step on the Keras the plan runs on, when
    advise measured it again there); else the scenario file or example as read."""
    how = (f"measured on {profile.device} ({profile.device_name}) on {scenario.workload.step_keras or 'Keras 3'} "
           f"and planned for {scenario.hardware.device}" if profile is not None else "as read")
    return _plan.scenario_yaml(scenario, [
        f"Written by `rung advise` from {source}, {how}.",
        f"Decided on it: {decision.verdict}"
        + (f" on {decision.hosts} host(s), {decision.devices} device(s)." if decision.hosts else "."),
        "Decide again without measuring: rung advise --scenario THIS_FILE",
        "Write the job for that plan: rung init WORKLOAD.py --scenario THIS_FILE"], [])


def _planned_again(other, args, links, decision):
    """The plan from the step measured again on tf-keras (`other`): its scenario, caveats and
    decision, and the words that name the first plan when this one differs."""
    from rung.ladder import advise

    scenario2, caveats2 = _plan.plan_scenario(other, args, where=args.hardware or "--device")
    decision2 = advise(scenario2, links)
    before = ("" if decision2.verdict == decision.verdict and decision2.hosts == decision.hosts
              else f" (with the Keras 3 step the plan was {decision.verdict} on {decision.hosts} host(s))")
    return scenario2, caveats2, decision2, before


def _where_fit_runs(args, links, scenario, decision, profile, caveats):
    """A plan on Keras 3 for a model whose fit fails there under every tf.distribute
    strategy (STRATEGY_FAILS: an unbuilt model, a compiled loss without labels), which
    rung's train.py needs even on one device (OneDeviceStrategy). tf-keras's fit builds
    the model in its first step, so the step is measured again there: when it runs, the
    plan is made from that step and runs on tf-keras (STEP_REMEASURED, with the rung init
    line that writes it); when it fails there too, the warning says so and the plan stays."""
    from rung.cli._common import Progress
    from rung.cli.profile import FailsOnKeras, measure_apart
    from rung.kerasfit import keras3_facts, runs_on_tf_keras
    from rung.ladder import codes as C
    from rung.ladder.decision import Finding

    w = scenario.workload
    at = next((i for i, f in enumerate(decision.warnings) if f.code == C.STRATEGY_FAILS), None)
    # (a file that imports Keras 3 itself cannot train on tf-keras: KERAS3_IMPORT says so)
    if at is None or not w.strategy_fails_on_one_device or w.step_keras == "tf_keras" or w.keras3_import or \
            runs_on_tf_keras(decision.verdict, step_keras=w.step_keras, **keras3_facts(w)):
        return scenario, decision, profile, caveats
    try:
        with Progress(quiet=bool(getattr(args, "json", False))) as progress:
            other = measure_apart(args, args.workload, "tf_keras", progress.phase)
    except RuntimeError as e:  # FailsOnKeras too: the workload fails on tf-keras as well
        why = str(e).removeprefix("rung: error: ")
        what = "fails too" if isinstance(e, FailsOnKeras) else "could not be measured"
        decision.warnings[at] = Finding(C.STRATEGY_FAILS, decision.warnings[at].message +
                                        f". On tf-keras, whose fit builds the model in its first step, it {what}: {why}")
        return scenario, decision, profile, caveats
    scenario2, caveats2, decision2, before = _planned_again(other, args, links, decision)
    if not runs_on_tf_keras(decision2.verdict, step_keras=scenario2.workload.step_keras, **keras3_facts(w)):
        return scenario, decision, profile, caveats
    decision2.warnings.append(Finding(C.STEP_REMEASURED,
        f"the model's fit fails under every tf.distribute strategy on Keras 3, which rung's train.py uses even on "
        f"one device ({w.strategy_failure}); tf-keras's fit builds it in its first step, and the step measured there "
        f"ran: {u.seconds(other.step_seconds)} a step, against {u.seconds(profile.step_seconds)} on Keras 3. The plan "
        f"runs {decision2.verdict} on tf-keras and rests on that step{before}: rung init {args.workload} --strategy "
        f"{decision2.verdict} --keras tf_keras (or --scenario with the scenario `rung advise --scenario-out` writes, "
        "whose workload.step_keras says tf_keras) writes a train.py that sets TF_USE_LEGACY_KERAS=1"))
    return scenario2, decision2, other, caveats2


def _on_the_plans_keras(args, links, scenario, decision, profile, caveats):
    """A step measured on Keras 3 for a plan that runs on tf-keras (STEP_ON_OTHER_KERAS):
    measured again on tf-keras, and the plan made from that step when it still runs there
    (STEP_REMEASURED). When the tf-keras step leads to a plan on Keras 3, the first plan
    stays and its warning says what the other step gives. `--keras` pins the measurement.
    A workload that fails on tf-keras (its model does not build there: a Keras 3 argument,
    say) cannot run the plan at all: STRATEGY_FAILS, first, in place of the step's warning.
    The same for a plan on tf-keras whose step was estimated for another device from a Keras 3
    profile (no STEP_ON_OTHER_KERAS: FLOPs are no Keras's): the model is profiled on tf-keras
    to see that it builds and trains there, and the plan is made from that profile (whose
    replica check, optimizer update and failures are tf-keras's, where the job runs)."""
    from rung.cli._common import Progress
    from rung.cli.profile import FailsOnKeras, measure_apart
    from rung.kerasfit import TF_KERAS_DEFINES, keras3_facts, runs_on_tf_keras
    from rung.ladder import codes as C
    from rung.ladder.decision import Finding

    w = scenario.workload
    at = next((i for i, f in enumerate(decision.warnings) if f.code == C.STEP_ON_OTHER_KERAS), None)
    # a step estimated for another device (or the team's own) is no Keras's, so the walk does not
    # warn of it; but the job still runs on tf-keras, where the model may not build or train
    estimated = at is None and w.step_keras == "keras3" and not w.keras3_import and decision.prediction is not None \
        and runs_on_tf_keras(decision.verdict, **keras3_facts(w))
    if at is None and not estimated:
        return scenario, decision, profile, caveats

    def add_to_warning(text: str) -> None:
        if at is None:
            decision.warnings.append(Finding(C.STEP_ON_OTHER_KERAS,
                f"the model was profiled on Keras 3, and rung init's train.py runs {decision.verdict} on tf-keras "
                f"(TF_USE_LEGACY_KERAS=1){text}"))
        else:
            decision.warnings[at] = Finding(C.STEP_ON_OTHER_KERAS, decision.warnings[at].message + text)

    first = u.seconds(profile.step_seconds)
    try:
        with Progress(quiet=bool(getattr(args, "json", False))) as progress:
            other = measure_apart(args, args.workload, "tf_keras", progress.phase)
    except FailsOnKeras as e:
        if at is not None:
            del decision.warnings[at]
        why = str(e).removeprefix("rung: error: ")
        decision.warnings.insert(0, Finding(C.STRATEGY_FAILS,
            f"rung init's train.py runs {decision.verdict} on tf-keras (TF_USE_LEGACY_KERAS=1: Keras 3's fit cannot "
            f"run it), and the workload fails there: {why}. Write the model so it builds and "
            f"trains on tf-keras too ({TF_KERAS_DEFINES}) before launching; the "
            "step the plan rests on is Keras 3's"))
        return scenario, decision, profile, caveats
    except RuntimeError as e:
        add_to_warning(f". Measuring it on tf-keras here failed: {e}")
        return scenario, decision, profile, caveats
    scenario2, caveats2, decision2, before = _planned_again(other, args, links, decision)
    second = u.seconds(other.step_seconds)
    if estimated:
        if not runs_on_tf_keras(decision2.verdict, **keras3_facts(w)):
            # the tf-keras profile's estimate leads to a plan on Keras 3 (a threshold between
            # the two): the first plan stands, and its model was seen to train on tf-keras
            return scenario, decision, profile, caveats
        on = scenario.hardware.device
        decision2.warnings.append(Finding(C.STEP_REMEASURED,
            f"{decision2.verdict} runs on tf-keras (rung init's train.py sets TF_USE_LEGACY_KERAS=1), so the model "
            f"was profiled there too, in a process of its own: its step ran there on one device ({second} on this "
            f"machine, against {first} on Keras 3), and the step for {on} is "
            f"{u.seconds(scenario2.workload.step_seconds)} from that profile, against "
            f"{u.seconds(w.step_seconds)} from Keras 3's. The plan rests on the tf-keras profile" + before))
        return scenario2, decision2, other, caveats2
    if runs_on_tf_keras(decision2.verdict, **keras3_facts(w)):
        decision2.warnings.append(Finding(C.STEP_REMEASURED,
            f"{decision2.verdict} runs on tf-keras (rung init's train.py sets TF_USE_LEGACY_KERAS=1), so the step was "
            f"measured there too: {second} a step, against {first} on Keras 3. The plan rests on the tf-keras step"
            + before))
        return scenario2, decision2, other, caveats2
    if other.step_seconds < profile.step_seconds and runs_on_tf_keras(
            decision2.verdict, step_keras=scenario2.workload.step_keras, **keras3_facts(w)):
        # the tf-keras step is the faster one, and with it the plan needs no strategy that
        # requires tf-keras: it runs on tf-keras anyway, where its step is that one
        decision2.warnings.append(Finding(C.STEP_REMEASURED,
            f"the step was measured on tf-keras too: {second} a step, against {first} on Keras 3 "
            f"({profile.step_seconds / other.step_seconds:.1f}x as long), so the plan runs {decision2.verdict} on "
            f"tf-keras and rests on the tf-keras step{before}: rung init {args.workload} --strategy "
            f"{decision2.verdict} --keras tf_keras (or --scenario with the scenario `rung advise --scenario-out` "
            "writes, whose workload.step_keras says tf_keras) writes a train.py that sets TF_USE_LEGACY_KERAS=1"))
        return scenario2, decision2, other, caveats2
    add_to_warning(f". Measured on tf-keras here: {second} a step; with it the ladder stops at {decision2.verdict} "
                   f"on {decision2.hosts} host(s), which rung's train.py runs on Keras 3, where the step is the "
                   "measured one: the plan above stands")
    return scenario, decision, profile, caveats
