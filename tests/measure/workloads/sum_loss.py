"""A subclassed model whose own train_step sums its per-example losses over the batch
(no mean at all): the update grows with the batch, on one device as under replicas.

Params: dense 8 x 16 + 16 = 144; dense 16 x 1 + 1 = 17; total 161."""
import tensorflow as tf

BATCH_SIZE = 16


class Regressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(16, activation="relu")
        self.out = tf.keras.layers.Dense(1)

    def call(self, x, training=False):
        return self.out(self.hidden(x))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(y - self(x, training=True)))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


def build_model():
    m = Regressor()
    m.compile(optimizer="sgd")
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.normal((256, 8))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
