"""Memory of one data-parallel replica, in bytes.

Standard accounting (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models", 2020, section 3.1; EleutherAI, "Transformer Math 101",
2023): weights and gradients in the parameter dtype, optimizer slots, and under mixed
precision a float32 master copy with float32 slots. Mixed-precision Adam is
2 + 2 + 4 + 4 + 4 = 16 bytes per parameter; float32 Adam is 4 + 4 + 8 = 16 as well.

Keras mixed precision (`mixed_float16` / `mixed_bfloat16`) keeps the variables in
float32 (they are the master copy) and casts them to the 16-bit compute dtype in every
layer call (Keras mixed-precision guide): a scenario says so with
`param_dtype: float32, mixed_precision: true`, and the replica holds 4 + 4 + 2 bytes
per parameter plus float32 slots (weights, gradients, the 16-bit compute copy).
"""

from __future__ import annotations

from dataclasses import dataclass

BYTES_PER_DTYPE = {"float32": 4, "bfloat16": 2, "float16": 2}
FLOAT32_BYTES = 4

# Optimizer state, in slot variables per parameter (Keras optimizer sources):
# SGD none; SGD with momentum one velocity; Adam/AdamW first and second moments;
# Adagrad one accumulator; RMSprop one mean-square (Keras default: momentum=0,
# centered=False). Adafactor keeps factored second moments, O(rows + cols) per
# matrix (Shazeer & Stern 2018), negligible against rows x cols: counted as 0.
OPTIMIZER_SLOTS_PER_PARAM = {
    "sgd": 0.0, "momentum": 1.0, "adam": 2.0, "adamw": 2.0,
    "adagrad": 1.0, "rmsprop": 1.0, "adafactor": 0.0,
}

# Part of device memory a replica may plan to use. The rest is held back for the CUDA
# context, cuDNN/XLA workspaces and allocator fragmentation (TensorFlow's BFC
# allocator). An assumption, stated: 10% headroom.
USABLE_DEVICE_MEMORY_FRACTION = 0.90
# Part of a CPU host's RAM a parameter server may fill with variables (assumption:
# the rest is the OS, TensorFlow runtime and RPC buffers).
USABLE_HOST_MEMORY_FRACTION = 0.80


@dataclass(frozen=True)
class ReplicaMemory:
    weights_bytes: float
    gradient_bytes: float
    master_copy_bytes: float
    optimizer_bytes: float
    activation_bytes: float
    compute_copy_bytes: float = 0.0

    @property
    def state_bytes(self) -> float:
        """Everything but activations: what sharding (ZeRO/FSDP) would split."""
        return (self.weights_bytes + self.gradient_bytes + self.master_copy_bytes + self.optimizer_bytes
                + self.compute_copy_bytes)

    @property
    def total_bytes(self) -> float:
        return self.state_bytes + self.activation_bytes


def weight_bytes(params: float, param_dtype: str) -> float:
    """Weights held in the parameter dtype."""
    return params * BYTES_PER_DTYPE[param_dtype]


def gradient_bytes(params: float, param_dtype: str) -> float:
    """One gradient per parameter, in the parameter dtype (ZeRO, section 3.1)."""
    return params * BYTES_PER_DTYPE[param_dtype]


def master_copy_bytes(params: float, mixed_precision: bool, param_dtype: str = "bfloat16") -> float:
    """Mixed precision keeps a float32 copy of 16-bit weights (Micikevicius et al. 2018).
    Float32 weights are their own master copy."""
    if not mixed_precision or param_dtype == "float32":
        return 0.0
    return params * FLOAT32_BYTES


def compute_copy_bytes(params: float, mixed_precision: bool, param_dtype: str) -> float:
    """Keras mixed precision over float32 variables: each step casts the weights to the
    16-bit compute dtype, and the casts are kept for the backward pass."""
    if mixed_precision and param_dtype == "float32":
        return params * BYTES_PER_DTYPE["float16"]
    return 0.0


def slot_dtype_bytes(param_dtype: str, mixed_precision: bool) -> int:
    """Optimizer slots are float32 under mixed precision, else in the parameter dtype."""
    return FLOAT32_BYTES if mixed_precision else BYTES_PER_DTYPE[param_dtype]


def optimizer_bytes(params: float, optimizer: str, param_dtype: str, mixed_precision: bool,
                    measured_slot_bytes: float | None = None) -> float:
    """Optimizer slot variables: slots per parameter x slot dtype, or the bytes `rung profile`
    measured on the real optimizer (FTRL keeps two slots, custom optimizers any number)."""
    if measured_slot_bytes is not None:
        return measured_slot_bytes
    return params * OPTIMIZER_SLOTS_PER_PARAM[optimizer] * slot_dtype_bytes(param_dtype, mixed_precision)


def activation_bytes(activation_bytes_per_example: float, per_device_batch):
    """Activations kept for the backward pass grow linearly with the per-device batch."""
    return activation_bytes_per_example * per_device_batch


def replica_memory(params: float, optimizer: str, param_dtype: str, mixed_precision: bool,
                   activation_bytes_per_example: float, per_device_batch,
                   measured_slot_bytes: float | None = None, non_trainable_params: float = 0.0) -> ReplicaMemory:
    """Memory of one full replica (every data-parallel strategy holds one per device).
    `non_trainable_params`: weights no optimizer updates (a frozen base, BatchNorm's
    statistics), held beside the trainable ones with no gradient or slot."""
    return ReplicaMemory(
        weights_bytes=weight_bytes(params + non_trainable_params, param_dtype),
        gradient_bytes=gradient_bytes(params, param_dtype),
        master_copy_bytes=master_copy_bytes(params, mixed_precision, param_dtype),
        optimizer_bytes=optimizer_bytes(params, optimizer, param_dtype, mixed_precision, measured_slot_bytes),
        activation_bytes=activation_bytes(activation_bytes_per_example, per_device_batch),
        compute_copy_bytes=compute_copy_bytes(params, mixed_precision, param_dtype),
    )


def usable_device_bytes(device_memory_bytes: float) -> float:
    return device_memory_bytes * USABLE_DEVICE_MEMORY_FRACTION


def usable_host_bytes(host_memory_bytes: float) -> float:
    return host_memory_bytes * USABLE_HOST_MEMORY_FRACTION


def largest_batch_that_fits(state_bytes: float, activation_bytes_per_example: float,
                            device_memory_bytes: float) -> int:
    """The largest per-device batch whose activations fit beside the model state (0: none)."""
    free = usable_device_bytes(device_memory_bytes) - state_bytes
    if free <= 0:
        return 0
    if activation_bytes_per_example <= 0:
        return 2**31
    return int(free // activation_bytes_per_example)


def devices_to_shard_state(state_bytes: float, device_memory_bytes: float) -> int:
    """Devices over which fully sharded state (ZeRO stage 3 / FSDP) would fit, activations aside."""
    usable = usable_device_bytes(device_memory_bytes)
    return max(1, -(-int(state_bytes) // int(usable)))
