"""A small convolutional model with BatchNormalization and its own train_step, whose
loss is a per-replica mean (tf.reduce_mean), as many tutorials write it. Batch
statistics depend on which examples share a batch: the loss-scaling check must compare
each replica with one device on the very same batch.

Params: conv 3x3x3x8 + 8 = 224; batch norm 4 x 8 = 32 (16 trainable); dense 8 x 10 + 10
= 90; total 346 (330 trainable)."""
import tensorflow as tf

BATCH_SIZE = 8


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.conv = tf.keras.layers.Conv2D(8, 3)
        self.bn = tf.keras.layers.BatchNormalization()
        self.pool = tf.keras.layers.GlobalAveragePooling2D()
        self.out = tf.keras.layers.Dense(10)

    def call(self, x, training=False):
        return self.out(self.pool(tf.nn.relu(self.bn(self.conv(x), training=training))))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            logits = self(x, training=True)
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


def build_model():
    m = Net()
    m.compile(optimizer=tf.keras.optimizers.SGD(0.01))
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.normal((64, 16, 16, 3), seed=3)
    y = tf.random.uniform((64,), 0, 10, dtype=tf.int32, seed=4)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size, drop_remainder=True)
