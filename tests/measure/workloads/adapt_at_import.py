"""A keras.io habit: the text pipeline's TextVectorization is adapted at the top of the
file, so importing the workload runs TensorFlow (and starts its runtime) before any
strategy exists. MultiWorkerMirroredStrategy must configure its collectives before
that; rung creates the strategy first, as its train.py does.

Hand count: embedding 500 x 8 = 4,000 (sparse gradients), dense 8 x 2 + 2 = 18."""
import tensorflow as tf

TEXTS = [" ".join(f"w{(i * 7 + j) % 300}" for j in range(3 + i % 20)) for i in range(512)]
LABELS = [i % 2 for i in range(512)]
VECTORIZE = tf.keras.layers.TextVectorization(max_tokens=500, output_sequence_length=16)
VECTORIZE.adapt(TEXTS)  # TensorFlow runs here, at import


def build_model():
    inp = tf.keras.Input((16,), dtype="int64")
    x = tf.keras.layers.Embedding(500, 8)(inp)
    x = tf.keras.layers.GlobalAveragePooling1D()(x)
    model = tf.keras.Model(inp, tf.keras.layers.Dense(2, activation="softmax")(x))
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model


def make_dataset(batch_size, input_context=None):
    ds = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    ds = ds.repeat().batch(batch_size, drop_remainder=True)
    return ds.map(lambda t, y: (VECTORIZE(t), y), num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
