"""From a profile to the scenario a plan is made from: the workload block for the
device in the plan (measured there, given by the team, or estimated from FLOPs), and
the caveats the decision carries. Pure: no TensorFlow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rung import units as u
from rung.cli import _hardware
from rung.errors import InputError
from rung.ladder import codes as C
from rung.model import estimate
from rung.spec import catalog

if TYPE_CHECKING:  # the scenario's models and the ladder load with the first plan, not with the parser
    from rung.ladder.decision import Finding
    from rung.spec.scenario import Scenario


def add_arguments(parser) -> None:
    g = parser.add_argument_group("the device in the plan")
    g.add_argument("--target-step-seconds", type=float, metavar="S",
                   help="the step time measured on the plan's device (else rung estimates it from FLOPs "
                        "when that device is not the one profiled)")
    g.add_argument("--step-time-cv", type=float, metavar="CV",
                   help="step-time variation across workers (from rung bench, or known for your fleet); "
                        "default: the scenario's 0.02 for identical hosts")


def add_measurement_arguments(parser, title: str = "measurement (with WORKLOAD.py)") -> None:
    """How a workload given to advise or report is profiled first."""
    m = parser.add_argument_group(title)
    m.add_argument("--batch", type=int, metavar="N", help="per-device batch (default: the file's BATCH_SIZE, else 32)")
    m.add_argument("--steps", type=int, default=30, metavar="N", help="steps timed after warm-up (default 30)")
    m.add_argument("--warmup", type=int, default=3, metavar="N", help="warm-up steps discarded (default 3)")
    m.add_argument("--keras", choices=("keras3", "tf_keras"), help="Keras behind tf.keras for the profile")
    add_replica_check_argument(m)
    parser.set_defaults(try_fixes=False)


def add_replica_check_argument(group) -> None:
    group.add_argument("--no-replica-check", dest="replica_check", action="store_false",
                       help="skip the check that the model's train_step scales its loss for several replicas "
                            "(with its own train_step, or a compiled loss of its own: one step on 2 logical CPU "
                            "devices in a fresh process, about 5 s here; Keras' own step and losses need none)")


def links(calibration_path):
    """The exchange's constants: the defaults, or a `rung bench --calibrate` file's."""
    from rung.model.comm import DEFAULT_LINKS

    if not calibration_path:
        return DEFAULT_LINKS
    from rung.spec.calibration import load_calibration

    return DEFAULT_LINKS.calibrated(load_calibration(calibration_path))


def check_flags(args) -> None:
    for flag, value in (("--target-step-seconds", args.target_step_seconds), ("--step-time-cv", args.step_time_cv)):
        if value is not None and not (value == value and 0 < value < float("inf")):
            raise InputError(flag, None, f"expected a positive number, received {value}")


def _estimated(profile: dict, block: dict, device: catalog.Device) -> dict:
    flops = profile.flops_per_example
    if not flops:
        raise InputError("--device", None, f"the workload was profiled on {profile.device_name}, not "
                                           f"{device.name}, and rung could not count its FLOPs to estimate "
                                           "the step there: give --target-step-seconds (measured on that device)")
    compute = estimate.compute_seconds(flops, block["per_device_batch"], device, block["param_dtype"],
                                       block["mixed_precision"], profile.ops_per_step or 0)
    update = _update_on(profile, device)
    compute += update or 0.0
    # the pipeline as fast as it ran here: a faster device waits for what it cannot deliver
    pipe = profile.pipeline_seconds_per_batch or 0.0
    wait = max(0.0, pipe - compute)
    lo, hi = estimate.interval(compute)
    # the wait across the pipeline's interval and the compute's: a pipeline about as fast as
    # the estimated device is input-bound at one end and not at the other (CLOSE_CALL says so;
    # before, the verdict moved between fix_input_pipeline and 32 devices with this
    # machine's pipeline noise, and nothing said the call was close)
    pipe_lo, pipe_hi = profile.pipeline_seconds_per_batch_ci95 or (pipe, pipe)
    return {**block, "step_seconds": compute + wait, "input_wait_seconds": wait,
            "step_seconds_ci95": [lo + wait, hi + wait],
            "input_wait_seconds_ci95": [max(0.0, pipe_lo - hi), max(0.0, pipe_hi - lo)],
            "step_seconds_source": "estimated", "strategy_step_extra_seconds": _strategy_extra_on(profile, device),
            "optimizer_update_seconds": update}


def _update_on(profile, device: catalog.Device) -> float | None:
    """The optimizers' update, timed alone here, on `device` (rung.model.estimate.update_seconds);
    None when it was not timed or cannot be carried there."""
    seconds, rate = profile.optimizer_update_seconds, profile.memory_copy_bytes_per_second
    if not seconds or not rate:
        return None
    return estimate.update_seconds(seconds, rate, device, profile.optimizer_update_ops or 0)


def _strategy_extra_on(profile, device: catalog.Device) -> float:
    """The step's extra under mirrored variables (a copy of a table: memory traffic), measured
    here, carried to `device` by the ratio of this device's measured copy rate to its
    datasheet memory bandwidth; as measured when either is unknown."""
    extra, rate = profile.strategy_step_extra_seconds, profile.memory_copy_bytes_per_second
    moved = estimate.carried(extra, rate, device) if extra and rate else None
    return extra if moved is None else moved


def plan_scenario(profile: dict, args, where: str, require: bool = True) -> tuple[Scenario, list[Finding]]:
    """The scenario for the plan's hardware, and the caveats to put first in the decision."""
    from rung.ladder.decision import Finding
    from rung.spec.profile import scenario_from_profile, workload_block

    check_flags(args)
    eps = profile.per_device_batch / profile.step_seconds
    hw, fleet, goal = _hardware.blocks(args, measured_eps=eps, require=require)
    if profile.checkpoint_seconds is not None and "checkpoint_seconds" not in fleet:
        # the measured save (this machine's disk) unless the hardware file gives the job's own
        fleet["checkpoint_seconds"] = float(profile.checkpoint_seconds)
    block = workload_block(profile, step_time_cv=args.step_time_cv)
    device = catalog.lookup(hw["device"]) if hw["device"] != "custom" else None
    measured_on = catalog.match_device_name(profile.device_name) if profile.device.startswith("GPU") else None
    here = f"{profile.device} ({profile.device_name}) of this machine"
    caveats: list[Finding] = []
    if args.target_step_seconds is not None:
        # the team's own step on the plan's devices, a catalog device's or hosts like this one
        # ("custom"), where before the flag was ignored without a word
        extra = _strategy_extra_on(profile, device) if device is not None else profile.strategy_step_extra_seconds
        block = {**block, "step_seconds": args.target_step_seconds, "input_wait_seconds": 0.0,
                 "step_seconds_ci95": None, "input_wait_seconds_ci95": None, "step_seconds_source": "measured",
                 "strategy_step_extra_seconds": extra,
                 "optimizer_update_seconds": None}  # the team's step: what its update takes is not known
        on = device.name if device is not None else "the plan's devices"
        caveats.append(Finding(C.MEASURED_ON_THIS_MACHINE,
            f"the step time on {on} is the team's ({u.seconds(args.target_step_seconds)}, "
            "--target-step-seconds); its input wait is unknown and taken as none"))
    elif device is None:
        caveats.append(Finding(C.MEASURED_ON_THIS_MACHINE,
            f"the workload was measured on {here}; the plan assumes hosts whose devices run it as fast"))
        if profile.mixed_precision and profile.device.startswith("CPU"):
            caveats.append(Finding(C.EMULATED_PRECISION,
                f"the {profile.mixed_precision_policy} policy was timed on a CPU that emulates 16-bit "
                "math: the step is far slower than on a GPU or TPU; plan for a catalog device (--device) "
                "to have it estimated from FLOPs"))
    elif measured_on is not device:
        block = _estimated(profile, block, device)
    n = profile.file_batch_size
    if n:  # keras.io keeps its batch as `batch_size`: the plan is for rung's default unless told
        caveats.append(Finding(C.DEFAULT_BATCH,
            f"the step was profiled at a per-device batch of {profile.per_device_batch}, rung's default; the file "
            f"sets batch_size = {n}: if each device trains on {n} examples a step, give --batch {n} "
            "(or name it BATCH_SIZE): the step time, its memory and this plan follow the batch"))
    clean = {k: v for k, v in block.items() if v is not None}
    return scenario_from_profile(profile, hw, goal, fleet, where=where, workload=clean,
                                 offers=_hardware.offers(args)), caveats


# What `rung profile` finds in the pipeline's graph that keeps it slow. A fix_input_pipeline
# verdict measures the wait; these name its causes in the user's own pipeline, where the
# verdict's code is a generic one.
PIPELINE_FIXES = (C.NO_PREFETCH, C.SEQUENTIAL_MAP, C.SEQUENTIAL_INTERLEAVE, C.PYTHON_IN_PIPELINE, C.NO_CACHE)


def pipeline_fixes(profile) -> list[Finding]:
    """The profile's findings on the pipeline that name what to change, in its order."""
    from rung.ladder.decision import Finding

    found = (getattr(profile, "pipeline", None) or {}).get("findings") or []
    return [Finding(f["code"], f"{f['message']} (found in make_dataset's pipeline by the profile)") for f in found
            if f.get("code") in PIPELINE_FIXES]


def given(args) -> bool:
    return args.target_step_seconds is not None or args.step_time_cv is not None


def scenario_yaml(scenario: Scenario, header: list[str], caveats: list[Finding]) -> str:
    """A scenario v1 as YAML, every field written out, under comment lines: `header`, then
    the caveats the plan was made with (one `# CODE: message` line each)."""
    import yaml

    data = scenario.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False)
    lines = [f"# {h}\n" for h in header] + [f"# {c.code}: {c.message}\n" for c in caveats]
    return "".join(lines) + yaml.safe_dump(data, sort_keys=False)
