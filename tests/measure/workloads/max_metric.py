"""A metric of the file's own that keeps the largest absolute error seen, set with assign
(as a maximum must be), beside Keras's MAE. Under tf.distribute its variable is each
replica's own and fit reads the sum of the copies: under 2 replicas, the sum of the two
replicas' maxima (METRIC_SUMMED). The optimizer's rate is 0, so one device and the
replicas show the same batches' metrics."""
import numpy as np
import tensorflow as tf

BATCH_SIZE = 8


class MaxError(tf.keras.metrics.Metric):
    def __init__(self, name="max_error", **kwargs):
        super().__init__(name=name, **kwargs)
        self.top = self.add_weight(name="top", shape=(), initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.top.assign(tf.maximum(self.top, tf.reduce_max(tf.abs(y_true - y_pred))))

    def result(self):
        return self.top

    def reset_state(self):
        self.top.assign(0.0)


def build_model():
    m = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1, kernel_initializer="ones")])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse", metrics=[MaxError(), "mae"])
    return m


def make_dataset(batch_size=BATCH_SIZE):
    r = np.random.RandomState(0)
    x, y = r.normal(size=(16, 4)).astype("float32"), r.normal(size=(16, 1)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size).repeat()
