"""Wide & Deep with dict features and two outputs (click and dwell), FTRL on nothing but
Adam overall: a functional model with multiple inputs and outputs.

Params: user table 5000 x 8 = 40,000; item table 2000 x 8 = 16,000;
dense (16 + 4) x 16 + 16 = 336; click head 16 + 1 = 17; dwell head 17; total 56,370."""
import tensorflow as tf

BATCH_SIZE = 64


def build_model():
    user = tf.keras.Input((), dtype="int32", name="user")
    item = tf.keras.Input((), dtype="int32", name="item")
    numeric = tf.keras.Input((4,), name="numeric")
    u = tf.keras.layers.Embedding(5000, 8)(user)
    i = tf.keras.layers.Embedding(2000, 8)(item)
    h = tf.keras.layers.Concatenate()([u, i, numeric])
    h = tf.keras.layers.Dense(16, activation="relu")(h)
    click = tf.keras.layers.Dense(1, activation="sigmoid", name="click")(h)
    dwell = tf.keras.layers.Dense(1, name="dwell")(h)
    m = tf.keras.Model({"user": user, "item": item, "numeric": numeric}, {"click": click, "dwell": dwell})
    m.compile(optimizer="adam", loss={"click": "binary_crossentropy", "dwell": "mse"})
    return m


def make_dataset(batch_size, input_context=None):
    n = 1024
    feats = {"user": tf.random.uniform((n,), 0, 5000, tf.int32), "item": tf.random.uniform((n,), 0, 2000, tf.int32),
             "numeric": tf.random.normal((n, 4))}
    labels = {"click": tf.cast(tf.random.uniform((n, 1)) > 0.5, tf.float32), "dwell": tf.random.normal((n, 1))}
    return tf.data.Dataset.from_tensor_slices((feats, labels)).repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
