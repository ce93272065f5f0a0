"""A team's Keras 2 code kept as the Keras 3 migration guide says: `import tf_keras as
keras`. Its model is a tf-keras model whatever `tf.keras` is, so rung runs it on tf-keras
everywhere (profile, bench, init)."""

import tensorflow as tf
import tf_keras as keras


def build_model():
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.uniform((512, 16), seed=1)
    ds = tf.data.Dataset.from_tensor_slices((x, tf.reduce_sum(x, axis=1, keepdims=True)))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().batch(batch_size, drop_remainder=True)
