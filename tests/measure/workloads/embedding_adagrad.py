"""keras.io's collaborative-filtering shape: one id table, Adagrad (sparse rows a step)."""
import tensorflow as tf

ROWS = 300_000


def build_model():
    ids = tf.keras.Input((1,), dtype="int64")
    x = tf.keras.layers.Flatten()(tf.keras.layers.Embedding(ROWS, 64)(ids))
    out = tf.keras.layers.Dense(1)(tf.keras.layers.Dense(32, activation="relu")(x))
    model = tf.keras.Model(ids, out)
    model.compile(optimizer=tf.keras.optimizers.Adagrad(0.05),
                  loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
    return model


def make_dataset(batch_size, input_context=None):
    ids = tf.data.Dataset.random(seed=1).map(lambda r: (tf.reshape(r % ROWS, (1,)), tf.cast(r % 7 == 0, tf.float32)))
    return ids.batch(batch_size).prefetch(4)
