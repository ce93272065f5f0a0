"""`rung advise`: scenario in, decision out (terminal report or decision v1 JSON)."""

from __future__ import annotations

import json
import sys

from rung.cli import _hardware, _plan
from rung.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("advise", help="decide which tf.distribute strategy to use",
                       description="Walk the ladder for a scenario v1 and print the decision. "
                                   "With no scenario, runs on a bundled example.")
    p.add_argument("workload", nargs="?", metavar="WORKLOAD.py",
                   help="profile this workload on this machine first, then advise (needs --hardware or "
                        "--device, and --target)")
    src = p.add_argument_group("input (one of)")
    src.add_argument("--scenario", metavar="FILE", help="scenario v1 file (YAML or JSON)")
    src.add_argument("--example", metavar="NAME", help="a bundled example scenario (see --list-examples)")
    src.add_argument("--list-examples", action="store_true", help="list the bundled example scenarios")
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print decision v1 JSON on stdout, nothing else")
    out.add_argument("--html", metavar="FILE.html",
                     help="also write the report (decision, ladder, plots) as one self-contained HTML file")
    out.add_argument("--calibration", metavar="FILE",
                     help="link constants measured by `rung bench --calibrate` (replace the defaults)")
    _hardware.add_arguments(p)
    _plan.add_arguments(p)
    _plan.add_measurement_arguments(p)
    p.set_defaults(run=run)


def _resolve(args) -> str:
    from rung.examples import DEFAULT_SCENARIO, pick, scenario_examples

    if args.scenario and args.example:
        raise InputError("--example", None, "give either --scenario or --example, not both")
    if args.scenario:
        return args.scenario
    return str(pick(scenario_examples(), args.example or DEFAULT_SCENARIO))


def run(args) -> int:
    if args.list_examples:
        from rung.examples import DEFAULT_SCENARIO, scenario_examples
        from rung.spec import load_scenario

        for name, path in scenario_examples().items():
            mark = " (default)" if name == DEFAULT_SCENARIO else ""
            print(f"{name:<26} {load_scenario(path).name or ''}{mark}")
        return 0
    from rung.ladder import advise
    from rung.model.memory import usable_device_bytes
    from rung.spec import load_scenario

    links = _plan.links(args.calibration)

    if args.html:
        from rung.cli._common import check_writable

        check_writable(args.html, "--html")  # before any measurement
    profile = None
    if args.workload:
        if args.scenario or args.example:
            raise InputError("WORKLOAD.py", None, "give a workload file or --scenario/--example, not both")
        scenario, decision, path, profile = _from_workload(args, links)
    else:
        if _hardware.given(args) or _plan.given(args):
            raise InputError("--hardware", None, "hardware and target flags go with WORKLOAD.py; "
                                                 "a scenario file has its own")
        path = _resolve(args)
        scenario = load_scenario(path)
        decision = advise(scenario, links)
    if args.html:
        from rung.cli.report import write
        from rung.report.html import ReportInputs

        write(args.html, ReportInputs(scenario=scenario, decision=decision, links=links, profile=profile,
                                      command="rung advise"), "--html", quiet=args.json)
    if args.json:
        json.dump(decision.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rung.report.terminal import render

    if not args.scenario and not args.workload:
        print(f"(bundled example: {path}; use --scenario FILE for your own)")
    render(scenario, decision, usable_device_bytes(scenario.device_memory_bytes))
    if args.html:
        print(f"report written to {args.html}")
    return 0


def _from_workload(args, links, profile=None):
    """Profile WORKLOAD.py on this machine (unless `profile`, a saved one, is given), then
    advise on the hardware and goal given."""
    from rung.cli.profile import measure
    from rung.ladder import advise

    _hardware.blocks(args)  # checked before the (slow) measurement
    _plan.check_flags(args)
    if profile is None:
        profile = measure(args, args.workload)
    scenario, caveats = _plan.plan_scenario(profile, args, where=args.hardware or "--device")
    decision = advise(scenario, links)
    decision.warnings[0:0] = caveats
    return scenario, decision, args.workload, profile
