"""keras.io's "Structured data classification with FeatureSpace", shrunk: a heart-disease-
like table built in memory (strings, integer categories, floats), a FeatureSpace adapted
when the file is imported, and mapped over the tf.data pipeline. As in keras.io's example,
the table's dataset is made when the file is imported and make_dataset builds on it: under
parameter servers the workers cannot receive that dataset ("Unable to parse tensor proto";
the FeatureSpace is not the cause: with the dataset made inside make_dataset the run
trains, and a plain Normalization pipeline made at import fails the same way)."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

BATCH_SIZE = 32
rng = np.random.default_rng(0)
N = 512
table = {
    "sex": rng.integers(0, 2, N),
    "cp": rng.integers(0, 5, N),
    "fbs": rng.integers(0, 2, N),
    "restecg": rng.integers(0, 3, N),
    "exang": rng.integers(0, 2, N),
    "ca": rng.integers(0, 4, N),
    "thal": rng.choice(["fixed", "normal", "reversible"], N),
    "age": rng.uniform(30, 70, N),
    "trestbps": rng.uniform(90, 180, N),
    "chol": rng.uniform(150, 350, N),
    "thalach": rng.uniform(90, 200, N),
    "oldpeak": rng.uniform(0, 5, N),
    "slope": rng.uniform(0, 3, N),
}
target = rng.integers(0, 2, N)

feature_space = keras.utils.FeatureSpace(
    features={
        "sex": keras.utils.FeatureSpace.integer_categorical(num_oov_indices=0),
        "thal": keras.utils.FeatureSpace.string_categorical(num_oov_indices=0),
        "cp": keras.utils.FeatureSpace.integer_categorical(num_oov_indices=0),
        "fbs": keras.utils.FeatureSpace.integer_categorical(num_oov_indices=0),
        "restecg": keras.utils.FeatureSpace.integer_categorical(num_oov_indices=0),
        "exang": keras.utils.FeatureSpace.integer_categorical(num_oov_indices=0),
        "ca": keras.utils.FeatureSpace.integer_categorical(num_oov_indices=0),
        "age": keras.utils.FeatureSpace.float_discretized(num_bins=30),
        "trestbps": keras.utils.FeatureSpace.float_normalized(),
        "chol": keras.utils.FeatureSpace.float_normalized(),
        "thalach": keras.utils.FeatureSpace.float_normalized(),
        "oldpeak": keras.utils.FeatureSpace.float_normalized(),
        "slope": keras.utils.FeatureSpace.float_normalized(),
    },
    crosses=[
        keras.utils.FeatureSpace.cross(feature_names=("sex", "age"), crossing_dim=64),
        keras.utils.FeatureSpace.cross(feature_names=("thal", "ca"), crossing_dim=16),
    ],
    output_mode="concat",
)
raw = tf.data.Dataset.from_tensor_slices((table, target))
feature_space.adapt(raw.map(lambda x, _: x).batch(32))


def build_model():
    encoded_features = feature_space.get_encoded_features()
    x = keras.layers.Dense(32, activation="relu")(encoded_features)
    x = keras.layers.Dropout(0.5)(x)
    predictions = keras.layers.Dense(1, activation="sigmoid")(x)
    training_model = keras.Model(inputs=encoded_features, outputs=predictions)
    training_model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return training_model


def make_dataset(batch_size, input_context=None):
    ds = raw
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    ds = ds.shuffle(N).batch(batch_size, drop_remainder=True)
    ds = ds.map(lambda x, y: (feature_space(x), y), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.repeat().prefetch(tf.data.AUTOTUNE)
