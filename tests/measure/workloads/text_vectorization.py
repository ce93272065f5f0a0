"""keras.io's "Text classification from scratch" shape: a TextVectorization layer adapted in
build_model, inside the model, and raw strings in the dataset. On tf-keras the layer lists a
`VocabWeightHandler` among the model's weights (its vocabulary, for saving): no variable."""
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

WORDS = ["good", "bad", "movie", "plot", "actor", "great", "awful", "boring", "fun", "long"]


def _texts(n):
    idx = tf.random.stateless_uniform((n, 12), seed=(1, 2), maxval=len(WORDS), dtype=tf.int32)
    return tf.strings.reduce_join(tf.gather(tf.constant(WORDS), idx), axis=1, separator=" ")


def build_model():
    vectorize = layers.TextVectorization(max_tokens=1000, output_mode="int", output_sequence_length=16)
    vectorize.adapt(_texts(256))
    inputs = keras.Input(shape=(1,), dtype="string")
    x = layers.Embedding(1000, 32)(vectorize(inputs))  # 32,000
    x = layers.Conv1D(32, 3, activation="relu")(x)      # 3 x 32 x 32 + 32 = 3,104
    x = layers.GlobalMaxPooling1D()(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)  # 33
    model = keras.Model(inputs, outputs)
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def make_dataset(batch_size, input_context=None):
    texts = _texts(1024)
    labels = tf.cast(tf.strings.regex_full_match(texts, ".*good.*"), tf.float32)
    ds = tf.data.Dataset.from_tensor_slices((tf.expand_dims(texts, -1), labels))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.shuffle(1024).repeat().batch(batch_size).prefetch(2)
