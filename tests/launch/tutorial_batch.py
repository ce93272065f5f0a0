"""TensorFlow's multi-worker tutorial's pipeline: make_dataset takes its argument for the
global batch and divides it by the replicas, where rung passes the per-replica batch."""
import numpy as np
import tensorflow as tf


def build_model():
    m = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    return m


def make_dataset(batch_size, input_context=None):
    x = np.random.default_rng(0).normal(size=(1024, 8)).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).shuffle(1024).repeat()
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(batch_size)
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.batch(batch_size)
