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
