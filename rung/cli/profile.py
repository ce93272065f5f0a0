"""`rung profile`: measure a workload on one device; optionally write a scenario."""

from __future__ import annotations

import json
import sys

from rung.cli import _hardware, _plan
from rung.cli._common import Progress, check_writable, output_to_stderr, write_atomically
from rung.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("profile", help="measure your model on one device (step time, input wait, bytes)",
                       description="Import WORKLOAD.py (build_model, make_dataset), time real training "
                                   "steps on one device, split input wait from compute, count parameters, "
                                   "gradients, optimizer slots and activations.")
    p.add_argument("workload", nargs="?", metavar="WORKLOAD.py", help="the workload file")
    p.add_argument("--example", metavar="NAME", help="a bundled example workload (see --list-examples)")
    p.add_argument("--list-examples", action="store_true", help="list the bundled example workloads")
    m = p.add_argument_group("measurement")
    m.add_argument("--batch", type=int, metavar="N", help="per-device batch (default: the file's BATCH_SIZE, else 32)")
    m.add_argument("--steps", type=int, default=30, metavar="N", help="steps timed after warm-up (default 30)")
    m.add_argument("--warmup", type=int, default=3, metavar="N", help="warm-up steps discarded (default 3)")
    m.add_argument("--keras", choices=("keras3", "tf_keras"),
                   help="Keras behind tf.keras (default: the environment's; Keras 3 unless TF_USE_LEGACY_KERAS=1)")
    m.add_argument("--try-fixes", action="store_true", help="re-measure with the pipeline fixes rung can apply")
    _plan.add_replica_check_argument(m)
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="print profile v1 JSON on stdout")
    o.add_argument("--scenario-out", metavar="FILE", help="write a scenario v1 whose workload block is the measurement")
    _hardware.add_arguments(p)
    _plan.add_arguments(p)
    p.set_defaults(run=run)


def resolve_workload(args) -> str:
    from rung.examples import pick, workload_examples

    if args.workload and args.example:
        raise InputError("--example", None, "give either WORKLOAD.py or --example, not both")
    if args.workload:
        return args.workload
    examples = workload_examples()
    if not args.example:
        raise InputError("WORKLOAD.py", None, "missing; give a workload file or --example NAME "
                                              f"({', '.join(examples)})")
    return str(pick(examples, args.example))


def measure(args, path: str):
    """The measurement, as the typed `Profile` planning reads."""
    from rung.measure.profile import profile
    from rung.spec.profile import Profile

    # the workload's own prints (a model.summary() in build_model) go to stderr: stdout is rung's
    with Progress(quiet=bool(getattr(args, "json", False))) as progress, output_to_stderr():
        measured = profile(path, batch=args.batch, steps=args.steps, warmup=args.warmup, keras=args.keras,
                           try_fixes=args.try_fixes, check_replicas=getattr(args, "replica_check", True),
                           on_phase=progress.phase, on_step=progress.step)
    return Profile.model_validate(measured)


class FailsOnKeras(RuntimeError):
    """The workload itself fails on that Keras (the profile's exit 2: its model does not
    build, or its pipeline or step fails there), not the measurement."""


def measure_apart(args, path: str, keras: str, on_phase=None):
    """The measurement on `keras`, in a process of its own (one Keras per process: this one
    may have imported TensorFlow already). Raises RuntimeError with the profile's one line
    (FailsOnKeras when the workload is what failed there)."""
    import subprocess

    from rung.spec.profile import Profile

    cmd = [sys.executable, "-m", "rung", "profile", path, "--keras", keras, "--json",
           "--steps", str(args.steps), "--warmup", str(args.warmup)]
    cmd += ["--batch", str(args.batch)] if args.batch else []
    cmd += [] if getattr(args, "replica_check", True) else ["--no-replica-check"]
    cmd += ["--try-fixes"] if args.try_fixes else []
    if on_phase:
        on_phase(f"measuring the step again on {keras}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        line = lines[-1] if lines else f"rung profile --keras {keras} exited {r.returncode}"
        raise (FailsOnKeras if r.returncode == 2 else RuntimeError)(line)
    return Profile.model_validate(json.loads(r.stdout))


def scenario_text(profile, args) -> str:
    s, caveats = _plan.plan_scenario(profile, args, where=args.scenario_out, require=False)
    source = {"measured": "the measurement",
              "estimated": "estimated for the plan's device from counted FLOPs and the optimizer's update "
                           "timed here (step_seconds_source: estimated)",
              "declared": "declared"}[s.workload.step_seconds_source]
    return _plan.scenario_yaml(s, [
        f"Written by `rung profile` from {profile.workload}, measured on {profile.device} ({profile.device_name}).",
        f"The workload's step time is {source}. step_time_cv is the fleet's (across workers), not",
        "the profile's. Edit hardware, fleet and goal to the training you plan, then:",
        "rung advise --scenario THIS_FILE"], caveats)


def run(args) -> int:
    if args.list_examples:
        from rung.examples import workload_examples

        for name, path in workload_examples().items():
            doc = (path.read_text().split('"""')[1].strip().splitlines() or [""])[0]
            print(f"{name:<14} {doc}")
        return 0
    path = resolve_workload(args)
    if args.scenario_out:
        check_writable(args.scenario_out, "--scenario-out")  # before the measurement, not after
    if not args.scenario_out:  # the plan's flags shape the scenario written, and nothing else
        planned = [f for f, given in (("--hardware", args.hardware), ("--device", args.device),
                                      ("--devices-per-host", args.devices_per_host), ("--max-hosts", args.max_hosts),
                                      ("--inter-host-gbps", args.inter_host_gbps), ("--target", args.target),
                                      ("--reproducible", args.reproducible), ("--preemptible", args.preemptible),
                                      ("--target-step-seconds", args.target_step_seconds),
                                      ("--step-time-cv", args.step_time_cv)) if given is not None]
        if planned:  # (before, taken and dropped: --max-hosts 0 and --device nope ran without a word)
            raise InputError(planned[0], None, "goes with --scenario-out: it describes the plan in the scenario "
                                               "rung profile writes (the profile itself measures this machine); "
                                               "or plan at once with rung advise WORKLOAD.py")
    if args.scenario_out and _hardware.given(args):
        _hardware.checked_blocks(args, where=args.scenario_out, require=False, measured_eps=1.0)  # before measuring
    _plan.check_flags(args)
    profile = measure(args, path)
    if args.scenario_out:
        write_atomically(args.scenario_out, scenario_text(profile, args), "--scenario-out")
    if args.json:
        json.dump(profile.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rung.report.profile import render

    render(profile.to_json())
    if args.scenario_out:
        print(f"scenario written to {args.scenario_out}")
    return 0
