"""An embedding-heavy recommender: user and item ids into 32-wide tables, a small
tower on top, Adagrad (the usual optimizer for sparse features).

Parameters: user table 100,000x32 = 3,200,000, item table 50,000x32 = 1,600,000
(4,800,000 in embedding tables), dense 64x64+64 = 4,160, dense 64x1+1 = 65:
4,804,225 in all. Each step's embedding gradients are IndexedSlices of batch x 32
rows per table.
"""

import tensorflow as tf

BATCH_SIZE = 512
USERS, ITEMS, DIM = 100_000, 50_000, 32
EXAMPLES = 16384


def build_model():
    user = tf.keras.Input((), dtype="int32", name="user")
    item = tf.keras.Input((), dtype="int32", name="item")
    u = tf.keras.layers.Embedding(USERS, DIM, name="user_table")(user)
    i = tf.keras.layers.Embedding(ITEMS, DIM, name="item_table")(item)
    x = tf.keras.layers.Concatenate()([u, i])
    x = tf.keras.layers.Dense(64, activation="relu")(x)
    out = tf.keras.layers.Dense(1)(x)
    model = tf.keras.Model({"user": user, "item": item}, out)
    model.compile(optimizer=tf.keras.optimizers.Adagrad(0.05),
                  loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
    return model


def make_dataset(batch_size, input_context=None):
    users = tf.random.stateless_uniform((EXAMPLES,), seed=(1, 1), maxval=USERS, dtype=tf.int32)
    items = tf.random.stateless_uniform((EXAMPLES,), seed=(2, 2), maxval=ITEMS, dtype=tf.int32)
    clicks = tf.cast(tf.random.stateless_uniform((EXAMPLES, 1), seed=(3, 3)) < 0.1, tf.float32)
    ds = tf.data.Dataset.from_tensor_slices(({"user": users, "item": items}, clicks))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().shuffle(EXAMPLES).repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
