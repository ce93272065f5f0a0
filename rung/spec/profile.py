"""Profile v1 -> the workload block of a scenario v1 (pure: no TensorFlow).

`Profile` is the typed seam between `rung.measure` (which produces the measurement)
and planning: the fields planning reads are typed; the rest of the measurement (report
details, pipeline findings) rides along as extra fields and comes back out in JSON."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from rung.errors import InputError
from rung.spec.scenario import SCHEMA as SCENARIO_SCHEMA, Scenario, parse_scenario
from rung.spec.yamlio import load_mapping

PROFILE_SCHEMA = "rung/profile/v1"
# What a profile carries into a scenario's workload block. Not `step_time_cv`: the
# profile's is step-to-step variation on one device, not variation across workers, so
# the scenario keeps the fleet's declared value (or the contract's default).
WORKLOAD_KEYS = ("params", "embedding_params", "param_dtype", "mixed_precision", "optimizer",
                 "activation_bytes_per_example", "per_device_batch", "step_seconds", "input_wait_seconds",
                 "dynamic_shapes", "sparse_gradient_bytes_per_example", "optimizer_slot_bytes",
                 "flops_per_example", "step_seconds_ci95", "input_wait_seconds_ci95", "trainable_variables",
                 "loss_scaled_for_replicas", "string_inputs", "steps_per_execution", "keras3_import",
                 "jit_compile", "run_eagerly", "eager_step_seconds", "python_in_pipeline", "captured_dataset",
                 "worker_input",
                 "ragged_or_sparse_inputs", "divides_batch", "ps_worker_input", "dense_embedding_params",
                 "sync_batch_norm_layers", "logged_values", "metric_variables", "sparse_gradient_tensors", "stateful_rnn_layers", "non_trainable_params",
                 "optimizer_accumulation_steps", "gradient_clipping", "step_clipping", "logged_loss_divided",
                 "compiled_loss_not_scaled", "compiled_loss_sums", "assigning_metrics", "strategy_failure",
                 "strategy_fails_on_one_device", "mixed_precision_policy", "strategy_step_extra_seconds",
                 "batch_time_cv", "optimizer_update_seconds", "pipeline_seconds_per_batch",
                 "pipeline_seconds_per_batch_ci95")
_FLOATS = ("params", "non_trainable_params", "embedding_params", "activation_bytes_per_example", "sparse_gradient_bytes_per_example",
           "optimizer_slot_bytes", "flops_per_example")


class Profile(BaseModel):
    """A `rung profile` measurement (profile v1)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    schema_: Literal["rung/profile/v1"] = Field(alias="schema")
    workload: str
    device: str                      # "CPU:0", "GPU:0" ...
    device_name: str                 # the framework's name for it
    params: float
    non_trainable_params: float = 0.0  # weights no optimizer updates (rung.measure.counts.non_trainable_params)
    embedding_params: float = 0.0
    dense_embedding_params: float = 0.0  # Embedding tables whose gradient came dense (rung.measure.counts)
    sync_batch_norm_layers: int = 0  # BatchNormalization(synchronized=True) layers (rung.measure.counts)
    logged_values: Optional[int] = None  # leaves of train_step's logs (rung.measure.timing.StepTimes.outputs)
    metric_variables: Optional[int] = None  # its metrics' variables (rung.measure.counts.metric_variables)
    sparse_gradient_tensors: Optional[int] = None  # IndexedSlices gradients a step (rung.measure.counts)
    stateful_rnn_layers: int = 0     # recurrent layers with stateful=True (rung.measure.counts)
    param_dtype: str = "float32"
    mixed_precision: bool = False
    mixed_precision_policy: Optional[str] = None
    optimizer: str
    optimizer_slot_bytes: Optional[float] = None
    activation_bytes_per_example: Optional[float] = None  # None: not counted (the profile's notes say why)
    per_device_batch: int
    step_seconds: float
    input_wait_seconds: float = 0.0
    step_seconds_ci95: Optional[list[float]] = None
    input_wait_seconds_ci95: Optional[list[float]] = None
    dynamic_shapes: bool = False
    string_inputs: bool = False
    ragged_or_sparse_inputs: bool = False  # ragged or sparse tensors in the dataset's elements
    steps_per_execution: int = 1
    optimizer_accumulation_steps: int = 1  # the optimizer's own gradient_accumulation_steps (Keras 3)
    gradient_clipping: Optional[str] = None  # the optimizers' clipping, "clipnorm=1" (rung.measure.counts)
    step_clipping: Optional[str] = None  # clipping calls in the model's own train_step (rung.kerasfit)
    assigning_metrics: Optional[str] = None  # assign calls in its own metrics' update_state (rung.kerasfit)
    logged_loss_divided: Optional[bool] = None  # the step logs its replica's share of the loss (replica check)
    compiled_loss_not_scaled: Optional[str] = None  # the file's compiled losses Keras 3 left undivided (replica check)
    compiled_loss_sums: Optional[str] = None  # Keras's own compiled losses made to sum over the batch (replica check)
    # why the step failed under MirroredStrategy on the profile's Keras (the replica check), if it did
    strategy_failure: Optional[str] = None
    # ... and under OneDeviceStrategy too (Keras 3's fit of a compiled loss on unlabelled data)
    strategy_fails_on_one_device: bool = False
    jit_compile: bool = False        # the model's step compiled with XLA (rung.measure.timing.jit_compiled)
    run_eagerly: bool = False        # compile(run_eagerly=True): fit runs each step without a graph
    # ... because the file calls tf.config.run_functions_eagerly(True), every tf.function (v1 extension)
    functions_run_eagerly: bool = False
    python_in_pipeline: bool = False  # the pipeline runs Python (from_generator, py_function, numpy_function)
    captured_dataset: bool = False  # make_dataset builds on a dataset made outside it (pipeline.captured_datasets)
    eager_step_seconds: Optional[float] = None  # such a step, timed eagerly (the median of a few)
    # what make_dataset(batch, InputContext) yields on worker 0 and worker 1 of 2
    # (rung.measure.pipeline.worker_input); None: not told (it takes no context)
    worker_input: Optional[Literal["distinct", "own_order", "identical", "augmented", "empty"]] = None
    divides_batch: bool = False  # make_dataset(b, InputContext) yields b / replicas (rung.measure.pipeline)
    # the same under parameter servers, where make_dataset runs once and every worker runs
    # a copy (rung.measure.pipeline.ps_worker_input)
    ps_worker_input: Optional[Literal["own_order", "identical", "augmented"]] = None
    keras3_imports: list[str] = []   # the file's own imports of Keras 3 (rung.kerasfit.keras3_imports)
    # the file's own `batch_size = N` (keras.io's name; rung reads BATCH_SIZE) when the step ran at
    # rung's default batch all the same: the plan's caveat DEFAULT_BATCH
    file_batch_size: Optional[int] = None
    keras: Optional[Literal["keras3", "tf_keras"]] = None  # the Keras the step was measured on
    sparse_gradient_bytes_per_example: Optional[float] = None
    flops_per_example: Optional[float] = None
    ops_per_step: Optional[int] = None
    trainable_variables: Optional[int] = None
    pipeline_seconds_per_batch: Optional[float] = None
    pipeline_seconds_per_batch_ci95: Optional[list[float]] = None  # the 95% interval of that mean
    checkpoint_seconds: Optional[float] = None   # one save of model and optimizer, this machine's disk
    checkpoint_bytes: Optional[float] = None
    # a step under a one-device MirroredStrategy against one without (rung.measure.timing.strategy_extra):
    # the difference (0 within noise, or not timed: no sparse gradients), the two medians, and this
    # device's copy rate, which carries the difference (memory traffic) to a plan's device
    strategy_step_extra_seconds: float = 0.0
    # dynamic shapes: one batch's step against another's, net of the same batch's noise
    # (rung.measure.timing.batch_time_cv), and the two raw coefficients [distinct, same]
    batch_time_cv: float = 0.0
    batch_time_cv_raw: Optional[list[float]] = None
    strategy_step_seconds_measured: Optional[list[float]] = None
    memory_copy_bytes_per_second: Optional[float] = None
    # the optimizers' update of one step alone (rung.measure.timing.optimizer_update)
    optimizer_update_seconds: Optional[float] = None
    optimizer_update_ops: Optional[int] = None  # its kernel-launching operations
    # rung.measure.replicas: one step under 2 replicas against one device (None: not checked)
    replica_check: Optional[dict[str, Any]] = None
    loss_scaled_for_replicas: Optional[bool] = None

    @property
    def keras3_import(self) -> bool:
        return bool(self.keras3_imports)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


def workload_block(profile: Profile, step_time_cv: Optional[float] = None) -> dict[str, Any]:
    """The scenario's `workload` block: the measurement, with floats where the contract has numbers."""
    block = {k: getattr(profile, k) for k in WORKLOAD_KEYS if getattr(profile, k) is not None}
    if not block.get("trainable_variables"):
        block.pop("trainable_variables", None)
    for k in _FLOATS:
        if k in block:
            block[k] = float(block[k])
    for k in ("step_seconds_ci95", "input_wait_seconds_ci95", "pipeline_seconds_per_batch_ci95"):
        if k in block:
            block[k] = [float(x) for x in block[k]]
    if block.get("embedding_params", 0) == 0:
        block.pop("sparse_gradient_bytes_per_example", None)
        block.pop("sparse_gradient_tensors", None)
    if "optimizer_update_seconds" in block:  # timed apart from the steps: never more than their compute
        block["optimizer_update_seconds"] = min(block["optimizer_update_seconds"],
                                                block["step_seconds"] - block.get("input_wait_seconds", 0.0))
    block["step_seconds_source"] = "measured"
    if profile.keras is not None:
        block["step_keras"] = profile.keras
    if step_time_cv is not None:
        block["step_time_cv"] = float(step_time_cv)
    return block


HARDWARE_FILE_KEYS = ("hardware", "fleet", "goal", "offers")


def load_hardware(path: str) -> dict[str, Any]:
    """A hardware file: a `hardware` block, optionally `fleet`, `goal` and `offers` (scenario
    v1 syntax: what the team could rent instead, each walked as the scenario's would be),
    or the keys of a hardware block at the top level."""
    data = load_mapping(path, "hardware file")
    if "workload" in data:  # (it said "name: unknown key")
        raise InputError(path, "workload", "this is a whole scenario; the workload comes from the file rung "
                                           "measures: keep hardware, fleet, goal and offers here, or decide on the "
                                           "scenario as written with rung advise --scenario")
    if "hardware" not in data:
        data = {"hardware": data}
    unknown = set(data) - set(HARDWARE_FILE_KEYS)
    if unknown:
        raise InputError(path, sorted(unknown)[0], f"unknown key; expected {', '.join(HARDWARE_FILE_KEYS)}")
    return data


def scenario_from_profile(profile: Profile, hardware: dict[str, Any], goal: dict[str, Any],
                          fleet: Optional[dict[str, Any]] = None, name: Optional[str] = None,
                          where: str = "<profile>", workload: Optional[dict[str, Any]] = None,
                          offers: Optional[list] = None) -> Scenario:
    data = {"schema": SCENARIO_SCHEMA, "name": name or f"profiled {profile.workload}",
            "workload": workload if workload is not None else workload_block(profile),
            "hardware": hardware, "goal": goal}
    if fleet:
        data["fleet"] = fleet
    if offers is not None:
        data["offers"] = offers
    return parse_scenario(data, where)
