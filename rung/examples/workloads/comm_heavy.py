"""A communication-heavy model: wide dense layers (4.2M parameters, 16.8 MB of float32
gradients a step) over a small batch, so that exchanging gradients, not computing them,
dominates a multi-worker step on a 50-500 Mbit/s link.

Parameters: 1024x2048+2048 = 2,099,200, 2048x1024+1024 = 2,098,176, 1024x10+10 = 10,250:
4,207,626 in all.
"""

import tensorflow as tf

BATCH_SIZE = 16
EXAMPLES = 1024


def build_model():
    model = tf.keras.Sequential([
        tf.keras.Input((1024,)),
        tf.keras.layers.Dense(2048, activation="relu"),
        tf.keras.layers.Dense(1024, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_normal((EXAMPLES, 1024), seed=(3, 1))
    y = tf.random.stateless_uniform((EXAMPLES,), seed=(4, 1), maxval=10, dtype=tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
