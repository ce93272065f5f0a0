"""A small MLP whose optimizer clips its gradients by norm, built from tf.keras. Keras 3
clips each replica's share under MirroredStrategy (twice one device's update under two
replicas once clipping bites); tf-keras clips their sum, as one device does."""
import tensorflow as tf


def build_model():
    model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3, clipnorm=1.0), loss="mse")
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_normal((512, 32), seed=(1, 2))
    y = tf.random.stateless_normal((512, 1), seed=(3, 4))
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
