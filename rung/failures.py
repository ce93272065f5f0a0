"""Failures of the user's model in one line, and what to do about those a model meets
only under a tf.distribute strategy.

A model that trains without a strategy can fail under one (OneDeviceStrategy
included): a keras.io GAN, with its own `train_step`, its own optimizers and no
`call()`, meets three of those below. TensorFlow's message says what broke, not what to
change; `hint` adds that. Used by measure, bench and launch; pure: no TensorFlow.
Each hint was checked on such a GAN (TensorFlow 2.21; Keras 3 and tf-keras), the empty
shard on `tests/bench/shard_one_file.py`, string features under Keras 3's mirrored fit on a
StringLookup model (keras.io's text classification has one), an adapt in make_dataset under
parameter servers, the bundled mlp compiled with jit_compile=True under mirrored and
multi-worker runs on CPU, a ragged and a sparse model under Keras 3's mirrored fit, a stateful
GRU under tf-keras's strategies."""

from __future__ import annotations

import inspect

import re
from typing import Optional

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NOISE = ("File \"", "Detected at node", "defined at", "[[", "Traceback", "Arguments received",
          "Call arguments received", "•",
          "in user code", "Graph execution error", "Exception encountered when calling", "^", "~",
          "Hint: If you want to see a list of allocated tensors")
# The second line of an aborted collective's message, under its cause ("Collective ops is
# aborted by: ..."): the line kept is the cause, when the message has it.
_GENERIC = "The error could be from a previous operation"
_ERROR_LINE = re.compile(r"^[A-Za-z_.]*(Error|Exception): (.*)$")
MAX_MESSAGE = 300
# Graph-internal names TensorFlow adds to op errors, of no use to the model's author.
_CLUTTER = (re.compile(r"\{\{function_node [^}]*\}\}\s*"), re.compile(r"\s*for '\{\{node [^']*'"),
            re.compile(r"\s*\[Op:[^\]]*\](\s*name:.*)?$"))


# The values of a tensor printed into a message (Keras prints an eager input's values):
# four or more numbers in brackets, apart by spaces as numpy prints them, over as many
# lines as numpy wraps them (not a shape: shape[4096,4096] keeps its commas).
_NUMBER = r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
_VALUES = re.compile(rf"\[[\[\s]*{_NUMBER}(?:[\s\[\]]+{_NUMBER}){{3,}}[\s\]]*\]")


def _noise(line: str) -> bool:
    return not line or line.startswith(_NOISE)


def message_line(message: str, kind: str = "") -> str:
    """An error message from TensorFlow or Keras as one readable line: colour codes,
    stacks, node names and argument dumps removed; the innermost error's own words kept
    (`kind`, the exception's class name, when nothing else is left)."""
    lines = [line.strip() for line in _VALUES.sub("[...]", _ANSI.sub("", message)).splitlines()]
    marks = [i for i, line in enumerate(lines) if _ERROR_LINE.match(line)]
    if marks:  # "in user code:" traces: the innermost "XError: message" and what follows
        i = marks[-1]
        head = _ERROR_LINE.match(lines[i]).group(2).strip()
        rest = [line for line in lines[i + 1:] if not _noise(line)]
        text = head if not _noise(head) else (rest[0] if rest else head)
    else:  # op errors: the first root error, else the last line that is not a stack or a node
        first = [line[4:].strip() for line in lines if line.startswith("(0) ")]
        kept = [line for line in lines if not _noise(line)]
        kept = [line for line in kept if not line.startswith(_GENERIC)] or kept
        # a message that shows code in fences (Keras's KerasTensor error) states the problem
        # first and its examples after; others end on the innermost cause (Keras's "Exception
        # encountered: '...'", an op error's message after the stack's source lines)
        examples = any(line.startswith("```") for line in lines)
        text = first[0] if first else (kept[0] if examples else kept[-1]) if kept else ""
    for pattern in _CLUTTER:
        text = pattern.sub("", text)
    text = re.sub(r"\s+", " ", text).strip() or kind
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


# Why a pipeline that runs Python cannot feed parameter-server workers (the generated
# train.py and the bench stop on it; advise warns PYTHON_PIPELINE).
PS_PYTHON_PROBLEM = (
    "the input pipeline runs Python (from_generator, py_function or numpy_function), and under "
    "ParameterServerStrategy that Python runs only in the coordinator's process: every worker takes its "
    "examples from the chief over RPC, and the chief did not exit after its last epoch here (TensorFlow 2.21; "
    "tensorflow#48957). Build the pipeline from TensorFlow ops (TFRecord files, from_tensor_slices, "
    "tf.data maps) for parameter servers")


# Why a pipeline built on a dataset made outside make_dataset cannot feed parameter-server
# workers (profile finding and advise's CAPTURED_DATASET; train.py and the bench stop on it).
PS_CAPTURED_DATASET_PROBLEM = (
    "make_dataset builds on a tf.data.Dataset made outside it (when the file is imported): under parameter "
    "servers the coordinator traces make_dataset in a tf.function and runs it on every worker, and a dataset made "
    "outside that function lives in the coordinator's process, which a worker cannot receive (the chief fails with "
    "\"Failed copying input tensor\" or \"Unable to parse tensor proto\"; keras.io's FeatureSpace example makes its "
    "table dataset at import). Make the dataset inside make_dataset (Dataset.from_tensor_slices(...) there); the "
    "arrays it reads and the adapted preprocessing can stay at the top of the file")


# Why every parameter-server worker reads the same batches from a pipeline that draws
# nothing at random without a seed (profile finding and advise's INPUT_NOT_SHARDED).
_PS_COPIES = ("under parameter servers make_dataset runs once, on the coordinator, with an InputContext of one "
              "pipeline (a shard() by it keeps everything), and every worker runs a copy of that pipeline")
PS_SAME_INPUT = (f"{_PS_COPIES}; this one draws nothing at random without a seed, so every worker would read the "
                 "same batches in the same order")
# the same, for a pipeline whose maps augment at random: each copy draws its own numbers,
# in the same order (a 2-worker launch showed the same examples, flipped differently)
PS_AUGMENTED_INPUT = (f"{_PS_COPIES}; this one draws at random only in its maps, so every worker would read the "
                      "same examples in the same order, each augmenting them its own way")
PS_SAME_INPUT_FIX = "shuffle it without a seed (ds.shuffle(buffer)), so each worker draws its own order"


# A model built under a strategy of the file's own (`with strategy.scope():` in build_model,
# a newcomer's earlier try at distributing): rung builds it under the strategy it measures
# or plans, and TensorFlow's words name two strategy objects by their addresses.
def own_strategy_problem(name: str = "", calls: str = "") -> str:
    """What to change when build_model() builds its model under a strategy of its own
    (`name`, its class), or, with `calls` (rung.kerasfit.strategy_calls), when the file
    constructs one where rung imports it or builds its model."""
    theirs = f"a tf.distribute strategy of its own ({name})" if name else "a tf.distribute strategy of its own"
    said = (f"the file constructs a tf.distribute strategy of its own where rung runs it ({calls})" if calls
            else f"build_model() builds the model under {theirs}")
    return (f"{said}; rung calls build_model() inside the scope of the strategy each run uses, so the file must not "
            "choose one: take the strategy and `with strategy.scope():` out of build_model and the file's top level "
            "(under `if __name__ == \"__main__\":` rung does not run it)")


def fit_at_import_problem(calls: str) -> str:
    """What to change when a workload trains its model where rung imports it or builds its
    model (`calls`: rung.kerasfit.fit_calls): a script that became a workload and kept its fit."""
    return (f"the file trains a model where rung runs it ({calls}): every process rung starts would train it first, "
            "outside any strategy, before the run rung measures or launches; put that training under "
            "`if __name__ == \"__main__\":` (rung does not run it) and leave training to rung")


# A file that turns TensorFlow 2's eager execution off (tf.compat.v1.disable_eager_execution()
# or disable_v2_behavior(), left from TensorFlow 1 code): process-wide and not undone, and
# Keras's fit under tf.distribute and rung's measurements run eagerly (TensorFlow 2.21: rung's
# step count met a SymbolicTensor where it reads a number)
EAGER_OFF_PROBLEM = (
    "the file turns TensorFlow 2's eager execution off where rung imports it (tf.compat.v1.disable_eager_execution() "
    "or disable_v2_behavior(), TensorFlow 1's graph mode), for the whole process and for good: tf.distribute's "
    "strategies under Keras fit, and rung, run eagerly; remove that call (fit compiles the training step into a "
    "graph itself)")


def build_model_requires_problem(required: list, line: int) -> str:
    """What to change when build_model() has parameters without defaults (`required`, from
    its `def` at `line`): rung calls it with no arguments. `build_model(strategy)`, from a try
    at distributing by hand, is told the file needs no strategy at all."""
    them = "it" if len(required) == 1 else "them"
    said = (f"build_model() requires {', '.join(required)} (line {line}), and rung calls build_model() with no "
            f"arguments (contract: workload v1): give {them} {'a default' if len(required) == 1 else 'defaults'}")
    if any("strategy" in name for name in required):
        said += ("; rung calls build_model() inside the scope of each run's strategy, so the file needs no strategy "
                 "or scope of its own")
    return said


def exited_at_import_problem(code) -> str:
    """What to change when a workload calls sys.exit() while it is imported: a script's
    `parser.parse_args()` at the top with an argument it requires (rung imports the file with
    no arguments, as `python workload.py` runs it; arguments with defaults take them)."""
    return (f"the file exited while it was imported (SystemExit: {code}): a command line parsed at its top "
            "(argparse's parse_args()) gets no arguments from rung, which imports the file as `python workload.py` "
            "would run it, so an argument without a default stops it; parse the command line under "
            "`if __name__ == \"__main__\":`, or give every argument a default")


def clear_session_problem(calls: str) -> str:
    """What to change when build_model() (or make_dataset()) calls Keras's clear_session()
    (`calls`: rung.kerasfit.clear_session_calls), as notebooks do before building a model."""
    return (f"the file clears Keras's session where rung builds the model ({calls}): rung calls build_model() inside "
            "the scope of each run's strategy, and clear_session() resets TensorFlow's default graph, that scope with "
            "it (leaving the scope then fails: \"IndexError: pop from empty list\"); call it at the top of the file, "
            "or not at all")


def not_a_dataset_problem(batch_size: int, ds) -> str:
    """What to change when make_dataset returns something other than a tf.data.Dataset: the
    arrays of a script's `fit(x, y)`, or a keras.utils.Sequence / PyDataset, which feeds one
    process's fit and no tf.distribute strategy."""
    said = f"make_dataset({batch_size}) returned {type(ds).__name__}; expected a tf.data.Dataset of (features, labels) batches"
    if isinstance(ds, (tuple, list)) or type(ds).__name__ == "ndarray":
        return f"{said}: wrap the arrays, tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)"
    if hasattr(ds, "__getitem__") and hasattr(ds, "__len__"):
        return (f"{said}: a keras.utils.Sequence (PyDataset) feeds one process's fit, and tf.distribute's strategies "
                "take a tf.data.Dataset; build the batches with tf.data (tf.data.Dataset.from_tensor_slices((x, y))"
                ".batch(batch_size), or a map over file names)")
    if inspect.isgenerator(ds):
        return (f"{said}: make_dataset is a Python generator (it yields), and tf.distribute's strategies take a "
                "tf.data.Dataset; wrap the generator, tf.data.Dataset.from_generator(gen, output_signature=(...)), "
                "or better build the batches with tf.data ops (a generator runs in one Python thread, and under "
                "parameter servers only on the coordinator)")
    return said


def made_before_problem(outside: int, total: int, names: list, optimizer: Optional[str] = None,
                        metrics: Optional[list] = None) -> str:
    """What to change when build_model() returns a model whose variables were made before
    it was called (a model built at the file's top level, a layer kept there), or whose
    optimizer was (`optimizer`, its class: one made at the top of the file), or whose
    compiled metrics were (`metrics`, their names: `ACC = tf.keras.metrics...()` at the top,
    passed to compile)."""
    what = []
    if outside:
        some = f"{outside} of its {total} variables" if outside < total else f"all {total} of its variables"
        what.append(f"{some}: " + ", ".join(names[:3]) + (", ..." if len(names) > 3 else ""))
    if optimizer:
        what.append(f"its optimizer, {optimizer}")
    if metrics:
        what.append(("its metric " if len(metrics) == 1 else "its metrics ") + ", ".join(metrics))
    adapted = any(str(n).split(":")[0].endswith(("/mean", "/variance")) for n in names)
    fixes = []
    if adapted:
        fixes.append("a Normalization adapted when the file is imported: adapt it there, or give it mean= and "
                     "variance=")
    if optimizer:
        fixes.append(f"the optimizer too: model.compile(optimizer=tf.keras.optimizers.{optimizer}(...)) there")
    if metrics:
        fixes.append("the metrics too: model.compile(metrics=[tf.keras.metrics.SparseCategoricalAccuracy(...)]) "
                     "there, or by name (metrics=[\"accuracy\"])")
    return (f"build_model() returned a model whose variables were made before it was called ({'; '.join(what)}), "
            "at the file's top level or in an object kept there; rung calls build_model() inside the scope of the "
            "strategy each run uses, and variables made outside it are not the strategy's: tf-keras, where "
            "multi-worker and parameter-server fit run, refuses them when the model is compiled (\"was not created "
            "in the distribution strategy scope\"), Keras 3's mirrored fit fails on such an optimizer (\"Mixing "
            "different tf.distribute.Strategy objects\"), and a model compiled at the top of the file trained with "
            "no all-reduce at all: make the model, every layer of it, inside build_model()"
            + (f" ({'; '.join(fixes)})" if fixes else ""))


# tf-keras's mixed_float16 under parameter servers (rung bench's chief, TensorFlow 2.21: "Mixed
# precision is not supported with the tf.distribute.Strategy: ParameterServerStrategyV2")
MIXED_FLOAT16_PS_PROBLEM = (
    "the model uses the mixed_float16 policy, and tf-keras, which parameter-server fit runs on, refuses it under "
    "ParameterServerStrategy (its loss scaling unscales gradients once per compute replica, right only when each "
    "replica holds its own variables): under parameter servers use mixed_bfloat16 (no loss scaling; GPUs from "
    "Ampere on, TPUs) or float32, or a synchronous strategy")


# Keras 3's words when its fit under a strategy cannot build the model (`Trainer._symbolic_build`)
KERAS3_BUILD_FAILED = "Unable to automatically build the model"

# A file that configures TensorFlow's runtime where rung imports it, after rung started the
# runtime for its strategy (TensorFlow 2.21: "Intra op parallelism cannot be modified after
# initialization.", "Physical devices cannot be modified after being initialized": the GPU
# guide's set_memory_growth)
RUNTIME_CONFIGURED_PROBLEM = (
    "the file configures TensorFlow's runtime where rung imports it (threads, visible or logical devices, GPU "
    "memory growth), and rung starts the runtime before it imports the file, as a strategy must set up its "
    "devices first: move that configuration under `if __name__ == \"__main__\":` (rung sets the devices each "
    "strategy uses), and set threads with TF_NUM_INTRAOP_THREADS and TF_NUM_INTEROP_THREADS in the environment "
    "instead")

# A Colab-style TPU set-up at the top of the file, on a machine with no TPU (TensorFlow 2.21's
# TPUClusterResolver: "Please provide a TPU Name to connect to.")
TPU_AT_IMPORT_PROBLEM = (
    "the file connects to a TPU where rung imports it (TPUClusterResolver, initialize_tpu_system), and there is "
    "no TPU here to connect to: move that set-up under `if __name__ == \"__main__\":`; the train.py `rung init "
    "--strategy tpu` writes connects to the TPU itself (TPU_NAME)")

def shared_file_cache_problem(name: str = "filename") -> str:
    """What to change when make_dataset caches to one file path that every worker writes
    (`name`: the path as code, when the profile read it from the pipeline)."""
    return (f"make_dataset caches to a file path that every worker uses (`.cache({name})`), and two workers on one "
            "machine or one shared file system write the same cache files: give each worker a path of its own "
            "(`f\"{path}_{input_context.input_pipeline_id}\"`) or cache in memory (`.cache()`); a cache file is read "
            "as it was written, so delete it after changing the pipeline")


# make_dataset caching to one file path that every worker writes (TensorFlow 2.21, two
# multi-worker workers on one machine: "There appears to be a concurrent caching iterator
# running - cache lockfile already exists")
SHARED_FILE_CACHE_PROBLEM = shared_file_cache_problem()

# keras.ops / keras.random through tf.keras, which is tf-keras under multi-worker and parameter
# servers (TensorFlow 2.21: "module 'tf_keras.api._v2.keras' has no attribute 'ops'")
KERAS3_API_ON_TF_KERAS = (
    "the model calls keras.ops or keras.random, Keras 3's alone, and tf-keras, where multi-worker and "
    "parameter-server fit run, has neither: use TensorFlow's op (tf.not_equal for keras.ops.not_equal, "
    "tf.random.* with a seed for keras.random.*), which tf-keras's layers and functional models take; in a "
    "layer's compute_mask, which Keras 3 calls on symbolic tensors that no TensorFlow op takes, compare with "
    "Python's operators (inputs != 0), which both Kerases take")

_SLOTS_IN_STEP = ("an optimizer creates its slot variables inside the distributed step: build every optimizer "
                  "the train_step uses in build_model(), under the strategy's scope (optimizer.build(its "
                  "variables))")

_HINTS = (
    (("cache lockfile already exists",), SHARED_FILE_CACHE_PROBLEM),
    # TensorFlow 2.x's preprocessing layers under Keras 3 (tf.keras there since TensorFlow 2.16)
    (("keras", "has no attribute 'experimental'"),
     "tf.keras.layers.experimental.preprocessing is gone from Keras 3, which tf.keras is here: its layers are "
     "tf.keras.layers.Rescaling, Normalization, RandomFlip, ... (the same names, without "
     "experimental.preprocessing), on both Kerases"),
    (("module 'tf_keras", "has no attribute 'ops'"), KERAS3_API_ON_TF_KERAS),
    (("module 'tf_keras", "has no attribute 'random'"), KERAS3_API_ON_TF_KERAS),
    (("cannot be modified after",), RUNTIME_CONFIGURED_PROBLEM),
    (("Please provide a TPU Name to connect to",), TPU_AT_IMPORT_PROBLEM),
    # an object made outside any strategy (at import: an optimizer, a metric) and used inside
    # one (Keras 3's mirrored fit of a model compiled with an Adam made at import)
    (("Mixing different tf.distribute.Strategy objects", "_DefaultDistributionStrategy"),
     "an object the model uses was made outside any tf.distribute strategy, before build_model() was called (an "
     "optimizer, a metric, a loss or a layer kept at the file's top level), and is used inside the strategy's "
     "scope: make it inside build_model()"),
    # build_model() enters a strategy of its own inside rung's (TensorFlow's words), or its
    # model, made under one, is trained outside it
    (("Mixing different tf.distribute.Strategy objects",), own_strategy_problem()),
    (('Need to be inside "with strategy.scope()"',), own_strategy_problem()),
    # Keras 3 builds the model under a strategy by calling it on a batch
    ((KERAS3_BUILD_FAILED,),
     "under a tf.distribute strategy Keras 3 builds the model by calling it on a batch, and this model cannot "
     "be called (no call()?): give it a call(), or mark it built in build_model() (model.built = True) once "
     "its parts are built"),
    # optimizer slots created inside the replicated step: TensorFlow names the slot's initializer
    # in one root error, or only the cond of the optimizer's first apply (Keras 3's apply(grads)
    # of an optimizer the train_step builds itself, seen under rung bench's mirrored:2)
    (("You must feed a value for placeholder tensor", "/Initializer/"), _SLOTS_IN_STEP),
    (("You must feed a value for placeholder tensor", "StatefulPartitionedCall/cond/"), _SLOTS_IN_STEP),
    # a worker whose shard of the input is empty (Keras fit ends with no logs)
    (("Unexpected result of `train_function` (Empty logs)",),
     "this worker's dataset yielded no batch: under several workers make_dataset gets an InputContext, and a "
     "pipeline sharded by it (dataset.shard(num_input_pipelines, input_pipeline_id)) over fewer files than "
     "workers leaves some workers nothing: shard after reading the records, or give it at least as many files "
     "as workers"),
    # a variable made inside the replicated step: keras.random drawn without a seed (Keras 3's
    # global SeedGenerator), or a layer that creates a tf.Variable in call()
    (("tf.function only supports singleton tf.Variables created on the first call",),
     "a variable is created inside the distributed step: random numbers drawn without a seed "
     "(keras.random.* with seed=None) make Keras 3's global SeedGenerator there; give the layer a "
     "keras.random.SeedGenerator in __init__ and pass it as seed= (any other variable: create it in "
     "__init__ or build())"),
    # Keras 3's fit loop over steps_per_execution steps, under MirroredStrategy
    (("You must feed a value for placeholder tensor", "while/cond/"),
     "Keras 3's fit runs steps_per_execution steps in a loop, and under MirroredStrategy that loop fails "
     "(keras-team/keras#19246): run it on tf-keras (TF_USE_LEGACY_KERAS=1), or compile with "
     "steps_per_execution=1"),
    # Keras 3's mirrored fit sums something over the replicas' string inputs (tensorflow#80951)
    (("Value for attr 'T' of string is not in the list of allowed values",),
     "string features reached an op that sums over replicas: Keras 3's fit cannot run a model with string "
     "inputs under MirroredStrategy (tensorflow#80951): run it on tf-keras (TF_USE_LEGACY_KERAS=1), or map "
     "TextVectorization / StringLookup over the tf.data pipeline so the model takes integers"),
    # Keras 3's mirrored fit splits a batch across replicas by each tensor's device
    (("'RaggedTensor' object has no attribute 'device'",),
     "ragged features: Keras 3's fit cannot split a batch of them across MirroredStrategy's replicas: run it "
     "on tf-keras (TF_USE_LEGACY_KERAS=1), or make them dense in the pipeline (RaggedTensor.to_tensor())"),
    (("'SparseTensor' object has no attribute 'device'",),
     "sparse features: Keras 3's fit cannot split a batch of them across MirroredStrategy's replicas: run it "
     "on tf-keras (TF_USE_LEGACY_KERAS=1), or make them dense in the pipeline (tf.sparse.to_dense)"),
    # parameter servers build each worker's dataset inside a tf.function
    (("Detected a call to `PreprocessingLayer.adapt` inside a `tf.function`",),
     "make_dataset adapts a preprocessing layer, and under parameter servers each worker's dataset is built "
     "inside a tf.function, where adapt cannot run: adapt the layer once when the file is imported (a "
     "module-level layer, as keras.io does) and only call it in make_dataset"),
    # XLA (compile(jit_compile=True)) on CPU devices: no collectives, and a mirrored step's
    # variables on other logical devices (both seen here with TF 2.21 on the bundled mlp)
    (("Collectives are not yet implemented for CPU devices when compiling with XLA",),
     "the model is compiled with jit_compile=True, and XLA on CPU runs no collectives (b/194942685): on this "
     "machine's CPU workers compile with jit_compile=False; XLA's collectives on GPUs are not measured on this "
     "machine"),
    (("Trying to access resource", "located in device /job:ps/"),
     "the model is compiled with jit_compile=True, and under parameter servers its variables live on the ps "
     "tasks, which an XLA-compiled step on a worker cannot read: compile with jit_compile=False for "
     "ParameterServerStrategy, on any hardware (XLA's known issue of a variable on another device; rung init's "
     "train.py does it)"),
    (("Trying to access resource", "known_issues#tfvariable_on_a_different_device"),
     "the model is compiled with jit_compile=True, and XLA cannot compile a step whose variables sit on other "
     "devices (here the logical CPU devices a mirrored run uses): on this machine compile with "
     "jit_compile=False; XLA under MirroredStrategy on GPUs is not measured on this machine"),
    # tf-keras's fit under parameter servers schedules graph functions on the workers
    (("`run_eagerly` is not supported",),
     "the model is compiled with run_eagerly=True, and tf-keras runs no eager step under "
     "ParameterServerStrategy (the coordinator schedules graph functions on the workers): compile with "
     "run_eagerly=False, or set model.run_eagerly = False after build_model() (rung init's train.py does)"),
    # Keras 3's optimizer accumulating gradients, under MirroredStrategy (keras-team/keras#20582)
    (("`merge_call` called while defining a new graph or a tf.function",),
     "an all-reduce sits inside control flow or a nested tf.function: Keras 3's optimizer with "
     "gradient_accumulation_steps does this under any replicated strategy (keras-team/keras#20582: raise the "
     "per-device batch instead, or accumulate in a train_step of your own), and so does a train_step that "
     "applies its gradients inside a tf.cond or is itself decorated with tf.function"),
    (("gradient_accumulation_steps is not a valid argument",),
     "tf-keras's optimizers take no gradient_accumulation_steps (Keras 3's do), and multi-worker and "
     "parameter-server runs are tf-keras runs: raise the per-device batch instead, or accumulate in a "
     "train_step of your own (GRADIENT_ACCUMULATION)"),
    # tf-keras refuses the mixed_float16 policy under a strategy its loss scaling does not
    # support (ParameterServerStrategy: a variable replica is not one per compute replica)
    (("Mixed precision is not supported with the tf.distribute.Strategy",), MIXED_FLOAT16_PS_PROBLEM),
    # tf-keras builds no stateful RNN under a strategy (Keras 3 does)
    (("Stateful RNNs (created with `stateful=True`) are not yet supported",),
     "the model has recurrent layers with stateful=True, which tf-keras builds under no tf.distribute strategy, "
     "and multi-worker and parameter-server runs (and a mirrored model Keras 3's fit cannot run) are tf-keras "
     "runs: make the layers stateless (stateful=False) to distribute them (STATEFUL_RNN)"),
    # tf-keras refuses a mean-reduced loss called in a step (or compute_loss) of the model's own under a strategy
    (("Reduction.SUM` or `tf.keras.losses.Reduction.NONE",),
     "a Keras loss called in the model's own train_step or compute_loss averages over the batch, which tf-keras "
     "refuses under a strategy: create it with reduction=NONE and average with tf.nn.compute_average_loss "
     "(the global batch)"),
    # parameter servers: each worker's dataset function, traced on the coordinator, captures a
    # dataset made outside it (keras.io's FeatureSpace example, whose table dataset is made at
    # import: with each of its feature kinds alone, and with a Normalization alone; a
    # FeatureSpace with the dataset made inside make_dataset runs, and so does a
    # TextVectorization adapted at import: tests/measure/workloads/adapt_at_import.py)
    (("Unable to parse tensor proto", "per_worker_dataset_fn"), PS_CAPTURED_DATASET_PROBLEM),
    (("Failed copying input tensor", "Unable to parse tensor proto"), PS_CAPTURED_DATASET_PROBLEM),
    # Keras 3's fit under a strategy builds the compiled loss on the first batch's labels
    # (kerasfit.UNLABELLED_LOSS_PROBLEM); the message alone cannot tell it from other Nones.
    # TensorFlow's ValueError, not rung's own line that already says it (the bench's task)
    (("None values not supported", "ValueError"),
     "if make_dataset yields no labels and the model is compiled with a loss, Keras 3's fit under any "
     "tf.distribute strategy builds that loss on labels None before the first step: compile without loss= and "
     "compute the loss in train_step (tf.nn.compute_average_loss), or yield (features, targets)"),
)


def hint(message: str) -> Optional[tuple[str, str]]:
    """(what to do, TensorFlow's own line it answers) for a known failure, else None."""
    for needles, advice in _HINTS:
        # or the hint itself, passed on (a workload's line that carries it, cut short in transit)
        if all(n in message for n in needles) or advice[:80] in message:
            line = next((_ANSI.sub("", ln).strip() for ln in message.splitlines() if needles[0] in ln), needles[0])
            return advice, line
    return None


def failure_line(kind: str, message: str) -> str:
    """A run's failure in one line: what to change first when it is a known failure, then
    TensorFlow's own line; else the innermost error's words (`message_line`)."""
    found = hint(message)
    if found is None:
        return f"{kind}: {message_line(message)}"
    advice, line = found
    if line.startswith(f"{kind}: "):
        line = line[len(kind) + 2:]
    return f"{advice} ({kind}: {line if len(line) <= 160 else line[:159] + '…'})"
