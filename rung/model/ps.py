"""Parameter servers: push/pull traffic, how many PS tasks, staleness.

Under `ParameterServerStrategy` variables live on PS tasks. Each step a worker reads
the dense variables and the embedding rows its batch looks up, and pushes their
gradients back (the optimizer update runs on the PS). Reads happen at the start of
the step and pushes at its end, so the two directions do not overlap in time.
"""

from __future__ import annotations

import math

from rung.model import memory

# Sparse gradient bytes per example when the scenario does not say: MLPerf's DLRM on
# Criteo 1TB looks up 26 categorical features with 128-wide float32 embeddings,
# 26 x 128 x 4 = 13,312 bytes per example (MLPerf Training v1.0 reference).
DEFAULT_SPARSE_GRADIENT_BYTES_PER_EXAMPLE = 26 * 128 * 4
# Trainable variables when the scenario does not say (each costs a remote read and update
# per step): ResNet-50 has 161 in Keras, BERT-base about 200; assumption.
DEFAULT_TRAINABLE_VARIABLES = 100
# Embedding variables share of all parameters at which they "dominate" the variables.
EMBEDDING_DOMINANCE_FRACTION = 0.5
# ...and the size at which that matters: tables of 256 MiB or more (assumption, stated).
# With Adam or Adagrad such a table costs 0.5-0.75 GiB of weights and slots on every
# replica and its rows are looked up from host-sized vocabularies (recommenders, the
# TensorFlow PS guide's use case); below it a table is cheap to replicate, so a small
# token table (a text classifier's few MB) is no reason for parameter servers, whatever
# its share of a small model.
EMBEDDING_LARGE_BYTES = 2**28


def worker_bytes_each_way(dense_param_bytes: float, sparse_bytes_per_step: float) -> float:
    """Bytes a worker pulls (dense weights + looked-up rows); it pushes as many back."""
    return dense_param_bytes + sparse_bytes_per_step


def exchange_seconds(bytes_each_way, worker_bytes_per_second, efficiency, variables=0, variable_seconds=0.0,
                     transfer_cap=None, pulled_only_bytes=0.0):
    """Pull at the start of the step plus push at its end, over the worker's network
    (`efficiency`: the share of its nominal rate a transfer reaches; `transfer_cap`: the
    rate remote variable transfers reach, when lower), plus each variable's remote read
    and update. `pulled_only_bytes`: weights a worker reads every step and never updates
    (a frozen base lives on the parameter servers too), one way."""
    rate = worker_bytes_per_second * efficiency
    if transfer_cap is not None:
        rate = min(rate, transfer_cap)
    return (2.0 * bytes_each_way + pulled_only_bytes) / rate + variables * variable_seconds


# The loss's tracker (a mean: its total and its count), which every Keras fit updates on the
# parameter servers and which psbench's measured dispatch already holds
BASELINE_METRIC_VARIABLES = 2


def metric_seconds(metric_variables, metric_variable_seconds):
    """What a parameter-server fit step pays for the model's metrics beyond the loss's
    tracker: each metric variable lives on a PS (every variable made in the strategy's
    scope does), and the step updates it there and reads it back for the logs. Measured per
    variable by psbench (`Links.ps_metric_variable_seconds`): a fit with 8 compiled metrics
    against none; 0 when the model's metrics are not counted."""
    if metric_variables is None:
        return 0.0
    return max(0, metric_variables - BASELINE_METRIC_VARIABLES) * metric_variable_seconds


def tasks_for_bandwidth(workers: int, bytes_each_way: float, worker_step_seconds: float,
                        ps_bytes_per_second: float, efficiency: float) -> int:
    """PS tasks whose networks together carry every worker's traffic without becoming the limit."""
    demand = workers * bytes_each_way / worker_step_seconds
    return max(1, math.ceil(demand / (ps_bytes_per_second * efficiency)))


def tasks_for_memory(variable_bytes: float, host_memory_bytes: float) -> int:
    """PS tasks needed to hold every variable and its optimizer slots in host RAM."""
    return max(1, math.ceil(variable_bytes / memory.usable_host_bytes(host_memory_bytes)))


def variable_bytes_on_ps(params: float, optimizer: str, param_dtype: str, mixed_precision: bool,
                         measured_slot_bytes: float | None = None, non_trainable_params: float = 0.0) -> float:
    """Weights, master copy and optimizer slots, all kept by the parameter servers, and
    the weights no optimizer updates (every variable made under the strategy lives there)."""
    return (memory.weight_bytes(params + non_trainable_params, param_dtype)
            + memory.master_copy_bytes(params, mixed_precision, param_dtype)
            + memory.optimizer_bytes(params, optimizer, param_dtype, mixed_precision, measured_slot_bytes))


def staleness_steps(workers: int) -> int:
    """Expected staleness of an asynchronous update: the other workers' pushes that land
    between a worker's read and its own push, about workers - 1 steps (Dean et al.,
    "Large Scale Distributed Deep Networks", 2012; Ho et al., SSP, 2013)."""
    return max(0, workers - 1)


def embedding_dominated(params: float, embedding_params: float, param_dtype: str = "float32") -> bool:
    """Embedding tables dominate the variables: most of the parameters, and large."""
    large = embedding_params * memory.BYTES_PER_DTYPE[param_dtype] >= EMBEDDING_LARGE_BYTES
    return params > 0 and large and embedding_params / params >= EMBEDDING_DOMINANCE_FRACTION
