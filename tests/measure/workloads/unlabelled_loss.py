"""keras.io's diffusion models' pattern, shrunk: a denoiser trained by its own train_step
on images alone (no labels), compiled with a loss its train_step calls, and an EMA copy
of it updated by assign() after every step (its weights are never trained). Keras 3's
fit of it fails under every tf.distribute strategy (UNLABELLED_LOSS_PROBLEM).

Params: conv 3x3x3x32 + 32 = 896, conv 3x3x32x32 + 32 = 9,248, conv 3x3x32x3 + 3 = 867:
11,011 trained, and 11,011 more in the EMA copy."""
import tensorflow as tf
from tensorflow import keras

BATCH_SIZE = 32


def net():
    inp = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(32, 3, padding="same", activation="swish")(inp)
    x = keras.layers.Conv2D(32, 3, padding="same", activation="swish")(x)
    return keras.Model(inp, keras.layers.Conv2D(3, 3, padding="same")(x))


class Denoiser(keras.Model):
    def __init__(self):
        super().__init__()
        self.network = net()
        self.ema_network = keras.models.clone_model(self.network)
        self.ema = 0.999
        self.noise_loss_tracker = keras.metrics.Mean(name="n_loss")

    def call(self, x, training=False):
        return self.network(x, training=training)

    def train_step(self, images):
        noises = tf.random.normal(shape=tf.shape(images))
        noisy = images + 0.1 * noises
        with tf.GradientTape() as tape:
            pred = self.network(noisy, training=True)
            loss = self.compiled_loss(noises, pred)
        grads = tape.gradient(loss, self.network.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.network.trainable_weights))
        self.noise_loss_tracker.update_state(loss)
        for weight, ema_weight in zip(self.network.weights, self.ema_network.weights):
            ema_weight.assign(self.ema * ema_weight + (1 - self.ema) * weight)
        return {"n_loss": self.noise_loss_tracker.result()}


def build_model():
    m = Denoiser()
    m.build((None, 16, 16, 3))
    m.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.MeanAbsoluteError())
    return m


def make_dataset(batch_size, input_context=None):
    x = tf.random.uniform((512, 16, 16, 3))
    ds = tf.data.Dataset.from_tensor_slices(x)
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().shuffle(512).repeat().batch(batch_size, drop_remainder=True).prefetch(2)
