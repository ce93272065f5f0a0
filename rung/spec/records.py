"""Reading the JSON records rung writes (profile, bench, simulation) back in, for
`rung report` and `rung simulate`: a file that is not the record asked for is one line
naming the file, the field and what was expected (exit 2). Pure: no TensorFlow."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from rung.errors import InputError
from rung.spec.scenario import _describe, _message
from rung.spec.yamlio import load_mapping

M = TypeVar("M", bound=BaseModel)


def load_record(path: str | Path, model: type[M], schema: str, what: str, writer: str) -> M:
    """`path` as `model`, whose `schema` key must be `schema`; `writer` is the command that
    writes such a file (named in the error)."""
    where = str(path)
    data = load_mapping(path, what)
    if data.get("schema") != schema:
        got = "no schema key" if "schema" not in data else f"schema {_describe(data['schema'])}"
        raise InputError(where, "schema", f"expected {schema!r} (the JSON `{writer}` writes), received {got}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        field, msg = _message(e.errors()[0], model)
        raise InputError(where, field, msg) from None


def load_profile(path: str | Path):
    from rung.spec.profile import Profile

    return load_record(path, Profile, "rung/profile/v1", "profile file", "rung profile --json")


def load_bench(path: str | Path):
    from rung.spec.benchresult import BenchResult

    return load_record(path, BenchResult, "rung/bench/v1", "bench file", "rung bench --json")


def load_simulation(path: str | Path):
    from rung.spec.simulation import Simulation

    return load_record(path, Simulation, "rung/simulation/v1", "simulation file", "rung simulate --json")
