"""Dynamic shapes: what TPUs (XLA) need reworked into static ones."""

from __future__ import annotations


def _seen_shapes(tf, batches, part: int, index: int) -> set:
    """The shapes one tensor of the element had in the batches seen (empty when none were)."""
    out = set()
    for b in batches or []:
        parts = b if isinstance(b, tuple) else (b,)
        if part < len(parts):
            flat = tf.nest.flatten(parts[part])
            if index < len(flat) and hasattr(flat[index], "shape"):
                out.add(tuple(flat[index].shape.as_list()))
    return out


def _named(tf, spec, root: str) -> list[tuple[str, object]]:
    """The tensors of one part of an element in tf.nest.flatten's order, each with a path a
    user can find in their own code: features/body for a dict's key, features[1] for a
    tuple's place, features alone for one tensor."""
    out = []

    def walk(x, path):
        if isinstance(x, dict):
            for k in sorted(x):  # tf.nest.flatten's order for a dict
                walk(x[k], f"{path}/{k}")
        elif isinstance(x, (list, tuple)):
            for i, y in enumerate(x):
                walk(y, f"{path}[{i}]")
        else:
            out.append((path, x))

    walk(spec, root)
    flat = tf.nest.flatten(spec)
    if len(out) != len(flat):  # a structure the walk does not know (attrs, a mapping of its own)
        return [(f"{root}[{i}]" if len(flat) > 1 else root, s) for i, s in enumerate(flat)]
    return [(path, s) for (path, _), s in zip(out, flat)]


def _unknown_inner_dimension(tf, element_spec) -> bool:
    """Whether some tensor of the element has a non-batch dimension the spec leaves unknown."""
    return any(isinstance(s, tf.TensorSpec) and s.shape.rank is not None and None in s.shape.as_list()[1:]
               for s in tf.nest.flatten(element_spec))


def dynamic_shape_details(tf, element_spec, model, batches=None) -> tuple[list[str], list[str]]:
    """Returns (details that make shapes dynamic, notes). Dynamic: an unknown non-batch
    dimension, ragged or sparse tensors, in the dataset's elements (a model input declared
    with an unknown dimension is traced with what the dataset feeds it: a note).
    An unknown batch dimension is only a note: TPUStrategy pads it by default
    (`tf.distribute.RunOptions.experimental_enable_dynamic_batch_size`, True), and
    drop_remainder=True makes it static. `batches`: some batches of the dataset (or a
    function that reads them, called only when needed); a dimension the spec leaves unknown
    but that is the same in every one of them (a window of timeseries_dataset_from_array)
    is a note, not dynamic."""
    if callable(batches):  # read only when the spec leaves a non-batch dimension unknown
        batches = batches() if _unknown_inner_dimension(tf, element_spec) else None
    details, notes = [], []
    names = ("features", "labels", "sample_weights")
    parts = element_spec if isinstance(element_spec, tuple) else (element_spec,)  # or features alone
    for k, (part, spec) in enumerate(zip(names, parts)):
        for i, (path, s) in enumerate(_named(tf, spec, part)):
            if isinstance(s, tf.RaggedTensorSpec):
                details.append(f"{path} is ragged")
            elif isinstance(s, tf.SparseTensorSpec):
                details.append(f"{path} is sparse")
            elif isinstance(s, tf.TensorSpec):
                dims = s.shape.as_list() if s.shape.rank is not None else None
                if dims is None:
                    details.append(f"{path} has unknown rank")
                    continue
                if dims and dims[0] is None and not any("batch dimension" in n for n in notes):
                    notes.append(f"batch dimension unknown ({path} has shape {tuple(dims)}): on TPUs, "
                                 "TPUStrategy pads it (tf.distribute.RunOptions' experimental_enable_dynamic_"
                                 "batch_size, on by default); a static one spares XLA the padding: batch with "
                                 "drop_remainder=True, and no step after it that loses the batch size (a map "
                                 "through a Keras layer can)")
                if any(d is None for d in dims[1:]):
                    seen = {shape[1:] for shape in _seen_shapes(tf, batches, k, i)}
                    if len(seen) == 1:
                        notes.append(f"{path} has shape {tuple(dims)} in the dataset's spec, and the same "
                                     f"{tuple(next(iter(seen)))} after the batch in all {len(batches)} batches "
                                     "read: taken as static (on TPUs XLA compiles a step per shape, so a batch "
                                     "of another shape would compile again)")
                    else:
                        details.append(f"{path} has shape {tuple(dims)}: unknown non-batch dimension"
                                       + (f" ({len(seen)} different shapes in {len(batches)} batches read)"
                                          if seen else ""))
    # A model input declared with an unknown dimension (keras.Input(shape=(None,))) is traced
    # with the shapes the dataset feeds it: static data, a static step (one trace, one XLA
    # compilation); dynamic data is said above, by the dataset's own name.
    declared = [f"{getattr(inp, 'name', '')} {tuple(inp.shape)}" for inp in getattr(model, "inputs", None) or []
                if any(d is None for d in tuple(getattr(inp, "shape", ()) or ())[1:])]
    if declared and not details:
        notes.append(f"model input{'s' if len(declared) > 1 else ''} {', '.join(declared)} declared with an unknown "
                     "dimension: the dataset feeds static shapes, and the step is traced (and compiled by XLA on a "
                     "TPU) for those, so it is not dynamic")
    return details, notes


def string_inputs(tf, element_spec) -> list[str]:
    """The features that reach the model as strings (a TextVectorization or StringLookup
    inside the model). Keras 3 cannot run such a model's fit under MirroredStrategy (the
    replicas' string inputs meet an AddN: tensorflow#80951, reproduced with TF 2.21);
    tf-keras can, and so can the same layers mapped in the tf.data pipeline. TPUs take
    no strings at all."""
    features = element_spec[0] if isinstance(element_spec, tuple) else element_spec
    found = []

    def walk(spec, path):
        if isinstance(spec, dict):
            for k in sorted(spec):
                walk(spec[k], f"{path}/{k}")
        elif isinstance(spec, (list, tuple)):
            for i, x in enumerate(spec):
                walk(x, f"{path}[{i}]")
        elif getattr(spec, "dtype", None) == tf.string:
            found.append(path)

    walk(features, "features")
    return found


def ragged_or_sparse_inputs(tf, element_spec) -> list[str]:
    """The parts of the dataset's elements that are ragged or sparse tensors. Keras 3's fit
    cannot split such a batch across MirroredStrategy's replicas ("'RaggedTensor' object has
    no attribute 'device'", reproduced with TF 2.21 on a ragged bag of words and a sparse
    multi-hot model); tf-keras runs both."""
    names = ("features", "labels", "sample_weights")
    parts = element_spec if isinstance(element_spec, tuple) else (element_spec,)
    found = []
    for part, spec in zip(names, parts):
        for path, s in _named(tf, spec, part):
            kind = ("ragged" if isinstance(s, tf.RaggedTensorSpec) else
                    "sparse" if isinstance(s, tf.SparseTensorSpec) else None)
            if kind:
                found.append(f"{path} is {kind}")
    return found
