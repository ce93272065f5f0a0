"""Hypothesis strategies: random but valid scenarios across the whole input space."""

from __future__ import annotations

from hypothesis import strategies as st

from rung.spec.catalog import CATALOG


def log_uniform(lo: float, hi: float):
    return st.floats(min_value=0.0, max_value=1.0).map(lambda x: lo * (hi / lo) ** x)


@st.composite
def scenarios(draw, proposal: bool = True) -> dict:
    params = draw(log_uniform(1e5, 1e11))
    step = draw(log_uniform(0.005, 5.0))
    workload = {
        "params": params,
        "embedding_params": params * draw(st.sampled_from([0.0, 0.0, 0.3, 0.9, 0.99])),
        "param_dtype": draw(st.sampled_from(["float32", "bfloat16", "float16"])),
        "mixed_precision": draw(st.booleans()),
        "optimizer": draw(st.sampled_from(["sgd", "momentum", "adam", "adamw", "adagrad", "rmsprop", "adafactor"])),
        "activation_bytes_per_example": draw(st.sampled_from([0.0, 1e5, 1e7, 1e8, 1e9])),
        "per_device_batch": draw(st.sampled_from([1, 8, 32, 128, 512, 4096])),
        "step_seconds": step,
        "input_wait_seconds": step * draw(st.sampled_from([0.0, 0.01, 0.1, 0.19, 0.21, 0.5])),
        "step_time_cv": draw(st.sampled_from([0.0, 0.02, 0.05, 0.2])),
        "dynamic_shapes": draw(st.booleans()),
    }
    device = draw(st.sampled_from(sorted(CATALOG)))
    hardware = {
        "device": device,
        # a TPU host holds at most its generation's count (v4: 4 chips); more is bad input
        "devices_per_host": draw(st.sampled_from([n for n in (1, 2, 4, 8)
                                                  if n <= (CATALOG[device].host_devices or n)])),
        "inter_host_gbps": draw(st.sampled_from([1, 10, 25, 100, 400])),
        "max_hosts": draw(st.sampled_from([1, 2, 4, 16, 64])),
        "host_memory_gib": draw(st.sampled_from([64, 256, 1024])),
    }
    fleet = {"preemptible": draw(st.booleans())}
    if fleet["preemptible"] and draw(st.booleans()):
        fleet["preemptions_per_host_hour"] = draw(st.sampled_from([0.01, 0.1, 0.5, 2.0]))
    fleet["restart_seconds"] = draw(st.sampled_from([0, 60, 300, 900]))
    one_device = workload["per_device_batch"] / step
    goal = {"target_examples_per_second": one_device * draw(log_uniform(0.1, 500.0)),
            "reproducible": draw(st.booleans())}
    data = {"schema": "rung/scenario/v1", "workload": workload, "hardware": hardware,
            "fleet": fleet, "goal": goal}
    if proposal and draw(st.booleans()):
        strategy = draw(st.sampled_from(["single_device", "mirrored", "multi_worker_mirrored",
                                         "parameter_server", "tpu", "fix_input_pipeline", "needs_sharding"]))
        hosts = 1 if strategy in ("single_device", "mirrored", "fix_input_pipeline") else draw(st.integers(1, 32))
        data["proposal"] = {"strategy": strategy, "hosts": hosts}
    return data


@st.composite
def scenarios_with_offers(draw) -> dict:
    """A scenario without a proposal, with 1-4 offers of catalog GPUs (or the same device),
    priced, some with a measured step; a preference and sometimes a budget."""
    data = draw(scenarios(proposal=False))
    data["hardware"]["device"] = draw(st.sampled_from(GPUS))
    if draw(st.booleans()):
        data["hardware"]["usd_per_host_hour"] = draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))
    offers = []
    for i in range(draw(st.integers(1, 4))):
        offer = {"name": f"offer{i}", "usd_per_host_hour": draw(st.sampled_from([0.0, 1.0, 4.0, 16.0, 40.0])),
                 "device": draw(st.sampled_from(GPUS + [data["hardware"]["device"]])),
                 "devices_per_host": draw(st.sampled_from([1, 4, 8])),
                 "inter_host_gbps": draw(st.sampled_from([10, 100, 400])),
                 "max_hosts": draw(st.sampled_from([1, 2, 8, 32]))}
        if draw(st.booleans()):
            offer["step_seconds"] = data["workload"]["step_seconds"] * draw(st.sampled_from([0.25, 0.5, 1.0, 2.0]))
        offers.append(offer)
    data["offers"] = offers
    data["goal"]["prefer"] = draw(st.sampled_from(["simplicity", "cost"]))
    if draw(st.booleans()):
        data["goal"]["max_usd_per_hour"] = draw(st.sampled_from([1.0, 10.0, 100.0, 1000.0]))
    return data


GPUS = sorted(name for name, d in CATALOG.items() if not d.is_tpu and d.throughput is not None)
