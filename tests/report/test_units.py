"""The figures people read: three significant digits, never an exponent, at every unit's
edge (a byte count of 1000-1023 KiB printed "1.01e+03 KiB" in `rung bench`'s table)."""

import re

import pytest

from rung import units as u

EXPONENT = re.compile(r"\de[+-]")


@pytest.mark.parametrize("nbytes,text", [
    (5, "5 B"), (1024, "1 KiB"), (999.4 * 1024, "999 KiB"),
    (1010 * 1024, "1,010 KiB"),           # keras.io's miniature GPT's gradients under mirrored:2
    (1023.9 * 1024, "1,024 KiB"), (1.5 * 2**20, "1.5 MiB"), (2000 * 2**40, "2,000 TiB"),
])
def test_bytes(nbytes, text):
    assert u.gib(nbytes) == text


@pytest.mark.parametrize("s,text", [
    (2.5e-7, "0.25 µs"), (999.7e-6, "1 ms"), (0.0625, "62.5 ms"), (0.99949, "999 ms"),
    (0.9996, "1.00 s"), (12.345, "12.35 s"), (99.996, "100 s"), (150, "150 s"),
])
def test_seconds(s, text):
    assert u.seconds(s) == text


@pytest.mark.parametrize("n,text", [
    (602, "602 FLOP"), (43_600, "43.6 kFLOP"), (502e6, "502 MFLOP"), (999.96e6, "1 GFLOP"),
    (24.6e9, "24.6 GFLOP"), (1.6e13, "16,000 GFLOP"),
])
def test_flop(n, text):
    assert u.flop(n) == text


@pytest.mark.parametrize("f,text", [
    (0.0, "0%"), (0.003, "<1%"),          # 29,794 ex/s of a target of 10 M said "0% of the target"
    (0.005, "<1%"), (0.0051, "1%"), (0.17, "17%"), (1.0, "100%"),
])
def test_percent_says_a_share_that_is_there(f, text):
    assert u.percent(f) == text


def test_nothing_is_printed_as_an_exponent():
    # bytes from one to petabytes, seconds from a nanosecond to a day, rates from one
    # example an hour to millions a second
    for m in (1.0, 0.9996, 0.99951, 1.0001, 9.9996, 99.96, 999.6, 1023.6):
        for k in range(0, 16):
            assert not EXPONENT.search(u.gib(m * 10.0 ** k)), m * 10.0 ** k
        for k in range(-9, 5):
            assert not EXPONENT.search(u.seconds(m * 10.0 ** k)), m * 10.0 ** k
        for k in range(0, 16):
            assert not EXPONENT.search(u.flop(m * 10.0 ** k)), m * 10.0 ** k
        for k in range(-3, 7):
            assert not EXPONENT.search(u.rate(m * 10.0 ** k)), m * 10.0 ** k


def test_a_proposal_is_reviewed_against_the_target():
    """A proposal with no classic mistake may still fall short: the review's line says by how
    much (2 hosts of the valid scenario's 8 A100s for a 30,000 ex/s target)."""
    import io

    from rich.console import Console

    import rung
    from rung.model.memory import usable_device_bytes
    from rung.report.terminal import render
    from rung.spec import parse_scenario
    from tests.conftest import valid_scenario

    assert u.against_target(17_498, 30_000) == ", under the target of 30,000 ex/s (58% of it)"
    assert u.against_target(30_000, 30_000) == ", meeting the target" and u.against_target(None, 1) == ""
    s = parse_scenario(valid_scenario(goal={"target_examples_per_second": 30000},
                                      proposal={"strategy": "multi_worker_mirrored", "hosts": 2}))
    d = rung.advise(s)
    out = io.StringIO()
    render(s, d, usable_device_bytes(s.device_memory_bytes), Console(file=out, width=200))
    text = out.getvalue()
    eps = d.proposal_prediction["examples_per_second"]
    assert eps < 30000 and f"predicted {u.rate(eps)}" in text and "under the target of 30,000 ex/s" in text
    # the proposal's own warning sits with its review, after the review's line, not among the others
    review = text.index("Review of the proposal")
    assert text.index("PROPOSAL_BELOW_TARGET") > review
    assert "PROPOSAL_BELOW_TARGET" in [f.code for f in d.warnings]
