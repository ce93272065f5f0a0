"""What `rung advise` and `rung report` share: where the decision's scenario comes from
(WORKLOAD.py profiled here, a scenario file, or a bundled example) and the decision."""

from __future__ import annotations

from rung.cli import _hardware, _plan
from rung.errors import InputError


def add_sources(parser, workload_help: str, example_help: str, title: str):
    """WORKLOAD.py, --scenario and --example; returns the group for more inputs."""
    parser.add_argument("workload", nargs="?", metavar="WORKLOAD.py", help=workload_help)
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

    _hardware.blocks(args)  # checked before the (slow) measurement
    _plan.check_flags(args)
    if profile is None:
        profile = measure(args, args.workload)
    scenario, caveats = _plan.plan_scenario(profile, args, where=args.hardware or "--device")
    decision = advise(scenario, links)
    decision.warnings[0:0] = caveats
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
