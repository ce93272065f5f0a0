"""make_dataset variants as newcomers write them, each told apart by
rung.measure.pipeline.worker_input; run as a script (`python worker_inputs.py ID`), it prints
a digest of the first batches each variant yields for worker ID of 2, in its own process as
a worker would: the oracle the in-process check is held to."""

import hashlib
import sys

import numpy as np
import tensorflow as tf


def _arrays():
    rng = np.random.default_rng(0)
    return rng.normal(size=(64, 4)).astype("float32"), rng.normal(size=(64, 1)).astype("float32")


def ignores_context(batch_size, input_context=None):
    return tf.data.Dataset.from_tensor_slices(_arrays()).repeat().batch(batch_size)


def ignores_context_seeded_shuffle(batch_size, input_context=None):
    return tf.data.Dataset.from_tensor_slices(_arrays()).shuffle(64, seed=7).repeat().batch(batch_size)


def ignores_context_shuffled(batch_size, input_context=None):
    return tf.data.Dataset.from_tensor_slices(_arrays()).shuffle(64).repeat().batch(batch_size)


def _images():
    return np.arange(64 * 4 * 4, dtype="float32").reshape(64, 4, 4, 1), np.zeros((64, 1), "float32")


# keras.io's image examples make their augmentation layers once, beside the model
FLIP = tf.keras.layers.RandomFlip("horizontal")


def augments_with_a_keras_layer(batch_size, input_context=None):
    """A random layer mapped over the batches: its seeds live in the layer's seed generator,
    not in the graph's attributes."""
    return (tf.data.Dataset.from_tensor_slices(_images()).repeat().batch(batch_size)
            .map(lambda x, y: (FLIP(x, training=True), y)))


def augments_with_its_own_keras_layer(batch_size, input_context=None):
    """The layer made in make_dataset: each pipeline's graph bakes a seed of its own."""
    flip = tf.keras.layers.RandomFlip("horizontal")
    return (tf.data.Dataset.from_tensor_slices(_images()).repeat().batch(batch_size)
            .map(lambda x, y: (flip(x, training=True), y)))


def shards_and_augments(batch_size, input_context=None):
    """Sharded by the context, with its own random layer: distinct, whatever the seeds."""
    ds = tf.data.Dataset.from_tensor_slices(_images())
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    flip = tf.keras.layers.RandomFlip("horizontal")
    return ds.repeat().batch(batch_size).map(lambda x, y: (flip(x, training=True), y))


def augments_unseeded(batch_size, input_context=None):
    return (tf.data.Dataset.from_tensor_slices(_images()).repeat()
            .map(lambda x, y: (tf.image.random_flip_left_right(x), y)).batch(batch_size))


def augments_with_a_constant_seed(batch_size, input_context=None):
    return (tf.data.Dataset.from_tensor_slices(_images()).repeat()
            .map(lambda x, y: (tf.image.stateless_random_flip_left_right(x, seed=(1, 2)), y)).batch(batch_size))


def shards(batch_size, input_context=None):
    ds = tf.data.Dataset.from_tensor_slices(_arrays())
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().batch(batch_size)


def generator_seeded(batch_size, input_context=None):
    def examples():
        rng = np.random.default_rng(0)
        while True:
            yield rng.normal(size=4).astype("float32"), np.float32(0)

    spec = (tf.TensorSpec((4,), tf.float32), tf.TensorSpec((), tf.float32))
    return tf.data.Dataset.from_generator(examples, output_signature=spec).batch(batch_size)


def generator_unseeded(batch_size, input_context=None):
    def examples():
        rng = np.random.default_rng()
        while True:
            yield rng.normal(size=4).astype("float32"), np.float32(0)

    spec = (tf.TensorSpec((4,), tf.float32), tf.TensorSpec((), tf.float32))
    return tf.data.Dataset.from_generator(examples, output_signature=spec).batch(batch_size)


def one_file_sharded(batch_size, input_context=None):
    files = tf.data.Dataset.from_tensor_slices(["part-00000"])
    if input_context is not None:
        files = files.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    x, y = _arrays()
    return files.flat_map(lambda f: tf.data.Dataset.from_tensor_slices((x, y))).repeat().batch(batch_size)


def tutorial_batch(batch_size, input_context=None):
    """TensorFlow's multi-worker tutorial: the argument taken for the global batch."""
    ds = tf.data.Dataset.from_tensor_slices(_arrays())
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(batch_size)
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().batch(batch_size)


def no_context(batch_size):
    return tf.data.Dataset.from_tensor_slices(_arrays()).repeat().batch(batch_size)


VARIANTS = {"identical": [ignores_context, ignores_context_seeded_shuffle, generator_seeded,
                          augments_with_a_constant_seed],
            "augmented": [augments_with_a_keras_layer, augments_with_its_own_keras_layer, augments_unseeded],
            "own_order": [ignores_context_shuffled, generator_unseeded],
            "distinct": [shards, tutorial_batch, shards_and_augments], "empty": [one_file_sharded], None: [no_context]}
# Under parameter servers every worker runs a copy of the coordinator's pipeline: the same
# batches unless it draws at random without a seed (a 2-worker launch showed it:
# tests/launch/ps_streams.py); None where Python runs in it (the coordinator's alone).
PS_VARIANTS = {"identical": [ignores_context, ignores_context_seeded_shuffle, shards, tutorial_batch, no_context,
                             one_file_sharded, augments_with_a_constant_seed],
               "augmented": [augments_with_a_keras_layer, augments_with_its_own_keras_layer, augments_unseeded,
                             shards_and_augments],
               "own_order": [ignores_context_shuffled], None: [generator_seeded, generator_unseeded]}

if __name__ == "__main__":
    worker = int(sys.argv[1])
    for fns in VARIANTS.values():
        for fn in fns:
            if fn is no_context:
                continue
            digest = hashlib.sha1()
            ds = fn(8, tf.distribute.InputContext(2, worker, 2))
            for batch in ds.take(2):
                for t in tf.nest.flatten(batch):
                    digest.update(t.numpy().tobytes())
            print(fn.__name__, digest.hexdigest())
