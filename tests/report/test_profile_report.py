"""The profile report's borderline line: pure formatting, no TensorFlow."""

from rung.report.profile import _borderline


def _p(lo, hi, step=0.002):
    return {"step_seconds": step, "input_wait_seconds_ci95": [lo, hi]}


def test_a_wait_interval_across_the_input_bound_line_is_called_borderline():
    # the CI run that failed: 0.37 ms net wait of a 1.82 ms step; say its interval is 0.25-0.50 ms
    line = _borderline(_p(0.00025, 0.00050, step=0.00182))
    assert line.startswith("borderline") and "14%-27%" in line and "20%" in line


def test_an_interval_on_one_side_is_not():
    assert _borderline(_p(0.0, 0.00039)) == ""        # 0-19.5% of 2 ms: fed
    assert _borderline(_p(0.00041, 0.0008)) == ""     # 20.5-40%: input-bound either way
    assert _borderline({"step_seconds": 0.002, "input_wait_seconds_ci95": None}) == ""


def test_the_pipeline_alone_says_how_many_devices_one_host_feeds():
    from rung.report.profile import pipeline_alone

    # a 36 ms step on this device, 6.9 ms a batch from the pipeline alone: 36 / 6.9 = 5.2
    fed = pipeline_alone({"pipeline_seconds_per_batch": 0.0069, "step_seconds": 0.036}, bound=False)
    assert fed == ("delivers a batch every 6.9 ms beyond that cost: about 5 devices as fast as this one, on one "
                   "host with this CPU, before they wait on it")
    # input-bound: the device already waits, and the profile says so in its own line
    assert pipeline_alone({"pipeline_seconds_per_batch": 0.05, "step_seconds": 0.05}, bound=True) == \
        "delivers a batch every 50 ms beyond that cost"
    assert pipeline_alone({"pipeline_seconds_per_batch": 0.0, "step_seconds": 0.05}, bound=False) == \
        "costs no more per batch than that fixed cost"
