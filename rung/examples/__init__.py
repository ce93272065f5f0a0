"""Bundled examples: scenarios (`rung advise --example NAME`) and, later, workloads."""

from __future__ import annotations

from pathlib import Path

SCENARIOS_DIR = Path(__file__).parent / "scenarios"
WORKLOADS_DIR = Path(__file__).parent / "workloads"
DEFAULT_SCENARIO = "multi-host"


def pick(examples: dict[str, Path], name: str) -> Path:
    """The example called `name`, or an InputError listing the ones there are."""
    from rung.errors import InputError

    if name not in examples:
        raise InputError("--example", None, f"unknown example {name!r}; expected one of: {', '.join(examples)}")
    return examples[name]


def scenario_examples() -> dict[str, Path]:
    """Example name (file name without its number prefix) -> path."""
    out = {}
    for p in sorted(SCENARIOS_DIR.glob("*.yaml")):
        stem = p.stem
        name = stem.split("-", 1)[1] if stem[:2].isdigit() and "-" in stem else stem
        out[name] = p
    return out


def workload_examples() -> dict[str, Path]:
    """Bundled workload files (`rung profile --example NAME`), by file stem."""
    return {p.stem: p for p in sorted(WORKLOADS_DIR.glob("*.py")) if not p.stem.startswith("_")}
