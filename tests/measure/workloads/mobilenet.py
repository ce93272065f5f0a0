"""Keras applications MobileNetV2 (weights=None), small inputs, as a user would write it."""
import tensorflow as tf

BATCH_SIZE = 16


def build_model():
    m = tf.keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10, alpha=0.35)
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.uniform((256, 32, 32, 3))
    y = tf.random.uniform((256,), 0, 10, tf.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).cache().repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
