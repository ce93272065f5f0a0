"""Scenario v1: the typed input of `rung advise` (contract: shared/contract/scenario-v1.md).

Validated at the edge: unknown keys, wrong types, non-finite or non-positive sizes
and inconsistent fields are rejected with an InputError naming the file and the
field path. Everything downstream trusts a `Scenario`.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from rung.errors import InputError
from rung.spec import catalog
from rung.spec.yamlio import load_mapping

SCHEMA = "rung/scenario/v1"

Verdict = Literal[
    "fix_input_pipeline", "single_device", "mirrored", "multi_worker_mirrored",
    "parameter_server", "tpu", "needs_sharding",
]
Optimizer = Literal["sgd", "momentum", "adam", "adamw", "adagrad", "rmsprop", "adafactor"]
DType = Literal["float32", "bfloat16", "float16"]
StepSource = Literal["measured", "estimated", "declared"]
Prefer = Literal["simplicity", "cost"]
StepDistribution = Literal["normal", "lognormal"]

Positive = Annotated[float, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]
def _whole(v: Any) -> Any:
    """A whole number written as a float (`1e3`, `64.0`: YAML reads both as floats) is the
    whole number; the contract lets any number be written as 25.6e6. 64.5 stays a float and
    is refused as not whole."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


Whole = BeforeValidator(_whole)
Count = Annotated[int, Whole, Field(ge=1)]
# Bounds on the sizes rung's arithmetic multiplies together: far beyond any real job (the
# largest models have about 2e12 parameters; a step of a day is slow), and below where a
# product of them overflows a float (params 1e308 ended in "internal error: OverflowError",
# a step of 1e308 s in a division by zero, 100 million hosts in minutes of work and 2 GB)
MAX_PARAMS = 1e15
MAX_STEP_SECONDS = 1e6
MAX_HOSTS = 1_000_000
Params = Annotated[float, Field(gt=0, le=MAX_PARAMS)]
SomeParams = Annotated[float, Field(ge=0, le=MAX_PARAMS)]
StepSeconds = Annotated[float, Field(gt=0, le=MAX_STEP_SECONDS)]
Hosts = Annotated[int, Whole, Field(ge=1, le=MAX_HOSTS)]
T = TypeVar("T")
Interval = Annotated[list[T], Field(min_length=2, max_length=2)]  # [low, high]
# an optimizer's clipping as rung profile writes it: "clipnorm=1", "global_clipnorm=2, clipvalue=0.5"
_CLIP = r"(clipnorm|global_clipnorm|clipvalue)=[0-9][0-9.eE+-]*"
Clipping = Annotated[str, Field(pattern=rf"^{_CLIP}(, {_CLIP})*$")]

# Contract default: preemptible hosts without a stated rate are taken away 0.1 times an hour.
DEFAULT_PREEMPTIONS_PER_HOST_HOUR = 0.1


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class Workload(_Block):
    params: Params
    embedding_params: SomeParams = 0.0
    param_dtype: DType = "float32"
    mixed_precision: bool = False
    optimizer: Optimizer
    activation_bytes_per_example: NonNegative = 0.0
    per_device_batch: Count
    step_seconds: StepSeconds
    input_wait_seconds: NonNegative = 0.0
    step_time_cv: NonNegative = 0.02
    dynamic_shapes: bool = False
    # v1 extension (optional): bytes of sparse (embedding-row) gradient per example,
    # what `rung profile` measures. When absent, rung.model.ps assumes a default.
    sparse_gradient_bytes_per_example: Optional[NonNegative] = None
    # v1 extensions written by `rung profile` (all optional; docs/measurement.md):
    # bytes of the optimizer's slot variables as measured (FTRL, custom optimizers:
    # replaces the `optimizer` slot count in the memory model).
    optimizer_slot_bytes: Optional[NonNegative] = None
    # floating-point operations of one training step per example (forward x 3), counted
    # from the traced graph: what a step-time estimate for another device starts from.
    flops_per_example: Optional[Positive] = None
    # 95% interval of the mean step time and of the mean input wait, from the profile's
    # own samples (batch means): how sure the measurement is.
    step_seconds_ci95: Optional[Interval[Positive]] = None
    input_wait_seconds_ci95: Optional[Interval[NonNegative]] = None
    # where step_seconds comes from: measured on the target device, estimated for it
    # from another device (STEP_TIME_ESTIMATED), or declared by hand (the default).
    step_seconds_source: StepSource = "declared"
    # v1 extension (optional): micro-batches whose gradients are summed before one
    # exchange (gradient accumulation); the step above is one micro-batch's.
    gradient_accumulation_steps: Count = 1
    # v1 extension (optional): the dtype the dense gradients are all-reduced in, when the
    # training step casts them for the exchange (Horovod's Compression.fp16,
    # tf_cnn_benchmarks' compact_gradient_transfer under --use_fp16). Absent: the variables'
    # dtype (`param_dtype`); Keras's LossScaleOptimizer under mixed_float16 all-reduces
    # float32 gradients, as its variables are float32.
    gradient_dtype: Optional[DType] = None
    # v1 extension (optional): trainable variable tensors; under parameter servers each is
    # read and updated remotely every step (rung profile counts them)
    trainable_variables: Optional[Count] = None
    # v1 extension (optional): the shape of step times across workers. "normal" (the
    # default) has a closed form for the slowest of N; "lognormal" (heavy-tailed: shared
    # or preemptible hosts, noisy neighbours) has not, and rung simulates the fleet's
    # steps for it (HEAVY_TAILED_STEPS says so).
    step_time_distribution: StepDistribution = "normal"
    # v1 extension (optional): whether the model's training step divides its loss across
    # replicas as Keras' own does (false: a custom train_step's loss not divided by the global
    # batch, a per-replica mean or a sum, N times the update under N synchronous replicas:
    # LOSS_NOT_SCALED). `rung profile` checks it; absent: not checked.
    loss_scaled_for_replicas: Optional[bool] = None
    # v1 extension (optional): the model takes string features (TextVectorization or
    # StringLookup inside it). Keras 3's fit fails on them under MirroredStrategy
    # (tensorflow#80951) and TPUs take no strings: STRING_INPUTS. `rung profile` sets it.
    string_inputs: bool = False
    # v1 extension (optional): ragged or sparse tensors in the dataset's elements. Keras 3's
    # model.fit under MirroredStrategy fails on them (reproduced with TF 2.21; tf-keras runs
    # them): RAGGED_OR_SPARSE_INPUTS, and tf-keras in init and bench. `rung profile` sets it.
    ragged_or_sparse_inputs: bool = False
    # v1 extension (optional): parameters of Embedding tables whose gradient reaches the
    # optimizer dense (an embeddings_regularizer touches every row; a table tied to the
    # output layer): they count as dense parameters, not embedding_params, and plans that
    # exchange gradients across hosts say so (DENSE_EMBEDDING_GRADIENTS). `rung profile` sets it.
    dense_embedding_params: SomeParams = 0.0
    # v1 extension (optional): BatchNormalization layers with synchronized=True. Under a
    # synchronous strategy each all-reduces its batch statistics and their gradients every
    # step, six small all-reduces in sequence that the predicted step pays in latency
    # (`comm.sync_batch_norm_seconds`; SYNC_BATCH_NORM). `rung profile` counts them.
    sync_batch_norm_layers: Annotated[int, Whole, Field(ge=0)] = 0
    # v1 extension (optional): the values Keras's fit logs every step (the loss, each
    # output's loss, each metric: the leaves of what train_step returns). Under
    # MultiWorkerMirroredStrategy tf-keras's fit all-reduces each across the workers, one
    # collective apiece, in sequence, every step (`reduce_per_replica`, reduction "sum");
    # the predicted multi-host step pays them in latency (`comm.logged_values_seconds`).
    # Absent: one, the loss. 0 for a loop that logs nothing across workers. `rung profile`
    # counts them.
    logged_values: Optional[Annotated[int, Whole, Field(ge=0)]] = None
    # v1 extension (optional): the variables of the model's metrics (its loss's tracker, its
    # compiled metrics, a train_step's own trackers: two each for a mean). Under
    # ParameterServerStrategy they live on the parameter servers, and every step updates and
    # reads each there (`throughput.ps_terms`, `Links.ps_metric_variable_seconds` for each
    # beyond the loss's tracker). Absent: the loss's tracker alone. `rung profile` counts them.
    metric_variables: Optional[Annotated[int, Whole, Field(ge=0)]] = None
    # v1 extension (optional): sparse (IndexedSlices) gradients a step, one per embedding
    # table the step looks rows up in. Under multi-worker each is all-gathered by three
    # collectives in sequence (its rows' count, then its rows and their indices), which the
    # predicted step pays in latency (`comm.sparse_gather_latency_seconds`). Absent: one,
    # when the workload has embedding parameters. `rung profile` counts them.
    sparse_gradient_tensors: Optional[Annotated[int, Whole, Field(ge=0)]] = None
    # v1 extension (optional): weights no optimizer updates (a frozen base's layers,
    # BatchNorm's moving statistics), which `params` (trainable) leaves out. Every replica
    # holds them; under parameter servers they live on the PS and every worker reads them
    # every step. `rung profile` counts them.
    non_trainable_params: SomeParams = 0.0
    # v1 extension (optional): the optimizer's own gradient_accumulation_steps (Keras 3's).
    # Keras 3's fit fails with it under MirroredStrategy (keras-team/keras#20582) and
    # tf-keras's optimizers do not take it: GRADIENT_ACCUMULATION on replicated plans.
    # `rung profile` reads it. (Not `gradient_accumulation_steps`, which a step that
    # accumulates on its own runs under any strategy.)
    optimizer_accumulation_steps: Count = 1
    # v1 extension (optional): the clipping the model's optimizers apply, as built:
    # "clipnorm=1", "global_clipnorm=1", "clipvalue=0.5". Under MirroredStrategy Keras 3
    # clips each replica's share of the gradient before the all-reduce (an update up to N
    # times one device's once clipping bites); tf-keras clips the sum, as one device does:
    # CLIPPING_PER_REPLICA, and tf-keras in init and bench. `rung profile` reads it.
    gradient_clipping: Optional[Clipping] = None
    # v1 extension (optional): clipping calls in the model's own train_step,
    # "Clipped.train_step: tf.clip_by_global_norm (line 18)". The step runs once per replica,
    # so under any synchronous strategy of several replicas, on either Keras, each
    # replica's gradients are clipped before the optimizer sums them: CLIPPING_PER_REPLICA,
    # and a LOSS_NOT_SCALED that the clipping alone may explain. `rung profile` reads the file.
    step_clipping: Optional[str] = None
    # v1 extension (optional): `assign` calls in the update_state of the file's own Metric
    # classes, "MaxError.update_state: self.top.assign (line 19)". A metric's variables are
    # read as the sum of the replicas' copies, so a state set with assign shows the sum of N
    # replicas' values under N synchronous replicas: METRIC_SUMMED. `rung profile` reads the file.
    assigning_metrics: Optional[str] = None
    # v1 extension (optional): the compiled losses of the file's own that the replica check
    # found undivided across replicas on Keras 3 ("smooth_l1"): a loss function that returns
    # one number (its own tf.reduce_mean) is left as it is by Keras 3's reduction, so under N
    # replicas the update is N times one device's (tf-keras divides it). With
    # loss_scaled_for_replicas false: LOSS_NOT_SCALED for synchronous plans on Keras 3 alone.
    compiled_loss_not_scaled: Optional[str] = None
    # v1 extension (optional): Keras's own compiled losses made with a reduction that sums
    # over the batch ("MeanSquaredError(reduction='sum')"), found by the replica check: under
    # N synchronous replicas the gradient is the sum over the global batch, N times one
    # device's step at the same per-device batch, on either Keras. With
    # loss_scaled_for_replicas false: LOSS_NOT_SCALED for synchronous plans of several replicas.
    compiled_loss_sums: Optional[str] = None
    # v1 extension (optional): the model's own train_step logs its loss as divided for the
    # sum of gradients (compute_loss, tf.nn.compute_average_loss), so under N synchronous
    # replicas fit shows 1/N of one device's loss though training is right:
    # LOGGED_LOSS_DIVIDED. `rung profile`'s replica check measures it; absent: not checked.
    logged_loss_divided: Optional[bool] = None
    # v1 extension (optional): why the model's step failed under a MirroredStrategy of two
    # replicas on the Keras it was measured on (`step_keras`), in one line: `rung profile`'s
    # replica check ran it there. STRATEGY_FAILS on plans of several replicas on that Keras.
    strategy_failure: Optional[str] = None
    # v1 extension (optional): the failure is Keras's fit under any tf.distribute strategy,
    # OneDeviceStrategy included (a compiled loss on a dataset without labels, Keras 3), so
    # single-device plans on that Keras warn STRATEGY_FAILS too. `rung profile` sets it.
    strategy_fails_on_one_device: bool = False
    # v1 extension (optional): recurrent layers with stateful=True. tf-keras refuses to
    # build them under any tf.distribute strategy (Keras 3 builds them), and multi-worker
    # and parameter-server fit run only on tf-keras: STATEFUL_RNN. `rung profile` counts them.
    stateful_rnn_layers: Annotated[int, Whole, Field(ge=0)] = 0
    # v1 extension (optional): the model's compile(steps_per_execution=k). Keras 3's fit
    # fails with k > 1 under MirroredStrategy (keras-team/keras#19246, reproduced with TF
    # 2.21; tf-keras runs it): STEPS_PER_EXECUTION. `rung profile` reads it.
    steps_per_execution: Count = 1
    # v1 extension (optional): the workload file imports Keras 3 itself (`import keras`,
    # `from keras import layers`) rather than tf.keras. Multi-worker and parameter-server
    # fit run on tf-keras (Keras 3's cannot), and tf-keras cannot train a model built from
    # `keras`: KERAS3_IMPORT. `rung profile` reads the file's imports.
    keras3_import: bool = False
    # v1 extension (optional): the Keras the step was measured on (`rung profile` sets it).
    # Multi-worker and parameter-server fit run on tf-keras, and the same model's step can
    # differ between the two by 2-3x either way (docs/bench.md): a step measured on Keras 3
    # for a plan that runs on tf-keras is STEP_ON_OTHER_KERAS.
    step_keras: Optional[Literal["keras3", "tf_keras"]] = None
    # v1 extension (optional): Keras's mixed-precision policy ("mixed_float16",
    # "mixed_bfloat16", "float32"), which `rung profile` reads. tf-keras refuses
    # mixed_float16 under ParameterServerStrategy (its loss scaling): STRATEGY_FAILS.
    mixed_precision_policy: Optional[str] = None
    # v1 extension (optional): the model compiles its training step with XLA
    # (compile(jit_compile=True)). An XLA step on a parameter-server worker cannot read
    # the variables the ps tasks hold: JIT_COMPILE, and rung init's train.py turns XLA
    # off under ParameterServerStrategy. `rung profile` reads it.
    jit_compile: bool = False
    # v1 extension (optional): the model is compiled with run_eagerly=True, so Keras's fit
    # runs every step op by op in Python, and `eager_step_seconds` is such a step as
    # `rung profile` timed it. Plans use `step_seconds`, the graph step fit runs without it:
    # RUN_EAGERLY. tf-keras refuses run_eagerly under ParameterServerStrategy; rung init's
    # train.py turns it off there. `rung profile` sets both.
    run_eagerly: bool = False
    eager_step_seconds: Optional[Positive] = None
    # v1 extension (optional): the input pipeline runs Python (from_generator, py_function,
    # numpy_function). Under ParameterServerStrategy that Python runs only in the
    # coordinator's process (tensorflow#48957): PYTHON_PIPELINE, and rung's train.py and
    # bench stop on it there. `rung profile` sets it.
    python_in_pipeline: bool = False
    # v1 extension (optional): make_dataset builds on a tf.data.Dataset made outside it (when
    # the file is imported). Under ParameterServerStrategy the coordinator traces make_dataset
    # and runs it on every worker, and a worker cannot receive a dataset of the coordinator's
    # process: CAPTURED_DATASET, and rung's train.py and bench stop on it there. `rung
    # profile` sets it.
    captured_dataset: bool = False
    # v1 extension (optional): what make_dataset(batch, InputContext) yields on two workers of a
    # multi-worker run.
    # "identical": it takes the context and does not use it, and draws nothing at random, so
    # every worker reads the same batches (INPUT_NOT_SHARDED); "augmented": the same examples
    # in the same order, each worker augmenting them at random (INPUT_NOT_SHARDED); "empty":
    # one worker's shard yields nothing (EMPTY_SHARD); "distinct" and "own_order" (the whole
    # data, in each worker's own random order) are fine. `rung profile` sets it.
    worker_input: Optional[Literal["distinct", "own_order", "identical", "augmented", "empty"]] = None
    # v1 extension (optional): make_dataset(batch, InputContext) divides the batch by the
    # replicas (input_context.get_per_replica_batch_size), where rung passes the per-replica
    # batch: BATCH_DIVIDED. `rung profile` sets it.
    divides_batch: bool = False
    # v1 extension (optional): the same under parameter servers, where make_dataset runs
    # once, on the coordinator, with an InputContext of one pipeline, and every worker runs a
    # copy of it: "identical" (nothing drawn at random without a seed: INPUT_NOT_SHARDED on a
    # parameter-server plan), "augmented" (drawn at random in its maps alone: the same examples
    # in the same order, INPUT_NOT_SHARDED too) or "own_order". `rung profile` sets it.
    ps_worker_input: Optional[Literal["own_order", "identical", "augmented"]] = None
    # v1 extension (optional): seconds a step takes more under the mirrored variables of
    # MirroredStrategy and MultiWorkerMirroredStrategy than on one device without a strategy,
    # on the step's Keras and device (tf-keras's optimizers copy a sparsely updated embedding
    # table once a step there). Every replicated synchronous plan pays it:
    # STRATEGY_STEP_SLOWER. `rung profile` times it for a model with sparse gradients.
    strategy_step_extra_seconds: NonNegative = 0.0
    # v1 extension (optional): of step_seconds, what the optimizers' update takes (`rung
    # profile` times it alone, rung.measure.timing.optimizer_update; for a step estimated for
    # another device, carried there by memory bandwidth and kernel launches:
    # rung.model.estimate.update_seconds). Keras 3's Adagrad updates a whole embedding table
    # where tf-keras's updates the rows looked up: STEP_ON_OTHER_KERAS says so
    optimizer_update_seconds: NonNegative = 0.0
    # how much one batch's step differs from another's on one device, as a coefficient of
    # variation (batches of different shapes: `rung profile` measures it for dynamic shapes):
    # a synchronous step waits for its slowest replica's batch (`load_imbalance_seconds`)
    batch_time_cv: NonNegative = 0.0
    # v1 extension (optional): seconds the input pipeline alone takes to make one device's
    # batch on the host's CPU (`rung profile` iterates the dataset without the model, net of
    # the iterator's fixed cost). One host's pipeline makes the batches of every device on
    # it, so a step of D devices a host cannot be shorter than D of these, even where one
    # device never waits (`inputs.host_pipeline_floor`): INPUT_BOUND on the plan it caps.
    # Absent: not measured (only a measured wait, input_wait_seconds, caps a plan).
    pipeline_seconds_per_batch: Optional[NonNegative] = None
    # its 95% interval (`rung profile`'s batch means): a plan the interval's other end would
    # change is a close call (CLOSE_CALL)
    pipeline_seconds_per_batch_ci95: Optional[Interval[NonNegative]] = None


class Hardware(_Block):
    device: str
    device_memory_gib: Optional[Positive] = None
    devices_per_host: Count
    intra_host: Optional[Literal["nvlink", "pcie"]] = None
    intra_host_gbps: Optional[Positive] = None
    inter_host_gbps: Positive = 25.0
    max_hosts: Hosts = 1
    host_memory_gib: Positive = 256.0
    # v1 extension (optional): false when the host's GPUs cannot reach each other's
    # memory directly (consumer cards, some PCIe topologies): NCCL then stages every
    # transfer through host memory.
    peer_to_peer: bool = True
    # v1 extension (optional, `device: custom` only): what the custom device is. A GPU (the
    # default: a card the catalog lacks) all-reduces with NCCL; a CPU device (what rung writes
    # for the machine it ran on) cannot, and its mirrored plans use the fastest other
    # cross_device_ops.
    accelerator: Optional[Literal["gpu", "cpu"]] = None
    # contract addition (optional): price of one host of this kind
    usd_per_host_hour: Optional[NonNegative] = None
    # v1 extension (optional): price of one CPU host that runs a parameter-server task or
    # the coordinator. A parameter-server plan's price adds (ps_tasks + 1) of them; absent,
    # such a plan is priced by its worker hosts alone and says so (PS_HOSTS_NOT_PRICED).
    usd_per_ps_host_hour: Optional[NonNegative] = None


class Offer(Hardware):
    """Hardware the team could rent instead (contract addition "Offers")."""

    name: str
    usd_per_host_hour: NonNegative
    step_seconds: Optional[StepSeconds] = None  # the workload's step measured on this device


class Fleet(_Block):
    preemptible: bool = False
    preemptions_per_host_hour: Optional[NonNegative] = None
    restart_seconds: NonNegative = 300.0
    # addition (optional): one checkpoint of weights and optimizer state, as measured (a
    # save has a fixed cost the byte count misses); default: the state at 1 GB/s
    checkpoint_seconds: Optional[NonNegative] = None


class Goal(_Block):
    target_examples_per_second: Positive
    reproducible: bool = False
    prefer: Prefer = "simplicity"
    max_usd_per_hour: Optional[Positive] = None  # a budget for the whole job
    # short of the target, the least share of linear (hosts x one host's best) several
    # hosts must give to be climbed to; None: rung's line (ladder.context), 0: any speed-up
    min_host_scaling: Optional[Annotated[float, Field(ge=0, le=1)]] = None


class Proposal(_Block):
    strategy: Verdict
    hosts: Hosts = 1


class Scenario(_Block):
    schema_: Literal["rung/scenario/v1"] = Field(alias="schema")
    name: Optional[str] = None
    workload: Workload
    hardware: Hardware
    fleet: Fleet = Fleet()
    goal: Goal
    proposal: Optional[Proposal] = None
    offers: list[Offer] = Field(default_factory=list)

    model_config = ConfigDict(
        extra="forbid", strict=True, allow_inf_nan=False, frozen=True, populate_by_name=True
    )

    # -- resolved values (catalog defaults applied), in base units -------------------
    @property
    def device(self) -> catalog.Device:
        found = catalog.lookup(self.hardware.device)
        if found is not None:
            return found
        return catalog.Device(
            "custom", float(self.hardware.device_memory_gib or 0), dict(catalog.CUSTOM_LINKS_GBPS),
            catalog.CUSTOM_DEFAULT_LINK, catalog.CUSTOM_SOURCE,
        )

    @property
    def is_tpu(self) -> bool:
        return self.device.is_tpu

    @property
    def device_memory_bytes(self) -> float:
        gib = self.hardware.device_memory_gib or self.device.memory_gib
        return gib * 2**30

    @property
    def intra_host_link(self) -> str:
        return self.hardware.intra_host or self.device.default_link

    @property
    def intra_host_bytes_per_second(self) -> float:
        gbps = self.hardware.intra_host_gbps or self.device.links_gbps[self.intra_host_link]
        return gbps * 1e9 / 8

    @property
    def inter_host_bytes_per_second(self) -> float:
        return self.hardware.inter_host_gbps * 1e9 / 8

    @property
    def host_memory_bytes(self) -> float:
        return self.hardware.host_memory_gib * 2**30

    @property
    def preemptions_per_host_second(self) -> float:
        rate = self.fleet.preemptions_per_host_hour
        if rate is None:
            rate = DEFAULT_PREEMPTIONS_PER_HOST_HOUR if self.fleet.preemptible else 0.0
        return rate / 3600.0

    @property
    def preemptible(self) -> bool:
        return self.preemptions_per_host_second > 0


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str]:
    """The keys a block accepts, for 'unknown key' messages."""
    for part in loc:
        if part.isdigit():  # an item of a list: the list's model already applies
            continue
        field = model.model_fields.get(part) or next(
            (f for f in model.model_fields.values() if f.alias == part), None
        )
        ann = getattr(field, "annotation", None)
        inner = [a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)]
        if not inner:
            return []
        model = inner[0]
    return [f.alias or n for n, f in model.model_fields.items()]


def _describe(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def first_error(errors: list) -> dict:
    """The validation error to report: an unknown key before anything else (a misspelt key
    is also a required one missing, and the key as written is what the user can find)."""
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def _message(err: dict, root: type[BaseModel]) -> tuple[str, str]:
    loc = tuple(str(p) for p in err["loc"])
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    path = ".".join(loc) or "(top level)"
    if kind == "missing":
        return path, "required key is missing"
    if kind == "extra_forbidden":
        fields = _fields_at(root, loc[:-1])
        close = difflib.get_close_matches(loc[-1], fields, n=1) if loc else []
        mean = f"did you mean {close[0]}? " if close else ""
        return path, f"unknown key; {mean}expected one of: {', '.join(fields)}"
    received = f"received {_describe(got)}"
    simple = {
        "float_type": "expected a number", "int_type": "expected a whole number",
        "int_from_float": "expected a whole number", "bool_type": "expected true or false",
        "string_type": "expected a string", "finite_number": "expected a finite number",
        "model_type": "expected a mapping of keys", "model_attributes_type": "expected a mapping of keys",
        "dict_type": "expected a mapping of keys", "list_type": "expected a list [low, high]",
        "too_short": "expected a list of two numbers [low, high]",
        "too_long": "expected a list of two numbers [low, high]",
    }
    if kind in simple:
        return path, f"{simple[kind]}, {received}"
    if kind == "greater_than":
        return path, f"expected a number greater than {ctx.get('gt')}, {received}"
    if kind == "greater_than_equal":
        return path, f"expected a number of at least {ctx.get('ge')}, {received}"
    if kind == "less_than_equal":
        le = ctx.get("le")
        return path, f"expected a number of at most {f'{le:,}' if isinstance(le, int) else f'{le:g}'}, {received}"
    if kind == "literal_error":
        return path, f"expected one of {ctx.get('expected')}, {received}"
    return path, f"{err['msg']}, {received}"


def _check(s: Scenario, where: str) -> None:
    """Cross-field rules the types alone cannot state."""
    w, h = s.workload, s.hardware
    if w.embedding_params > w.params:
        raise InputError(where, "workload.embedding_params",
                         f"{w.embedding_params:g} is more than workload.params ({w.params:g}); "
                         "embedding parameters are part of all parameters")
    for key, value in (("step_seconds", w.step_seconds), ("input_wait_seconds", w.input_wait_seconds)):
        ci = getattr(w, f"{key}_ci95")
        if ci is not None and not ci[0] <= value <= ci[1]:
            raise InputError(where, f"workload.{key}_ci95",
                             f"[{ci[0]:g}, {ci[1]:g}] does not contain workload.{key} ({value:g}); expected "
                             "[low, high] around the measured mean")
    if w.input_wait_seconds >= w.step_seconds:
        raise InputError(where, "workload.input_wait_seconds",
                         f"{w.input_wait_seconds:g} s is not shorter than workload.step_seconds "
                         f"({w.step_seconds:g} s); the wait is part of the step")
    if w.optimizer_update_seconds > w.step_seconds - w.input_wait_seconds:
        raise InputError(where, "workload.optimizer_update_seconds",
                         f"{w.optimizer_update_seconds:g} s is more than the step's compute (workload.step_seconds "
                         f"less workload.input_wait_seconds, {w.step_seconds - w.input_wait_seconds:g} s); the "
                         "update is part of it")
    if w.compiled_loss_not_scaled and w.loss_scaled_for_replicas is not False:
        raise InputError(where, "workload.compiled_loss_not_scaled",
                         f"{w.compiled_loss_not_scaled!r} names losses left undivided across replicas, but "
                         f"workload.loss_scaled_for_replicas is {w.loss_scaled_for_replicas}; expected false with "
                         "it (rung profile writes both)")
    if w.compiled_loss_sums and w.loss_scaled_for_replicas is not False:
        raise InputError(where, "workload.compiled_loss_sums",
                         f"{w.compiled_loss_sums!r} names losses that sum over the batch, but "
                         f"workload.loss_scaled_for_replicas is {w.loss_scaled_for_replicas}; expected false with "
                         "it (rung profile writes both)")
    _check_hardware(h, "hardware", where)
    names = set()
    for i, o in enumerate(s.offers):
        _check_hardware(o, f"offers.{i}", where)
        if not o.name.strip() or o.name == "hardware":
            raise InputError(where, f"offers.{i}.name", f"{o.name!r} is reserved or empty; expected a name of "
                                                        "its own ('hardware' is the team's hardware block)")
        if o.name in names:
            raise InputError(where, f"offers.{i}.name", f"{o.name!r} is used by an earlier offer; expected "
                                                        "unique names")
        names.add(o.name)
    p = s.proposal
    if p is not None and p.strategy in ("single_device", "mirrored", "fix_input_pipeline") and p.hosts != 1:
        raise InputError(where, "proposal.hosts",
                         f"{p.strategy} runs on one host, received hosts: {p.hosts} "
                         "(several hosts is multi_worker_mirrored or parameter_server)")


def _check_hardware(h: Hardware, at: str, where: str) -> None:
    if h.device == "custom":
        if h.device_memory_gib is None:
            raise InputError(where, f"{at}.device_memory_gib", "required when device is 'custom'")
    elif h.accelerator is not None:
        raise InputError(where, f"{at}.accelerator",
                         f"{h.accelerator!r} given for catalog device {h.device!r}; expected it only with "
                         "device 'custom' (a catalog device is what its name says)")
    elif catalog.lookup(h.device) is None:
        names = list(catalog.CATALOG)
        # the names that start as it does, or as its first part does, whatever the case ('a100'
        # and 'A100-SXM4': both A100s), else the nearest
        given = h.device.lower()
        near = [n for n in names if given and n.lower().startswith(given)] or \
            [n for n in names if given.split("-")[0] and n.lower().split("-")[0] == given.split("-")[0]]
        near = near or difflib.get_close_matches(h.device, names, n=1, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
        raise InputError(where, f"{at}.device",
                         f"unknown device {h.device!r}; expected 'custom' or a catalog name "
                         f"(see `rung catalog`){hint}")
    dev = catalog.lookup(h.device)
    if dev is not None and dev.is_tpu and h.intra_host is not None:
        raise InputError(where, f"{at}.intra_host",
                         f"{h.intra_host!r} given for TPU {dev.name}, whose chips are joined by ICI; "
                         "leave it out (or set intra_host_gbps)")
    if dev is not None and dev.is_tpu and dev.host_devices and h.devices_per_host > dev.host_devices:
        # Cloud TPU hosts of a generation hold at most this many (v4 and v5p: 4 chips; v3: 8
        # cores; v5e: 8 chips): more per host is a slice of several hosts
        raise InputError(where, f"{at}.devices_per_host",
                         f"{h.devices_per_host} given for {dev.name}, whose hosts hold {dev.host_devices} devices; "
                         f"expected at most {dev.host_devices} (a slice of more is several hosts: raise max_hosts)")
    links = dev.links_gbps if dev is not None else catalog.CUSTOM_LINKS_GBPS
    if h.intra_host is not None and h.intra_host not in links:
        raise InputError(where, f"{at}.intra_host",
                         f"{h.device} has no {h.intra_host}; expected one of {sorted(links)}")


def parse_scenario(data: dict[str, Any], where: str = "<scenario>") -> Scenario:
    """Validate a mapping as scenario v1, or raise InputError."""
    if "schema" not in data:
        raise InputError(where, "schema", f"required key is missing; expected {SCHEMA!r}")
    if data["schema"] != SCHEMA:
        raise InputError(where, "schema", f"expected {SCHEMA!r}, received {_describe(data['schema'])}")
    try:
        s = Scenario.model_validate(data)
    except ValidationError as e:
        path, msg = _message(first_error(e.errors()), Scenario)
        raise InputError(where, path, msg) from None
    _check(s, where)
    return s


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario v1 file (YAML or JSON)."""
    return parse_scenario(load_mapping(path, "scenario file"), str(path))
