"""The ladder: from a scenario to a Decision (verdict, reasons, rejected rungs, review).

The names below load when first asked for (PEP 562), so that importing
`rung.ladder.codes` alone does not build the model and the walk."""

from __future__ import annotations

import importlib

__all__ = ["Decision", "Finding", "Rejection", "advise"]
_WHERE = {"Decision": "rung.ladder.decision", "Finding": "rung.ladder.decision",
          "Rejection": "rung.ladder.decision", "advise": "rung.ladder.walk"}


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rung.ladder' has no attribute {name!r}")
