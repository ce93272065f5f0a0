"""A compiled loss of the file's own, written as many are: a function that returns one
number, its own `tf.reduce_mean` over the batch. Keras 3 divides a loss across replicas in
its reduction of per-example values, which a scalar skips: under N replicas each replica's
mean is summed undivided, N times one device's update. tf-keras divides whatever the loss
returns. With RUNG_TEST_PER_EXAMPLE=1 the function returns the per-example losses (the
reduce_mean left to Keras), which both Kerases divide."""
import os

import numpy as np
import tensorflow as tf

BATCH_SIZE = 32
PER_EXAMPLE = os.environ.get("RUNG_TEST_PER_EXAMPLE") == "1"


def smooth_l1(y_true, y_pred):
    err = tf.abs(y_true - y_pred)
    per_example = tf.reduce_mean(tf.where(err < 1.0, 0.5 * tf.square(err), err - 0.5), axis=-1)
    return per_example if PER_EXAMPLE else tf.reduce_mean(per_example)


def build_model():
    inp = tf.keras.Input((16,))
    m = tf.keras.Model(inp, tf.keras.layers.Dense(4)(tf.keras.layers.Dense(32, activation="relu")(inp)))
    m.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss=smooth_l1, metrics=["mae"])
    return m


def make_dataset(batch_size=BATCH_SIZE):
    x = np.random.RandomState(0).rand(512, 16).astype("float32")
    y = np.random.RandomState(1).rand(512, 4).astype("float32") * 4
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=0).batch(batch_size, drop_remainder=True).repeat()
