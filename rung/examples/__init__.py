"""Bundled examples: scenarios (`rung advise --example NAME`) and, later, workloads."""

from __future__ import annotations

from pathlib import Path

SCENARIOS_DIR = Path(__file__).parent / "scenarios"
DEFAULT_SCENARIO = "multi-host"


def scenario_examples() -> dict[str, Path]:
    """Example name (file name without its number prefix) -> path."""
    out = {}
    for p in sorted(SCENARIOS_DIR.glob("*.yaml")):
        stem = p.stem
        name = stem.split("-", 1)[1] if stem[:2].isdigit() and "-" in stem else stem
        out[name] = p
    return out
