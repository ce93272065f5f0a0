"""Typed inputs (scenario v1, hardware catalog), validated at the edge."""

from rung.spec.scenario import Scenario, load_scenario, parse_scenario

__all__ = ["Scenario", "load_scenario", "parse_scenario"]
