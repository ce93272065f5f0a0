"""A small MLP under a global mixed_float16 policy.

Params: 64 x 256 + 256 = 16,640; 256 x 10 + 10 = 2,570; total 19,210."""
import tensorflow as tf

BATCH_SIZE = 64


def build_model():
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    m = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(256, activation="relu"),
                             tf.keras.layers.Dense(10), tf.keras.layers.Activation("linear", dtype="float32")])
    m.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.normal((1024, 64))
    y = tf.random.uniform((1024,), 0, 10, tf.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
