"""`rung bench`: run the workload under each strategy for real, predictions beside."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from rung.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("bench", help="run each strategy for real here; set the model's prediction beside it",
                       description="Runs WORKLOAD.py under each strategy on this machine (logical CPU devices, "
                                   "local worker processes with TF_CONFIG, or test hosts with shaped links) and "
                                   "compares every measurement with the model's prediction.")
    p.add_argument("workload", metavar="WORKLOAD.py")
    p.add_argument("--batch", type=int, metavar="N", help="per-replica batch (default: the file's BATCH_SIZE, else 32)")
    p.add_argument("--runs", default="single_device,mirrored:2,multi_worker_mirrored:2,parameter_server:2",
                   help="comma-separated strategy[:replicas[:option]], also as the table names them (mwms:2, ps:2) "
                        "(default: %(default)s)")
    p.add_argument("--steps", type=int, default=20, metavar="N", help="steps timed per run (default 20)")
    p.add_argument("--warmup", type=int, default=3, metavar="N", help="warm-up steps discarded (default 3)")
    p.add_argument("--ps-tasks", type=int, default=1, metavar="N",
                   help="parameter-server tasks in parameter_server runs (default 1)")
    p.add_argument("--ps-costs", metavar="FILE",
                   help="reuse the parameter-server costs an earlier `rung bench --json` measured on this machine "
                        "(its ps_costs) instead of measuring them again (about 25 s per worker count); worker "
                        "counts the file lacks are measured")
    p.add_argument("--keras", choices=("keras3", "tf_keras"),
                   help="the Keras of the one-host runs (single_device, mirrored), as rung init --keras runs "
                        "train.py (default: Keras 3 unless the model needs tf-keras; multi-worker and parameter "
                        "servers run only on tf-keras)")
    e = p.add_argument_group("where the runs go")
    e.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local processes (default), or a Ray cluster: the same runs, placed by Ray")
    e.add_argument("--address", metavar="HOST:PORT", help="a running Ray cluster (default: a local Ray instance)")
    n = p.add_argument_group("test hosts (root)")
    n.add_argument("--hosts", type=int, metavar="H",
                   help="put each worker on its own network namespace (the PS tasks and coordinator on one more)")
    n.add_argument("--link-mbit", type=float, metavar="B", help="shape every test host's link to B Mbit/s (tbf)")
    f = p.add_argument_group("failures")
    f.add_argument("--straggler", metavar="K:F", help="slow worker K's process by factor F")
    f.add_argument("--kill", metavar="K@STEP",
                   help="kill worker K when the run reaches STEP (each multi-worker mirrored configuration also "
                        "runs once without the kill; the killed run is timed whole)")
    c = p.add_argument_group("calibration and output")
    c.add_argument("--calibrate", action="store_true", help="fit the link constants on the multi-worker runs (runs at two or more worker "
                        "counts or link rates also fit the test bed's CPU cost); with a parameter_server run, the "
                        "coordinator's costs measured here go in too")
    c.add_argument("--calibration-out", metavar="FILE", default="rung-calibration.json",
                   help="where --calibrate stores them (default: %(default)s); use with rung advise --calibration")
    c.add_argument("--calibration-merge", action="store_true",
                   help="fit on the points already in --calibration-out too (calibrate across link rates)")
    c.add_argument("--deadline", type=float, default=300.0, metavar="S", help="seconds a run may take (default 300)")
    c.add_argument("--json", action="store_true", help="print rung/bench/v1 JSON on stdout")
    c.add_argument("--html", metavar="FILE.html",
                   help="also write the runs, measured beside predicted, as one self-contained HTML report")
    p.set_defaults(run=run)


def _pair(text: str, sep: str, flag: str, kinds) -> tuple:
    a, _, b = text.partition(sep)
    try:
        return kinds[0](a), kinds[1](b)
    except ValueError:
        raise InputError(flag, None, f"expected K{sep}{'F' if sep == ':' else 'STEP'}, received {text!r}") from None


# test hosts a bench makes (network namespaces): the most workers --runs takes (16), and
# one more for the parameter-server tasks and the coordinator
MAX_TEST_HOSTS = 17


def run(args) -> int:
    from rung.bench.bench import bench
    from rung.bench.plan import parse_runs

    runs = parse_runs(args.runs)
    # before minutes of runs: a 0 was taken as "not given" (--batch 0 ran at the file's batch,
    # --hosts 0 on loopback), a negative warm-up ran, --steps 0 failed runs one by one
    for flag, value, low, high, what in (
            ("--steps", args.steps, 1, None, "timed steps"), ("--warmup", args.warmup, 0, None, "warm-up steps"),
            ("--batch", args.batch, 1, None, "examples per replica"),
            ("--hosts", args.hosts, 1, MAX_TEST_HOSTS, "test hosts")):
        if value is not None and not (low <= value and (high is None or value <= high)):
            raise InputError(flag, None, f"expected {low} to {high} {what}, received {value}" if high else
                             f"expected at least {low} {what}, received {value}")
    for flag, value in (("--link-mbit", args.link_mbit), ("--deadline", args.deadline)):
        if value is not None and not value > 0:
            raise InputError(flag, None, f"expected a number greater than 0, received {value:g}")
    straggler = _pair(args.straggler, ":", "--straggler", (int, float)) if args.straggler else None
    if straggler and straggler[1] < 1:
        raise InputError("--straggler", None, f"the factor slows a worker and is at least 1, received {straggler[1]}")
    kill = _pair(args.kill, "@", "--kill", (int, int)) if args.kill else None
    multi = [r for r in runs if r.strategy in ("multi_worker_mirrored", "parameter_server")]
    for flag, pair in (("--straggler", straggler), ("--kill", kill)):
        if pair and not multi:
            raise InputError(flag, None, "acts on workers; add a multi_worker_mirrored or parameter_server run")
        if pair and any(pair[0] >= r.replicas or pair[0] < 0 for r in multi):
            raise InputError(flag, None, f"worker {pair[0]} does not exist in every multi-worker run")
    if kill and kill[1] >= args.steps + args.warmup:
        raise InputError("--kill", None, f"step {kill[1]} is past the run's {args.steps + args.warmup} steps")
    if not 1 <= args.ps_tasks <= 8:
        raise InputError("--ps-tasks", None, f"expected 1 to 8 parameter-server tasks, received {args.ps_tasks}")
    reuse = None
    if args.ps_costs:
        if args.engine == "ray" and args.address:
            raise InputError("--ps-costs", None, "goes with runs on this machine (--engine local, or a local Ray "
                                                 "instance without --address): on a Ray cluster the bench measures "
                                                 "them on the node its coordinator runs on")
        if not any(r.strategy == "parameter_server" for r in runs):
            raise InputError("--ps-costs", None, "is for parameter_server runs, and --runs has none")
        import os

        from rung.spec.records import load_ps_costs

        reuse = load_ps_costs(args.ps_costs, os.cpu_count() or 1)
    batch = args.batch or _default_batch(args.workload)
    signal.signal(signal.SIGTERM, _interrupt)  # reap every process, as on Ctrl-C
    from rung.cli._common import Progress, check_writable, write_atomically

    if args.calibrate:
        check_writable(args.calibration_out, "--calibration-out")  # before minutes of runs, not after
    if args.html:
        check_writable(args.html, "--html")
    points, earlier = None, None
    if args.calibration_merge:
        if not args.calibrate:
            raise InputError("--calibration-merge", None, "goes with --calibrate")
        if Path(args.calibration_out).exists():
            from rung.spec.calibration import load_calibration

            earlier = load_calibration(args.calibration_out)
            points = [q.model_dump() for q in earlier.points]
    if args.address and args.engine != "ray":
        raise InputError("--address", None, "goes with --engine ray")
    if args.engine == "ray":
        import importlib.util

        from rung.errors import RunError

        if args.address:
            from rung.cli.launch import check_address

            check_address(args.address)
        if importlib.util.find_spec("ray") is None:
            raise RunError("Ray is not installed; install it with: pip install 'rung[ray]'")
    from rung.kerasfit import batch_hint, default_batch_note, file_kept_batch, with_batch_hint

    # keras.io's files keep a batch_size of their own: a step at rung's default that fails on
    # its shapes is told it (hint), and runs that go through say the batch they ran at
    kept = None if args.batch else file_kept_batch(args.workload, batch)
    hint = batch_hint(kept, batch) if kept else None
    from rung.errors import RunError

    try:
        with Progress(quiet=args.json) as progress:
            result = bench(args.workload, batch, runs, steps=args.steps, warmup=args.warmup, hosts=args.hosts,
                           link_mbit=args.link_mbit, straggler=straggler, kill=kill, deadline_seconds=args.deadline,
                           calibrate=args.calibrate, calibration_points=points, ps_tasks=args.ps_tasks,
                           on_run=progress.phase,
                           on_progress=progress.step, engine=args.engine, address=args.address,
                           reuse_ps_costs=reuse, keras=args.keras)
    except RunError as e:
        raise with_batch_hint(e, hint) from None
    if kept and not any("shape" in f["error"].lower() for f in result["failed"]):
        result["notes"].append(default_batch_note(kept, batch, "benched", "step times, and what scales, follow "
                                                                          "the batch"))
    if args.calibrate and result["calibration"] and result["calibration"].get("fitted"):
        from rung.spec.calibration import keep_ps_costs, parse_calibration

        keep_ps_costs(result["calibration"], earlier)

        parse_calibration(result["calibration"], "the fitted calibration")  # what advise will read back
        write_atomically(args.calibration_out, json.dumps(result["calibration"], indent=2) + "\n",
                         "--calibration-out")
        result["calibration"]["written_to"] = args.calibration_out
    from rung.spec.benchresult import BenchResult

    typed = BenchResult.model_validate(result)  # the seam: what the report and a saved file read
    if args.html:
        from rung.cli.report import write
        from rung.report.html import ReportInputs

        write(args.html, ReportInputs(bench=typed, command="rung bench"), "--html", quiet=args.json)
    if args.json:
        json.dump(typed.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return _failures(typed, hint=hint)
    from rung.report.bench import render

    render(typed)
    if args.html:
        print(f"report written to {args.html}")
    return _failures(typed, said=True, hint=hint)


def _failures(result, said: bool = False, hint: str | None = None) -> int:
    """Exit 1 when a run failed (the others' results are above), one line each on stderr;
    where the report above already said why (`said`), one line naming them. `hint`
    (`kerasfit.batch_hint`) follows when a run failed on its shapes."""
    if said and result.failed:
        names = ", ".join(f.name for f in result.failed)
        print(f"rung bench: {len(result.failed)} run(s) failed ({names}): what to change is in the report above",
              file=sys.stderr)
    else:
        for f in result.failed:
            print(f"rung bench: {f.name} failed: {f.error}", file=sys.stderr)
    if hint and any("shape" in f.error.lower() for f in result.failed):
        print(f"rung bench: {hint}", file=sys.stderr)
    return 1 if result.failed else 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _default_batch(path: str) -> int:
    """The workload's BATCH_SIZE, read without importing it (no TensorFlow in this process);
    32 when it sets none. One it sets and rung cannot read is bad input (it ran at 32)."""
    from rung.kerasfit import file_batch_size

    try:
        source = Path(path).read_text()
    except (OSError, ValueError):
        return 32  # the tasks report the real problem
    n, why = file_batch_size(source)
    if why:
        raise InputError(path, None, f"{why}: give --batch N (the per-replica batch)")
    return n or 32
