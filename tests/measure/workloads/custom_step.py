"""A subclassed model with its own train_step and no compiled loss (Keras guide style).

Params: embedding 1000 x 16 = 16,000; dense (5*16) x 10 + 10 = 810; total 16,810."""
import tensorflow as tf

BATCH_SIZE = 16


class Custom(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.emb = tf.keras.layers.Embedding(1000, 16)
        self.flat = tf.keras.layers.Flatten()
        self.out = tf.keras.layers.Dense(10)
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")

    def call(self, x, training=False):
        return self.out(self.flat(self.emb(x)))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            logits = self(x, training=True)
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    @property
    def metrics(self):
        return [self.loss_tracker]


def build_model():
    m = Custom()
    m.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.uniform((512, 5), 0, 1000, dtype=tf.int32)
    y = tf.random.uniform((512,), 0, 10, dtype=tf.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
