"""A subclassed model whose own train_step divides its loss as Keras does (compute_loss),
then clips the gradients itself with tf.clip_by_global_norm, as many custom loops do. The
step runs once per replica: under a strategy each replica's gradients are clipped alone.
CLIP is the threshold: 0.01 bites on every step, 1e6 on none (RUNG_TEST_CLIP)."""
import os

import numpy as np
import tensorflow as tf

BATCH_SIZE = 32
CLIP = float(os.environ.get("RUNG_TEST_CLIP", "0.01"))


class Clipped(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(x=x, y=y, y_pred=self(x, training=True))
        grads = tape.gradient(loss, self.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, CLIP)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


def build_model():
    inp = tf.keras.Input((16,))
    m = Clipped(inp, tf.keras.layers.Dense(4)(tf.keras.layers.Dense(32, activation="relu")(inp)))
    m.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def make_dataset(batch_size=BATCH_SIZE):
    x = np.random.RandomState(0).rand(512, 16).astype("float32")
    y = np.random.RandomState(1).randint(0, 4, 512)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size, drop_remainder=True).repeat()
