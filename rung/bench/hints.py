"""What to do about the failures a model meets only under a tf.distribute strategy.

A model that trains without a strategy can fail under one (OneDeviceStrategy
included): a keras.io GAN, with its own `train_step`, its own optimizers and no
`call()`, meets three of those below. TensorFlow's message says what broke, not what to
change; `hint` adds that, for the bench's one-line failure. Pure: no TensorFlow.
Each hint was checked on such a GAN (TensorFlow 2.21; Keras 3 and tf-keras), the empty
shard on `tests/bench/shard_one_file.py`, string features under Keras 3's mirrored fit on a
StringLookup model (keras.io's text classification has one)."""

from __future__ import annotations

from typing import Optional

_HINTS = (
    # Keras 3 builds the model under a strategy by calling it on a batch
    (("Unable to automatically build the model",),
     "under a tf.distribute strategy Keras 3 builds the model by calling it on a batch, and this model cannot "
     "be called (no call()?): give it a call(), or mark it built in build_model() (model.built = True) once "
     "its parts are built"),
    # optimizer slots created inside the replicated step
    (("You must feed a value for placeholder tensor", "/Initializer/"),
     "an optimizer creates its slot variables inside the distributed step: build every optimizer the "
     "train_step uses in build_model(), under the strategy's scope (optimizer.build(its variables))"),
    # a worker whose shard of the input is empty (Keras fit ends with no logs)
    (("Unexpected result of `train_function` (Empty logs)",),
     "this worker's dataset yielded no batch: under several workers make_dataset gets an InputContext, and a "
     "pipeline sharded by it (dataset.shard(num_input_pipelines, input_pipeline_id)) over fewer files than "
     "workers leaves some workers nothing: shard after reading the records, or give it at least as many files "
     "as workers"),
    # Keras 3's mirrored fit sums something over the replicas' string inputs (tensorflow#80951)
    (("Value for attr 'T' of string is not in the list of allowed values",),
     "string features reached an op that sums over replicas: Keras 3's fit cannot run a model with string "
     "inputs under MirroredStrategy (tensorflow#80951): run it on tf-keras (TF_USE_LEGACY_KERAS=1), or map "
     "TextVectorization / StringLookup over the tf.data pipeline so the model takes integers"),
    # tf-keras refuses a mean-reduced loss in a custom step under a strategy
    (("Reduction.SUM` or `tf.keras.losses.Reduction.NONE",),
     "a loss inside a custom train_step under a strategy must not average over the batch itself: create it "
     "with reduction=NONE and average with tf.nn.compute_average_loss (global batch)"),
)


def hint(message: str) -> Optional[tuple[str, str]]:
    """(what to do, TensorFlow's own line it answers) for a known failure, else None."""
    for needles, advice in _HINTS:
        if all(n in message for n in needles):
            line = next((ln.strip() for ln in message.splitlines() if needles[0] in ln), needles[0])
            return advice, line
    return None


def one_line(kind: str, message: str) -> str:
    """The failure's first line for the bench: the hint first when there is one."""
    found = hint(message)
    if found is None:
        first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
        return f"{kind}: {first}"
    advice, line = found
    if line.startswith(f"{kind}: "):
        line = line[len(kind) + 2:]
    return f"{advice} ({kind}: {line if len(line) <= 160 else line[:159] + '…'})"
