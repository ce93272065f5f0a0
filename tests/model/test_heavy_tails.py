"""Heavy-tailed step times: the slowest of N has no closed form in rung's model, so the
ladder simulates the fleet's steps (rung.model.straggler) and says so
(HEAVY_TAILED_STEPS). The oracle is exact and independent of the code: the largest of N
lognormals is exp(mu + sigma x the largest of N normals), integrated on a grid."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rung.ladder import advise
from rung.model import straggler
from rung.model.simulate import simulate
from rung.spec import parse_scenario
from tests.conftest import valid_scenario


def exact_lognormal_excess(cv: float, n: int) -> float:
    """E[max of n lognormals of mean 1 and coefficient of variation cv] - 1."""
    g = np.linspace(-10, 10, 40001)
    pdf = np.exp(-g * g / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.array([math.erf(x / math.sqrt(2)) for x in g]))
    s2 = math.log1p(cv * cv)
    density = n * pdf * np.exp((n - 1) * np.log(np.maximum(cdf, 1e-300)))
    return float(np.trapezoid(np.exp(-s2 / 2 + math.sqrt(s2) * g) * density, g)) - 1


@pytest.mark.parametrize("cv", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("n", [2, 8, 64, 512, 2000])
def test_the_simulated_slowest_of_n_meets_the_exact_order_statistic(cv, n):
    assert straggler.simulated_slowest_excess("lognormal", cv, n) == pytest.approx(exact_lognormal_excess(cv, n),
                                                                                   rel=0.02)


def test_the_normal_closed_form_is_unchanged():
    # Harter (1961): E[max of 10 standard normals] = 1.53875
    assert straggler.straggler_seconds(1.0, 0.1, 10) == pytest.approx(0.153875, abs=1e-5)
    assert straggler.straggler_seconds(1.0, 0.1, 10, "lognormal") != pytest.approx(0.153875, abs=1e-3)


def fleet(distribution: str, cv: float = 0.1):
    return parse_scenario(valid_scenario(
        workload={"step_time_cv": cv, "step_time_distribution": distribution},
        hardware={"devices_per_host": 1, "intra_host": None, "max_hosts": 1024},
        goal={"target_examples_per_second": 200_000}))


def test_heavy_tails_need_more_hosts_and_the_decision_says_why():
    normal, heavy = advise(fleet("normal")), advise(fleet("lognormal"))
    assert normal.verdict == heavy.verdict == "multi_worker_mirrored"
    assert heavy.hosts > normal.hosts       # each step waits longer for its slowest worker
    p = heavy.prediction
    assert p.straggler_seconds == pytest.approx(p.compute_seconds * exact_lognormal_excess(0.1, p.hosts), rel=0.02)
    assert "HEAVY_TAILED_STEPS" in heavy.codes and "HEAVY_TAILED_STEPS" not in normal.codes
    note = next(f.message for f in heavy.warnings if f.code == "HEAVY_TAILED_STEPS")
    assert "simulated" in note and f"{p.hosts} hosts" in note


def test_a_simulated_decision_is_the_same_every_time():
    a, b = advise(fleet("lognormal")).to_json(), advise(fleet("lognormal")).to_json()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_rung_simulate_with_other_draws_agrees_with_the_ladders_wait():
    """The simulation command (its own seed and steps) and the ladder's simulated wait are
    one model: they agree within the simulation's own noise."""
    s = fleet("lognormal", cv=0.3)
    out = simulate(s, 256, 2000, seed=11)
    assert out["step_distribution"]["kind"] == "lognormal"
    assert out["sync"]["straggler_seconds_mean"] == pytest.approx(
        out["closed_form"]["sync"]["straggler_seconds_mean"], rel=0.03)


def test_an_unknown_distribution_is_refused_with_its_field():
    from rung.errors import InputError

    with pytest.raises(InputError) as e:
        parse_scenario(valid_scenario(workload={"step_time_distribution": "pareto"}))
    assert "workload.step_time_distribution" in e.value.line()
