"""Typed inputs (scenario v1, hardware catalog), validated at the edge.

The names below load when first asked for (`rung._lazy`), so that importing one of the
package's light modules does not build the scenario's pydantic models."""

from rung import _lazy

__all__ = ["Scenario", "load_scenario", "parse_scenario"]
__getattr__ = _lazy.names(__name__, {name: "rung.spec.scenario" for name in __all__})
