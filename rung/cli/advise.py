"""`rung advise`: scenario in, decision out (terminal report or decision v1 JSON)."""

from __future__ import annotations

import json
import sys

from rung.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("advise", help="decide which tf.distribute strategy to use",
                       description="Walk the ladder for a scenario v1 and print the decision. "
                                   "With no scenario, runs on a bundled example.")
    src = p.add_argument_group("input (one of)")
    src.add_argument("--scenario", metavar="FILE", help="scenario v1 file (YAML or JSON)")
    src.add_argument("--example", metavar="NAME", help="a bundled example scenario (see --list-examples)")
    src.add_argument("--list-examples", action="store_true", help="list the bundled example scenarios")
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print decision v1 JSON on stdout, nothing else")
    p.set_defaults(run=run)


def _resolve(args) -> str:
    from rung.examples import DEFAULT_SCENARIO, scenario_examples

    if args.scenario and args.example:
        raise InputError("--example", None, "give either --scenario or --example, not both")
    if args.scenario:
        return args.scenario
    examples = scenario_examples()
    name = args.example or DEFAULT_SCENARIO
    if name not in examples:
        raise InputError("--example", None, f"unknown example {name!r}; expected one of: {', '.join(examples)}")
    return str(examples[name])


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

    path = _resolve(args)
    scenario = load_scenario(path)
    decision = advise(scenario)
    if args.json:
        json.dump(decision.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rung.report.terminal import render

    if not args.scenario:
        print(f"(bundled example: {path}; use --scenario FILE for your own)")
    render(scenario, decision, usable_device_bytes(scenario.device_memory_bytes))
    return 0
