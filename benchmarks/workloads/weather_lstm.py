"""keras.io "Timeseries forecasting for weather prediction" (LSTM), on synthetic
climate-like data instead of the Jena CSV: 7 features sampled hourly, 120 past
steps predict the temperature 72 steps ahead."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

PAST, FUTURE, FEATURES = 120, 72, 7


def _series(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype="float32")
    base = np.stack([np.sin(2 * np.pi * t / 24 + k) + 0.1 * rng.standard_normal(n) for k in range(FEATURES)], 1)
    return base.astype("float32")


def build_model():
    inputs = keras.layers.Input(shape=(PAST, FEATURES))
    lstm_out = keras.layers.LSTM(32)(inputs)
    outputs = keras.layers.Dense(1)(lstm_out)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss="mse")
    return model


def make_dataset(batch_size, input_context=None):
    data = _series()
    x = data[:-FUTURE]
    y = data[PAST + FUTURE - 1:, 1]
    ds = keras.utils.timeseries_dataset_from_array(x, y, sequence_length=PAST, sampling_rate=1, batch_size=256)
    ds = ds.unbatch()
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
