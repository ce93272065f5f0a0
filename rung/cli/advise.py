"""`rung advise`: scenario in, decision out (terminal report or decision v1 JSON)."""

from __future__ import annotations

import json
import sys

from rung.cli import _decide, _hardware, _plan


def register(sub) -> None:
    p = sub.add_parser("advise", help="decide which tf.distribute strategy to use",
                       description="Walk the ladder for a scenario v1 and print the decision. "
                                   "With no scenario, runs on a bundled example.")
    src = _decide.add_sources(p, "profile this workload on this machine first, then advise (needs --hardware "
                                 "or --device, and --target)",
                              "a bundled example scenario (see --list-examples)", "input (one of)")
    src.add_argument("--list-examples", action="store_true", help="list the bundled example scenarios")
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print decision v1 JSON on stdout, nothing else")
    out.add_argument("--html", metavar="FILE.html",
                     help="also write the report (decision, ladder, plots) as one self-contained HTML file")
    out.add_argument("--scenario-out", metavar="FILE",
                     help="also write the scenario v1 the decision was made on (with WORKLOAD.py: the measured "
                          "workload as planned, on the Keras of its step), for rung init --scenario and for "
                          "deciding again without measuring")
    out.add_argument("--calibration", metavar="FILE",
                     help="link and parameter-server constants measured by `rung bench --calibrate` "
                          "(replace the defaults)")
    _hardware.add_arguments(p)
    _plan.add_arguments(p)
    _plan.add_measurement_arguments(p)
    p.set_defaults(run=run)


def run(args) -> int:
    if args.list_examples:
        from rung.examples import DEFAULT_SCENARIO, scenario_examples
        from rung.spec import load_scenario

        for name, path in scenario_examples().items():
            mark = " (default)" if name == DEFAULT_SCENARIO else ""
            print(f"{name:<26} {load_scenario(path).name or ''}{mark}")
        return 0
    from rung.model.memory import usable_device_bytes

    links = _plan.links(args.calibration)

    from rung.cli._common import check_writable, write_atomically

    for flag, out in (("--html", args.html), ("--scenario-out", args.scenario_out)):
        if out:
            check_writable(out, flag)  # before any measurement
    scenario, decision, path, profile = _decide.decide(args, links)
    if args.scenario_out:
        write_atomically(args.scenario_out, _decide.scenario_text(scenario, decision, path, profile),
                         "--scenario-out")
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
    if args.scenario_out:
        print(f"scenario written to {args.scenario_out}")
    return 0
