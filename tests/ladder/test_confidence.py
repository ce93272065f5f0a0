"""How sure a decision is: margins against hand-derived numbers, CLOSE_CALL inside the
noise and not outside it, the estimate caveat first, and the profile's CV kept out."""

from __future__ import annotations

import pytest

import rung
from rung.ladder.confidence import MIN_NOISE
from rung.spec import parse_scenario
from tests.conftest import valid_scenario

ONE = 256 / 0.21  # the valid scenario's one-device throughput (batch 256, 0.21 s steps)


def decide(**blocks):
    return rung.advise(parse_scenario(valid_scenario(**blocks)))


def test_margin_to_the_next_rung_is_where_one_device_stops_meeting_the_target():
    # target at 80% of one device: one device holds until its step is 1/0.8 = 1.25x longer,
    # then one host (mirrored) is needed
    d = decide(goal={"target_examples_per_second": 0.8 * ONE}, workload={"input_wait_seconds": 0.0})
    assert d.verdict == "single_device"
    slower = d.confidence["slower"]
    assert slower["factor"] == pytest.approx(1.25, rel=1e-3) and slower["verdict"] == "mirrored"
    assert not d.confidence["close_call"] and "CLOSE_CALL" not in d.codes


def test_a_margin_inside_the_measured_interval_is_a_close_call_naming_the_other_rung():
    d = decide(goal={"target_examples_per_second": 0.97 * ONE},
               workload={"input_wait_seconds": 0.0, "step_seconds_ci95": [0.19, 0.23],
                         "step_seconds_source": "measured"})
    assert d.verdict == "single_device" and d.confidence["close_call"]
    close = [f for f in d.warnings if f.code == "CLOSE_CALL"]
    assert close and "mirrored" in close[0].message
    assert d.to_json()["confidence"]["step_seconds"]["ci95"] == [0.19, 0.23]


def test_a_declared_step_carries_the_minimum_noise():
    near = decide(goal={"target_examples_per_second": (1 - MIN_NOISE / 2) * ONE},
                  workload={"input_wait_seconds": 0.0})
    far = decide(goal={"target_examples_per_second": (1 - 4 * MIN_NOISE) * ONE},
                 workload={"input_wait_seconds": 0.0})
    assert "CLOSE_CALL" in near.codes and "CLOSE_CALL" not in far.codes
    assert near.verdict == far.verdict == "single_device"


def test_input_wait_interval_across_the_threshold_is_a_close_call():
    # 0.04 s of a 0.21 s step is 19%: not input-bound, but 0.045 (inside its interval) is 21%
    d = decide(workload={"input_wait_seconds": 0.04, "input_wait_seconds_ci95": [0.035, 0.045]},
               goal={"target_examples_per_second": 3 * ONE})
    assert d.verdict != "fix_input_pipeline"
    assert any(f.code == "CLOSE_CALL" and "input wait" in f.message for f in d.warnings)


def test_an_estimated_step_says_so_first():
    d = decide(workload={"step_seconds_source": "estimated"})
    assert d.warnings[0].code == "STEP_TIME_ESTIMATED"
    lo, hi = d.confidence["noise_band"]
    assert lo == pytest.approx(0.5) and hi == pytest.approx(2.0)


def test_json_carries_the_inputs_it_decided_from():
    j = decide(workload={"optimizer_slot_bytes": 1e6, "flops_per_example": 2e9}).to_json()
    w = j["inputs"]["workload"]
    assert w["optimizer_slot_bytes"] == 1e6 and w["flops_per_example"] == 2e9 and w["step_seconds"] == 0.21
    assert set(j["confidence"]) >= {"step_seconds", "input_wait_seconds", "noise_band", "slower", "faster",
                                    "close_call"}


def test_the_profiles_cv_never_reaches_the_fleet():
    """A profile whose own steps vary by 30% (a noisy laptop) must not make identical
    hosts look like stragglers: the scenario keeps the declared cross-worker CV."""
    from rung.spec.profile import Profile, workload_block

    profile = {"schema": "rung/profile/v1", "workload": "noisy.py", "device": "CPU:0", "device_name": "a laptop",
               "params": 25.6e6, "embedding_params": 0, "param_dtype": "float32", "mixed_precision": False,
               "optimizer": "momentum", "activation_bytes_per_example": 1e7, "per_device_batch": 64,
               "step_seconds": 0.1, "input_wait_seconds": 0.001, "step_time_cv": 0.3, "dynamic_shapes": False}
    block = workload_block(Profile.model_validate(profile))
    assert "step_time_cv" not in block
    s = valid_scenario(workload=block, goal={"target_examples_per_second": 30 * 640})
    d = rung.advise(parse_scenario(s))
    assert d.verdict == "multi_worker_mirrored" and "STRAGGLERS" not in d.codes
    declared = rung.advise(parse_scenario(valid_scenario(workload={**block, "step_time_cv": 0.3},
                                                         goal={"target_examples_per_second": 30 * 640})))
    assert declared.verdict == "parameter_server"  # declared fleet variation is another matter


def _multi_host(target=None):
    from rung.examples import scenario_examples
    from rung.spec import load_scenario

    s = load_scenario(scenario_examples()["multi-host"])
    if target is not None:
        s = s.model_copy(update={"goal": s.goal.model_copy(update={"target_examples_per_second": target})})
    return s


def test_a_plan_whose_size_moves_inside_the_noise_says_so_and_sizes_for_the_slow_end():
    d = rung.advise(_multi_host())
    hosts, rate = d.hosts, d.prediction.examples_per_second
    assert d.verdict == "multi_worker_mirrored" and hosts >= 2
    # the target just under what those hosts give: they are still the fewest that meet it
    # (one fewer gave less than the old, lower target), and with the step 5% slower (the
    # declared noise) every host gives about 5% less, so 0.99 of the rate needs one host more
    tight = rung.advise(_multi_host(0.99 * rate))
    assert (tight.verdict, tight.hosts) == ("multi_worker_mirrored", hosts)
    slow = tight.confidence["plan_in_noise_band"]["slow"]
    assert slow["factor"] == pytest.approx(1 + MIN_NOISE) and slow["hosts"] == hosts + 1 and slow["meets_goal"]
    # 5% faster: one host fewer would have to carry 1/(hosts-1) more than each does now
    assert "fast" not in tight.confidence["plan_in_noise_band"]
    from rung.report.terminal import margin_line

    line = margin_line(tight).plain
    assert f"{hosts} hosts" in line and f"{hosts + 1} hosts" in line and "plan for the slow end" in line
    assert tight.to_json()["confidence"]["plan_in_noise_band"]["slow"]["hosts"] == hosts + 1


def test_a_plan_far_from_its_next_size_has_nothing_to_say_about_it():
    # the target where the plan's hosts give 1.2x of it: 5% either way keeps the same fleet
    d = rung.advise(_multi_host())
    roomy = rung.advise(_multi_host(d.prediction.examples_per_second / 1.2))
    assert roomy.hosts == d.hosts and "plan_in_noise_band" not in roomy.confidence
    from rung.report.terminal import margin_line

    assert "plan's size" not in margin_line(roomy).plain


@pytest.mark.parametrize("workload,band,remedy", [
    # an estimate for the scenario's device: its 2x interval, and only a step measured there narrows it
    ({"step_seconds_source": "estimated"}, "the estimate's 95% interval (50% faster to 100% slower)",
     "a step measured on A100-80GB separates them"),
    # measured with an interval: more steps on a quiet machine narrow it
    ({"step_seconds_source": "measured", "step_seconds_ci95": [0.19, 0.23]},
     "the measurement's noise (10% faster to 10% slower)", "measure again with more --steps"),
    # declared without one: the least noise any step carries, 5% either way
    ({}, "the least noise any step time carries (5% faster to 5% slower)", "a step measured with rung profile"),
])
def test_a_close_call_says_what_would_separate_its_outcomes(workload, band, remedy):
    """An estimated step's CLOSE_CALL told the user to measure again with more --steps on a
    quiet machine, which cannot narrow an estimate for a device the machine does not have
    (an EfficientNetB0 planned for A100 hosts from this CPU, 2026-12-07)."""
    d = decide(goal={"target_examples_per_second": 0.97 * ONE}, workload={"input_wait_seconds": 0.0, **workload})
    said = [f.message for f in d.warnings if f.code == "CLOSE_CALL"]
    assert len(said) == 1 and band in said[0] and remedy in said[0], said
    # more steps here narrow a measurement, never an estimate for another device
    assert ("--steps" in said[0]) != (workload.get("step_seconds_source") == "estimated")
