"""Hardware, fleet and goal for commands that start from a workload file: a small YAML
(`--hardware`) and flags that override it. Pure: no TensorFlow."""

from __future__ import annotations

import os
from typing import Any, Optional

from rung.errors import InputError


def load_hardware(path: str) -> dict:
    """rung.spec.profile's, loaded with the first hardware file (not with the parser)."""
    from rung.spec.profile import load_hardware as load

    return load(path)


def add_arguments(parser, target_required: bool = False) -> None:
    g = parser.add_argument_group("hardware and goal (for planning from a workload)")
    g.add_argument("--hardware", metavar="HW.yaml",
                   help="hardware block (and optional fleet, goal, offers) in scenario v1 syntax")
    g.add_argument("--device", help="catalog device name (see `rung catalog`), overrides the file")
    g.add_argument("--devices-per-host", type=int, metavar="N",
                   help="devices on each host (default: the device's own count, else 1), overrides the file")
    g.add_argument("--max-hosts", type=int, metavar="N", help="hosts on offer at most, overrides the file")
    g.add_argument("--inter-host-gbps", type=float, metavar="G",
                   help="network between hosts, Gbit/s, overrides the file")
    g.add_argument("--target", type=float, metavar="EX_PER_S", help="target examples per second")
    g.add_argument("--reproducible", action="store_true", default=None, help="runs must be repeatable")
    g.add_argument("--preemptible", action="store_true", default=None, help="hosts can be taken away")


def given(args) -> bool:
    return any(getattr(args, k, None) is not None for k in
               ("hardware", "device", "devices_per_host", "max_hosts", "inter_host_gbps", "target"))


def defaulted(args) -> list[str]:
    """The sizes of the offer neither --hardware nor a flag gave (each then 1; a TPU host's
    devices are the catalog's, so not counted)."""
    hw = (load_hardware(args.hardware).get("hardware") or {}) if getattr(args, "hardware", None) else {}
    tpu_host = _host_devices(getattr(args, "device", None) or hw.get("device"))
    return [key for key in ("devices_per_host", "max_hosts")
            if key not in hw and getattr(args, key, None) is None and not (key == "devices_per_host" and tpu_host)]


def _host_devices(device) -> int:
    """The devices one host of a TPU catalog slice exposes (TPU-v4-8: its 4 chips); 0 for
    anything else: a TPU host comes whole, where a GPU offer may be one device a host."""
    from rung.spec.catalog import lookup

    found = lookup(device) if isinstance(device, str) else None
    return found.host_devices if found is not None else 0


def this_machine() -> dict[str, Any]:
    """A hardware block describing the machine rung ran on (one CPU device)."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        ram = 16.0
    return {"device": "custom", "accelerator": "cpu", "device_memory_gib": round(ram, 1), "devices_per_host": 1,
            "max_hosts": 1}


def blocks(args, measured_eps: Optional[float] = None, require: bool = True):
    """(hardware, fleet, goal) from --hardware and the flags. With require=False, fall back
    to this machine and the measured throughput as the target."""
    data = load_hardware(args.hardware) if args.hardware else {}
    hw = dict(data.get("hardware") or {})
    fleet = dict(data.get("fleet") or {})
    goal = dict(data.get("goal") or {})
    for key, flag in (("device", "device"), ("devices_per_host", "devices_per_host"),
                      ("max_hosts", "max_hosts"), ("inter_host_gbps", "inter_host_gbps")):
        if getattr(args, flag, None) is not None:
            hw[key] = getattr(args, flag)
    if args.target is not None:
        goal["target_examples_per_second"] = args.target
    if args.reproducible:
        goal["reproducible"] = True
    if args.preemptible:
        fleet["preemptible"] = True
    if "device" not in hw:
        if require:
            goal_too = "" if "target_examples_per_second" in goal else \
                " and a goal: --target EXAMPLES_PER_SECOND (both are needed)"
            raise InputError("--hardware", None, "planning from a workload needs the hardware on offer: "
                                                 "--hardware HW.yaml or --device NAME (see `rung catalog`)"
                                                 + goal_too)
        hw = {**this_machine(), **hw}
    hw.setdefault("devices_per_host", _host_devices(hw.get("device")) or 1)
    if "target_examples_per_second" not in goal:
        if require or measured_eps is None:
            raise InputError("--target", None, "planning needs a goal: --target EXAMPLES_PER_SECOND "
                                               "(or goal.target_examples_per_second in the hardware file)")
        goal["target_examples_per_second"] = round(measured_eps, 3)
    return hw, fleet, goal


# A workload block no one could get wrong, to validate the user's blocks with before the
# (slow) measurement: any error is then theirs, and it reads as it would after it.
_PLACEHOLDER_WORKLOAD = {"params": 1, "optimizer": "sgd", "per_device_batch": 1, "step_seconds": 1.0}


def checked_blocks(args, where: str, require: bool = True, measured_eps: Optional[float] = None):
    """`blocks`, then the hardware, fleet and goal validated as the scenario will validate
    them (an unknown device, a negative rate, a fleet field that does not exist), so a typo
    costs a second, not a profile."""
    from rung.spec.scenario import SCHEMA, parse_scenario

    hw, fleet, goal = blocks(args, measured_eps=measured_eps, require=require)
    data = {"schema": SCHEMA, "workload": _PLACEHOLDER_WORKLOAD, "hardware": hw, "goal": goal}
    if fleet:
        data["fleet"] = fleet
    given = offers(args)
    if given is not None:
        data["offers"] = given
    parse_scenario(data, where)
    return hw, fleet, goal


def offers(args) -> Optional[list]:
    """The hardware file's `offers` (scenario v1 syntax), as written; None without them."""
    return load_hardware(args.hardware).get("offers") if getattr(args, "hardware", None) else None
