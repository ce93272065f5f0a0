"""rung: decide how to distribute TensorFlow training, from measurements.

    >>> import rung
    >>> decision = rung.advise(rung.load_scenario("scenario.yaml"))
    >>> decision.verdict, decision.to_json()["predicted"]

The names below are loaded when first asked for (PEP 562): a process that imports one
module of rung (train.py's checks, a bench task) does not build the scenario's pydantic
models and the ladder with it.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"
__all__ = ["Decision", "InputError", "Scenario", "advise", "load_scenario", "__version__"]

_WHERE = {"InputError": "rung.errors", "Decision": "rung.ladder", "advise": "rung.ladder",
          "Scenario": "rung.spec", "load_scenario": "rung.spec"}


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rung' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
