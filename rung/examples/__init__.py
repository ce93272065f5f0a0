"""Bundled examples: scenarios (`rung advise --example NAME`) and, later, workloads."""

from __future__ import annotations

from pathlib import Path

SCENARIOS_DIR = Path(__file__).parent / "scenarios"
WORKLOADS_DIR = Path(__file__).parent / "workloads"
DEFAULT_SCENARIO = "multi-host"


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
