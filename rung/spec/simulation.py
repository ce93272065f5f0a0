"""Simulation v1 (`rung simulate --json`) as a typed model: what `rung report` reads back."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, allow_inf_nan=False)


class SyncBlock(_Record):
    examples_per_second: Optional[float]
    step_seconds_mean: Optional[float]
    straggler_seconds_mean: Optional[float]
    goodput: Optional[float]


class AsyncBlock(_Record):
    examples_per_second: Optional[float]
    staleness_mean: Optional[float]
    staleness_p95: Optional[float]


class ClosedForm(_Record):
    sync: SyncBlock
    async_: AsyncBlock = Field(alias="async")


class Distribution(_Record):
    kind: str
    cv: float


class Simulation(_Record):
    schema_: Literal["rung/simulation/v1"] = Field(alias="schema")
    workers: int = Field(ge=1)
    steps: int = Field(ge=1)
    seed: int
    step_distribution: Optional[Distribution] = None
    sync: SyncBlock
    async_: AsyncBlock = Field(alias="async")
    closed_form: ClosedForm
    wall_seconds: float
    notes: list[str] = []   # what the figures assume and the scenario's device cannot hold

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")
