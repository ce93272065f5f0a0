"""A small CNN whose four BatchNormalization layers are synchronized across replicas
(synchronized=True): under a synchronous strategy each all-reduces its batch's sum,
squared sum and count, and their gradients, every step. RUNG_TEST_SYNC_BN=0 builds its
twin, the same layers unsynchronized.

Params: conv 3x3x8x16 + 16 = 1,168, then 3x3x16x16 + 16 = 2,320 (x3 = 6,960); batch
norm 2 x 16 trainable (x4 = 128; 128 more moving statistics); dense 16 x 10 + 10 = 170;
8,426 trainable."""
import os

import tensorflow as tf

SYNCHRONIZED = os.environ.get("RUNG_TEST_SYNC_BN", "1") == "1"

BATCH_SIZE = 32


def build_model():
    layers = [tf.keras.Input((16, 16, 8))]
    for i in range(4):
        layers.append(tf.keras.layers.Conv2D(16, 3, padding="same"))
        layers.append(tf.keras.layers.BatchNormalization(synchronized=SYNCHRONIZED))
        layers.append(tf.keras.layers.ReLU())
    layers += [tf.keras.layers.GlobalAveragePooling2D(), tf.keras.layers.Dense(10)]
    model = tf.keras.Sequential(layers)
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_uniform((512, 16, 16, 8), seed=(1, 2))
    y = tf.random.stateless_uniform((512,), seed=(3, 4), maxval=10, dtype=tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().repeat().batch(batch_size, drop_remainder=True).prefetch(2)
