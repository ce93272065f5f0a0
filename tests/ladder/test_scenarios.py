"""Every example scenario (bundled copies, and ../shared/scenarios when present) against
what a correct decision must contain (expected.json)."""

from __future__ import annotations

import json

import pytest

import rung
from tests.conftest import expected_cases

CASES = expected_cases()


@pytest.mark.parametrize("path,exp", CASES, ids=[f"{p.parent.parent.name}/{p.name}" for p, _ in CASES])
def test_example_scenario(path, exp):
    d = rung.advise(rung.load_scenario(path))
    j = json.loads(json.dumps(d.to_json()))
    assert j["verdict"] in exp["verdict"]
    codes = {f["code"] for f in j["reasons"] + j["warnings"]}
    assert set(exp.get("codes", [])) <= codes
    assert not set(exp.get("forbid_codes", [])) & codes
    if "option" in exp:
        assert j["option"] == exp["option"]
    for key, value in exp.get("strategy_options", {}).items():
        assert j["strategy_options"].get(key) == value, key
    if "review" in exp or "forbid_review" in exp:
        review = {f["code"] for f in j["review"]}
        assert set(exp.get("review", [])) <= review
        assert not set(exp.get("forbid_review", [])) & review


def test_bundled_examples_match_shared_when_present():
    from tests.conftest import BUNDLED, SHARED
    if not (SHARED / "expected.json").exists():
        pytest.skip("../shared/scenarios not beside this checkout")
    # the bundled set is the shared one plus rung's own capacity-planning examples (11-)
    for p in SHARED.glob("*.yaml"):
        bundled = BUNDLED / p.name
        assert bundled.exists(), f"{p.name} is not bundled"
        assert bundled.read_text() == p.read_text(), f"bundled {p.name} differs from shared"
