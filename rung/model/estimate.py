"""A step time for a device the workload was not measured on, from counted FLOPs (and
the optimizer's update, timed where it was measured, carried by memory bandwidth:
`update_seconds`).

compute seconds = FLOPs per example x batch / (peak FLOP/s at the precision in use x
model FLOPs utilisation) + kernels per step x launch cost. The utilisation is what well-tuned training reaches of a
datasheet peak; it varies by model and precision, so an estimate carries a wide
interval (ESTIMATE_SPREAD) and the decision says it is one (STEP_TIME_ESTIMATED).

Utilisation from published single-GPU training throughputs (shared/published,
ResNet-50 v1 at 3 x 7.7 GFLOP per image, VGG16 at 3 x 31 GFLOP):
  FP32 units: V100 432 img/s -> 0.63; P100 219 -> 0.47; RTX 2080 Ti 321 -> 0.55.
  tensor cores: A100 PCIe FP16 2,075 img/s -> 0.15; RTX 3090 TF32 568 -> 0.37;
  A100 PCIe TF32 VGG16 504 img/s -> 0.30.
Medians: about 0.5 on FP32 units and 0.3 on tensor cores (TF32, FP16, BF16, TPU MXU).
"""

from __future__ import annotations

from typing import Optional

from rung.spec.catalog import Device

# Model FLOPs utilisation (module docstring): FP32 units, and tensor cores / MXU.
UTILISATION_FP32 = 0.5
UTILISATION_TENSOR = 0.3
# The published utilisations above span 0.15-0.63: an estimate may be off by about 2x
# either way, which is the 95% interval a decision from an estimate carries.
ESTIMATE_SPREAD = 2.0
# Training FLOPs per example = forward x 3: the backward pass costs about twice the
# forward (gradients for activations and for weights; Kaplan et al. 2020, section 2.1).
TRAINING_FLOPS_PER_FORWARD = 3.0
# Each operation of a step is a kernel launch the device waits for when the kernels
# are small: about 5 microseconds on a GPU (NVIDIA, "Getting Started with CUDA Graphs",
# 2019: launch overheads of a few microseconds each; TensorFlow's executor adds its own).
# It sets the floor of a small-batch step (a batch-8 ResNet-50 step is launch-bound).
KERNEL_LAUNCH_SECONDS = 5e-6


def precision(device: Device, param_dtype: str, mixed_precision: bool) -> str:
    """The unit the math runs on: 'half' (16-bit tensor cores or a TPU's MXU), 'tf32'
    (float32 on Ampere and later: TensorFlow enables TF32 by default since 2.4), 'fp32'."""
    if device.is_tpu or mixed_precision or param_dtype != "float32":
        return "half"
    if device.throughput is not None and device.throughput.tf32 is not None:
        return "tf32"
    return "fp32"


def peak_flops(device: Device, unit: str) -> Optional[float]:
    t = device.throughput
    if t is None:
        return None
    return {"fp32": t.fp32, "tf32": t.tf32, "half": t.half}[unit]


def utilisation(unit: str) -> float:
    return UTILISATION_FP32 if unit == "fp32" else UTILISATION_TENSOR


def compute_seconds(flops_per_example: float, batch: int, device: Device, param_dtype: str,
                    mixed_precision: bool, kernels_per_step: int = 0) -> Optional[float]:
    """Estimated compute of one training step of `batch` examples on `device` (None when
    the catalog has no throughput for it): arithmetic at the stated utilisation, plus
    the launch cost of every kernel."""
    unit = precision(device, param_dtype, mixed_precision)
    peak = peak_flops(device, unit)
    if peak is None:
        return None
    return flops_per_example * batch / (peak * utilisation(unit)) + kernels_per_step * KERNEL_LAUNCH_SECONDS


def interval(seconds: float) -> tuple[float, float]:
    """The 95% interval an estimate carries."""
    return seconds / ESTIMATE_SPREAD, seconds * ESTIMATE_SPREAD


def effective_flops(device: Device, param_dtype: str, mixed_precision: bool) -> Optional[float]:
    """What training reaches of the device: its peak at the precision in use x utilisation."""
    unit = precision(device, param_dtype, mixed_precision)
    peak = peak_flops(device, unit)
    return None if peak is None else peak * utilisation(unit)


def scale_compute(seconds: float, measured_on: Device, to: Device, param_dtype: str,
                  mixed_precision: bool) -> Optional[float]:
    """A step's compute measured on one device, moved to another by the two devices'
    effective throughput (None when the catalog lacks either's). An assumption that the
    step is arithmetic-bound on both; memory-bound steps scale with memory bandwidth
    (`Throughput.memory_bytes_per_second`), which the decision's interval (÷2 to ×2) covers."""
    a = effective_flops(measured_on, param_dtype, mixed_precision)
    b = effective_flops(to, param_dtype, mixed_precision)
    if not a or not b:
        return None
    return seconds * a / b


def update_seconds(measured_seconds: float, copy_bytes_per_second: float, device: Device,
                   ops: int = 0) -> Optional[float]:
    """The optimizers' update of one step (`rung.measure.timing.optimizer_update`, timed alone
    where the workload was profiled) on `device`: its memory traffic, carried by the ratio of
    the copy rate measured there to the device's datasheet bandwidth, plus the launch cost of
    each of its kernels (the counted FLOPs and kernels of the step leave the update out).
    None when the catalog has no bandwidth for the device. An Adagrad update of a 38M-row
    table on Keras 3 took 47 ms of a 64 ms step here (it updates the whole table; tf-keras
    0.4 ms): 2.2 ms on a T4, against 0.45 ms for the step's counted FLOPs."""
    traffic = carried(measured_seconds, copy_bytes_per_second, device)
    return None if traffic is None else traffic + ops * KERNEL_LAUNCH_SECONDS


def carried(seconds: float, copy_bytes_per_second: float, device: Device) -> Optional[float]:
    """Memory traffic timed where the workload was profiled, on `device`: the ratio of the copy
    rate measured there to the device's datasheet bandwidth; None without that bandwidth."""
    if device.throughput is None:
        return None
    return seconds * copy_bytes_per_second / device.throughput.memory_bytes_per_second


def scale_memory(seconds: float, measured_on: Device, to: Device) -> Optional[float]:
    """Memory traffic timed on one device (an optimizer's update, a table copied under mirrored
    variables), moved to another by their datasheet bandwidths; None when either lacks one."""
    if measured_on.throughput is None or to.throughput is None:
        return None
    return seconds * measured_on.throughput.memory_bytes_per_second / to.throughput.memory_bytes_per_second
