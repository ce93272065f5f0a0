"""A dense MLP on synthetic tabular data (256 features, 10 classes), Adam.

Parameters: 256x512+512 = 131,584, 512x512+512 = 262,656, 512x10+10 = 5,130:
399,370 in all.
"""

import tensorflow as tf

BATCH_SIZE = 256
EXAMPLES = 8192


def build_model():
    model = tf.keras.Sequential([
        tf.keras.Input((256,)),
        tf.keras.layers.Dense(512, activation="relu"),
        tf.keras.layers.Dense(512, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_normal((EXAMPLES, 256), seed=(5, 6))
    y = tf.random.stateless_uniform((EXAMPLES,), seed=(7, 8), maxval=10, dtype=tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().shuffle(EXAMPLES).repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
