"""Names a package exports, loaded when first asked for (PEP 562): importing one light
module of rung does not build the scenario's pydantic models and the ladder with it."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def names(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: each name of `where` from its module, kept in the
    package once loaded."""
    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
