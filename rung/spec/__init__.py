"""Typed inputs (scenario v1, hardware catalog), validated at the edge.

The names below load when first asked for (PEP 562), so that importing one of the
package's light modules does not build the scenario's pydantic models."""

from __future__ import annotations

import importlib

__all__ = ["Scenario", "load_scenario", "parse_scenario"]


def __getattr__(name: str):
    if name in __all__:
        value = getattr(importlib.import_module("rung.spec.scenario"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rung.spec' has no attribute {name!r}")
