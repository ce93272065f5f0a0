"""A model of two parts, each with an optimizer of its own that its train_step calls as
Keras 3 lets it: apply(grads), without the variables (those it was built on)."""
from tensorflow import keras  # Keras 3 here: apply(grads) is its API
import numpy as np
import tensorflow as tf


class TwoPart(keras.Model):
    def __init__(self):
        super().__init__()
        self.a = keras.layers.Dense(16, activation="relu")
        self.b = keras.layers.Dense(1)

    def call(self, x):
        return self.b(self.a(x))

    def compile(self, **kw):
        super().compile(**kw)
        self.a_opt = keras.optimizers.Adam(1e-3)
        self.b_opt = keras.optimizers.SGD(1e-2)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape(persistent=True) as tape:
            loss = keras.ops.mean((self(x) - y) ** 2)
        ga = tape.gradient(loss, self.a.trainable_variables)
        gb = tape.gradient(loss, self.b.trainable_variables)
        if not self.a_opt.built:
            self.a_opt.build(self.a.trainable_variables)
            self.b_opt.build(self.b.trainable_variables)
        self.a_opt.apply(ga)          # Keras 3: the variables it was built on
        self.b_opt.apply(gb)
        return {"loss": loss}


def build_model():
    m = TwoPart()
    m.compile(loss="mse")
    m(np.zeros((1, 8), "float32"))
    return m


def make_dataset(batch_size, input_context=None):
    x = np.random.rand(512, 8).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, x.sum(1, keepdims=True))).repeat().batch(batch_size)
