"""`rung report`: one self-contained HTML file with the decision and the plots behind it."""

from __future__ import annotations

from rung.cli import _decide, _hardware, _plan
from rung.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("report", help="write the decision and its plots as one self-contained HTML file",
                       description="Decide as `rung advise` does, then write one HTML file (no network needed to "
                                   "view it) with the decision, the ladder, scaling curves, where the step time "
                                   "goes, memory, goodput under preemption and the options; add a profile, a "
                                   "bench and a simulation file to show them beside.")
    src = _decide.add_sources(p, "profile this workload on this machine (or read --profile), then decide (needs "
                                 "--hardware or --device, and --target)",
                              "a bundled example scenario (see rung advise --list-examples)", "input")
    src.add_argument("--profile", metavar="PROFILE.json",
                     help="a saved `rung profile --json`: shown in the report; with WORKLOAD.py, used instead of "
                          "measuring again")
    src.add_argument("--bench", metavar="BENCH.json", help="a saved `rung bench --json`: measured beside predicted")
    src.add_argument("--simulation", metavar="SIM.json", help="a saved `rung simulate --json`")
    src.add_argument("--calibration", metavar="FILE", help="link and parameter-server constants from `rung bench --calibrate`")
    p.add_argument("--out", metavar="FILE.html", required=True, help="where to write the report")
    _hardware.add_arguments(p)
    _plan.add_arguments(p)
    _plan.add_measurement_arguments(p, "measurement (with WORKLOAD.py and no --profile)")
    p.set_defaults(run=run)


def write(path: str, inputs, flag: str, quiet: bool = False) -> None:
    """Render the report and write it whole (or not at all), with progress on a terminal."""
    from rung.cli._common import Progress, write_atomically
    from rung.report.html import render

    with Progress(quiet) as progress:
        text = render(inputs, on_phase=progress.phase)
    write_atomically(path, text, flag)


def run(args) -> int:
    from rung.cli._common import check_writable
    from rung.report.html import ReportInputs
    from rung.spec.records import load_bench, load_profile, load_simulation

    check_writable(args.out, "--out")
    given = [x for x in (args.scenario, args.example, args.workload) if x]
    if len(given) > 1:
        raise InputError("--scenario", None, "give one of --scenario, --example or WORKLOAD.py")
    profile = load_profile(args.profile) if args.profile else None
    bench = load_bench(args.bench) if args.bench else None
    simulation = load_simulation(args.simulation).to_json() if args.simulation else None
    links = _plan.links(args.calibration)
    scenario = decision = None
    if args.workload and profile is not None:
        from pathlib import Path

        if Path(profile.workload).name != Path(args.workload).name:
            raise InputError(args.profile, "workload", f"the profile is of {profile.workload}, not {args.workload}")
    if given:
        scenario, decision, _, profile = _decide.decide(args, links, profile)
    elif not (bench or simulation or profile):
        raise InputError("--scenario", None, "nothing to report: give --scenario FILE, --example NAME or "
                                             "WORKLOAD.py (with --hardware and --target), or a --bench, "
                                             "--simulation or --profile file")
    inputs = ReportInputs(scenario=scenario, decision=decision, links=links, profile=profile, bench=bench,
                          simulation=simulation, command="rung report")
    write(args.out, inputs, "--out")
    print(f"report written to {args.out}")
    return 0
