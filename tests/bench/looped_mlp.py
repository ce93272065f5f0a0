"""A small MLP compiled with steps_per_execution=4: Keras runs four steps per call and
calls the batch hooks once per call. Keras 3's fit of it fails under MirroredStrategy
(keras-team/keras#19246); tf-keras runs it."""
import tensorflow as tf


def build_model():
    model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_normal((512, 32), seed=(1, 2))
    y = tf.random.stateless_normal((512, 1), seed=(3, 4))
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
