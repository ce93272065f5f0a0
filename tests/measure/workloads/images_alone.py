"""A subclassed autoencoder trained on images alone (keras.io's masked autoencoder's
pattern, without its random mask): the pipeline gives x, not (x, y), and the model builds
on its first call. Its own train_step takes a per-replica mean of the reconstruction
error. Parameters: conv 3x3x3x4+4 = 112, conv 3x3x4x3+3 = 111: 223."""
import tensorflow as tf


class AutoEncoder(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.encode = tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu")
        self.decode = tf.keras.layers.Conv2D(3, 3, padding="same")

    def call(self, images, training=False):
        return self.decode(self.encode(images))

    def train_step(self, images):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(images, training=True) - images))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


def build_model():
    model = AutoEncoder()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01))
    return model


def make_dataset(batch_size, input_context=None):
    images = tf.random.stateless_uniform((256, 8, 8, 3), seed=(1, 2))
    ds = tf.data.Dataset.from_tensor_slices(images)
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.cache().repeat().batch(batch_size, drop_remainder=True)
