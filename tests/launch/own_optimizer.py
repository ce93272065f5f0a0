"""A model whose train_step steps an optimizer of its own (as a GAN does), written to
run under any strategy: it can be called, its optimizer is built in build_model(), and
its loss is averaged over the global batch. Keras's compiled-in optimizer never steps,
so a step count read from model.optimizer stays at 0."""
import tensorflow as tf

BATCH_SIZE = 16


class OwnOptimizer(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.body = tf.keras.Sequential([tf.keras.layers.Dense(32, activation="relu"), tf.keras.layers.Dense(1)])
        self.tracker = tf.keras.metrics.Mean(name="loss")

    def call(self, x, training=False):
        return self.body(x, training=training)

    def compile(self, own):
        super().compile()
        self.own = own

    @property
    def metrics(self):
        return [self.tracker]

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(self(x, training=True) - y), axis=-1)
            loss = tf.nn.compute_average_loss(per_example)
        grads = tape.gradient(loss, self.body.trainable_variables)
        self.own.apply_gradients(zip(grads, self.body.trainable_variables))
        self.tracker.update_state(loss)
        return {"loss": self.tracker.result()}


def build_model():
    model = OwnOptimizer()
    model(tf.zeros([1, 8]))
    model.compile(own=tf.keras.optimizers.SGD(0.01))
    model.own.build(model.body.trainable_variables)
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_normal([256, 8], seed=[1, 2])
    ds = tf.data.Dataset.from_tensor_slices((x, tf.reduce_sum(x, axis=1, keepdims=True)))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().batch(batch_size, drop_remainder=True).prefetch(2)
