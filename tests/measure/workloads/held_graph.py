"""keras.io's graph attention network, in small: the model holds the whole graph (node
features, adjacency) and calls itself on it, [features, adjacency], in a train_step of its
own; the dataset feeds node indices and their labels, and the step gathers the indices'
outputs. Its call() does not take a batch's features (the indices): the replica check
built it by calling it on them, and said it did not run under MirroredStrategy."""
import numpy as np
import tensorflow as tf

keras = tf.keras

NODES, FEATURES, CLASSES = 64, 16, 3
_rng = np.random.default_rng(0)
NODE_FEATURES = tf.constant(_rng.normal(size=(NODES, FEATURES)).astype("float32"))
ADJACENCY = tf.constant((_rng.random((NODES, NODES)) < 0.1).astype("float32"))
LABELS = _rng.integers(0, CLASSES, size=NODES)


class GraphModel(keras.Model):
    def __init__(self, features, adjacency, **kwargs):
        super().__init__(**kwargs)
        self.features, self.adjacency = features, adjacency
        self.hidden = keras.layers.Dense(32, activation="relu")
        self.out = keras.layers.Dense(CLASSES)

    def call(self, inputs):
        x, adjacency = inputs
        return self.out(tf.matmul(adjacency, self.hidden(x)))

    def train_step(self, data):
        indices, labels = data
        with tf.GradientTape() as tape:
            outputs = tf.gather(self([self.features, self.adjacency]), indices)
            loss = self.compiled_loss(labels, outputs)
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        return {"loss": loss}


def build_model():
    m = GraphModel(NODE_FEATURES, ADJACENCY)
    m.compile(optimizer=keras.optimizers.SGD(0.1),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def make_dataset(batch_size, input_context=None):
    ds = tf.data.Dataset.from_tensor_slices((np.arange(NODES), LABELS)).shuffle(NODES, seed=0)
    return ds.repeat().batch(batch_size, drop_remainder=True)
