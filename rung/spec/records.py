"""Reading the JSON records rung writes (profile, bench, simulation) back in, for
`rung report` and `rung simulate`: a file that is not the record asked for is one line
naming the file, the field and what was expected (exit 2). Pure: no TensorFlow."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from rung.errors import InputError
from rung.spec.scenario import _describe, _message, first_error
from rung.spec.yamlio import load_mapping

M = TypeVar("M", bound=BaseModel)


def load_record(path: str | Path, model: type[M], schema: str, what: str, writer: str) -> M:
    """`path` as `model`, whose `schema` key must be `schema`; `writer` is the command that
    writes such a file (named in the error)."""
    return parse_record(load_mapping(path, what), str(path), model, schema, writer)


def parse_record(data: dict, where: str, model: type[M], schema: str, writer: str) -> M:
    """`data` (read from `where`) as `model`; see `load_record`."""
    if data.get("schema") != schema:
        got = "no schema key" if "schema" not in data else f"schema {_describe(data['schema'])}"
        raise InputError(where, "schema", f"expected {schema!r} (the JSON `{writer}` writes), received {got}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        field, msg = _message(first_error(e.errors()), model)
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


def load_ps_costs(path: str | Path, cores: int) -> dict:
    """The parameter-server costs measured by an earlier run on this machine, by worker
    count (`rung bench --ps-costs`): from a bench file (`rung bench --json`, its
    `ps_costs`) or from the JSON line `python -m rung.bench.psbench N` prints. Costs
    measured on a machine with another number of cores are refused: the coordinator and
    the workers share the cores, and what a step costs changes with them."""
    from rung.spec.benchresult import PsCosts

    where = str(path)
    data = load_mapping(path, "parameter-server costs file")
    if "schema" in data:
        from rung.spec.benchresult import BenchResult

        found = parse_record(data, where, BenchResult, "rung/bench/v1", "rung bench --json").ps_costs or {}
        prefix = "ps_costs."
    elif "keras_dispatch_seconds" in data:
        try:
            one = PsCosts.model_validate(data)
        except ValidationError as e:
            field, msg = _message(first_error(e.errors()), PsCosts)
            raise InputError(where, field, msg) from None
        found, prefix = {str(one.workers): one}, ""
    else:
        raise InputError(where, None, "expected a rung/bench/v1 file (the JSON `rung bench --json` writes) or the "
                                      "line `python -m rung.bench.psbench N` prints, received neither (no schema "
                                      "key and no keras_dispatch_seconds)")
    out = {}
    for n, m in found.items():
        if m is None:
            continue
        if m.cores is not None and m.cores != cores:
            raise InputError(where, f"{prefix}{n}.cores" if prefix else "cores",
                             f"measured on a machine with {m.cores} cores, and this one has {cores}: measure here "
                             "(leave out --ps-costs)")
        # the bench that reuses it starts from the loopback figure (rung.bench.bench._ps_costs)
        out[n] = m.model_copy(update={"reused_from": m.reused_from or where})
    if not out:
        raise InputError(where, "ps_costs", "holds no parameter-server costs (the bench that wrote it ran no "
                                            "parameter_server run)")
    return out
