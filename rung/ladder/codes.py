"""Verdicts, the strategy each names, and the codes a decision uses.

The contract's codes (shared/contract/scenario-v1.md) plus rung's own, which a
decision may add. Each code is one short line people can look up in `docs/codes.md`.
"""

from __future__ import annotations

VERDICTS = (
    "fix_input_pipeline", "single_device", "mirrored", "multi_worker_mirrored",
    "parameter_server", "tpu", "needs_sharding",
)

STRATEGY = {
    "fix_input_pipeline": None,
    "single_device": "tf.distribute.OneDeviceStrategy",
    "mirrored": "tf.distribute.MirroredStrategy",
    "multi_worker_mirrored": "tf.distribute.MultiWorkerMirroredStrategy",
    "parameter_server": "tf.distribute.experimental.ParameterServerStrategy",
    "tpu": "tf.distribute.TPUStrategy",
    "needs_sharding": None,
}

# The contract's reason and warning codes.
INPUT_BOUND = "INPUT_BOUND"
DOES_NOT_FIT = "DOES_NOT_FIT"
ONE_DEVICE_SUFFICIENT = "ONE_DEVICE_SUFFICIENT"
ONE_HOST_SUFFICIENT = "ONE_HOST_SUFFICIENT"
NEEDS_MULTIPLE_HOSTS = "NEEDS_MULTIPLE_HOSTS"
INTERCONNECT_BOUND = "INTERCONNECT_BOUND"
TARGET_UNREACHABLE = "TARGET_UNREACHABLE"
PREEMPTIBLE_WORKERS = "PREEMPTIBLE_WORKERS"
STRAGGLERS = "STRAGGLERS"
EMBEDDING_DOMINATED = "EMBEDDING_DOMINATED"
STALE_GRADIENTS = "STALE_GRADIENTS"
REPRODUCIBILITY_REQUIRED = "REPRODUCIBILITY_REQUIRED"
GANG_SCHEDULING = "GANG_SCHEDULING"
TPU_HARDWARE = "TPU_HARDWARE"
DYNAMIC_SHAPES = "DYNAMIC_SHAPES"

# The contract's review codes.
INPUT_BOUND_SCALING = "INPUT_BOUND_SCALING"
MULTI_WORKER_BEFORE_ONE_HOST = "MULTI_WORKER_BEFORE_ONE_HOST"
REPLICATION_DOES_NOT_FIT = "REPLICATION_DOES_NOT_FIT"
LINEAR_SCALING_ASSUMED = "LINEAR_SCALING_ASSUMED"
STALE_GRADIENTS_IGNORED = "STALE_GRADIENTS_IGNORED"
TPU_WITHOUT_STATIC_SHAPES = "TPU_WITHOUT_STATIC_SHAPES"

# The contract's capacity-planning codes (scenario v1 additions).
BIGGER_HOST = "BIGGER_HOST"
BIGGER_DEVICE = "BIGGER_DEVICE"
TPU_OFFERED = "TPU_OFFERED"  # an offer of TPUs is chosen over the team's GPUs: a port
# rung's own: no offers given, and one host of 8 of the team's device would do what the
# fleet does
BIGGER_HOST_NOT_OFFERED = "BIGGER_HOST_NOT_OFFERED"
CHEAPER_OPTION = "CHEAPER_OPTION"
CHEAPER_PER_EXAMPLE = "CHEAPER_PER_EXAMPLE"  # prefer: cost: another option meets the target for >= 25% less per example
OVER_BUDGET = "OVER_BUDGET"
PS_HOSTS_NOT_PRICED = "PS_HOSTS_NOT_PRICED"  # a priced parameter-server plan without a price for its CPU hosts

# rung's own codes.
LARGER_BATCH = "LARGER_BATCH"                    # (warning) a larger per-device batch amortises what every step pays
BELOW_TARGET = "BELOW_TARGET"                    # this rung alone does not reach the target
NOT_INPUT_BOUND = "NOT_INPUT_BOUND"              # the device waits under 20% of the step
FITS_ONE_DEVICE = "FITS_ONE_DEVICE"              # a replica fits; no sharding needed
NOT_TPU_HARDWARE = "NOT_TPU_HARDWARE"            # the hardware on offer is not TPUs
ONE_DEVICE_PER_HOST = "ONE_DEVICE_PER_HOST"      # hosts have one device: nothing to mirror
ONE_HOST_ON_OFFER = "ONE_HOST_ON_OFFER"          # max_hosts is 1
SYNCHRONOUS_PREFERRED = "SYNCHRONOUS_PREFERRED"  # nothing forces asynchrony
SYNCHRONOUS_SUFFICIENT = "SYNCHRONOUS_SUFFICIENT"  # a synchronous rung meets the goal
NOT_FASTER = "NOT_FASTER"                        # predicted no faster than a lower rung
HOSTS_DO_NOT_PAY = "HOSTS_DO_NOT_PAY"            # short of the target, several hosts give under a third of hosts x one host
BATCH_TOO_LARGE = "BATCH_TOO_LARGE"              # activations overflow; a smaller batch fits
SCALING_BELOW_LINEAR = "SCALING_BELOW_LINEAR"    # the chosen hosts reach under 80% of linear
PROPOSAL_EXCEEDS_FLEET = "PROPOSAL_EXCEEDS_FLEET"  # the proposal asks for more hosts than max_hosts
PROPOSAL_WRONG_HARDWARE = "PROPOSAL_WRONG_HARDWARE"  # TPUStrategy on GPUs or a GPU strategy on TPUs
PROPOSAL_NOT_A_SLICE = "PROPOSAL_NOT_A_SLICE"  # a TPU plan on a host count no slice of the generation has
PROPOSAL_BELOW_TARGET = "PROPOSAL_BELOW_TARGET"  # the proposed plan is predicted under the target
PROPOSAL_MORE_THAN_NEEDED = "PROPOSAL_MORE_THAN_NEEDED"  # the verdict meets the target on fewer hosts or devices
PROPOSAL_SHARDING_NOT_NEEDED = "PROPOSAL_SHARDING_NOT_NEEDED"  # sharding proposed for a model a device holds
PROPOSAL_NOT_INPUT_BOUND = "PROPOSAL_NOT_INPUT_BOUND"  # a pipeline fix proposed for a pipeline that keeps up
PROPOSAL_ASYNC_WITHOUT_CAUSE = "PROPOSAL_ASYNC_WITHOUT_CAUSE"  # parameter servers proposed with no preemption, stragglers or embeddings
LOAD_IMBALANCE = "LOAD_IMBALANCE"  # a synchronous step waits for the replica whose batch (shape) takes longest
CLOSE_CALL = "CLOSE_CALL"                        # the verdict's margin is inside the measurement's noise
STEP_TIME_ESTIMATED = "STEP_TIME_ESTIMATED"      # the step time was estimated for the device, not measured
# rung profile's findings on the input pipeline, carried beside a fix_input_pipeline verdict
NO_PREFETCH = "NO_PREFETCH"  # no prefetch at the end: the pipeline and the step take turns
SEQUENTIAL_MAP = "SEQUENTIAL_MAP"  # a map without num_parallel_calls
SEQUENTIAL_INTERLEAVE = "SEQUENTIAL_INTERLEAVE"  # an interleave without num_parallel_calls
PYTHON_IN_PIPELINE = "PYTHON_IN_PIPELINE"  # from_generator, py_function, numpy_function
NO_CACHE = "NO_CACHE"  # a small source read and mapped again every epoch
MEASURED_ON_THIS_MACHINE = "MEASURED_ON_THIS_MACHINE"  # the plan assumes devices as fast as the one profiled
STRATEGY_OPTIONS = "STRATEGY_OPTIONS"            # the arguments the strategy is created with, and why
COORDINATOR_BOUND = "COORDINATOR_BOUND"          # parameter servers: one coordinator's dispatch caps the fleet
EMULATED_PRECISION = "EMULATED_PRECISION"        # a 16-bit policy timed on a CPU that emulates it
DEFAULT_BATCH = "DEFAULT_BATCH"                  # profiled at rung's default batch; the file keeps batch_size of its own
HEAVY_TAILED_STEPS = "HEAVY_TAILED_STEPS"        # the slowest-worker wait is simulated (no closed form)
LOSS_NOT_SCALED = "LOSS_NOT_SCALED"              # a custom train_step's loss is not divided across replicas
STRING_INPUTS = "STRING_INPUTS"                  # string features: Keras 3 mirrored fit and TPUs cannot take them
STEPS_PER_EXECUTION = "STEPS_PER_EXECUTION"      # compile(steps_per_execution > 1): Keras 3 mirrored fit fails
RAGGED_OR_SPARSE_INPUTS = "RAGGED_OR_SPARSE_INPUTS"  # ragged or sparse features: Keras 3 mirrored fit fails
LOGGED_LOSS_DIVIDED = "LOGGED_LOSS_DIVIDED"  # a custom step logs its replica's share: 1/N of the loss shown
CLIPPING_PER_REPLICA = "CLIPPING_PER_REPLICA"  # optimizer clipping: Keras 3 mirrored clips each replica's share
METRIC_SUMMED = "METRIC_SUMMED"  # a metric of the file's own set with assign: N replicas' values summed in fit's logs
KERAS3_IMPORT = "KERAS3_IMPORT"                  # the file builds its model from Keras 3's own `import keras`: tf-keras cannot fit it
STEP_ON_OTHER_KERAS = "STEP_ON_OTHER_KERAS"      # the step was measured on Keras 3; the plan runs on tf-keras
STEP_REMEASURED = "STEP_REMEASURED"              # the plan runs on tf-keras: its step was measured there, and planned from
OFFER_NOT_GIVEN = "OFFER_NOT_GIVEN"              # a workload planned with 1 device per host or 1 host by default
PYTHON_PIPELINE = "PYTHON_PIPELINE"              # Python in the input pipeline runs on the PS coordinator alone
CAPTURED_DATASET = "CAPTURED_DATASET"            # make_dataset builds on a dataset PS workers cannot receive
RUN_EAGERLY = "RUN_EAGERLY"                      # compile(run_eagerly=True): fit runs every step without a graph
JIT_COMPILE = "JIT_COMPILE"                      # an XLA step on a parameter-server worker cannot read the ps tasks' variables
INPUT_NOT_SHARDED = "INPUT_NOT_SHARDED"          # every worker's pipeline yields the same batches
EMPTY_SHARD = "EMPTY_SHARD"                      # one worker's pipeline yields nothing
BATCH_DIVIDED = "BATCH_DIVIDED"                  # make_dataset divides the per-replica batch by the replicas again
DENSE_EMBEDDING_GRADIENTS = "DENSE_EMBEDDING_GRADIENTS"  # embedding tables whose gradients are whole tables
SYNC_BATCH_NORM = "SYNC_BATCH_NORM"              # synchronized BatchNorm layers: what their small all-reduces cost the step
STRATEGY_FAILS = "STRATEGY_FAILS"                # the step failed under a strategy here, on the plan's Keras
GRADIENT_ACCUMULATION = "GRADIENT_ACCUMULATION"  # the optimizer's own accumulation: no tf.distribute strategy runs it
STATEFUL_RNN = "STATEFUL_RNN"                    # stateful=True recurrent layers: tf-keras builds them under no strategy
STRATEGY_STEP_SLOWER = "STRATEGY_STEP_SLOWER"    # the step is slower under mirrored variables than without a strategy
