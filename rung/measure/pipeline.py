"""Inspecting a tf.data pipeline for what it lacks, and the fixes rung can apply itself."""

from __future__ import annotations

import os

from rung import units as u
# whether make_dataset takes the InputContext: one rule with rung profile, rung bench and train.py
from rung.measure.workload import positional_parameters
from rung.measure.workload import takes_input_context as _takes_context

# A source this small (bytes of in-graph tensors) can be cached in memory.
SMALL_DATA_BYTES = 1 << 30

_PARALLEL_MAP = {"ParallelMapDataset", "ParallelMapDatasetV2", "MapAndBatchDataset"}
_SEQUENTIAL_INTERLEAVE = {"InterleaveDataset"}
_PYTHON_OPS = {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
_CACHE = {"CacheDataset", "CacheDatasetV2"}
_SOURCES = {"TensorSliceDataset", "TensorDataset"}


def _graph_def(tf, ds):
    from tensorflow.python.data.ops import options as options_lib  # noqa: PLC0415

    raw = ds._as_serialized_graph(external_state_policy=options_lib.ExternalStatePolicy.WARN)  # noqa: SLF001
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString(raw.numpy())
    return gd


_DT_STRING = 7
_DT_RESOURCE = 20


def _elements(t) -> int:
    n = 1
    for d in t.tensor_shape.dim:
        n *= max(0, d.size)
    return n


def _const_bytes(node) -> int:
    t = node.attr["value"].tensor
    if t.dtype == _DT_STRING:  # its bytes (a length prefix each, then the strings), not a width per element
        return len(t.tensor_content) + sum(len(s) for s in t.string_val)
    return _elements(t) * {1: 4, 2: 8, 3: 4, 9: 8, 19: 2, 14: 2}.get(t.dtype, 4)


def _file_names(tf, node) -> list[str]:
    """The file names a string constant holds (TensorFlow's own decoding of the tensor)."""
    try:
        names = tf.io.parse_tensor(node.attr["value"].tensor.SerializeToString(), tf.string).numpy()
    except Exception:  # noqa: BLE001 - inspection is advice, never fatal
        return []
    return [n.decode(errors="replace") for n in names.reshape(-1)]


# At most this many strings are looked up on disk as file names.
MAX_NAMES_LOOKED_UP = 100_000


def _strings(node) -> int:
    """How many strings a constant holds (0 when it is not a string tensor)."""
    t = node.attr["value"].tensor
    return _elements(t) if t.dtype == _DT_STRING else 0


def _local_bytes(files: list[str]) -> int:
    """What the files hold on this machine's disk; 0 when any of them is not a local file
    (a bucket's gs:// path, say): a size rung cannot read is no reason to advise."""
    if not files or not all(os.path.isfile(f) for f in files):
        return 0
    return sum(os.path.getsize(f) for f in set(files))


def dataset_ops(tf, ds) -> list[str]:
    """The dataset ops of a pipeline's graph ([] when it cannot be serialised)."""
    try:
        gd = _graph_def(tf, ds)
    except Exception:  # noqa: BLE001 - inspection is advice, never fatal
        return []
    return [n.op for n in gd.node if "Dataset" in n.op]


def _runs_python(gd) -> bool:
    lib_ops = {n.op for f in gd.library.function for n in f.node_def}
    return bool(lib_ops & _PYTHON_OPS) or any(n.op == "GeneratorDataset" for n in gd.node)


def _cache_files(tf, gd) -> list[str]:
    """The file names a pipeline caches to (`.cache(filename)`: a CacheDataset whose filename
    input is a non-empty constant); `.cache()` in memory has an empty one."""
    by_name = {n.name: n for n in gd.node}
    out = []
    for n in gd.node:
        if n.op in _CACHE and len(n.input) > 1:
            c = by_name.get(n.input[1].split(":")[0].lstrip("^"))
            if c is not None and c.op == "Const":
                value = tf.make_ndarray(c.attr["value"].tensor)
                name = value.item() if value.size == 1 else b""
                if isinstance(name, bytes) and name:
                    out.append(name.decode(errors="replace"))
    return out


def shared_file_caches(tf, make_dataset, batch_size: int) -> list[str]:
    """The files make_dataset caches to (`.cache(filename)`) that two workers of a
    multi-worker job would share: the same names from the InputContexts of pipelines 0 and 1
    of 2 (every name, when make_dataset takes no context). Workers on one machine, or on one
    shared file system, then write the same cache files, and the second fails on the
    first's lockfile; a path with the pipeline's id in it is each worker's own. Nothing is
    read: a cache is written when iterated. Empty when it cannot be inspected (advice, never
    fatal)."""
    def names(i: int) -> set:
        ds = make_dataset(batch_size, tf.distribute.InputContext(2, i, 2)) if takes else make_dataset(batch_size)
        return set(_cache_files(tf, _graph_def(tf, ds)))

    try:
        takes = _takes_context(make_dataset)
        return sorted(names(0) & names(1))
    except Exception:  # noqa: BLE001 - inspection is advice, never fatal
        return []


def shared_file_cache_finding(names: list[str]) -> dict:
    """FILE_CACHE: the profile's finding of `shared_file_caches`, in the words a run failing on
    the lockfile gets."""
    from rung.failures import shared_file_cache_problem

    return {"code": "FILE_CACHE", "message": shared_file_cache_problem(repr(names[0]))}


def python_in_pipeline(tf, ds) -> bool:
    """Whether the pipeline runs Python (from_generator, py_function, numpy_function).
    False when it cannot be serialised (advice, never fatal)."""
    try:
        return _runs_python(_graph_def(tf, ds))
    except Exception:  # noqa: BLE001 - inspection is advice, never fatal
        return False


def captured_datasets(tf, make_dataset, batch_size: int) -> int:
    """How many tf.data datasets made outside make_dataset (when the file is imported) its
    pipeline builds on. Under parameter servers the coordinator traces make_dataset in a
    tf.function (per_worker_dataset_fn) and runs it on every worker: a dataset made outside
    it is a captured input in the coordinator's process, which a worker cannot receive
    (PS_CAPTURED_DATASET_PROBLEM). Traced here the same way, with the coordinator's
    InputContext of one pipeline; 0 when it cannot be traced (advice, never fatal)."""
    try:
        takes = _takes_context(make_dataset)
        context = tf.distribute.InputContext(1, 0, 1)

        @tf.function(autograph=False)
        def per_worker():
            ds = make_dataset(batch_size, context) if takes else make_dataset(batch_size)
            return ds._variant_tensor  # noqa: SLF001 - what the coordinator's function returns

        return sum(1 for t in per_worker.get_concrete_function().captured_inputs if t.dtype == tf.variant)
    except Exception:  # noqa: BLE001 - inspection is advice, never fatal
        return 0


def inspect_pipeline(tf, ds) -> dict:
    """Findings with codes: NO_PREFETCH, SEQUENTIAL_MAP, SEQUENTIAL_INTERLEAVE,
    PYTHON_IN_PIPELINE, NO_CACHE (a small in-memory source mapped on every epoch)."""
    try:
        gd = _graph_def(tf, ds)
    except Exception as e:  # noqa: BLE001 - inspection is advice, never fatal
        return {"ops": [], "findings": [], "error": f"could not inspect the pipeline: {type(e).__name__}"}
    ops = [n.op for n in gd.node if n.op.endswith("Dataset") or n.op.startswith("Dataset") or "Dataset" in n.op]
    by_name = {n.name: n for n in gd.node}
    findings = []
    if not any(op.startswith("PrefetchDataset") for op in ops):
        findings.append(("NO_PREFETCH", "no prefetch: the input pipeline and the training step take turns; "
                                        "end the pipeline with .prefetch(tf.data.AUTOTUNE)"))
    if "MapDataset" in ops:
        findings.append(("SEQUENTIAL_MAP", "a map without num_parallel_calls runs on one core; use "
                                           ".map(f, num_parallel_calls=tf.data.AUTOTUNE)"))
    if any(op in _SEQUENTIAL_INTERLEAVE for op in ops):
        findings.append(("SEQUENTIAL_INTERLEAVE", "an interleave without num_parallel_calls reads one file at "
                                                  "a time; pass num_parallel_calls=tf.data.AUTOTUNE"))
    if _runs_python(gd):
        findings.append(("PYTHON_IN_PIPELINE", "Python code in the pipeline (py_function, numpy_function or "
                                               "from_generator) holds the GIL and does not parallelise; "
                                               "rewrite it with TensorFlow ops"))
    sources = [by_name[i.split(":")[0].lstrip("^")] for n in gd.node if n.op in _SOURCES for i in n.input
               if by_name.get(i.split(":")[0].lstrip("^")) is not None
               and by_name[i.split(":")[0].lstrip("^")].op == "Const"]
    # TensorFlow marks a tensor of file names (TFRecordDataset, TextLineDataset, ...) with
    # a FileIdentity node: its source is what the files hold, not the names' bytes.
    named_files = {i.split(":")[0].lstrip("^") for n in gd.node if n.name.startswith("FileIdentity") for i in n.input}
    files, in_memory = [], 0
    for c in sources:
        # a file reader's names, or strings that name this disk's files (the paths an
        # image_dataset_from_directory pipeline reads in its map)
        names = _file_names(tf, c) if c.name in named_files or 0 < _strings(c) <= MAX_NAMES_LOOKED_UP else []
        if c.name in named_files or (names and os.path.isfile(names[0]) and all(map(os.path.isfile, names))):
            files += names
        else:
            in_memory += _const_bytes(c)
    on_disk = _local_bytes(files)
    mapped = any(op in ("MapDataset",) or op in _PARALLEL_MAP for op in ops)
    if mapped and not any(op in _CACHE for op in ops):
        if in_memory and in_memory < SMALL_DATA_BYTES and not files:
            findings.append(("NO_CACHE", f"the source holds {u.gib(in_memory)} in memory and is "
                                         "mapped again every epoch; .cache() after deterministic maps"))
        elif on_disk and on_disk < SMALL_DATA_BYTES:
            k = len(set(files))
            findings.append(("NO_CACHE", f"the source, {k} file{'s' if k != 1 else ''} of {u.gib(on_disk)} "
                                         "on this disk, is read and mapped again every "
                                         "epoch; .cache() after deterministic maps"))
    return {"ops": ops, "findings": [{"code": c, "message": m} for c, m in findings]}


def apply_fixes(tf, ds):
    """The fixes rung can apply without changing what the pipeline yields: tf.data's
    map and batch parallelisation with autotuning, and a prefetch at the end.
    Returns (dataset, list of what was applied)."""
    opts = tf.data.Options()
    opts.autotune.enabled = True
    opts.experimental_optimization.map_parallelization = True
    opts.experimental_optimization.parallel_batch = True
    fixed = ds.with_options(opts).prefetch(tf.data.AUTOTUNE)
    return fixed, ["map_parallelization", "parallel_batch", "autotune", "prefetch(AUTOTUNE)"]


# How many workers' pipelines `worker_input` builds, and how many batches of each it reads
# where the pipeline runs Python (what Python draws is not in the graph).
WORKERS_CHECKED = 2
PYTHON_BATCHES_COMPARED = 2


def _own_setting(make_dataset) -> str:
    """' (its second parameter, training=True, is a setting of its own)', or ''."""
    params = positional_parameters(make_dataset)
    return f" (its second parameter, {params[1]}, is a setting of its own)" if len(params) >= 2 else ""


def _why(e: Exception) -> str:
    """An inspection's failure as a short reason (inspection is advice, never fatal)."""
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
# Dataset ops that draw at random, and where their two seeds are among their inputs.
_SEEDED_DATASETS = {"ShuffleDataset": 2, "ShuffleDatasetV2": None, "ShuffleDatasetV3": 2,
                    "ShuffleAndRepeatDataset": 2, "ShuffleAndRepeatDatasetV2": 2,
                    "RandomDataset": 0, "RandomDatasetV2": 0}


def _graph_signature(gd, without_seeds: bool = False):
    """What a pipeline computes, without the names TensorFlow numbers per trace: every op of
    its graph and of its functions, with the value of every constant but a resource handle's
    (a shuffle's seed generator, named per pipeline). `without_seeds`: nor the constants a
    stateless random op in a function draws from (a Keras random layer made in make_dataset
    bakes a seed of its own into each pipeline)."""
    seeds = _random_op_constants(gd) if without_seeds else set()

    def value(n, where):
        if n.op != "Const" or n.attr["value"].tensor.dtype == _DT_RESOURCE or (where, n.name) in seeds:
            return b""
        return n.attr["value"].SerializeToString()

    nodes = [(n, None) for n in gd.node] + [(n, f.signature.name) for f in gd.library.function for n in f.node_def]
    return sorted((n.op, value(n, where)) for n, where in nodes)


def _upstream(nodes: dict, names: list, args: list) -> tuple[set, set, set]:
    """What the tensors `names` of a graph (or a function's body) are computed from: the
    constants reached, the indices of the function's arguments reached, and the ops on the way."""
    consts, reached, ops, seen = set(), set(), set(), set()
    while names:
        name = names.pop().split(":")[0].lstrip("^")
        if name in seen:
            continue
        seen.add(name)
        if name in args:
            reached.add(args.index(name))
        elif name in nodes:
            n = nodes[name]
            ops.add(n.op)
            if n.op == "Const":
                consts.add(name)
            else:
                names.extend(n.input)
    return consts, reached, ops


def _random_op_seeds(f) -> tuple[set, set, set]:
    """`_upstream` of every stateless random op's inputs in the function `f` (a map's)."""
    return _upstream({n.name: n for n in f.node_def},
                     [i for n in f.node_def if n.op.startswith("StatelessRandom") for i in n.input],
                     [a.name for a in f.signature.input_arg])


def _random_op_constants(gd) -> set:
    """(function, node) of every constant a stateless random op in the pipeline's functions
    draws from (its seed, and what the seed is computed from), with function None for one of
    the outer graph that a dataset op captures into that function (a Keras random layer's
    seed generator, read from its variable when the pipeline is serialised)."""
    found, captured = set(), {}
    for f in gd.library.function:
        consts, reached, _ = _random_op_seeds(f)
        found |= {(f.signature.name, c) for c in consts}
        captured[f.signature.name] = (len(f.signature.input_arg), reached)
    outer = {n.name: n for n in gd.node}
    for n in gd.node:
        fn = n.attr["f"].func.name if "f" in n.attr else None
        if fn not in captured or not captured[fn][1]:
            continue
        # the function's arguments after the element's are the dataset op's inputs after its dataset
        first = captured[fn][0] - len(n.attr["Targuments"].list.type)
        inputs = [i for i in n.input if not i.startswith("^")]
        names = [inputs[1 + i - first] for i in captured[fn][1] if i >= first and 1 + i - first < len(inputs)]
        found |= {(None, c) for c in _upstream(outer, names, [])[0]}
    return found


def _maps_unseeded(gd) -> bool:
    """A random op in the graph or its functions (a map's) with seed and seed2 both 0."""
    return any("seed" in n.attr and "seed2" in n.attr and not n.op.startswith("Stateless")
               and n.attr["seed"].i == 0 and n.attr["seed2"].i == 0
               for n in list(gd.node) + [n for f in gd.library.function for n in f.node_def])


def _draws_in_maps(gd) -> bool:
    """Any random op in the pipeline's functions (a map's augmentation, seeded or not: a Keras
    random layer draws stateless numbers from its seed generator's state)."""
    return any("Random" in n.op for f in gd.library.function for n in f.node_def)


def _first_captured(gd) -> dict:
    """For each function a dataset op runs (a map's, a filter's, ...), the index of its first
    captured argument: the arguments before it are the element's components, the ones from
    it on the dataset op's inputs after its dataset (its `Targuments`)."""
    out = {}
    for n in list(gd.node) + [n for f in gd.library.function for n in f.node_def]:
        if "f" in n.attr and "Targuments" in n.attr and n.attr["f"].func.name:
            out[n.attr["f"].func.name] = len(n.attr["Targuments"].list.type)
    by_name = {f.signature.name: f for f in gd.library.function}
    return {name: len(by_name[name].signature.input_arg) - k for name, k in out.items() if name in by_name}


def _draws_from_state(gd) -> bool:
    """A stateless random op in the pipeline's functions whose seed comes from state (a
    variable read, a generator's, or a value the function captures: a Keras random layer's
    seed generator), not from constants alone: each copy of the pipeline draws its own. A
    seed computed from the element alone (a draw keyed by the example's index) is the same in
    every copy of the pipeline: not state."""
    first = _first_captured(gd)
    for f in gd.library.function:
        _, reached, ops = _random_op_seeds(f)
        captured = {i for i in reached if i >= first.get(f.signature.name, 0)}
        if captured or any("Variable" in op or op.startswith(("Rng", "Stateful")) for op in ops):
            return True
    return False


def _orders_unseeded(gd) -> bool:
    """A shuffle or Dataset.random without a seed (or with its seeds in a resource)."""
    by_name = {n.name: n for n in gd.node}

    def value(name):
        c = by_name.get(name.split(":")[0].lstrip("^"))
        return list(c.attr["value"].tensor.int64_val) if c is not None and c.op == "Const" else None

    for n in gd.node:
        if n.op in _SEEDED_DATASETS:
            at = _SEEDED_DATASETS[n.op]
            if at is None or len(n.input) < at + 2:  # seeds held in a resource: taken as unseeded
                return True
            if value(n.input[at]) in ([0], []) and value(n.input[at + 1]) in ([0], []):
                return True
    return False


def worker_input(tf, make_dataset, batch_size: int) -> tuple[str | None, str]:
    """What each worker's pipeline yields when make_dataset takes the InputContext (as rung's
    train.py and bench then call it): built for worker 0 and worker 1 of 2 in this process.

    "empty": worker 1's pipeline yields no batch (a shard of fewer files than workers, say);
    "distinct": the two pipelines differ (sharded, or data drawn at random in make_dataset);
    "own_order": the same pipeline on both (the context is not used), shuffled without a
    seed: every worker reads all the data, each in its own order;
    "augmented": the same pipeline on both but for what its maps draw at random (a Keras
    random layer, made beside the model or in make_dataset; an unseeded tf.image.random_*):
    every worker reads the same examples in the same order, each augmenting them its own way;
    "identical": the same pipeline on both, with nothing drawn without a seed: every worker
    reads the same examples in the same order, in its own process as here.
    None with a reason when it cannot be told: make_dataset takes no InputContext (rung's
    train.py shards such a pipeline by data itself), or building, reading or serialising a
    pipeline failed. Randomness seeded from TensorFlow's global seed in make_dataset's own
    code (not the pipeline's graph) is not seen."""
    if not _takes_context(make_dataset):
        return None, f"make_dataset takes no InputContext{_own_setting(make_dataset)}: rung's train.py shards it by data"
    try:
        built = [make_dataset(batch_size, tf.distribute.InputContext(WORKERS_CHECKED, i, WORKERS_CHECKED))
                 for i in range(WORKERS_CHECKED)]
        if int(built[1].cardinality()) == 0 or next(iter(built[1].take(1)), None) is None:
            return "empty", ""
        graphs = [_graph_def(tf, ds) for ds in built]
    except Exception as e:  # noqa: BLE001 - inspection is advice, never fatal
        return None, _why(e)
    if _graph_signature(graphs[0]) != _graph_signature(graphs[1]):
        # the same pipeline but for its random ops' seeds: the same examples in the same order,
        # each worker augmenting them its own way
        same = _graph_signature(graphs[0], without_seeds=True) == _graph_signature(graphs[1], without_seeds=True)
        return ("augmented" if same else "distinct"), ""
    if _runs_python(graphs[0]):
        # what Python draws is not in the graph: read both, as two processes would
        # (a generator or py_function starts afresh in each pipeline)
        try:
            first = [_first_batches(ds, PYTHON_BATCHES_COMPARED) for ds in built]
        except Exception as e:  # noqa: BLE001 - inspection is advice, never fatal
            return None, _why(e)
        return ("identical" if _same(*first) else "own_order"), ""
    if _orders_unseeded(graphs[0]):
        return "own_order", ""
    if _maps_unseeded(graphs[0]) or _draws_in_maps(graphs[0]):
        # seeds held in a layer's state, or constant ones, are not in the graph's attributes:
        # read both (each process draws as a pipeline built here does), enough examples that
        # two workers' draws do not match by chance (8 random flips did, once in CI)
        try:
            first = [_first_batches(ds, -(-AUGMENTED_EXAMPLES_COMPARED // max(1, batch_size))) for ds in built]
        except Exception as e:  # noqa: BLE001 - inspection is advice, never fatal
            return None, _why(e)
        return ("identical" if _same(*first) else "augmented"), ""
    return "identical", ""



# Examples of each pipeline read to tell augmented from identical (`worker_input`): a coin
# flip per example matches on both workers by chance once in 2**64.
AUGMENTED_EXAMPLES_COMPARED = 64


def _first_batches(ds, n: int) -> list:
    import tensorflow as tf  # noqa: PLC0415 - only called with a dataset, so TensorFlow is loaded

    return [[t.numpy() for t in tf.nest.flatten(b, expand_composites=True)] for b in ds.take(n)]


def _same(a: list, b: list) -> bool:
    import numpy as np  # noqa: PLC0415

    return len(a) == len(b) and all(len(x) == len(y) and all(np.array_equal(p, q) for p, q in zip(x, y))
                                    for x, y in zip(a, b))


SHARD_IT = "ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)"


def worker_input_findings(state: str | None, ps_state: str | None = None) -> list[dict]:
    """The pipeline findings of what the workers read (worker_input under multi-worker,
    ps_worker_input under parameter servers): INPUT_NOT_SHARDED, once for both; EMPTY_SHARD
    (multi-worker only: a parameter-server worker's context is one pipeline)."""
    from rung.failures import PS_AUGMENTED_INPUT, PS_SAME_INPUT, PS_SAME_INPUT_FIX  # noqa: PLC0415

    multi = ("under multi-worker make_dataset takes the InputContext and does not use it, and draws nothing at "
             "random: every worker reads the same batches in the same order, so N workers compute one worker's "
             f"gradient N times; shard it: {SHARD_IT}")
    if state == "augmented":
        multi = ("under multi-worker make_dataset takes the InputContext and does not use it: every worker reads the "
                 "same examples in the same order, each augmenting them at random, so a step's N batches are N "
                 "augmentations of one batch and an epoch of the data takes N times the steps; shard it: "
                 f"{SHARD_IT}")
    ps_same = PS_AUGMENTED_INPUT if ps_state == "augmented" else PS_SAME_INPUT
    if state in ("identical", "augmented") and ps_state in ("identical", "augmented"):
        return [{"code": "INPUT_NOT_SHARDED", "message": f"{multi}. And {ps_same}; for them, "
                                                         f"{PS_SAME_INPUT_FIX}"}]
    if state in ("identical", "augmented"):
        return [{"code": "INPUT_NOT_SHARDED", "message": multi}]
    found = []
    if state == "empty":
        found.append({"code": "EMPTY_SHARD",
                      "message": f"with {WORKERS_CHECKED} workers, worker 1's make_dataset(batch, InputContext) "
                                 "yields no batch (a shard of fewer files than workers?): a multi-worker run cannot "
                                 "train on it; shard after the files are read, or give every worker files"})
    if ps_state in ("identical", "augmented"):
        found.append({"code": "INPUT_NOT_SHARDED", "message": f"{ps_same}; {PS_SAME_INPUT_FIX}"})
    return found


def divides_batch_finding(batch_size: int) -> dict:
    return {"code": "BATCH_DIVIDED",
            "message": f"make_dataset({batch_size}, input_context) divides the batch by the replicas "
                       "(input_context.get_per_replica_batch_size, as TensorFlow's tutorial does for a global "
                       f"batch): rung passes the per-replica batch, so under multi-worker or parameter servers each "
                       f"replica would train on {batch_size}/N examples a step, not {batch_size}; use batch_size as "
                       "it is"}


def _outer_batch_size(gd) -> int | None:
    """The batch size of the pipeline's last batching op (batch, padded_batch, ragged_batch,
    a parallel batch), from its constant input; None when there is none or it is not a
    constant (a generator that yields batches)."""
    by_name = {n.name: n for n in gd.node}
    ops = [n for n in gd.node if n.op in ("BatchDataset", "BatchDatasetV2", "PaddedBatchDataset",
                                          "PaddedBatchDatasetV2", "ParallelBatchDataset")]
    if not ops or len(ops[-1].input) < 2:
        return None
    c = by_name.get(ops[-1].input[1].split(":")[0].lstrip("^"))
    values = list(c.attr["value"].tensor.int64_val) if c is not None and c.op == "Const" else []
    return int(values[0]) if len(values) == 1 else None


def batch_size_of(tf, ds) -> int | None:
    """The constant batch size of a pipeline's outermost batching op, or None (no such op,
    not a constant, or a pipeline that cannot be serialised). The generated train.py asks
    it of each worker's pipeline, where rung is installed."""
    try:
        return _outer_batch_size(_graph_def(tf, ds))
    except Exception:  # noqa: BLE001 - inspection is advice, never fatal
        return None


def divides_batch(tf, make_dataset, batch_size: int) -> bool:
    """Whether make_dataset(batch_size, InputContext) batches by batch_size over the replicas
    (input_context.get_per_replica_batch_size(batch_size), as TensorFlow's multi-worker
    tutorial writes it for a global batch), where rung and its train.py pass the per-replica
    batch already: built for 2 replicas, its first batch holds half. False when it cannot be
    told (no InputContext taken, an odd batch, a failure: inspection is advice)."""
    if not _takes_context(make_dataset) or batch_size % 2 or batch_size < 2:
        return False
    try:
        ds = make_dataset(batch_size, tf.distribute.InputContext(1, 0, 2))
        batched = _outer_batch_size(_graph_def(tf, ds))
        if batched is not None:  # the pipeline's own batch op says it, nothing read
            return batched == batch_size // 2
        first = next(iter(ds.take(1)), None)
        if first is None:
            return False
        lead = tf.nest.flatten(first, expand_composites=False)[0]
        rows = int(lead.nrows()) if isinstance(lead, tf.RaggedTensor) else int(
            lead.dense_shape[0] if isinstance(lead, tf.SparseTensor) else tf.shape(lead)[0])
    except Exception:  # noqa: BLE001 - inspection is advice, never fatal
        return False
    return rows == batch_size // 2


def ps_worker_input(tf, make_dataset, batch_size: int) -> tuple[str | None, str]:
    """What each parameter-server worker's pipeline yields. Under ParameterServerStrategy
    make_dataset runs once, on the coordinator, with an InputContext of one pipeline (id 0:
    a shard() by it keeps everything), and every worker runs a copy of that pipeline; seen
    here in a 2-worker launch, where both workers read 0, 1, 2, ... with a shard() by the
    context and no shuffle. So the workers differ only where the pipeline draws at random
    without a seed. "identical": nothing drawn without a seed; "own_order": shuffled
    without a seed; "augmented": drawn at random in its maps alone (an unseeded op, or a
    random layer's seed generator), so the same examples in the same order, each worker
    drawing its own augmentation (a 2-worker launch of a tf-keras RandomFlip showed it).
    None with a reason for a pipeline that runs Python (under parameter servers it runs in
    the coordinator alone: PYTHON_PIPELINE) or one that cannot be built or serialised."""
    try:
        if _takes_context(make_dataset):
            ds = make_dataset(batch_size, tf.distribute.InputContext(1, 0, 1))
        else:
            ds = make_dataset(batch_size)
        gd = _graph_def(tf, ds)
    except Exception as e:  # noqa: BLE001 - inspection is advice, never fatal
        return None, _why(e)
    if _runs_python(gd):
        return None, "the pipeline runs Python, which under parameter servers runs in the coordinator alone"
    if _orders_unseeded(gd):
        return "own_order", ""
    return ("augmented" if _maps_unseeded(gd) or _draws_from_state(gd) else "identical"), ""
