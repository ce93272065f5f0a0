"""The step-time estimate for another device, against hand-derived numbers."""

import dataclasses

import pytest

from rung.model import estimate
from rung.spec.catalog import CATALOG, lookup


def test_precision_unit_follows_device_and_policy():
    assert estimate.precision(CATALOG["A100-80GB"], "float32", False) == "tf32"   # TF32 on by default
    assert estimate.precision(CATALOG["V100-32GB"], "float32", False) == "fp32"   # no TF32 on Volta
    assert estimate.precision(CATALOG["V100-32GB"], "float32", True) == "half"    # mixed_float16
    assert estimate.precision(CATALOG["TPU-v4-8"], "float32", False) == "half"    # MXU bf16 passes


def test_compute_seconds_by_hand():
    # 1 GFLOP/example x 100 examples on an A100 in TF32: 1e11 / (156e12 x 0.3) = 2.1368 ms,
    # plus 1,000 kernels x 5 us = 5 ms
    got = estimate.compute_seconds(1e9, 100, CATALOG["A100-80GB"], "float32", False, kernels_per_step=1000)
    assert got == pytest.approx(1e11 / (156e12 * 0.3) + 1000 * 5e-6)
    # a V100 in FP32 at utilisation 0.5: 1e11 / (15.7e12 x 0.5) = 12.74 ms
    assert estimate.compute_seconds(1e9, 100, CATALOG["V100-16GB"], "float32", False) == \
        pytest.approx(1e11 / 7.85e12)
    # the same model under mixed precision on an H100: 1e11 / (989.4e12 x 0.3)
    assert estimate.compute_seconds(1e9, 100, lookup("h100-80gb"), "float32", True) == \
        pytest.approx(1e11 / (989.4e12 * 0.3))


def test_an_optimizers_update_is_carried_by_memory_bandwidth_by_hand():
    # 47 ms timed on a CPU that copies at 14.75 GB/s; a T4 moves 320 GB/s (datasheet):
    # 47e-3 x 14.75e9 / 320e9 = 2.1664 ms, plus 50 kernels x 5 us = 0.25 ms
    assert estimate.update_seconds(47e-3, 14.75e9, CATALOG["T4"], ops=50) == pytest.approx(2.4164e-3, rel=1e-4)
    # an H100 SXM at 3.35 TB/s: 0.2069 ms, no kernels counted
    assert estimate.update_seconds(47e-3, 14.75e9, lookup("h100-80gb")) == pytest.approx(0.20694e-3, rel=1e-4)
    assert estimate.update_seconds(47e-3, 14.75e9, dataclasses.replace(CATALOG["T4"], throughput=None)) is None


def test_published_resnet50_falls_inside_the_estimate_interval():
    """shared/published X07: ResNet-50 v1.5 on one V100, FP32 + XLA, batch 128: 432 img/s,
    i.e. 0.296 s a step. ResNet-50 forward is 4.1 GMAC = 8.2 GFLOP per 224px image (He et
    al. 2016), 24.6 GFLOP to train. The launch term is left out (XLA fuses kernels)."""
    est = estimate.compute_seconds(3 * 8.2e9, 128, CATALOG["V100-32GB"], "float32", False)
    lo, hi = estimate.interval(est)
    assert lo <= 128 / 432 <= hi


def test_every_accelerator_in_the_catalog_has_throughput_with_a_source():
    for d in CATALOG.values():
        t = d.throughput
        assert t is not None and t.source, d.name
        assert 0 < t.fp32 <= t.half and t.memory_bytes_per_second > 1e11, d.name
