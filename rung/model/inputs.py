"""The input pipeline: when a device waits on it, and what that does to scaling."""

from __future__ import annotations

import numpy as np

# The TensorFlow Profiler's overview page calls a step "highly input-bound" when 20% or
# more of it is spent waiting for input (tensorflow/profiler, input_pipeline analysis).
INPUT_BOUND_FRACTION = 0.20


def input_wait_fraction(step_seconds: float, input_wait_seconds: float) -> float:
    return input_wait_seconds / step_seconds


def is_input_bound(step_seconds: float, input_wait_seconds: float) -> bool:
    return input_wait_fraction(step_seconds, input_wait_seconds) >= INPUT_BOUND_FRACTION


def pipeline_step_floor(measured_step_seconds, devices_per_host):
    """An input-bound host's pipeline delivers one batch per measured step, whatever it
    feeds: with D devices a step cannot be shorter than D measured steps. This is why
    scaling an input-bound job buys nothing."""
    return measured_step_seconds * np.asarray(devices_per_host, dtype=float)


def host_pipeline_floor(pipeline_seconds, devices_per_host):
    """One host's input pipeline makes the batches of every device on it, one after another
    as far as its CPU goes: measured alone (`pipeline_seconds` a device's batch, the host's
    cores all at its disposal), D devices' batches take D times as long, and a step of D
    devices cannot be shorter. A pipeline faster than one device's compute never shows as a
    wait on one device, and still starves D of them once D x pipeline > step: the
    measurement a one-device profile cannot see in its wait. (Data-centre practice, e.g.
    NVIDIA DALI's rationale: CPU decoding cannot keep 8 GPUs fed at ImageNet rates.)"""
    return np.asarray(pipeline_seconds, dtype=float) * np.asarray(devices_per_host, dtype=float)
