"""The ladder: from a scenario to a Decision (verdict, reasons, rejected rungs, review)."""

from rung.ladder.decision import Decision, Finding, Rejection
from rung.ladder.walk import advise

__all__ = ["Decision", "Finding", "Rejection", "advise"]
