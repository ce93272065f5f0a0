"""Memory per replica against hand-derived numbers (ZeRO section 3.1; Transformer Math 101)."""

import pytest

from rung.model import memory

P = 1e9


@pytest.mark.parametrize("optimizer,dtype,mixed,bytes_per_param", [
    ("adam", "bfloat16", True, 16),    # ZeRO: 2 + 2 + (4 master + 4 + 4) = 16
    ("adam", "float32", False, 16),    # 4 weights + 4 grads + 8 moments
    ("adamw", "float16", True, 16),
    ("sgd", "float32", False, 8),      # weights + grads
    ("momentum", "float32", False, 12),
    ("adagrad", "float32", False, 12),
    ("rmsprop", "float32", False, 12),
    ("adafactor", "float32", False, 8),  # factored moments counted as negligible
    ("sgd", "bfloat16", True, 8),      # 2 + 2 + 4 master
    ("adam", "bfloat16", False, 8),    # pure bf16: slots in bf16 too
    # Keras mixed_float16: float32 variables are the master; 4 weights + 4 grads + 2 fp16
    # compute copy + 8 float32 moments
    ("adam", "float32", True, 18),
    ("sgd", "float32", True, 10),
])
def test_state_bytes_per_parameter(optimizer, dtype, mixed, bytes_per_param):
    r = memory.replica_memory(P, optimizer, dtype, mixed, 0.0, 1)
    assert r.state_bytes == pytest.approx(bytes_per_param * P)
    assert r.total_bytes == r.state_bytes


def test_activations_scale_with_batch():
    r = memory.replica_memory(1e6, "sgd", "float32", False, 2e6, 64)
    assert r.activation_bytes == 128e6
    assert r.total_bytes == 8e6 + 128e6


def test_usable_memory_and_largest_batch():
    dev = 80 * 2**30
    assert memory.usable_device_bytes(dev) == pytest.approx(0.9 * dev)
    # 16 GB of state, 1 GB per example -> floor((72 GiB - 16e9) / 1e9)
    assert memory.largest_batch_that_fits(16e9, 1e9, dev) == int((0.9 * dev - 16e9) // 1e9)
    assert memory.largest_batch_that_fits(100e9, 1e9, dev) == 0


def test_devices_to_shard_state():
    # 480 GB of state (30B params x 16 B) over 72 GiB usable H100s -> 7 devices
    assert memory.devices_to_shard_state(480e9, 80 * 2**30) == 7
    assert memory.devices_to_shard_state(1e9, 80 * 2**30) == 1


def test_measured_slot_bytes_replace_the_slot_count():
    # FTRL keeps two slots (accumulator and linear) where its scenario name counts one
    r = memory.replica_memory(1e6, "adagrad", "float32", False, 0.0, 1, measured_slot_bytes=8e6)
    assert r.optimizer_bytes == 8e6 and r.state_bytes == 4e6 + 4e6 + 8e6
    assert memory.replica_memory(1e6, "adagrad", "float32", False, 0.0, 1).optimizer_bytes == 4e6
