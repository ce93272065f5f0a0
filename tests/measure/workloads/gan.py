"""A keras.io-style DCGAN (keras.io/examples/generative/dcgan_overriding_train_step): its
own train_step, no call(), and two optimizers kept by its own compile(d_optimizer=...,
g_optimizer=...), beside the RMSprop Keras compiles in by default and never uses.

Hand counts: discriminator 3x3x1x32+32 = 320, 3x3x32x64+64 = 18,496, 64+1 = 65
(18,881); generator 64x3136+3136 = 203,840, 4x4x64x64+64 = 65,600, 4x4x64x32+32 =
32,800, 7x7x32x1+1 = 1,569 (303,809); 322,690 in all. Both updates of a step exchange
their gradients (322,690 float32); each Adam keeps two slots per parameter it updates.

Trains without a strategy; under one (OneDeviceStrategy included) Keras 3 cannot build
it: the bench says so, and what to do."""
import tensorflow as tf
keras = tf.keras
LATENT = 64
BATCH_SIZE = 32


class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def train_step(self, data):
        real_images, _ = data
        batch_size = tf.shape(real_images)[0]
        z = tf.random.normal(shape=(batch_size, self.latent_dim))
        generated = self.generator(z)
        combined = tf.concat([generated, real_images], axis=0)
        labels = tf.concat([tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0)
        with tf.GradientTape() as tape:
            predictions = self.discriminator(combined)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        z = tf.random.normal(shape=(batch_size, self.latent_dim))
        misleading = tf.zeros((batch_size, 1))
        with tf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(z))
            g_loss = self.loss_fn(misleading, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


def build_model():
    disc = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(32, 3, strides=2, padding="same"),
                             keras.layers.LeakyReLU(0.2), keras.layers.Conv2D(64, 3, strides=2, padding="same"),
                             keras.layers.LeakyReLU(0.2), keras.layers.GlobalMaxPooling2D(), keras.layers.Dense(1)])
    gen = keras.Sequential([keras.Input((LATENT,)), keras.layers.Dense(7 * 7 * 64), keras.layers.LeakyReLU(0.2),
                            keras.layers.Reshape((7, 7, 64)),
                            keras.layers.Conv2DTranspose(64, 4, strides=2, padding="same"), keras.layers.LeakyReLU(0.2),
                            keras.layers.Conv2DTranspose(32, 4, strides=2, padding="same"), keras.layers.LeakyReLU(0.2),
                            keras.layers.Conv2D(1, 7, padding="same", activation="sigmoid")])
    gan = GAN(disc, gen, LATENT)
    gan.compile(d_optimizer=keras.optimizers.Adam(3e-4), g_optimizer=keras.optimizers.Adam(3e-4),
                loss_fn=keras.losses.BinaryCrossentropy(from_logits=True))
    return gan


def make_dataset(batch_size, input_context=None):
    x = tf.random.uniform((1024, 28, 28, 1))
    y = tf.zeros((1024,))
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
