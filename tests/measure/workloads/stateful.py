"""A stateful GRU (keras.io's time-series shape): its state carries from one batch to the
next, so keras.Input(batch_size=16) fixes the batch. tf-keras builds no stateful RNN under
a tf.distribute strategy; Keras 3 does (STATEFUL_RNN)."""
import numpy as np
import tensorflow as tf

BATCH = 16


def build_model():
    inp = tf.keras.Input(shape=(20, 8), batch_size=BATCH)
    x = tf.keras.layers.GRU(32, stateful=True)(inp)
    m = tf.keras.Model(inp, tf.keras.layers.Dense(1)(x))
    m.compile(optimizer="adam", loss="mse")
    return m


def make_dataset(batch_size, input_context=None):
    rng = np.random.default_rng(0)
    x, y = rng.random((512, 20, 8), dtype=np.float32), rng.random((512, 1), dtype=np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size, drop_remainder=True).prefetch(2)
