"""A custom train_step written as TensorFlow's distributed-training guide writes one: the
loss divided by the global batch (tf.nn.compute_average_loss), so the summed gradients are
right under any strategy, and a Mean tracker fed that divided loss: under N replicas it
holds each replica's share, 1/N of the loss one device logs."""
import numpy as np
import tensorflow as tf

BATCH_SIZE = 32


class Shared(tf.keras.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tracker = tf.keras.metrics.Mean(name="loss")

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            per_example = tf.keras.losses.sparse_categorical_crossentropy(y, self(x, training=True), from_logits=True)
            loss = tf.nn.compute_average_loss(per_example)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.tracker.update_state(loss)
        return {"loss": self.tracker.result()}

    @property
    def metrics(self):
        return [self.tracker]


def build_model():
    inp = tf.keras.Input((16,))
    m = Shared(inp, tf.keras.layers.Dense(4)(tf.keras.layers.Dense(32, activation="relu")(inp)))
    m.compile(optimizer="sgd")
    return m


def make_dataset(batch_size=BATCH_SIZE):
    x = np.random.RandomState(0).rand(512, 16).astype("float32")
    y = np.random.RandomState(1).randint(0, 4, 512)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size, drop_remainder=True).repeat()
