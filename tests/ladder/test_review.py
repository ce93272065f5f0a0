"""The review names each mistake a proposal makes, and only those."""

from __future__ import annotations

import pytest

import rung
from rung.spec import parse_scenario
from tests.conftest import valid_scenario


def review(strategy, hosts=1, **blocks):
    d = rung.advise(parse_scenario(valid_scenario(proposal={"strategy": strategy, "hosts": hosts}, **blocks)))
    return {f.code for f in d.review}, d


def test_a_sound_proposal_gets_an_empty_review():
    codes, d = review("mirrored")           # target 7000: one host meets it
    assert codes == set()
    assert d.proposal_prediction["examples_per_second"] == pytest.approx(d.prediction.examples_per_second, rel=1e-4)


def test_multi_worker_before_one_host():
    codes, _ = review("multi_worker_mirrored", 2)
    assert codes == {"MULTI_WORKER_BEFORE_ONE_HOST"}
    codes, _ = review("multi_worker_mirrored", 4, goal={"target_examples_per_second": 30000})
    assert "MULTI_WORKER_BEFORE_ONE_HOST" not in codes


def test_input_bound_scaling():
    codes, _ = review("multi_worker_mirrored", 4, workload={"step_seconds": 0.5, "input_wait_seconds": 0.3},
                      goal={"target_examples_per_second": 8000})
    assert "INPUT_BOUND_SCALING" in codes
    codes, _ = review("single_device", workload={"step_seconds": 0.5, "input_wait_seconds": 0.3})
    assert "INPUT_BOUND_SCALING" not in codes


def test_replication_does_not_fit():
    big = {"params": 30e9, "optimizer": "adamw", "activation_bytes_per_example": 0}
    for strategy, hosts in (("mirrored", 1), ("multi_worker_mirrored", 4), ("single_device", 1)):
        codes, d = review(strategy, hosts, workload=big)
        assert "REPLICATION_DOES_NOT_FIT" in codes
        assert d.proposal_prediction["examples_per_second"] is None
    codes, _ = review("needs_sharding", workload=big)
    assert codes == set()


def test_linear_scaling_assumed_on_a_slow_network():
    codes, d = review("multi_worker_mirrored", 8, workload={"params": 1.5e9, "optimizer": "sgd",
                      "activation_bytes_per_example": 0, "per_device_batch": 16, "step_seconds": 0.5},
                      hardware={"inter_host_gbps": 10}, goal={"target_examples_per_second": 800})
    assert "LINEAR_SCALING_ASSUMED" in codes
    codes, _ = review("multi_worker_mirrored", 4, hardware={"inter_host_gbps": 400},
                      goal={"target_examples_per_second": 30000})
    assert "LINEAR_SCALING_ASSUMED" not in codes


def test_stale_gradients_ignored_only_when_reproducible():
    codes, _ = review("parameter_server", 4, goal={"target_examples_per_second": 30000, "reproducible": True})
    assert "STALE_GRADIENTS_IGNORED" in codes
    codes, _ = review("parameter_server", 4, goal={"target_examples_per_second": 30000})
    assert "STALE_GRADIENTS_IGNORED" not in codes


def test_tpu_without_static_shapes():
    tpu_hw = {"device": "TPU-v4-8", "intra_host": None, "devices_per_host": 4, "max_hosts": 1}
    codes, _ = review("tpu", hardware=tpu_hw, workload={"dynamic_shapes": True},
                      goal={"target_examples_per_second": 100})
    assert codes == {"TPU_WITHOUT_STATIC_SHAPES"}
    codes, _ = review("tpu", hardware=tpu_hw, goal={"target_examples_per_second": 100})
    assert codes == set()


def test_proposal_outside_the_fleet_is_warned():
    _, d = review("multi_worker_mirrored", 32, goal={"target_examples_per_second": 30000})
    assert "PROPOSAL_EXCEEDS_FLEET" in d.codes
    _, d = review("tpu")
    assert "PROPOSAL_WRONG_HARDWARE" in d.codes and d.proposal_prediction["examples_per_second"] is None


def test_parameter_servers_proposed_with_nothing_forcing_asynchrony_are_named():
    """The seed's "ignoring stale gradients when choosing parameter servers": with no preemption,
    stragglers or embedding tables, a parameter-server proposal buys staleness for nothing; the
    warning names the synchronous plan. A preemptible fleet is a cause (no warning); a goal of
    reproducible runs is the review's STALE_GRADIENTS_IGNORED instead."""
    goal = {"target_examples_per_second": 30000}
    _, plain = review("parameter_server", 4, goal=goal)
    [f] = [f for f in plain.warnings if f.code == "PROPOSAL_ASYNC_WITHOUT_CAUSE"]
    assert f"{plain.verdict} on {plain.hosts} host(s) meets the target" in f.message
    assert plain.verdict == "multi_worker_mirrored"
    _, spot = review("parameter_server", 4, goal=goal, fleet={"preemptible": True, "preemptions_per_host_hour": 2})
    assert "PROPOSAL_ASYNC_WITHOUT_CAUSE" not in spot.codes
    codes, repro = review("parameter_server", 4, goal={**goal, "reproducible": True})
    assert "STALE_GRADIENTS_IGNORED" in codes and "PROPOSAL_ASYNC_WITHOUT_CAUSE" not in repro.codes
