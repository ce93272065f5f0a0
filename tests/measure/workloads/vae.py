"""keras.io's "Variational AutoEncoder" (fchollet), as a newcomer brings it: Keras 3's own
`import keras` with keras.ops and keras.random, a train_step of its own that needs no
labels, and a dataset of images alone (no (features, labels) tuples). Marked built, as
Keras 3's fit under a strategy needs for a model without call().

Forward FLOPs per example by hand (2 x multiply-adds of each convolution and Dense):
encoder 3x3 convs 1->32 at 14x14 (112,896) and 32->64 at 7x7 (1,806,336), Dense 3136->16
(100,352) and the two 16->2 heads (128); decoder Dense 2->3136 (12,544) and transposed
convs 64->64 from 7x7 (3,612,672), 64->32 from 14x14 (7,225,344), 32->1 at 28x28 (451,584):
13,321,856 in all."""

import keras
import tensorflow as tf
from keras import layers, ops

LATENT = 2


class Sampling(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        epsilon = keras.random.normal(shape=ops.shape(z_mean), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


def encoder():
    i = keras.Input(shape=(28, 28, 1))
    x = layers.Conv2D(32, 3, activation="relu", strides=2, padding="same")(i)
    x = layers.Conv2D(64, 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Dense(16, activation="relu")(layers.Flatten()(x))
    z_mean, z_log_var = layers.Dense(LATENT)(x), layers.Dense(LATENT)(x)
    return keras.Model(i, [z_mean, z_log_var, Sampling()([z_mean, z_log_var])])


def decoder():
    i = keras.Input(shape=(LATENT,))
    x = layers.Reshape((7, 7, 64))(layers.Dense(7 * 7 * 64, activation="relu")(i))
    x = layers.Conv2DTranspose(64, 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Conv2DTranspose(32, 3, activation="relu", strides=2, padding="same")(x)
    return keras.Model(i, layers.Conv2DTranspose(1, 3, activation="sigmoid", padding="same")(x))


class VAE(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.encoder, self.decoder = encoder(), decoder()
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")

    @property
    def metrics(self):
        return [self.total_loss_tracker]

    def train_step(self, data):
        with tf.GradientTape() as tape:
            z_mean, z_log_var, z = self.encoder(data)
            reconstruction = self.decoder(z)
            reconstruction_loss = ops.mean(ops.sum(keras.losses.binary_crossentropy(data, reconstruction),
                                                   axis=(1, 2)))
            kl = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
            total_loss = reconstruction_loss + ops.mean(ops.sum(kl, axis=1))
        grads = tape.gradient(total_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total_loss_tracker.update_state(total_loss)
        return {"loss": self.total_loss_tracker.result()}


def build_model():
    vae = VAE()
    vae.built = True  # its parts are built; Keras 3's fit under a strategy would call() it otherwise
    vae.compile(optimizer=keras.optimizers.Adam())
    return vae


def make_dataset(batch_size, input_context=None):
    ds = tf.data.Dataset.from_tensor_slices(tf.random.uniform((256, 28, 28, 1), seed=1))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().batch(batch_size, drop_remainder=True).prefetch(2)
