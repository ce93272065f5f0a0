"""Keras's own loss, made to sum over the batch: `MeanSquaredError(reduction="sum")`, as a
team does that wants the loss to grow with the batch. Under N synchronous replicas each
replica sums its own batch and the strategy sums their gradients: the sum over the global
batch, N times one device's step at the same per-device batch, on either Keras.
RUNG_TEST_REDUCTION picks another reduction ("none", "sum_over_batch_size"); the literal
"sum" is what `rung launch` reads in the text."""
import os

import numpy as np
import tensorflow as tf

BATCH_SIZE = 32


def build_model():
    inp = tf.keras.Input((16,))
    m = tf.keras.Model(inp, tf.keras.layers.Dense(4)(tf.keras.layers.Dense(32, activation="relu")(inp)))
    loss = tf.keras.losses.MeanSquaredError(reduction="sum")
    if os.environ.get("RUNG_TEST_REDUCTION"):
        loss = tf.keras.losses.MeanSquaredError(reduction=os.environ["RUNG_TEST_REDUCTION"])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.001), loss=loss, metrics=["mae"])
    return m


def make_dataset(batch_size=BATCH_SIZE):
    x = np.random.RandomState(0).rand(512, 16).astype("float32")
    y = np.random.RandomState(1).rand(512, 4).astype("float32") * 4
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=0).batch(batch_size, drop_remainder=True).repeat()
