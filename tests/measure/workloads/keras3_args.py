"""A small MLP written for Keras 3 alone, as keras.io's examples now are: LeakyReLU's
`negative_slope` is Keras 3's name for what tf-keras (Keras 2) calls `alpha`, so the model
builds and trains on Keras 3 and fails to build on tf-keras, where multi-worker and
parameter-server fits run.

Parameters: 16x32+32 = 544, 32x1+1 = 33: 577 in all.
"""

import tensorflow as tf

BATCH_SIZE = 32


def build_model():
    model = tf.keras.Sequential([
        tf.keras.Input((16,)),
        tf.keras.layers.Dense(32),
        tf.keras.layers.LeakyReLU(negative_slope=0.2),
        tf.keras.layers.Dense(1),
    ])
    model.compile(optimizer="adam", loss="mse")
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_uniform((512, 16), seed=(1, 2))
    y = tf.random.stateless_uniform((512, 1), seed=(3, 4))
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().shuffle(512).repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
