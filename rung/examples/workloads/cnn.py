"""A small CNN on synthetic 32x32 RGB images (CIFAR-sized), with a well-built input
pipeline: cached, shuffled, repeated, batched and prefetched.

Parameters: conv 3x3x3x16+16 = 448, conv 3x3x16x32+32 = 4,640,
dense 2048x64+64 = 131,136, dense 64x10+10 = 650: 136,874 in all.
"""

import tensorflow as tf

BATCH_SIZE = 64
EXAMPLES = 2048


def build_model():
    model = tf.keras.Sequential([
        tf.keras.Input((32, 32, 3)),
        tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01, momentum=0.9),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def make_dataset(batch_size, input_context=None):
    images = tf.random.stateless_uniform((EXAMPLES, 32, 32, 3), seed=(1, 2))
    labels = tf.random.stateless_uniform((EXAMPLES,), seed=(3, 4), maxval=10, dtype=tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((images, labels))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().shuffle(EXAMPLES).repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
