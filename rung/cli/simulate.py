"""`rung simulate`: the scenario's fleet simulated step by step (rung.model.simulate),
beside the closed forms of rung's model for the same configuration."""

from __future__ import annotations

import json
import sys

from rung.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("simulate", help="simulate a fleet step by step against the model's closed forms",
                       description="Simulate synchronous (all-reduce, gang restarts) and asynchronous (parameter "
                                   "servers, workers leaving and rejoining) training of a scenario's workload on "
                                   "N workers, beside the closed forms rung decides with.")
    p.add_argument("scenario_file", nargs="?", metavar="SCENARIO",
                   help="scenario v1 file (YAML or JSON), as --scenario (as `rung advise SCENARIO` takes one)")
    p.add_argument("--scenario", metavar="FILE", help="scenario v1 file (YAML or JSON)")
    p.add_argument("--bench", metavar="BENCH.json",
                   help="instead of a scenario: reproduce this bench's synchronous runs from their own inputs "
                        "(measured step and spread, gradient bytes, link, shared cores, straggler) and set the "
                        "simulated throughput beside the measured one")
    p.add_argument("--calibration", metavar="FILE",
                   help="a `rung bench --calibrate` file to simulate with: the link and parameter-server constants "
                        "`rung advise --calibration` decides with (with --bench: else the bench's own, if any)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="workers (hosts); default: the hosts of the scenario's proposal, else its max_hosts")
    p.add_argument("--steps", type=int, default=1000, metavar="S", help="steps per worker (default 1000)")
    p.add_argument("--seed", type=int, default=0, metavar="K", help="random seed (default 0)")
    p.add_argument("--step-distribution", metavar="KIND",
                   help="normal | lognormal (mean step, the scenario's step_time_cv) | measured:BENCH.json "
                        "(a lognormal with the spread rung bench measured on one device); default: the "
                        "scenario's workload.step_time_distribution (normal unless it says otherwise)")
    p.add_argument("--json", action="store_true", help="print rung/simulation/v1 JSON on stdout, nothing else")
    p.set_defaults(run=run)


def _distribution(text: str) -> tuple[str, float | None]:
    if text in ("normal", "lognormal"):
        return text, None
    if text.startswith("measured:"):
        path = text.split(":", 1)[1]
        from rung.spec.records import load_bench

        bench = load_bench(path)
        one = next((r for r in bench.runs if r.strategy == "single_device" and r.step_time_cv), None)
        if one is None:
            raise InputError(path, "runs", "no single_device run with a measured step-time spread")
        return "lognormal", float(one.step_time_cv)
    raise InputError("--step-distribution", None,
                     f"expected normal, lognormal or measured:BENCH.json, received {text!r}")


def run(args) -> int:
    if args.scenario_file:
        # `rung simulate my-scenario.yaml`, as `rung advise my-scenario.yaml` (it said
        # "unrecognized arguments")
        if args.scenario and args.scenario != args.scenario_file:
            raise InputError(args.scenario_file, None, "give the scenario once: as SCENARIO or as --scenario")
        args.scenario = args.scenario_file
    if bool(args.scenario) == bool(args.bench):
        raise InputError("--scenario", None, "give one of --scenario FILE or --bench BENCH.json")
    if args.bench:
        return _reproduce(args)
    from rung.cli import _plan
    from rung.model.simulate import simulate
    from rung.spec import load_scenario

    s = load_scenario(args.scenario)
    # the default is the team's own plan when the scenario proposes one (the plan it asks
    # rung to review), else the scenario's max_hosts: a fleet too large to simulate names it
    defaulted = args.workers is None
    proposed = defaulted and s.proposal is not None
    workers = args.workers if not defaulted else s.proposal.hosts if proposed else s.hardware.max_hosts
    source = "proposal.hosts" if proposed else "hardware.max_hosts"
    named = f"--workers (default: {args.scenario}'s {source})" if defaulted else "--workers"
    for flag, value, top, hint in ((named, workers, 100_000, "; give --workers" if defaulted else ""),
                                   ("--steps", args.steps, 100_000, "")):
        if not 1 <= value <= top:
            raise InputError(flag, None, f"expected 1 to {top:,}, received {value}{hint}")
    if workers * args.steps > 50_000_000:
        raise InputError(named, None, f"{workers} x {args.steps} steps is over 50 million worker-steps; "
                                      "give fewer steps")
    kind, cv = _distribution(args.step_distribution or s.workload.step_time_distribution)
    links = _plan.links(args.calibration)  # what rung advise --calibration decides with
    from rung.cli._common import Progress

    with Progress(quiet=args.json) as progress:
        out = simulate(s, workers, args.steps, args.seed, kind, cv, links=links, on_phase=progress.phase,
                       on_step=progress.step)
    if proposed:
        out.setdefault("notes", []).append(
            f"{workers} worker(s): the scenario's proposal ({s.proposal.strategy} on {s.proposal.hosts} host(s)); "
            "--workers sets another")
    if s.offers:  # the decision may have chosen one; what ran here is the team's hardware
        h = s.hardware
        out.setdefault("notes", []).append(
            f"simulated on the scenario's hardware ({h.devices_per_host} x {h.device} a host); its offers "
            f"({', '.join(o.name for o in s.offers)}) are not simulated")
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    _render(out)
    return 0


def _reproduce(args) -> int:
    from rung.bench.reproduce import reproduce
    from rung.spec.records import load_bench

    if args.workers is not None or args.step_distribution:
        raise InputError("--workers" if args.workers is not None else "--step-distribution", None,
                         "with --bench the runs' own workers and measured spread are used")
    bench = load_bench(args.bench)
    calibration = None
    if args.calibration:
        from rung.spec.calibration import load_calibration

        calibration = load_calibration(args.calibration)
    out = reproduce(bench, args.bench, calibration, seed=args.seed)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    c = Console()
    c.print(f"[bold]rung simulate --bench[/bold] · {out['workload']} · lognormal steps, measured cv "
            f"{out['step_time_cv']:.3g} · all-reduce at {out['allreduce_share_of_goodput']:.2f} of the link's "
            f"goodput · {out['steps_simulated']:,} steps simulated per run")
    if not out["runs"]:
        c.print("no synchronous multi-replica run in the bench file (mirrored or multi_worker_mirrored)")
        return 0
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("run", "measured ex/s", "closed form", "simulated", "simulated / measured"):
        t.add_column(col, justify="left" if col == "run" else "right", no_wrap=col == "run")
    for r in out["runs"]:
        t.add_row(r["run"], f"{r['measured_examples_per_second']:,.0f}", f"{r['closed_form_examples_per_second']:,.0f}",
                  f"{r['simulated_examples_per_second']:,.0f}", f"{r['simulated_over_measured']:.2f}")
    c.print(t)
    for r in out["runs"]:
        k = r.get("kill")
        if k:
            c.print(f"[dim]{r['run']}: killed after step {k['steps_before_kill']}, checkpoints every "
                    f"{k['checkpoint_every_steps']} steps: resumed from step {k['resumed_from_step']} (the model: "
                    f"{k['predicted_resumed_from_step']})"
                    + (f"; each checkpoint {k['checkpoint_seconds'] * 1e3:.0f} ms (from its step times)"
                       if k.get("checkpoint_seconds") else "")
                    + f"; restart = the bench's detection "
                    f"{k['detection_seconds']:.2f} s (this run) + a fresh start to the first step "
                    f"{k['startup_seconds']:.2f} s (the mean of the {len(k['fresh_starts_seconds'])} fresh start(s) "
                    f"of this configuration the bench saw, this run's first included; its own restart took "
                    f"{k['measured_restart_first_step_seconds']:.2f} s)"
                    + (f"; on the unkilled run's measured step ({k['from_unkilled_run']['step_seconds'] * 1e3:.1f} "
                       f"ms) the same accounting gives {k['from_unkilled_run']['examples_per_second']:,.0f} ex/s "
                       f"({k['from_unkilled_run']['over_measured']:.2f} of measured)"
                       if k.get("from_unkilled_run") else "") + "[/dim]")
    return 0


def _render(out: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    c = Console()
    d = out["step_distribution"]
    c.print(f"[bold]rung simulate[/bold] · {out['workers']:,} workers x {out['steps']:,} steps · "
            f"{d['kind']} step times, cv {d['cv']:.3g} · seed {out['seed']} · {out['wall_seconds']:.2f} s")
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("", "simulated", "closed form"):
        t.add_column(col, justify="left" if not col else "right")

    def cell(v, fmt):
        return "-" if v is None else fmt.format(v)

    rows = (("sync", "examples_per_second", "{:,.0f} ex/s"), ("sync", "step_seconds_mean", "{:.4f} s"),
            ("sync", "straggler_seconds_mean", "{:.4f} s"), ("sync", "goodput", "{:.3f}"),
            ("async", "examples_per_second", "{:,.0f} ex/s"), ("async", "staleness_mean", "{:,.1f} steps"),
            ("async", "staleness_p95", "{:,.0f} steps"))
    for block, key, fmt in rows:
        t.add_row(f"{block} {key.replace('_', ' ')}", cell(out[block][key], fmt),
                  cell(out["closed_form"][block][key], fmt))
    c.print(t)
    for note in out.get("notes") or []:
        c.print(f"[yellow]note:[/yellow] {note}")
