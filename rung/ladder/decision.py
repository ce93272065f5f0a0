"""A decision is data: verdict, predicted numbers, reasons, rejected rungs, review.

`Decision.to_json()` gives decision v1 (shared/contract/scenario-v1.md) plus fields
rung adds (`name`, `target_examples_per_second`, `breakdown`, `code`, `takes_on`,
`after_fix`, `inputs` (the workload it decided from), `confidence` (the step time's
interval and source, and the margin by which the verdict holds), and
`hosts`/`devices`/`predicted` on each rejected rung).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from rung.ladder.codes import STRATEGY
from rung.model.throughput import Prediction

SCHEMA = "rung/decision/v1"
SIGNIFICANT_DIGITS = 6


def _round(v):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if v == 0 or not math.isfinite(v):
            return v
        return float(f"{v:.{SIGNIFICANT_DIGITS}g}")
    if isinstance(v, dict):
        return {k: _round(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_round(x) for x in v]
    return v


@dataclass(frozen=True)
class Finding:
    code: str
    message: str

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Rejection:
    verdict: str
    codes: tuple[str, ...]
    message: str
    prediction: Optional[Prediction] = None

    def to_json(self) -> dict:
        p = self.prediction
        return {
            "verdict": self.verdict,
            "codes": list(self.codes),
            "message": self.message,
            "hosts": p.hosts if p else None,
            "devices": p.devices if p else None,
            "predicted": _round(p.to_dict()) if p else None,
        }


@dataclass
class Decision:
    verdict: str
    hosts: Optional[int]
    devices: Optional[int]
    ps_tasks: int
    meets_goal: bool
    prediction: Optional[Prediction]
    memory_bytes_per_device: float
    reasons: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    review: Optional[list[Finding]] = None
    proposal_prediction: Optional[dict] = None
    name: Optional[str] = None
    target_examples_per_second: float = 0.0
    code: Optional[str] = None
    takes_on: list[str] = field(default_factory=list)
    after_fix: Optional[dict] = None
    inputs: Optional[dict] = None
    confidence: Optional[dict] = None
    option: str = "hardware"
    options: list[dict] = field(default_factory=list)
    strategy_options: dict = field(default_factory=dict)
    sharding: Optional[list[dict]] = None

    @property
    def strategy(self) -> Optional[str]:
        return STRATEGY[self.verdict]

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.reasons] + [f.code for f in self.warnings]

    def predicted(self) -> dict:
        if self.prediction is None:
            return {"examples_per_second": None, "scaling_efficiency": None, "step_seconds": None,
                    "memory_bytes_per_device": self.memory_bytes_per_device}
        return self.prediction.to_dict()

    def breakdown(self) -> Optional[dict]:
        p = self.prediction
        if p is None:
            return None
        return {
            "devices_per_host": p.devices_per_host,
            "compute_seconds": p.compute_seconds,
            "input_wait_seconds": p.input_wait_seconds,
            "intra_host_seconds": p.intra_host_seconds,
            "inter_host_seconds": p.inter_host_seconds,
            "sparse_exchange_seconds": p.sparse_exchange_seconds,
            "ps_exchange_seconds": p.ps_exchange_seconds,
            "straggler_seconds": p.straggler_seconds,
            "sync_seconds": p.sync_seconds,
            "sync_batch_norm_seconds": p.sync_batch_norm_seconds,
            "logged_values_seconds": p.logged_values_seconds,
            "mirrored_variables_seconds": p.mirrored_variables_seconds,
            "load_imbalance_seconds": p.load_imbalance_seconds,
            "goodput": p.goodput,
            "input_capped": p.input_capped,
            "staleness_steps": p.staleness_steps,
            "checkpoint_interval_seconds": p.checkpoint_interval_seconds,
            "checkpoint_seconds": p.checkpoint_seconds if p.checkpoint_interval_seconds else None,
        }

    def to_json(self) -> dict:
        out = {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "strategy": self.strategy,
            "hosts": self.hosts,
            "devices": self.devices,
            "ps_tasks": self.ps_tasks,
            "meets_goal": self.meets_goal,
            "predicted": _round(self.predicted()),
            "reasons": [f.to_json() for f in self.reasons],
            "warnings": [f.to_json() for f in self.warnings],
            "rejected": [r.to_json() for r in self.rejected],
        }
        if self.review is not None:
            out["review"] = [f.to_json() for f in self.review]
            out["proposal_predicted"] = _round(self.proposal_prediction)
        out["name"] = self.name
        out["target_examples_per_second"] = self.target_examples_per_second
        out["breakdown"] = _round(self.breakdown())
        out["code"] = self.code
        out["takes_on"] = list(self.takes_on)
        out["after_fix"] = _round(self.after_fix)
        out["inputs"] = _round(self.inputs)
        out["confidence"] = _round(self.confidence)
        out["option"] = self.option
        out["options"] = _round(self.options)
        out["strategy_options"] = dict(self.strategy_options)
        if self.sharding is not None:
            out["sharding"] = _round(self.sharding)
        return out
