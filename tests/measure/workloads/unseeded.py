"""A router that jitters its logits with keras.random.uniform and no seed, as keras.io's
"Text classification with Switch Transformer" writes it. Keras 3 draws unseeded numbers from
its global SeedGenerator, made on first use: inside the first step. `SEEDED = True` gives the
layer a SeedGenerator of its own, as Keras's message for JAX says to."""

import keras
import tensorflow as tf
from keras import layers

SEEDED = False


class Jitter(layers.Layer):
    def __init__(self):
        super().__init__()
        self.seed_generator = keras.random.SeedGenerator(1337) if SEEDED else None

    def call(self, x, training=False):
        if training:
            x = x * keras.random.uniform(keras.ops.shape(x), minval=0.9, maxval=1.1, seed=self.seed_generator)
        return x


def build_model():
    i = keras.Input((8,))
    model = keras.Model(i, layers.Dense(1)(Jitter()(layers.Dense(4)(i))))
    model.compile(optimizer="sgd", loss="mse")
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_uniform((256, 8), seed=(1, 2))
    return tf.data.Dataset.from_tensor_slices((x, tf.reduce_sum(x, 1, keepdims=True))).repeat().batch(batch_size)
