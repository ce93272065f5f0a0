"""A deliberately slow input pipeline in front of a small model: every example goes
through an expensive decode (a stand-in for JPEG decoding and augmentation) in a
sequential map, with no prefetch, so the device waits on input. `rung profile
--try-fixes` parallelises the map and adds a prefetch, and measures what that buys.

Parameters: 1024x64+64 = 65,600, 64x10+10 = 650: 66,250 in all.
"""

import tensorflow as tf

BATCH_SIZE = 64
EXAMPLES = 1024


def _expensive_decode(x, y):
    # A 32x32 "image" upsampled to 128x128 and put through dense transforms: about a
    # millisecond of CPU per example, like decoding and augmenting a JPEG.
    img = tf.image.resize(tf.reshape(x, (32, 32, 1)), (128, 128))[..., 0]
    for _ in range(6):
        img = tf.tanh(tf.linalg.matmul(img, img) * 0.01 + img)
    small = tf.image.resize(img[..., None], (32, 32))[..., 0]
    return tf.reshape(small, (1024,)), y


def build_model():
    model = tf.keras.Sequential([
        tf.keras.Input((1024,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_normal((EXAMPLES, 1024), seed=(9, 9))
    y = tf.random.stateless_uniform((EXAMPLES,), seed=(8, 8), maxval=10, dtype=tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().map(_expensive_decode).batch(batch_size, drop_remainder=True)
