"""A model compiled with run_eagerly=True: fit runs each step op by op, and tf-keras
refuses it under ParameterServerStrategy."""

import tensorflow as tf


def build_model():
    m = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
    m.compile(optimizer="adam", loss="mse", run_eagerly=True)
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.normal((256, 8))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size, drop_remainder=True)
