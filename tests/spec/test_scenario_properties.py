"""Property-based tests of the loader: whatever the file holds, the result is a
Scenario or an InputError naming the file — never another exception."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rung.errors import InputError
from rung.spec import parse_scenario
from rung.spec.yamlio import load_mapping
from tests.conftest import valid_scenario

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12))
values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=3),
                                                   st.dictionaries(st.text(max_size=8), c, max_size=3)),
                      max_leaves=6)
BLOCKS = {"workload": ["params", "embedding_params", "param_dtype", "mixed_precision", "optimizer",
                       "activation_bytes_per_example", "per_device_batch", "step_seconds",
                       "input_wait_seconds", "step_time_cv", "dynamic_shapes"],
          "hardware": ["device", "device_memory_gib", "devices_per_host", "intra_host", "intra_host_gbps",
                       "inter_host_gbps", "max_hosts", "host_memory_gib"],
          "fleet": ["preemptible", "preemptions_per_host_hour", "restart_seconds"],
          "goal": ["target_examples_per_second", "reproducible"],
          "proposal": ["strategy", "hosts"]}


@st.composite
def mutated(draw):
    block = draw(st.sampled_from(sorted(BLOCKS)))
    key = draw(st.sampled_from(BLOCKS[block] + ["unknown_key"]))
    return valid_scenario(**{block: {key: draw(values)}}), f"{block}.{key}"


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(mutated())
def test_any_mutation_loads_or_names_its_field(case):
    data, path = case
    try:
        parse_scenario(data, "f.yaml")
    except InputError as e:
        assert e.where == "f.yaml"
        assert e.field, e.line()
        assert "\n" not in e.line()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes_the_reader(tmp_path_factory, text):
    p = tmp_path_factory.mktemp("y") / "s.yaml"
    p.write_text(text, encoding="utf-8")
    try:
        data = load_mapping(p)
    except InputError as e:
        assert e.where == str(p)
        return
    try:
        parse_scenario(data, str(p))
    except InputError:
        pass


@settings(max_examples=150, deadline=None)
@given(st.floats(min_value=1e3, max_value=1e12), st.integers(1, 16), st.integers(1, 64),
       st.floats(min_value=0.001, max_value=10), st.floats(min_value=0, max_value=0.99))
def test_valid_numbers_always_load(params, devices, hosts, step, wait_share):
    data = valid_scenario(workload={"params": params, "step_seconds": step,
                                    "input_wait_seconds": step * wait_share},
                          hardware={"devices_per_host": devices, "max_hosts": hosts})
    s = parse_scenario(data)
    assert s.workload.params == params
