"""A linear model trained with FTRL, which keeps two slots per parameter (accumulator and
linear). Params: 100 x 1 + 1 = 101."""
import tensorflow as tf

BATCH_SIZE = 32


def build_model():
    m = tf.keras.Sequential([tf.keras.Input((100,)), tf.keras.layers.Dense(1, activation="sigmoid")])
    m.compile(optimizer=tf.keras.optimizers.Ftrl(0.1), loss="binary_crossentropy")
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.normal((512, 100))
    y = tf.cast(tf.reduce_sum(x, axis=1, keepdims=True) > 0, tf.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
