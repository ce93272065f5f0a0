"""Variable-length token sequences batched with padded_batch: a model with dynamic
shapes (what TPUs need reworked into static ones).

Parameters: embedding 5,000x16 = 80,000, dense 16x1+1 = 17: 80,017 in all.
"""

import tensorflow as tf

BATCH_SIZE = 32
VOCAB = 5000


def _example(i):
    length = 8 + tf.math.floormod(i * 7919, 56)
    tokens = tf.math.floormod(tf.range(length, dtype=tf.int64) * (i + 3), VOCAB)
    return tf.cast(tokens, tf.int32), tf.cast(tf.math.floormod(i, 2), tf.float32)


def build_model():
    model = tf.keras.Sequential([
        tf.keras.Input((None,), dtype="int32"),
        tf.keras.layers.Embedding(VOCAB, 16),
        tf.keras.layers.GlobalAveragePooling1D(),
        tf.keras.layers.Dense(1),
    ])
    model.compile(optimizer="adam", loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
    return model


def make_dataset(batch_size, input_context=None):
    ds = tf.data.Dataset.range(100_000).map(_example, num_parallel_calls=tf.data.AUTOTUNE)
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().padded_batch(batch_size, padded_shapes=([None], []), drop_remainder=True).prefetch(2)
