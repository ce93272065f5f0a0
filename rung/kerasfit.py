"""What Keras 3's `model.fit` cannot run under MirroredStrategy, where tf-keras can: one
rule for advise (the warning), init and launch (train.py on tf-keras) and bench (the
mirrored run on tf-keras). Each was reproduced here with TensorFlow 2.21 and Keras 3 on two
logical CPU devices; tf-keras ran the same models. Pure: no TensorFlow."""

from __future__ import annotations

from typing import Optional

STRING_INPUTS = "STRING_INPUTS"
STEPS_PER_EXECUTION = "STEPS_PER_EXECUTION"
RAGGED_OR_SPARSE_INPUTS = "RAGGED_OR_SPARSE_INPUTS"
CLIPPING_PER_REPLICA = "CLIPPING_PER_REPLICA"


def keras3_mirrored_failures(string_inputs: bool = False, steps_per_execution: int = 1,
                             ragged_or_sparse_inputs: bool = False,
                             gradient_clipping: Optional[str] = None) -> list[tuple[str, str]]:
    """(code, what fails) for each reason Keras 3's fit fails on this model under
    MirroredStrategy, or trains it otherwise than one device does (its optimizer's
    clipping); empty when it runs as one device would."""
    out = []
    if string_inputs:
        out.append((STRING_INPUTS, "the model takes string features, and Keras 3's model.fit under "
                                   "MirroredStrategy fails on them (an AddN over the replicas' strings, "
                                   "tensorflow#80951)"))
    if steps_per_execution > 1:
        out.append((STEPS_PER_EXECUTION, f"the model is compiled with steps_per_execution={steps_per_execution}, "
                                         "and Keras 3's model.fit under MirroredStrategy fails with it (\"You "
                                         "must feed a value for placeholder tensor\" inside its step loop, "
                                         "keras-team/keras#19246)"))
    if ragged_or_sparse_inputs:
        out.append((RAGGED_OR_SPARSE_INPUTS, "the model takes ragged or sparse features, and Keras 3's model.fit "
                                             "under MirroredStrategy fails on them as it splits the batch across "
                                             "replicas (\"'RaggedTensor' object has no attribute 'device'\")"))
    if gradient_clipping:
        out.append((CLIPPING_PER_REPLICA, clipping_problem(gradient_clipping)))
    return out


def clipping_problem(clipping: str) -> str:
    """What Keras 3 does with an optimizer's clipping under MirroredStrategy. Its
    `optimizer.apply` clips the gradients before `_backend_update_step` all-reduces them
    (keras 3.15, base_optimizer.py and backend/tensorflow/optimizer.py): each replica's
    share is clipped, then the shares are summed. Measured here (one step of SGD, clipping
    that bites, one device against 2 logical CPU devices, the same global batch): Keras 3
    took 2.00x one device's update with clipnorm, global_clipnorm and clipvalue alike;
    tf-keras, which all-reduces first and clips the sum, 1.00x."""
    return (f"the model's optimizer clips its gradients ({clipping}), and Keras 3 under MirroredStrategy clips "
            "each replica's share of the gradient before the all-reduce sums them: once clipping bites, an "
            "update is up to N times one device's under N replicas (2.00x under 2 on rung's machine; tf-keras "
            "clips the sum, 1.00x)")


def clipping_moves_to_tf_keras(gradient_clipping: Optional[str], keras3_import: bool) -> Optional[str]:
    """The clipping that sends a mirrored plan to tf-keras (which clips the sum): the
    model's, unless the file builds it from Keras 3 itself, which tf-keras cannot train
    (then CLIPPING_PER_REPLICA tells how to scale the threshold instead)."""
    return None if keras3_import else gradient_clipping


# What Keras 3's fit cannot run at all, so rung runs them on tf-keras (DESIGN.md):
# MultiWorkerMirroredStrategy (tensorflow#72388) and ParameterServerStrategy
# (keras-team/keras#18624).
TF_KERAS_STRATEGIES = ("multi_worker_mirrored", "parameter_server")


def keras3_facts(w) -> dict:
    """What `keras3_mirrored_failures` and `runs_on_tf_keras` read of a scenario's workload
    block, as their keyword arguments."""
    return {"string_inputs": w.string_inputs, "steps_per_execution": w.steps_per_execution,
            "ragged_or_sparse_inputs": w.ragged_or_sparse_inputs,
            "gradient_clipping": clipping_moves_to_tf_keras(w.gradient_clipping, w.keras3_import)}


def runs_on_tf_keras(verdict: str, string_inputs: bool = False, steps_per_execution: int = 1,
                     ragged_or_sparse_inputs: bool = False, step_keras: str | None = None,
                     gradient_clipping: Optional[str] = None) -> bool:
    """Whether rung init's train.py runs `verdict` on tf-keras for a file written on tf.keras:
    the strategy needs it, a mirrored model Keras 3's fit cannot run, or the plan's step was
    measured on tf-keras (`step_keras`; rung advise measures it there when a plan on tf-keras
    came out of the Keras 3 step, and keeps tf-keras when that step leads to one device or one
    host): the plan runs where its step was measured (`rung.launch.emit`)."""
    return verdict in TF_KERAS_STRATEGIES or (verdict in ("single_device", "mirrored", "fix_input_pipeline")
                                              and step_keras == "tf_keras") or (
        verdict == "mirrored"
        and bool(keras3_mirrored_failures(string_inputs, steps_per_execution, ragged_or_sparse_inputs,
                                          gradient_clipping)))


def source_of(path) -> str:
    """A workload file's text, for the import readers below ("" when it cannot be read:
    its import reports that)."""
    from pathlib import Path  # noqa: PLC0415

    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _parse(source: str):
    """A file's syntax tree, or None when it is not Python (its import reports that)."""
    import ast  # noqa: PLC0415 - only here

    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _imports_of(source: str, module: str, folder=None) -> list[str]:
    """The statements of a file that import `module` or a submodule of it, as
    "import keras (line 3)", in line order (then those of its local modules, `_read`)."""
    import ast  # noqa: PLC0415 - only here

    def ours(name: str) -> bool:
        return name == module or name.startswith(module + ".")

    def find(tree) -> list:
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names if ours(a.name)]
                if names:
                    found.append((node.lineno, f"import {', '.join(names)} (line {node.lineno})"))
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and ours(node.module):
                found.append((node.lineno, f"from {node.module} import {', '.join(a.name for a in node.names)} "
                                           f"(line {node.lineno})"))
        return found

    return _read(source, folder, find)


def _read(source: str, folder, find) -> list[str]:
    """What `find(syntax tree)` finds, as (line, text) pairs, in a workload's text, in line
    order; with `folder` (the workload's), then in each module it imports from that folder
    (`local_modules`), as "import keras (models.py, line 1)": what the workload runs is
    often kept beside it. Empty when the file cannot be parsed (its import reports that)."""
    def placed(text: str, name: str, line: int) -> str:
        at = f"(line {line})"
        if not name:
            return text
        return text[:-len(at)] + f"({name}, line {line})" if text.endswith(at) else f"{text} ({name})"

    return [placed(text, name, line) for name, tree in _trees(source, folder) for line, text in sorted(find(tree))]


def _trees(source: str, folder) -> list:
    """("", the workload's syntax tree), then (path, tree) of each module `local_modules`
    finds (none when the workload cannot be parsed)."""
    tree = _parse(source)
    if tree is None:
        return []
    return [("", tree)] + (local_modules(tree, folder, source) if folder is not None else [])


def keras3_imports(source: str, folder=None) -> list[str]:
    """The statements of a workload file that import Keras 3 itself (`import keras`,
    `from keras import layers`, `from keras.layers import Dense`), as "import keras (line 3)".
    `tf.keras` follows TF_USE_LEGACY_KERAS and becomes tf-keras where rung needs it; `keras`
    is Keras 3 whatever the environment says, and tf-keras cannot train a model built from
    it. With `folder`, the modules it imports from there are read too (`_read`)."""
    return _imports_of(source, "keras", folder)


def tf_keras_imports(source: str, folder=None) -> list[str]:
    """The statements of a workload file that import tf-keras itself (`import tf_keras as
    keras`, Keras 2 kept as the Keras 3 migration guide says), or that use tf-keras's
    legacy optimizers (`tf.keras.optimizers.legacy.Adam`, which Keras 3 refuses: "is not
    supported in Keras 3"): its model is a tf-keras model whatever tf.keras is, so every run
    of it must be on tf-keras. As "import tf_keras (line 3)", "optimizers.legacy (line 11)"."""
    import ast  # noqa: PLC0415 - only here

    def legacy(tree) -> list:
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "legacy" and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "optimizers":
                found.append((node.lineno, f"optimizers.legacy (line {node.lineno})"))
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("optimizers.legacy"):
                found.append((node.lineno, f"from {node.module} import {', '.join(a.name for a in node.names)} "
                                           f"(line {node.lineno})"))
        return found

    found = _imports_of(source, "tf_keras", folder)
    return found + [x for x in _read(source, folder, legacy) if x not in found]


def tf_keras_reason(found: list[str]) -> str:
    """Why a workload's model is a tf-keras model, from `tf_keras_imports`' first finding."""
    if found[0].startswith(("import tf_keras", "from tf_keras")):
        return f"the workload imports tf_keras itself ({found[0]})"
    return f"the workload uses tf-keras's legacy optimizers ({found[0]}), which Keras 3 does not have"


def jit_compile_calls(source: str, folder=None) -> list[str]:
    """The calls of a workload file that pass `jit_compile=True` (Keras's `compile`, or a
    `tf.function`), as "compile(jit_compile=True) (line 9)", in line order: an XLA step,
    which a parameter-server worker cannot run (JIT_COMPILE). Read from the text, as the
    imports are, so `rung init` knows without importing TensorFlow; only the literal True
    is found (a flag set from a variable is not). Empty when the file cannot be parsed."""
    return _calls_with_true(source, "jit_compile", folder)


def run_eagerly_calls(source: str, folder=None) -> list[str]:
    """The calls of a workload file that pass `run_eagerly=True` (Keras's `compile`), as
    "compile(run_eagerly=True) (line 9)", and its `tf.config.run_functions_eagerly(True)`, as
    "run_functions_eagerly(True) (line 7)": fit then runs every step without a graph, and
    tf-keras refuses the first under parameter servers (RUN_EAGERLY). Read as
    `jit_compile_calls`."""
    import ast  # noqa: PLC0415 - only here

    def eager(node, name):
        if name == "run_functions_eagerly" and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value is True:
            return f"run_functions_eagerly(True) (line {node.lineno})"
        if any(kw.arg == "run_eagerly" and isinstance(kw.value, ast.Constant) and kw.value.value is True
               for kw in node.keywords):
            return f"{name or 'a call'}(run_eagerly=True) (line {node.lineno})"
        return None

    return _calls(source, eager, folder)


# The calls that put Python into a tf.data pipeline.
PYTHON_INPUT_CALLS = ("from_generator", "py_function", "numpy_function", "py_func")


def python_input_calls(source: str, folder=None) -> list[str]:
    """The calls of a workload file that put Python into its pipeline (`from_generator`,
    `py_function`, `numpy_function`), as "from_generator (line 12)", in line order: under
    parameter servers that Python runs on the coordinator alone (PYTHON_PIPELINE). Read from
    the text, as `jit_compile_calls`; a call in a file the pipeline does not use is found too."""
    def named(node, name):
        return f"{name} (line {node.lineno})" if name in PYTHON_INPUT_CALLS else None

    return _calls(source, named, folder)


def mixed_float16_calls(source: str, folder=None) -> list[str]:
    """The calls of a workload file that pass the literal "mixed_float16", positionally or
    by keyword, as "set_global_policy('mixed_float16') (line 5)": Keras's global policy, a
    Policy or DTypePolicy, a layer's dtype=; or a name the file assigns that literal
    (`POLICY = "mixed_float16"`, then `set_global_policy(POLICY)`). tf-keras refuses the
    policy under parameter servers (STRATEGY_FAILS). Read as `jit_compile_calls`: a policy
    computed at run time is not found, and a call the model does not reach is."""
    import ast  # noqa: PLC0415 - only here

    # the names the file (and its local modules) assign the literal, at any level
    names = {target.id for _, tree in _trees(source, folder) for node in ast.walk(tree)
             if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant)
             and node.value.value == "mixed_float16"
             for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
             if isinstance(target, ast.Name)}

    def named(node, name):
        values = list(node.args) + [k.value for k in node.keywords]
        if any(isinstance(v, ast.Constant) and v.value == "mixed_float16" for v in values):
            return f"{name or 'a call'}('mixed_float16') (line {node.lineno})"
        through = next((v.id for v in values if isinstance(v, ast.Name) and v.id in names), None)
        if through:
            return f"{name or 'a call'}({through}='mixed_float16') (line {node.lineno})"
        return None

    return _calls(source, named, folder)


def per_replica_batch_calls(source: str, folder=None) -> list[str]:
    """The file's calls of `get_per_replica_batch_size`, as "get_per_replica_batch_size
    (line 14)": TensorFlow's multi-worker tutorial divides a global batch by the replicas
    with it, where rung passes make_dataset the per-replica batch (BATCH_DIVIDED)."""
    def named(node, name):
        return f"{name} (line {node.lineno})" if name == "get_per_replica_batch_size" else None

    return _calls(source, named, folder)


def accumulation_calls(source: str, folder=None) -> list[str]:
    """The calls of a workload file that pass `gradient_accumulation_steps` a literal above
    1 (Keras 3's optimizers), as "Adam(gradient_accumulation_steps=4) (line 9)": no
    replicated strategy runs it (GRADIENT_ACCUMULATION). Read as `jit_compile_calls`."""
    import ast  # noqa: PLC0415 - only here

    def accumulates(node, name):
        for kw in node.keywords:
            v = kw.value
            if kw.arg == "gradient_accumulation_steps" and isinstance(v, ast.Constant) \
                    and isinstance(v.value, int) and v.value > 1:
                return f"{name or 'a call'}(gradient_accumulation_steps={v.value}) (line {node.lineno})"
        return None

    return _calls(source, accumulates, folder)


def clipping_calls(source: str, folder=None) -> list[str]:
    """The calls of a workload file that pass `clipnorm`, `global_clipnorm` or `clipvalue` a
    positive literal, as "AdamW(clipnorm=1.0) (line 9)": Keras 3 clips each replica's share
    under MirroredStrategy (CLIPPING_PER_REPLICA). Read as `jit_compile_calls`."""
    import ast  # noqa: PLC0415 - only here

    def clips(node, name):
        for kw in node.keywords:
            v = kw.value
            if kw.arg in ("clipnorm", "global_clipnorm", "clipvalue") and isinstance(v, ast.Constant) \
                    and isinstance(v.value, (int, float)) and not isinstance(v.value, bool) and v.value > 0:
                return f"{name or 'a call'}({kw.arg}={v.value}) (line {node.lineno})"
        return None

    return _calls(source, clips, folder)


def compiled_loss_calls(source: str, folder=None) -> list[str]:
    """The `compile` calls of a workload file whose `loss=` is a function, lambda or Loss class
    the file itself defines (alone, or in a list or dict of losses), as "compile(loss=smooth_l1)
    (line 26)": Keras 3 leaves such a loss undivided across replicas when it returns one
    number (`compiled_loss_problem`), so `rung launch` runs the replica check for it. Keras's
    own losses, by name or class, are not found. Read as `jit_compile_calls`."""
    import ast  # noqa: PLC0415 - only here

    defined = {n.name for _, tree in _trees(source, folder) for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}

    def own(v) -> list[str]:
        if isinstance(v, (ast.List, ast.Tuple)):
            return [x for e in v.elts for x in own(e)]
        if isinstance(v, ast.Dict):
            return [x for e in v.values for x in own(e)]
        if isinstance(v, ast.Lambda):
            return ["<lambda>"]
        if isinstance(v, ast.Call):  # a Loss class of the file's, constructed: SmoothL1()
            v = v.func
        return [v.id] if isinstance(v, ast.Name) and v.id in defined else []

    def compiles(node, name):
        if name != "compile":
            return None
        found = [x for kw in node.keywords if kw.arg == "loss" for x in own(kw.value)]
        return f"compile(loss={', '.join(dict.fromkeys(found))}) (line {node.lineno})" if found else None

    return _calls(source, compiles, folder)


# the reductions of a Keras loss that do not divide by the batch (Keras 3 and tf-keras spell
# both as these strings; tf-keras's Reduction enum as SUM and NONE)
SUMMING_REDUCTIONS = ("sum", "none")


def summed_loss_calls(source: str, folder=None) -> list[str]:
    """The calls of a workload file that make a loss with a reduction that sums over the
    batch (`reduction="sum"` or `"none"`, or `Reduction.SUM` / `Reduction.NONE` of tf-keras),
    as "MeanSquaredError(reduction='sum') (line 9)". Compiled, such a loss makes every update
    under N replicas N times one device's step (`summed_loss_problem`); inside a train_step of
    the file's own it is usually followed by tf.nn.compute_average_loss, which divides it.
    Which of the two it is the replica check tells (`rung launch` runs it for these)."""
    import ast  # noqa: PLC0415 - only here

    def summing(v) -> Optional[str]:
        if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.lower() in SUMMING_REDUCTIONS:
            return v.value.lower()
        if isinstance(v, ast.Attribute) and v.attr in tuple(r.upper() for r in SUMMING_REDUCTIONS):
            return v.attr.lower()
        return None

    def describe(node, name):
        found = [summing(kw.value) for kw in node.keywords if kw.arg == "reduction"]
        return f"{name or 'a call'}(reduction={found[0]!r}) (line {node.lineno})" if found and found[0] else None

    return _calls(source, describe, folder)


def compiled_loss_problem(losses, replicas: str = "N") -> str:
    """LOSS_NOT_SCALED of a compiled loss of the file's own on Keras 3, and the fix. Measured
    by the replica check: 2.00x one device's gradients under 2 replicas for a loss function
    that returns its own `tf.reduce_mean`, 1.00x for the same function returning the
    per-example losses, and 1.00x on tf-keras either way."""
    names = ", ".join(losses) if not isinstance(losses, str) else losses
    return (f"the compiled loss {names} returns one number (a mean or sum it took over the batch itself), which "
            "Keras 3 leaves undivided across replicas (it divides the per-example losses it reduces itself), so under "
            f"{replicas} replicas every update is {replicas} times one device's, and fit shows {replicas} times the "
            "loss. Return the per-example losses "
            "(drop the final mean over the batch, tf.reduce_mean or ops.mean, or take it over the last axis only; "
            "for a Loss class, from its call(), since a __call__ of its own skips Keras's reduction) and Keras "
            "averages them over the global batch, on either Keras; tf-keras divides the loss as it is")


def summed_loss_problem(losses, replicas: str = "N") -> str:
    """LOSS_NOT_SCALED of Keras's own compiled loss made with reduction='sum' (or 'none'),
    and the fix. Measured by the replica check: 2.00x one device's gradients under 2
    replicas on Keras 3 and on tf-keras, for either reduction; 1.00x with the default."""
    names = ", ".join(losses) if not isinstance(losses, str) else losses
    return (f"the compiled loss {names} sums over the batch rather than averaging, on either Keras: each replica "
            f"sums its own batch and the replicas' gradients are summed, so under {replicas} replicas every update's "
            f"gradient is {replicas} times one device's step at the same per-device batch (the sum over a global "
            f"batch {replicas} times as large): with SGD or momentum, a learning rate {replicas} times as large "
            "(Adam and RMSprop normalise most of it away). If that is not meant, use the loss's default reduction "
            "(sum_over_batch_size), which averages over the global batch on either Keras")


def stateful_calls(source: str, folder=None) -> list[str]:
    """The calls of a workload file that pass `stateful=True` (a recurrent layer that keeps
    its state from batch to batch), as "GRU(stateful=True) (line 7)": tf-keras builds none
    under a tf.distribute strategy (STATEFUL_RNN). Read as `jit_compile_calls`."""
    return _calls_with_true(source, "stateful", folder)


# tf.distribute's strategies, as a file constructs them (`tf.distribute.MirroredStrategy()`,
# `tf.distribute.experimental.ParameterServerStrategy(...)`, or the class imported by name).
STRATEGY_CLASSES = ("MirroredStrategy", "MultiWorkerMirroredStrategy", "ParameterServerStrategy",
                    "ParameterServerStrategyV2", "CollectiveAllReduceStrategy", "CentralStorageStrategy",
                    "OneDeviceStrategy", "TPUStrategy")


def _calls_rung_runs(source: str, folder, describe, at_import: bool = True) -> list[str]:
    """`describe(call, its name)` of every call that runs where rung runs a workload (not
    None), in line order: at the top of the file or of a module it imports (a class's body
    included; not under `if __name__ == "__main__":`; not with `at_import` False), in
    build_model() and make_dataset(), and in a function of the same file any of those call,
    in turn. A call in a function nothing rung runs calls is not found (a `main()` of the
    team's own), nor one reached through a method or another module's function."""
    import ast  # noqa: PLC0415 - only here

    def main_guard(node) -> bool:
        t = node.test if isinstance(node, ast.If) else None
        return isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"

    def run(body) -> list:
        """The statements of a body that run when it does: a class's body, not a function's."""
        out = []
        for node in body:
            if isinstance(node, ast.ClassDef):
                out += run(node.body)
            elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not main_guard(node):
                out.append(node)
        return out

    def find(tree) -> list:
        defs = {f.name: f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        roots = (run(tree.body) if at_import else []) + [defs.pop(n) for n in ("build_model", "make_dataset")
                                                          if n in defs]
        found, seen = [], set()
        while roots:  # and the file's own functions those call (`get_strategy()`), in turn
            root = roots.pop()
            for node in ast.walk(root):
                if isinstance(node, ast.Call):
                    f = node.func
                    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
                    text = describe(node, name)
                    if text and (node.lineno, node.col_offset) not in seen:
                        seen.add((node.lineno, node.col_offset))
                        found.append((node.lineno, text))
                    elif isinstance(f, ast.Name) and f.id in defs:
                        roots.append(defs.pop(f.id))
        return found

    return _read(source, folder, find)


def strategy_calls(source: str, folder=None) -> list[str]:
    """The tf.distribute strategies a workload constructs where rung runs it
    (`_calls_rung_runs`), as "MirroredStrategy (line 4)", in line order. A file written after
    a try at distributing by hand: rung chooses the strategy and calls build_model() in its
    scope, so the file's own fails every run (TensorFlow 2.21: "Mixing different
    tf.distribute.Strategy objects"; a MultiWorkerMirroredStrategy worker that constructs a
    MirroredStrategy crashed with SIGSEGV here). Read as `jit_compile_calls`."""
    return _calls_rung_runs(source, folder,
                            lambda node, name: f"{name} (line {node.lineno})" if name in STRATEGY_CLASSES else None)


# Keyword arguments of Keras's fit that the fit of scikit-learn, XGBoost or LightGBM does not
# take: a call named fit with one of them trains a Keras model.
KERAS_FIT_KEYWORDS = ("epochs", "steps_per_epoch", "validation_split", "validation_data", "initial_epoch")


def fit_calls(source: str, folder=None) -> list[str]:
    """The Keras fits a workload runs where rung runs it (`_calls_rung_runs`): a script's
    `model.fit(..., epochs=3)` left at the top of the file it became, as "model.fit (line
    24)", in line order. Every process rung starts would train the model first, outside any
    strategy, before the run rung measures or launches. A call is claimed when it has one of
    KERAS_FIT_KEYWORDS (a preprocessing scaler's fit takes none), or when what it fits is a
    Keras model by the file's own text: `build_model().fit(ds)`, or a name the file compiles
    (`model.compile(...)`) or assigns from build_model() (a bare `model.fit(ds)` on an endless
    dataset never returns). Read as `jit_compile_calls`."""
    import ast  # noqa: PLC0415 - only here

    tree = _parse(source) or ast.Module(body=[], type_ignores=[])

    def builds(value) -> bool:
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "build_model"

    models = {n.func.value.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr == "compile" and isinstance(n.func.value, ast.Name)}
    models |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and builds(n.value)
               for t in n.targets if isinstance(t, ast.Name)}

    def named(node, name):
        f = node.func
        if name != "fit" or not isinstance(f, ast.Attribute):
            return None
        receiver = f.value
        keras = any(k.arg in KERAS_FIT_KEYWORDS for k in node.keywords) or builds(receiver) or (
            isinstance(receiver, ast.Name) and receiver.id in models)
        if not keras:
            return None
        who = f"{receiver.id}." if isinstance(receiver, ast.Name) else ""
        return f"{who}fit (line {node.lineno})"

    return _calls_rung_runs(source, folder, named)


def clear_session_calls(source: str, folder=None) -> list[str]:
    """Keras's `clear_session()` called where rung builds the model or its pipeline (in
    build_model(), make_dataset() or a function of the file they call; at the top of the
    file it is harmless), as "clear_session (line 8)". Inside a strategy's scope it resets
    TensorFlow's default graph, the strategy's scope with it: leaving the scope then fails
    ("IndexError: pop from empty list", TensorFlow 2.21, both Kerases), and the model's
    variables read as made outside build_model(). Read as `jit_compile_calls`."""
    return _calls_rung_runs(source, folder, lambda node, name: f"clear_session (line {node.lineno})"
                            if name == "clear_session" else None, at_import=False)


def file_problem(source: str, folder=None) -> Optional[str]:
    """What rung reads in a workload's text, before importing it, that would fail or waste
    every run: a strategy of its own (`strategy_calls`), a model trained at import
    (`fit_calls`), a session cleared where the model is built (`clear_session_calls`); the
    line that says what to change, or None."""
    from rung.failures import (clear_session_problem, fit_at_import_problem,  # noqa: PLC0415 - pure text
                               own_strategy_problem)

    own = strategy_calls(source, folder)
    if own:
        return own_strategy_problem(calls=", ".join(own))
    fits = fit_calls(source, folder)
    if fits:
        return fit_at_import_problem(", ".join(fits))
    cleared = clear_session_calls(source, folder)
    if cleared:
        return clear_session_problem(", ".join(cleared))
    return None


# What to change when a model's own step leaves its loss unscaled (LOSS_NOT_SCALED): the
# decision's warning and the line rung init and train.py say.
LOSS_NOT_SCALED_FIX = ("Divide the summed per-example loss by the global batch "
                       "(tf.nn.compute_average_loss(per_example_loss), or the mean / strategy.num_replicas_in_sync), "
                       "or use the compiled loss (Keras's own compute_loss), which Keras scales for replicas")


def own_step_defs(source: str, folder=None) -> list[str]:
    """The methods of a workload file's classes that replace Keras's own loss-making step,
    `train_step` and `compute_loss`, as "SiameseModel.train_step (line 40)", in line order:
    only such a model can leave its loss unscaled for several replicas (LOSS_NOT_SCALED), so
    `rung launch` runs the replica check for it alone. With `folder` (the file's), the
    modules it imports from that folder are read too (`_read`): "Siamese.train_step
    (models.py, line 4)". Empty when the file cannot be parsed."""
    import ast  # noqa: PLC0415 - only here

    def defs(tree) -> list:
        return [(f.lineno, f"{c.name}.{f.name} (line {f.lineno})")
                for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                and f.name in ("train_step", "compute_loss")]

    return _read(source, folder, defs)


# the TensorFlow and Keras calls that clip gradients (a train_step's own clipping)
CLIP_CALLS = ("clip_by_global_norm", "clip_by_norm", "clip_by_value", "clip_by_average_norm")


def step_clipping_problem(calls: str) -> str:
    """What a train_step's own clipping does under a synchronous strategy of several
    replicas. Measured by rung profile's replica check (one step of each replica's batch
    against the same batches on one device): a step whose loss Keras divides by the global
    batch (compute_loss) and that clips with tf.clip_by_global_norm(grads, 0.01) gave 2.00x
    one device's gradients under 2 replicas on Keras 3 and tf-keras alike; with a threshold
    that did not bite, 1.00x."""
    return (f"the model's own train_step clips its gradients ({calls}), and it runs once per replica: each "
            "replica's gradients are clipped on their own before the optimizer sums them (either Keras; measured "
            "here: 2.00x one device's gradients under 2 replicas with clipping that bites, 1.00x without)")


def logged_loss_problem(replicas: str = "N") -> str:
    """What fit shows for a train_step that logs its loss as divided for the sum of
    gradients, under several replicas. Measured by rung profile's replica check (one fit step
    of 2 replicas against one device's steps on the same batches): 0.50 for a step that
    divides with compute_loss or tf.nn.compute_average_loss and feeds a Mean metric, on
    Keras 3 and tf-keras; returned as it is, 0.50 on Keras 3 and 1.00 on tf-keras (its fit
    sums the replicas' logs). Said only for a plan on the Keras the check ran on."""
    return (f"the loss the model's own train_step logs is each replica's share of the global batch's loss (it "
            f"divides the loss for the sum of gradients, rightly, and logs it so that fit does not add the shares "
            f"back): under {replicas} replicas fit, its callbacks and rung launch show 1/{replicas} of the loss one "
            "device shows for the same model, though the training is right (the replica check's fit step read "
            "0.50x under 2 replicas). "
            "Log the loss times tf.distribute.get_strategy().num_replicas_in_sync, as Keras's own train_step "
            "does, to compare runs")


# Why a threshold divided by the replicas is the fix where the clipping stays per replica:
# each replica's share of the gradient is about 1/N of the whole
SCALED_THRESHOLD = "which clips about where one device does while the replicas' gradients are alike"
# How to clip the sum instead, from a custom train_step
STEP_CLIPPING_FIX = ("Clip after the sum: drop the clip from train_step and build the optimizer with "
                     "global_clipnorm (or clipnorm), which tf-keras applies to the summed gradients (multi-worker "
                     "runs on tf-keras; for mirrored set TF_USE_LEGACY_KERAS=1: Keras 3 clips each replica's share "
                     f"there too); or divide the threshold by the number of replicas, {SCALED_THRESHOLD}")


def step_clipping_calls(source: str, folder=None) -> list[str]:
    """The clipping calls inside a workload's own `train_step` methods, as
    "GAN.train_step: tf.clip_by_global_norm (line 18)": the step runs once per replica, so
    each replica's gradients are clipped before the optimizer sums them, under either Keras
    (CLIPPING_PER_REPLICA). Read as `own_step_defs`."""
    return _calls_in_method(source, folder, "train_step",
                            lambda call: _dotted(call.func).rsplit(".", 1)[-1] in CLIP_CALLS)


def _dotted(f) -> str:
    """A call's function as written, an attribute chain: `tf.clip_by_global_norm`, `self.top.assign`."""
    import ast  # noqa: PLC0415 - only here

    parts = []
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return ".".join(reversed(parts))


def _calls_in_method(source: str, folder, method: str, call_ok, class_ok=None) -> list[str]:
    """The calls `call_ok` keeps inside the `method` of a workload's classes (those `class_ok`
    keeps), as "GAN.train_step: tf.clip_by_global_norm (line 18)", in the file and the modules
    it imports from its folder (`_read`)."""
    import ast  # noqa: PLC0415 - only here

    def calls(tree) -> list:
        return [(node.lineno, f"{c.name}.{method}: {_dotted(node.func)} (line {node.lineno})")
                for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and (class_ok is None or class_ok(c))
                for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == method
                for node in ast.walk(f) if isinstance(node, ast.Call) and call_ok(node)]

    return _read(source, folder, calls)


def assigning_metric_calls(source: str, folder=None) -> list[str]:
    """The `assign` calls in the `update_state` of a workload's own Metric classes, as
    "MaxError.update_state: self.top.assign (line 19)". Under tf.distribute a metric's
    variables are each replica's own and read as their sum (Keras's own metrics add totals
    and counts with assign_add, which sum right): a state set with `assign` (a maximum, the
    last value) reads as the sum of N replicas' values (METRIC_SUMMED). A class whose
    `add_variable` asks another `aggregation=` is not found, nor an accumulation written
    with assign (`v.assign(v + x)`). Read as `own_step_defs`."""
    import ast  # noqa: PLC0415 - only here

    def metric_class(c) -> bool:
        return any((b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")).endswith("Metric")
                   for b in c.bases)

    def other_aggregation(c) -> bool:
        return any(kw.arg == "aggregation" and not (isinstance(kw.value, ast.Constant) and kw.value.value == "sum")
                   for node in ast.walk(c) if isinstance(node, ast.Call) for kw in node.keywords)

    def adds_to_itself(call) -> bool:
        """`v.assign(v + x)` (or `tf.add(v, x)`): an accumulation written with assign, which
        sums right across replicas as assign_add does."""
        held = ast.dump(call.func.value)
        v = call.args[0] if call.args else None
        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add):
            return held in (ast.dump(v.left), ast.dump(v.right))
        if isinstance(v, ast.Call) and _dotted(v.func).rsplit(".", 1)[-1] == "add":
            return held in [ast.dump(a) for a in v.args]
        return False

    return _calls_in_method(source, folder, "update_state",
                            lambda call: isinstance(call.func, ast.Attribute) and call.func.attr == "assign"
                            and not adds_to_itself(call),
                            lambda c: metric_class(c) and not other_aggregation(c))


def metric_summed_problem(calls: str, replicas: str = "N") -> str:
    """METRIC_SUMMED: what fit shows for a metric whose update_state sets its state with
    assign, under several replicas, and the fix. Measured here: a metric keeping the
    largest absolute error of the batch read 1.81x one device's under 2 replicas, on Keras 3
    and tf-keras (the sum of each replica's maximum); Keras's MAE beside it 1.00x."""
    return (f"{calls}: a metric's variables are each replica's own and read as their sum, so a state set with "
            f"assign (a maximum, a last value) shows the sum of the {replicas} replicas' values under {replicas} "
            "replicas, in fit's logs and in any callback that monitors it (EarlyStopping, ModelCheckpoint); "
            "training is not changed (a metric kept of the largest error read 1.81x one device's under 2 replicas "
            "here, both Kerases). Keep totals and counts with assign_add, as Keras's own metrics do; a maximum has no "
            "such form: on Keras 3 add_variable(..., aggregation=\"mean\") shows the replicas' mean of it (0.90x "
            "here, not the maximum), or compute it outside fit")


def local_modules(tree, folder, source: str = "") -> list:
    """The modules a workload's syntax tree imports from its own folder, and theirs in turn,
    as the workload's import finds them (`load_workload` puts the folder first on
    `sys.path`): (path relative to the folder, syntax tree), at most MAX_MODULES_READ. A
    module whose text is the workload's `source` (a module that imports the workload back)
    is the workload: not read twice."""
    from pathlib import Path  # noqa: PLC0415 - only here

    root = Path(folder).resolve()
    seen: set = set()
    out, queue = [], [(tree, None)]  # (a module's tree, its file: None for the workload, a script)
    while queue and len(seen) < MAX_MODULES_READ:
        module, here = queue.pop(0)
        for path in _local_imports(module, root, here):
            if path in seen:
                continue
            seen.add(path)
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if source and text == source:
                continue
            sub = _parse(text)
            if sub is not None:
                out.append((str(path.relative_to(root)), sub))
                queue.append((sub, path))
    return out


def batch_hint(n: int, batch: int) -> str:
    """What to do when a step run at rung's default batch fails and the file keeps a batch
    of its own under another name (`batch_size = n`, keras.io's way, used in its train_step)."""
    return (f"the file sets batch_size = {n} and rung ran batches of {batch}, its default (it reads a file's "
            f"batch from BATCH_SIZE): give --batch {n}, or name it BATCH_SIZE")


def default_batch_note(n: int, batch: int, done: str = "profiled",
                       follows: str = "the step time, its memory and the plan follow the batch") -> str:
    """A step that ran at rung's default batch, of a file that keeps `batch_size = n` (keras.io's
    way) and no BATCH_SIZE: the file's number said beside the one run at (`done`: profiled,
    benched, trained; `follows`: what the batch changes there)."""
    return (f"{done} at a batch of {batch}, rung's default (it reads a file's batch from BATCH_SIZE); the file "
            f"sets batch_size = {n}: if each device trains on {n} examples a step, give --batch {n} or name it "
            f"BATCH_SIZE ({follows})")


def file_kept_batch(path, batch: int) -> Optional[int]:
    """The whole-number top-level `batch_size` of a file that sets no BATCH_SIZE, when it is
    not `batch` (rung's default, run at), read without importing it (rung bench and rung
    launch: `batch_hint` on a failure on the shapes, `default_batch_note` on a run that
    went through); None otherwise (`Workload.kept_batch` reads an imported file)."""
    from pathlib import Path  # noqa: PLC0415 - only here

    try:
        source = Path(path).read_text()
    except (OSError, ValueError):
        return None
    if file_batch_size(source) != (None, None):
        return None
    n, _ = file_batch_size(source, "batch_size")
    return n if n and n != batch else None


def with_batch_hint(error: Exception, hint: Optional[str]) -> Exception:
    """A run's failure with `hint` (`batch_hint`) added when it failed on its shapes (the
    batch, likely): what rung bench and rung launch raise."""
    from rung.errors import RunError  # noqa: PLC0415 - only here

    return RunError(f"{error}; {hint}") if hint and "shape" in str(error).lower() else error


def file_batch_size(source: str, name: str = "BATCH_SIZE") -> tuple[Optional[int], Optional[str]]:
    """The workload's top-level `BATCH_SIZE` (rung's extension of workload v1: the per-device
    batch), read without running the file: (the number, None), or (None, why not) when the
    file sets one rung cannot use, or (None, None) when it sets none. A whole number, or
    arithmetic of whole numbers (`32 * 4`), is read; a name, a call or a float is not
    (`32 * strategy.num_replicas_in_sync` is a global batch, and `int(os.environ[...])`
    is known only when the file runs). `name`: another top-level name read the same way
    (`batch_size`, for `batch_hint`)."""
    import ast  # noqa: PLC0415 - only here
    import operator  # noqa: PLC0415 - only here

    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            left, right = value(node.left), value(node.right)
            if left is not None and right is not None and not (isinstance(node.op, ast.FloorDiv) and right == 0):
                return ops[type(node.op)](left, right)
        return None

    tree = _parse(source)
    found = None
    for node in tree.body if tree is not None else []:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) and node.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found = node  # the last one at the top level is the one the module keeps
    if found is None or (isinstance(found.value, ast.Constant) and found.value.value is None):
        return None, None  # (None: not set, as the profile reads it too)
    n = value(found.value)
    text = ast.get_source_segment(source, found.value) or "?"
    if n is None and isinstance(found.value, ast.Constant):  # "32", 64.0, None
        return None, f"{name} = {text} (line {found.lineno}) is not a whole number"
    if n is None:
        return None, (f"{name} = {text} (line {found.lineno}) is not a whole number rung can read without running "
                      "the file")
    if n < 1:
        return None, f"{name} = {text} (line {found.lineno}) is not a batch; expected a whole number of at least 1"
    return n, None


def workload_text(path) -> tuple:
    """(the workload's text, its folder) for the readers here: the folder Python puts first
    on `sys.path` for `python workload.py`, the resolved one (a symlink's target's)."""
    from pathlib import Path  # noqa: PLC0415 - only here

    return source_of(path), Path(path).resolve().parent


def local_files(path) -> list:
    """The files of the modules the workload at `path` imports from its folder
    (`local_modules`), resolved."""
    source, root = workload_text(path)
    return [root / name for name, _ in _trees(source, root)[1:]]


# Modules beside a workload that the readers here read, at most (a folder of many is a
# package of the team's own; its first ones are read).
MAX_MODULES_READ = 50


def _local_imports(tree, root, here=None) -> list:
    """The files under `root` that a module's imports name, as Python finds them: absolute
    ones (`import models`, `from models import Net`, `from pkg.models import Net`, `from pkg
    import models`, each package's `__init__.py` on the way) and, in a module of a package
    at `here`, relative ones (`from .layers import Block`, `from . import layers`)."""
    import ast  # noqa: PLC0415 - only here

    wanted = []  # (the folder a dotted name starts from, its parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            wanted += [(root, a.name.split(".")) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                start = root
            elif here is not None:  # a relative import: from the package of the module at `here`
                start = here.parent
                for _ in range(node.level - 1):
                    start = start.parent
                if start != root and root not in start.parents:
                    continue
            else:
                continue  # the workload itself runs as a script: no package to be relative to
            parts = node.module.split(".") if node.module else []
            wanted += [(start, parts)] if parts else []
            wanted += [(start, parts + [a.name]) for a in node.names if a.name != "*"]
    paths = []
    for start, parts in wanted:
        for k in range(1, len(parts) + 1):  # pkg/__init__.py, then pkg/models.py
            base = start.joinpath(*parts[:k])
            for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
                if candidate.is_file() and candidate not in paths:
                    paths.append(candidate)
    return paths


def _calls_with_true(source: str, keyword: str, folder=None) -> list[str]:
    import ast  # noqa: PLC0415 - only here

    def passes_true(node, name):
        if any(kw.arg == keyword and isinstance(kw.value, ast.Constant) and kw.value.value is True
               for kw in node.keywords):
            return f"{name or 'a call'}({keyword}=True) (line {node.lineno})"
        return None

    return _calls(source, passes_true, folder)


def _calls(source: str, describe, folder=None) -> list[str]:
    """`describe(call, its name)` of every call in a file's text that it describes (not
    None), in line order (then in its local modules, `_read`)."""
    import ast  # noqa: PLC0415 - only here

    def find(tree) -> list:
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
                text = describe(node, name)
                if text:
                    found.append((node.lineno, text))
        return found

    return _read(source, folder, find)


def keras3_import_problem(imports: list[str]) -> str:
    """Why tf-keras cannot train the model of a file that imports Keras 3 itself, and the fix."""
    return (f"the workload imports Keras 3 itself ({imports[0]}{', ...' if len(imports) > 1 else ''}), and tf-keras "
            f"cannot train a model built from `keras`: {KERAS3_FIX}")


# Why a model that builds on Keras 3 may not build on tf-keras, where rung runs multi-worker
# and parameter servers (train.py, which runs without rung, says it in its own words).
TF_KERAS_DEFINES = "tf.keras as Keras 2 defines its layers and arguments"


# What to change in a file that builds its model from Keras 3's own `import keras`.
KERAS3_FIX = "build it from tf.keras (`from tensorflow import keras`; keras.ops and keras.random become tf.*)"


# Why a model with stateful recurrent layers cannot run where rung runs tf-keras, and the fix
# (reproduced with TF 2.21: tf-keras's build_model() raised it under OneDeviceStrategy,
# MultiWorkerMirroredStrategy and ParameterServerStrategy; Keras 3 ran it mirrored).
STATEFUL_RNN_PROBLEM = ("the model has recurrent layers with stateful=True, which tf-keras refuses to build under any "
                        "tf.distribute strategy (\"Stateful RNNs (created with `stateful=True`) are not yet supported "
                        "with tf.distribute.Strategy\"), so the job fails before its first step: make them stateless "
                        "(stateful=False, the state carried in the data or reset every batch) before distributing")


# Why a model whose own train_step needs no labels, compiled with a loss, fails Keras 3's fit
# under every tf.distribute strategy (reproduced with TF 2.21 and Keras 3.15: keras.io's
# diffusion models' pattern; OneDeviceStrategy and MirroredStrategy fail, the same fit with
# no strategy runs, and so does tf-keras): under a strategy, fit builds the compiled loss
# symbolically on the first batch before the first step (`_symbolic_build`), with labels None.
UNLABELLED_LOSS_PROBLEM = ("compile without loss= and compute the loss in train_step (per example, then "
                           "tf.nn.compute_average_loss, which every strategy and both Kerases take), or yield "
                           "(features, targets): "
                           "make_dataset yields no labels, and Keras 3's fit under any tf.distribute strategy "
                           "(OneDeviceStrategy included) first builds the compiled loss on labels None (\"None values "
                           "not supported\")")


# Why a model that is not built when build_model() returns it can fail Keras 3's fit under
# every tf.distribute strategy (reproduced with TF 2.21 and Keras 3.15 on keras.io's Siamese
# network, whose call() takes a triplet: OneDeviceStrategy and MirroredStrategy fail, the
# same fit without a strategy runs, and so does tf-keras, which builds in the first step).
def keras3_build_problem(error: str, model_built: bool = False, unbuilt: list[str] | tuple = ()) -> str:
    """What to change when Keras 3's fit under a strategy fails to build the model, then why.
    `model_built`: the model is marked built (model.built = True) and `unbuilt` names the
    layers that are not: marking the model alone does not do, each of them must be built."""
    how = "a Sequential its keras.Input, or call layer.build(input_shape) in build_model()"
    why = ("under a strategy Keras 3's fit first builds a model any layer of which is not built, by calling it on "
           f"the batch's features alone (x of (x, y, sample_weight)), and that call fails here ({error})")
    names = ", ".join(unbuilt[:4]) + (f" and {len(unbuilt) - 4} more" if len(unbuilt) > 4 else "")
    if model_built and unbuilt:
        verb = "is" if len(unbuilt) == 1 else "are"
        return (f"build every layer of the model, not only the model (model.built = True): {names} {verb} not "
                f"(give {how}): {why}")
    also = f" (these layers are not built either, and must be: {names}; give {how})" if unbuilt else ""
    return ("mark the model built in build_model() once its parts are built (model.built = True)" + also +
            f", or give it a call() that takes the features alone: {why}")


def unbuilt_optimizers_problem(names: list[str]) -> str:
    """What to change when a train_step's own optimizers would build their slot variables
    inside the replicated step (`counts.unbuilt_optimizers_with_slots`), then why."""
    listed = ", ".join(names)
    return (f"build every optimizer the train_step uses in build_model(), under the strategy's scope ({listed}: "
            "optimizer.build(the variables it updates)): Keras 3's fit builds model.optimizer alone before the "
            "first step, and an optimizer built by its first apply_gradients creates its slot variables inside the "
            "replicated step, where MirroredStrategy's fit fails (\"You must feed a value for placeholder tensor\")")


# What to change when the step draws keras.random numbers without a seed
# (`counts.global_seed_generator_made`), then why
UNSEEDED_RANDOM_PROBLEM = (
    "give every random draw in the step a seed generator the layer keeps (self.seed_generator = "
    "keras.random.SeedGenerator(seed) in __init__, then keras.random.uniform(..., seed=self.seed_generator)): the "
    "step draws keras.random numbers without a seed, so Keras 3 makes its global SeedGenerator's variable inside "
    "the first step, which MirroredStrategy's fit refuses (\"tf.function only supports singleton tf.Variables "
    "created on the first call\")")


# Why an optimizer built with gradient_accumulation_steps runs under no replicated strategy
# (reproduced with TF 2.21: Keras 3 ran it on one device; its mirrored fit failed, "`merge_call`
# called while defining a new graph or a tf.function"; tf-keras's build_model() raised
# "gradient_accumulation_steps is not a valid argument").
ACCUMULATION_PROBLEM = ("Keras 3's fit fails with it under MirroredStrategy (its update every k steps sits in a "
                        "tf.cond that an all-reduce cannot cross: keras-team/keras#20582), and tf-keras's "
                        "optimizers, which multi-worker and parameter-server fit run on, do not take it: raise the "
                        "per-device batch, or accumulate in a train_step of your own (apply the summed gradients "
                        "every k steps outside any tf.cond)")


TF_KERAS_WHY = ("Keras 3's fit cannot run multi-worker or parameter-server training (tensorflow#72388, "
                "keras-team/keras#18624)")
