"""The composer: weak scaling, input cap, PS, and the vectorised sweep."""

import numpy as np
import pytest

from rung.model import throughput as t
from rung.model.sweep import sweep_sync
from rung.spec import parse_scenario
from tests.conftest import valid_scenario


def scenario(**kw):
    return parse_scenario(valid_scenario(**kw))


def test_one_device_is_the_measurement():
    s = scenario()
    p = t.predict_sync(s, "single_device", 1, 1)
    assert p.step_seconds == pytest.approx(0.21)
    assert p.examples_per_second == pytest.approx(256 / 0.21)
    assert p.scaling_efficiency == pytest.approx(1.0)
    assert p.communication_seconds == 0


def test_mirrored_adds_only_the_intra_host_allreduce():
    s = scenario()
    p = t.predict_sync(s, "mirrored", 1, 8)
    grad = 25.6e6 * 4
    intra = 2 * 7 / 8 * grad / (300e9 * 0.8) + 14 * 5e-6
    assert p.intra_host_seconds == pytest.approx(intra)
    assert p.step_seconds == pytest.approx(0.21 + intra)
    assert p.examples_per_second == pytest.approx(8 * 256 / (0.21 + intra))


def test_multi_host_adds_network_and_stragglers():
    s = scenario()
    p = t.predict_sync(s, "multi_worker_mirrored", 4, 8)
    assert p.inter_host_seconds > 0 and p.straggler_seconds > 0
    assert p.scaling_efficiency < t.predict_sync(s, "mirrored", 1, 8).scaling_efficiency


def test_input_bound_host_does_not_scale():
    s = scenario(workload={"step_seconds": 0.5, "input_wait_seconds": 0.3})
    one = t.predict_sync(s, "single_device", 1, 1)
    eight = t.predict_sync(s, "mirrored", 1, 8)
    assert eight.input_capped
    assert eight.examples_per_second == pytest.approx(one.examples_per_second, rel=1e-9)


def test_ps_worker_holds_no_optimizer_state_and_sizes_tasks():
    s = scenario(workload={"params": 4.05e9, "embedding_params": 4e9, "optimizer": "adagrad",
                           "activation_bytes_per_example": 0},
                 hardware={"device": "V100-16GB", "devices_per_host": 1, "intra_host": None})
    p = t.predict_ps(s, 10, 1)
    # dense weights + grads (50M x 4 B x 2) + rows and their grads (13,312 B x 256 x 2)
    assert p.memory_bytes_per_device == pytest.approx(2 * 50e6 * 4 + 2 * 13312 * 256)
    assert p.ps_tasks >= 1 and p.staleness_steps == 9 and p.straggler_seconds == 0


def test_sweep_is_the_scalar_model_vectorised():
    s = scenario()
    hosts, devs, gbps, batch = [1, 2, 4, 8], [1, 4, 8], [10, 100], [128, 256]
    g = sweep_sync(s, hosts, devs, gbps, batch)
    assert g["examples_per_second"].shape == (4, 3, 2, 2)
    for i, h in enumerate(hosts):
        for j, d in enumerate(devs):
            s2 = parse_scenario(valid_scenario(hardware={"inter_host_gbps": 10}))
            p = t.predict_sync(s2, "x", h, d)
            assert g["examples_per_second"][i, j, 0, 1] == pytest.approx(p.examples_per_second)
    # faster network never hurts; at the measured batch one device is exactly measured
    assert np.all(g["examples_per_second"][:, :, 1, :] >= g["examples_per_second"][:, :, 0, :])
    assert g["examples_per_second"][0, 0, 0, 1] == pytest.approx(256 / 0.21)


def test_percentile_interpolates_like_numpy():
    from rung.stats import percentile
    vals = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(vals, 0.5) == np.percentile(vals, 50)
    assert percentile(vals, 0.95) == pytest.approx(np.percentile(vals, 95))
    assert percentile([7.0], 0.95) == 7.0
