"""A small regression fed by Dataset.from_generator: Python in the pipeline, which under
parameter servers only the coordinator can run (tensorflow#48957)."""

import numpy as np
import tensorflow as tf


def build_model():
    m = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
    m.compile(optimizer="adam", loss="mse")
    return m


def make_dataset(batch_size, input_context=None):
    def examples():
        rng = np.random.default_rng(0)
        while True:
            x = rng.normal(size=8).astype("float32")
            yield x, np.float32(x.sum())

    spec = (tf.TensorSpec((8,), tf.float32), tf.TensorSpec((), tf.float32))
    return tf.data.Dataset.from_generator(examples, output_signature=spec).batch(batch_size, drop_remainder=True)
