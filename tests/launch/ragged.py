"""A bag of words over token lists of any length, batched ragged (ragged_batch): Keras 3's
fit under MirroredStrategy fails on it ("'RaggedTensor' object has no attribute 'device'");
tf-keras runs it."""
import numpy as np
import tensorflow as tf


def build_model():
    tokens = tf.keras.Input(shape=(None,), dtype=tf.int32, ragged=True)
    x = tf.keras.layers.Embedding(1000, 8)(tokens)
    x = tf.keras.layers.Lambda(lambda t: tf.reduce_mean(t, axis=1))(x)
    m = tf.keras.Model(tokens, tf.keras.layers.Dense(2)(x))
    m.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def make_dataset(batch_size, input_context=None):
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 20, size=256)
    tokens = tf.RaggedTensor.from_row_lengths(rng.integers(1, 1000, size=int(lengths.sum())).astype("int32"), lengths)
    ds = tf.data.Dataset.from_tensor_slices((tokens, rng.integers(0, 2, size=256)))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().ragged_batch(batch_size)
