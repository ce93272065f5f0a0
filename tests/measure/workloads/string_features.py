"""keras.io's structured-data habit: raw string columns go into the model, which looks
them up itself (StringLookup, then an Embedding), beside a numeric column. Under Keras 3
this model's fit fails under MirroredStrategy (tensorflow#80951); tf-keras runs it.

Hand count: embedding (4 words + 1 out-of-vocabulary) x 4 = 20; the two looked-up
4-vectors flattened (8) beside the 2 numbers: dense 10 x 1 + 1 = 11; 31 in all."""
import tensorflow as tf

WORDS = ["foo", "bar", "baz", "qux"]
EXAMPLES = 256


def build_model():
    words = tf.keras.Input(shape=(2,), dtype=tf.string, name="words")
    numbers = tf.keras.Input(shape=(2,), dtype=tf.float32, name="numbers")
    ids = tf.keras.layers.StringLookup(vocabulary=WORDS)(words)
    vectors = tf.keras.layers.Flatten()(tf.keras.layers.Embedding(len(WORDS) + 1, 4)(ids))
    x = tf.keras.layers.Concatenate()([vectors, numbers])
    model = tf.keras.Model({"words": words, "numbers": numbers}, tf.keras.layers.Dense(1)(x))
    model.compile(optimizer="sgd", loss="mse")
    return model


def make_dataset(batch_size, input_context=None):
    idx = tf.random.stateless_uniform((EXAMPLES, 2), seed=(1, 2), maxval=len(WORDS), dtype=tf.int32)
    features = {"words": tf.gather(tf.constant(WORDS), idx),
                "numbers": tf.random.stateless_normal((EXAMPLES, 2), seed=(3, 4))}
    labels = tf.random.stateless_normal((EXAMPLES, 1), seed=(5, 6))
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
