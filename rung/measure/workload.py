"""Loading a workload file (contract: shared/contract/workload-v1.md) and checking what
it returns. Every problem is an InputError naming the file: exit 2, one line."""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Optional

from rung.errors import InputError
from rung.failures import (EAGER_OFF_PROBLEM, build_model_requires_problem, clear_session_problem,
                           exited_at_import_problem, hint, made_before_problem, message_line, not_a_dataset_problem,
                           own_strategy_problem)

DEFAULT_BATCH = 32


@dataclass
class Workload:
    path: Path
    module: ModuleType
    build_model: Callable[[], Any]
    make_dataset: Callable[..., Any]

    @property
    def where(self) -> str:
        return str(self.path)

    @property
    def default_batch(self) -> int:
        """The file's BATCH_SIZE (a rung extension of workload v1), else 32."""
        b = getattr(self.module, "BATCH_SIZE", None)
        if b is None:
            return DEFAULT_BATCH
        if type(b) is not int or b < 1:  # ("32" or 0 was taken as 32 without a word)
            raise InputError(self.where, None, f"BATCH_SIZE is {b!r}; expected a whole number of at least 1 (the "
                                               "per-device batch), or give --batch N")
        return b

    def kept_batch(self, batch: int) -> Optional[int]:
        """The batch the file keeps under keras.io's name (`batch_size = 64` at the top, which
        its diffusion model uses inside train_step), when it is not `batch`, the one rung runs
        at: a step at 32 may fail on the shapes (`kerasfit.batch_hint` says what to do), or
        run at a batch the file does not train at. None when the file sets BATCH_SIZE (rung's
        name) or no other whole-number `batch_size`."""
        if getattr(self.module, "BATCH_SIZE", None) is not None:
            return None
        n = getattr(self.module, "batch_size", None)
        return None if type(n) is not int or n < 1 or n == batch else n


def _where_in_file(path: Path, exc: BaseException) -> str:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == path.resolve():
            return f" (line {frame.lineno})"
    # a traced function's error quotes the user's frames in its message
    lines = re.findall(rf'File "{re.escape(str(path.resolve()))}", line (\d+)', str(exc))
    return f" (line {lines[-1]})" if lines else ""


def one_line(exc: BaseException) -> str:
    """An exception from TensorFlow or Keras as one readable line (`failures.message_line`)."""
    return message_line(str(exc), type(exc).__name__)


def user_error(where: str, what: str, exc: BaseException) -> InputError:
    """An error raised by the user's model or pipeline: exit 2, one line naming the file."""
    path = Path(where)
    return InputError(where, None, f"{what}: {type(exc).__name__}: {one_line(exc)}{_where_in_file(path, exc)}")


def load_workload(path: str | Path) -> Workload:
    """Import the user's file, with its folder first on `sys.path` as `python workload.py` would
    have it (a model class kept in a module beside it imports). TensorFlow must already be
    imported (rung chooses the Keras)."""
    p = Path(path)
    where = str(path)
    if not p.exists():
        raise InputError(where, None, "no such workload file")
    if p.is_dir() or p.suffix != ".py":
        raise InputError(where, None, "expected a Python file (.py) defining build_model() and make_dataset()")
    from rung.kerasfit import file_problem, workload_text

    found = file_problem(*workload_text(p))  # before its import runs it (a crash, under multi-worker)
    if found:
        raise InputError(where, None, found)
    beside = str(p.resolve().parent)
    if beside not in sys.path:  # as `python workload.py` has it: the modules beside the file import
        sys.path.insert(0, beside)
    name = f"rung_workload_{abs(hash(p.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, p)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # the command line the file sees is `python workload.py`'s: a script's parse_args() at
    # its top takes its defaults, not rung's own arguments (it printed its usage under the
    # name rung and exited)
    argv, sys.argv = sys.argv, [str(p)]
    try:
        spec.loader.exec_module(module)
    except SystemExit as e:
        raise InputError(where, None, exited_at_import_problem(e.code)) from None
    except SyntaxError as e:
        raise InputError(where, None, f"cannot be imported: SyntaxError: {e.msg} (line {e.lineno})") from None
    except Exception as e:  # noqa: BLE001 - anything the user's module raises
        found = hint(str(e))  # what to change first, when rung knows the failure
        said = f"{found[0]} ({type(e).__name__}: {found[1]})" if found else f"{type(e).__name__}: {one_line(e)}"
        raise InputError(where, None, f"cannot be imported: {said}{_where_in_file(p, e)}") from None
    finally:
        sys.argv = argv
    tf = sys.modules.get("tensorflow")
    if tf is not None and not tf.executing_eagerly():
        at = [i for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
              if "disable_eager_execution" in line or "disable_v2_behavior" in line]
        raise InputError(where, None, EAGER_OFF_PROBLEM + (f" (line {at[0]})" if at else ""))
    fns = {}
    for fn in ("build_model", "make_dataset"):
        f = getattr(module, fn, None)
        if not callable(f):
            raise InputError(where, None, f"defines no {fn}() function; a workload defines build_model() "
                                          "and make_dataset(batch_size, input_context=None)")
        fns[fn] = f
    named = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    takes = [n for n, prm in inspect.signature(fns["build_model"]).parameters.items()
             if prm.default is prm.empty and prm.kind in named]
    if takes:  # build_model(num_classes), build_model(strategy) from a try at distributing by hand
        raise InputError(where, None, build_model_requires_problem(takes, fns["build_model"].__code__.co_firstlineno))
    return Workload(p, module, fns["build_model"], context_defaults_to_none(fns["make_dataset"]))


def takes_input_context(make_dataset: Callable[..., Any]) -> bool:
    """Whether make_dataset takes the InputContext, workload v1's second parameter, which
    rung passes positionally: a second positional parameter with no default or a default
    of None (`input_context=None`, `ctx`), or `*args`. One with another default
    (`training=True`, `shuffle=True`) is a setting of the file's own: it was handed None
    on one device and an InputContext under multi-worker, so the profile timed a pipeline
    the file never runs by default. Such a file, like `make_dataset(batch_size)`, is called
    with the batch alone and sharded by data (rung init's train.py has the same rule)."""
    try:
        params = list(inspect.signature(make_dataset).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = _positional(params)
    if len(positional) >= 2:
        return positional[1].default is inspect.Parameter.empty or positional[1].default is None
    return len(positional) == 1 and any(p.kind == p.VAR_POSITIONAL for p in params)


def positional_parameters(fn: Callable[..., Any]) -> list:
    """fn's parameters that a positional argument can fill; [] without a signature."""
    try:
        return _positional(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []


def _positional(params) -> list:
    return [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def context_defaults_to_none(make_dataset: Callable[..., Any]) -> Callable[..., Any]:
    """make_dataset with its second parameter required (`def make_dataset(batch_size,
    input_context)`, as TensorFlow's guides write a dataset_fn): rung calls it with the batch
    alone on one device and under MirroredStrategy, so that call passes None, which is the
    default workload v1 gives it. Any other signature is returned as it is. The generated
    train.py does the same (`with_context_default`)."""
    import functools

    try:
        params = list(inspect.signature(make_dataset).parameters.values())
    except (TypeError, ValueError):
        return make_dataset
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(params) < 2 or params[1].kind not in positional or params[1].default is not inspect.Parameter.empty:
        return make_dataset

    @functools.wraps(make_dataset)
    def call(batch_size, *rest, **kwargs):
        if not rest and params[1].name not in kwargs:
            rest = (None,)
        return make_dataset(batch_size, *rest, **kwargs)

    return call


def call_user(w: Workload, fn: str, *args, **kwargs):
    """Call one of the user's functions; its exceptions become one line naming the file."""
    try:
        return getattr(w, fn)(*args, **kwargs)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001
        said = f"{fn}() raised {type(e).__name__}: {one_line(e)}{_where_in_file(w.path, e)}"
        found = hint(str(e))  # what to change first, when rung knows the failure
        if found:
            said = f"{fn}() raised {type(e).__name__}: {found[0]} ({found[1]}){_where_in_file(w.path, e)}"
        if fn == "build_model" and "Mixing different tf.distribute.Strategy objects" in str(e) and \
                "_DefaultDistributionStrategy" not in str(e):  # (not an object made outside any strategy)
            # rung's scope, and the file's own inside it (TensorFlow names both by address)
            theirs = re.search(r"is not <[\w.]*?(\w+) object", str(e))
            said = (f"{own_strategy_problem(theirs.group(1) if theirs else '')} ({type(e).__name__}: Mixing "
                    f"different tf.distribute.Strategy objects{_where_in_file(w.path, e)})")
        raise InputError(w.where, None, said) from None


def _keras3_model(model) -> bool:
    """A Keras 3 model (built from `import keras`), whatever tf.keras is in this process."""
    keras = sys.modules.get("keras")
    return keras is not None and isinstance(model, getattr(keras, "Model", ()))


def variables_made_by(tf, call):
    """call()'s result, and the tf.Variables made while it ran (under a strategy, the
    strategy's own: MirroredVariable...)."""
    made = []

    def creator(next_creator, **kwargs):
        v = next_creator(**kwargs)
        made.append(v)
        return v

    with tf.variable_creator_scope(creator):
        out = call()
    return out, made


def variables_of(weights) -> list:
    """The variables among a model's weights. tf-keras's lookup layers (TextVectorization,
    StringLookup, IntegerLookup) list a weight handler there that holds their vocabulary
    table for saving (`VocabWeightHandler`): no variable, no name, no shape."""
    return [v for v in weights if hasattr(v, "shape") and (hasattr(v, "name") or hasattr(v, "path"))]


def made_before_line(model, made: list) -> str | None:
    """What to change when the model build_model() returned, or its optimizer, holds
    variables not made in that call (`made`, from `variables_made_by`), or None. The
    generated train.py asks this too (where rung is installed)."""
    weights = variables_of(getattr(model, "weights", []))
    before = made_before(weights, made)
    opt = getattr(model, "optimizer", None)
    opt_vars = getattr(opt, "variables", None) if opt is not None else None
    opt_vars = opt_vars() if callable(opt_vars) else opt_vars
    # an optimizer built by compile("adam") or in the call has its variables from the call
    opt_before = type(opt).__name__ if opt_vars and made_before(list(opt_vars), made) else None
    # a metric object passed to compile and made at import: tf-keras refuses it under any
    # strategy ("was created inside a different distribution strategy scope than the model")
    metrics_before = [getattr(m, "name", type(m).__name__) for m in compiled_metric_objects(model)
                      if made_before(list(getattr(m, "variables", None) or []), made)]
    if not before and not opt_before and not metrics_before:
        return None
    return made_before_problem(len(before), len(weights), before, opt_before, metrics_before)


def compiled_metric_objects(model) -> list:
    """The metric objects (not names, not plain functions) the model was compiled with, in
    order: Keras 3 keeps them in `_compile_metrics`, tf-keras in `compiled_metrics`, as given
    (a list, a dict per output, nested)."""
    out: list = []
    for holder in (getattr(model, "_compile_metrics", None), getattr(model, "compiled_metrics", None)):
        for given in ("_user_metrics", "_user_weighted_metrics"):
            for x in compiled_leaves(getattr(holder, given, None)):
                if hasattr(x, "update_state") and all(x is not o for o in out):
                    out.append(x)
    return out


def compiled_leaves(given) -> list:
    """What `compile` was given for each output (its `loss=` or `metrics=`), as a flat list in
    order: the objects and functions in a list, a dict per output, or nested, without names
    (strings) and Nones."""
    if isinstance(given, dict):
        return [x for v in given.values() for x in compiled_leaves(v)]
    if isinstance(given, (list, tuple)):
        return [x for v in given for x in compiled_leaves(v)]
    return [] if given is None or isinstance(given, str) else [given]


def made_before(variables: list, made: list) -> list:
    """The names of `variables` that were not made in build_model()'s call (`made`)."""
    ours = {id(v) for v in made}
    for v in made:  # a ShardedVariable (parameter servers with a partitioner) and its shards
        shards = getattr(v, "variables", None)
        if isinstance(shards, (list, tuple)):
            ours |= {id(shard) for shard in shards}

    def held(v) -> set:  # the variable and what it wraps: Keras 3's KerasVariable, tf-keras's AutoCastVariable
        out = {id(v)}
        for _ in range(3):
            inner = getattr(v, "_value", None)
            v = inner if inner is not None else getattr(v, "_variable", None)
            if v is None:
                break
            out.add(id(v))
        return out

    return [getattr(v, "path", None) or v.name for v in variables if not held(v) & ours]


def build_checked_model(w: Workload, tf):
    graph = tf.compat.v1.get_default_graph()
    model, made = variables_made_by(tf, lambda: call_user(w, "build_model"))
    now = tf.compat.v1.get_default_graph()
    if now is not graph:
        # clear_session() reached where the text does not show it (a method, another module):
        # the variables would read as made before the call. The strategy scope this runs in
        # lived on the graph it replaced; hand its stack on, so leaving the scope raises
        # nothing over this line ("pop from empty list")
        stack = getattr(graph, "_distribution_strategy_stack", None)
        if stack is not None and not getattr(now, "_distribution_strategy_stack", None):
            now._distribution_strategy_stack = list(stack)
        raise InputError(w.where, None, clear_session_problem("clear_session, reached from build_model()"))
    if not isinstance(model, tf.keras.Model) and _keras3_model(model) and \
            tf.keras.Model.__module__.startswith("tf_keras"):
        from rung.kerasfit import TF_KERAS_WHY, keras3_import_problem, keras3_imports, workload_text

        found = keras3_imports(*workload_text(w.path)) or ["keras"]
        raise InputError(w.where, None, f"build_model() returned a Keras 3 model ({type(model).__name__}) under "
                                        f"tf-keras: {keras3_import_problem(found)} ({TF_KERAS_WHY})")
    if not isinstance(model, tf.keras.Model) and type(model).__module__.startswith("tf_keras"):
        raise InputError(w.where, None, f"build_model() returned a tf-keras model ({type(model).__name__}) where "
                                        "tf.keras is Keras 3: the file builds it with tf_keras itself; run it on "
                                        "tf-keras (--keras tf_keras, or leave --keras out and rung chooses it)")
    if not isinstance(model, tf.keras.Model):
        raise InputError(w.where, None, f"build_model() returned {type(model).__name__}; expected a compiled "
                                        "tf.keras.Model")
    before = made_before_line(model, made)
    if before:  # a model or optimizer kept at the top of the file: not the strategy's
        raise InputError(w.where, None, before)
    own = getattr(model, "distribute_strategy", None)
    if own is not None and own is not tf.distribute.get_strategy():
        # built under a strategy of the file's own: its step would fail outside that scope
        # ("Need to be inside `with strategy.scope()`"), and no run could measure it under another
        raise InputError(w.where, None, own_strategy_problem(type(own).__name__))
    if getattr(model, "optimizer", None) is None:
        raise InputError(w.where, None, "build_model() returned a model that is not compiled; call "
                                        "model.compile(optimizer=..., loss=...) before returning it")
    return model


def make_checked_dataset(w: Workload, tf, batch_size: int, input_context=None):
    if input_context is not None or takes_input_context(w.make_dataset):
        ds = call_user(w, "make_dataset", batch_size, input_context)
    else:
        ds = call_user(w, "make_dataset", batch_size)
    if not isinstance(ds, tf.data.Dataset):
        raise InputError(w.where, None, not_a_dataset_problem(batch_size, ds))
    spec = ds.element_spec
    if isinstance(spec, tuple) and len(spec) not in (1, 2, 3):
        raise InputError(w.where, None, f"make_dataset() yields tuples of {len(spec)}; expected (features, labels), "
                                        "(features, labels, sample_weights) or features alone")
    why = single_examples(tf, ds, batch_size)
    if why:
        raise InputError(w.where, None, why)
    n = int(ds.cardinality())
    if n == 0:
        raise InputError(w.where, None, f"make_dataset({batch_size}) yields no batches: a batch of {batch_size} "
                                        "is larger than the data (batch with drop_remainder=True drops it); "
                                        "try a smaller --batch")
    if n > 0:
        raise InputError(w.where, None, f"make_dataset({batch_size}) is finite ({n} batches); expected an "
                                        "endless dataset: end make_dataset with .repeat()")
    return ds


def single_examples(tf, ds, batch_size: int) -> str:
    """What to say when a dataset yields single examples rather than batches (a pipeline
    without .batch()), or ''. From the element spec alone: nothing is read. The generated
    train.py asks this too, before fit, where rung is installed."""
    why = unbatched(_shapes(tf, ds.element_spec))
    if not why:
        return ""
    return (f"make_dataset({batch_size}) yields single examples, not batches ({why}); end the pipeline with "
            ".batch(batch_size), as the per-replica batch")


def _shapes(tf, spec) -> list:
    """(name, shape as a tuple, None where unknown) of every tensor of an element spec, or
    [] when a shape's rank is unknown."""
    parts = spec if isinstance(spec, tuple) else (spec,)
    out = []
    for name, part in zip(("features", "labels", "sample weights"), parts):
        for t in tf.nest.flatten(part):
            shape = getattr(t, "shape", None)
            if shape is None or shape.rank is None:
                return []
            out.append((name, tuple(shape.as_list())))
    return out


def unbatched(shapes) -> str:
    """Why the tensors of one dataset element look like a single example rather than a
    batch, or ''. A batch gives every tensor a first dimension, the same for all of them
    (or unknown); a single example has scalars (a class label) or first dimensions that
    differ (features of 32 values beside a label of 1). Pure: takes (name, shape) pairs."""
    if not shapes:
        return ""
    scalars = [name for name, shape in shapes if len(shape) == 0]
    if scalars:
        return f"the {scalars[0]} are scalars (shape ())"
    firsts = {shape[0] for _, shape in shapes if shape[0] is not None}
    if len(firsts) > 1:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes[:4])
        return f"the first dimensions differ: {listed}"
    return ""


def features(batch):
    """The features of one element of make_dataset: the first of a (features, labels[,
    sample_weights]) tuple, or the element itself when the dataset yields features alone
    (a rung extension of workload v1, as Keras' fit accepts it: a VAE or an autoencoder
    whose own train_step needs no labels)."""
    return batch[0] if isinstance(batch, tuple) else batch


def dataset_repeats(tf, ds) -> bool:
    """Whether the pipeline repeats (endless, or a RepeatDataset whose length TF cannot tell)."""
    if int(ds.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
        return True
    from rung.measure.pipeline import dataset_ops

    return "RepeatDataset" in dataset_ops(tf, ds)
