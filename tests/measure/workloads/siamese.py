"""keras.io's "Image similarity estimation using a Siamese Network with a triplet loss",
shrunk: 32 px, a small CNN in place of the pretrained ResNet50, random images. Written
for tf.keras as a TF 2 user would (tf ops in place of keras.ops).

SiameseModel is not built when build_model() returns it, and its call() takes the triplet:
Keras 3's fit under any strategy (OneDeviceStrategy included) builds it by calling it on the
anchors alone, and fails; without a strategy, and on tf-keras, it trains."""
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

BATCH_SIZE = 16


def embedding_net():
    inp = keras.Input((32, 32, 3))
    x = layers.Conv2D(16, 3, activation="relu")(inp)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(64, activation="relu")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Dense(32)(x)
    return keras.Model(inp, x, name="embedding")


class DistanceLayer(layers.Layer):
    def call(self, anchor, positive, negative):
        ap_distance = tf.reduce_sum(tf.square(anchor - positive), -1)
        an_distance = tf.reduce_sum(tf.square(anchor - negative), -1)
        return (ap_distance, an_distance)


class SiameseModel(keras.Model):
    def __init__(self, siamese_network, margin=0.5):
        super().__init__()
        self.siamese_network = siamese_network
        self.margin = margin
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def call(self, inputs):
        return self.siamese_network(inputs)

    def train_step(self, data):
        with tf.GradientTape() as tape:
            loss = self._compute_loss(data)
        gradients = tape.gradient(loss, self.siamese_network.trainable_weights)
        self.optimizer.apply_gradients(zip(gradients, self.siamese_network.trainable_weights))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    def test_step(self, data):
        loss = self._compute_loss(data)
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    def _compute_loss(self, data):
        ap_distance, an_distance = self.siamese_network(data)
        loss = ap_distance - an_distance
        loss = tf.maximum(loss + self.margin, 0.0)
        return loss

    @property
    def metrics(self):
        return [self.loss_tracker]


def build_model():
    embedding = embedding_net()
    anchor_input = layers.Input(name="anchor", shape=(32, 32, 3))
    positive_input = layers.Input(name="positive", shape=(32, 32, 3))
    negative_input = layers.Input(name="negative", shape=(32, 32, 3))
    distances = DistanceLayer()(embedding(anchor_input), embedding(positive_input), embedding(negative_input))
    siamese_network = keras.Model(inputs=[anchor_input, positive_input, negative_input], outputs=distances)
    model = SiameseModel(siamese_network)
    model.compile(optimizer=keras.optimizers.Adam(0.0001))
    return model


def make_dataset(batch_size, input_context=None):
    imgs = tf.random.stateless_uniform((256, 32, 32, 3), seed=(1, 2))
    a = tf.data.Dataset.from_tensor_slices(imgs)
    p = tf.data.Dataset.from_tensor_slices(tf.roll(imgs, 1, 0))
    n = tf.data.Dataset.from_tensor_slices(tf.roll(imgs, 7, 0))
    ds = tf.data.Dataset.zip((a, p, n))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().shuffle(256).repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
