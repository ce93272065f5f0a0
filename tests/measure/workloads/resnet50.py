"""Keras applications ResNet50 (weights=None), small inputs: a dense model of 23.6M
parameters with momentum SGD."""
import tensorflow as tf

BATCH_SIZE = 8


def build_model():
    m = tf.keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10)
    m.compile(optimizer=tf.keras.optimizers.SGD(0.01, momentum=0.9), loss="sparse_categorical_crossentropy")
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.uniform((64, 32, 32, 3))
    y = tf.random.uniform((64,), 0, 10, tf.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).cache().repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
