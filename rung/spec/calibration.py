"""Calibration v1: link constants `rung bench --calibrate` measured on real runs, which
`rung advise --calibration FILE` decides with. Validated like a scenario: a bad file is
one line naming the field (exit 2). Pure: no TensorFlow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rung.errors import InputError
from rung.spec.scenario import Count, NonNegative, Positive, _describe, _message, first_error
from rung.spec.yamlio import load_mapping

SCHEMA = "rung/calibration/v1"
# the parameter-server costs a calibration may carry (measured together, kept together)
PS_FIELDS = ("ps_dispatch_seconds", "ps_looped_dispatch_share", "ps_variable_seconds", "ps_metric_variable_seconds",
             "ps_workers", "ps_cores")
# a measured all-reduce share above 1.5 of the nominal rate is a broken measurement
Efficiency = Annotated[float, Field(gt=0, le=1.5)]


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class Point(_Block):
    """One multi-worker run the fit used: what its all-reduce should take on the measured
    goodput (`wire_seconds`) against what it took (`comm_seconds`)."""

    run: str
    link_mbit: Optional[Positive] = None
    workers: Count
    link_bytes_per_second: Positive
    cores: Count
    wire_seconds: NonNegative
    comm_seconds: float
    streaming_bytes_per_core: NonNegative


class Calibration(_Block):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True,
                              populate_by_name=True)

    schema_: Literal["rung/calibration/v1"] = Field(alias="schema")
    fitted: Literal[True]
    # what rung advise uses: the share of a link's nominal rate an all-reduce reaches, and
    # the latency of one ring hop (half the measured round trip)
    inter_host_efficiency: Optional[Efficiency] = None
    inter_host_hop_seconds: Optional[Positive] = None
    # properties of the test bed (shared cores): for the bench's own predictions only
    allreduce_share_of_goodput: Positive
    testbed_cpu_seconds_per_byte: NonNegative = 0.0
    # a fixed cost of every multi-worker step between test hosts (0 in files written
    # before it was fitted)
    testbed_sync_seconds: NonNegative = 0.0
    # false: too few points to fit both, and the exchange was a fixed cost rather than a
    # slow wire; the share is taken as 1 and inter_host_efficiency is not given
    share_fitted: bool = True
    link_mbit: Optional[Positive] = None
    # parameter-server costs `rung.bench.psbench` measured on the benching machine (one PS
    # task and `ps_workers` workers over loopback), when the bench had a parameter-server
    # run: Keras fit's cost per step at the coordinator (the fleet's dispatch cap in rung
    # advise), its share left at 8 steps a dispatch, and one variable's remote read and
    # update. Absent: rung's defaults.
    ps_dispatch_seconds: Optional[Positive] = None
    # that cost per step at compile(steps_per_execution=8), as a share of it at 1
    ps_looped_dispatch_share: Optional[Efficiency] = None
    ps_variable_seconds: Optional[NonNegative] = None
    ps_metric_variable_seconds: Optional[NonNegative] = None
    ps_workers: Optional[Count] = None
    ps_cores: Optional[Count] = None
    fitted_on: list[str] = []
    points: list[Point] = []
    measured_at: str
    note: str = ""
    written_to: Optional[str] = None


def parse_calibration(data, where: str = "<calibration>") -> Calibration:
    if not isinstance(data, dict):
        raise InputError(where, None, f"expected a mapping of keys, received {_describe(data)}")
    if data.get("schema") != SCHEMA:
        got = "no schema key" if "schema" not in data else f"schema {_describe(data['schema'])}"
        raise InputError(where, "schema", f"expected {SCHEMA!r}, received {got} (a file from an older rung: "
                                          "write it again with rung bench --calibrate)")
    try:
        c = Calibration.model_validate(data)
    except ValidationError as e:
        path, msg = _message(first_error(e.errors()), Calibration)
        raise InputError(where, path, msg) from None
    if c.inter_host_efficiency is None and c.inter_host_hop_seconds is None:
        raise InputError(where, "inter_host_efficiency", "neither inter_host_efficiency nor inter_host_hop_seconds "
                                                         "is given: nothing to calibrate with")
    return c


def keep_ps_costs(fitted: dict, earlier: Optional[Calibration]) -> dict:
    """A calibration fitted by a bench that measured no parameter-server costs keeps the
    ones of the file it was merged with (`--calibration-merge`); measured ones replace them."""
    if earlier is not None and fitted.get("ps_dispatch_seconds") is None:
        fitted.update(earlier.model_dump(include=set(PS_FIELDS), exclude_none=True))
    return fitted


def load_calibration(path: str | Path) -> Calibration:
    return parse_calibration(load_mapping(path, "calibration file"), str(path))
