"""keras.io's "Knowledge Distillation" (Kenneth Borup), made smaller: a Distiller with a
compile() of its own that takes two Keras loss objects, and a compute_loss() that calls
them. It builds and trains on both Kerases on one device. Under a strategy, Keras 3 runs
it; tf-keras (where multi-worker and parameter-server fits run) refuses a Keras loss that
averages over the batch when it is called outside its compiled losses ("Please use
`tf.keras.losses.Reduction.SUM` or `tf.keras.losses.Reduction.NONE` ..."). LeakyReLU takes
its slope by position, as both Kerases name it differently (keras.io writes
`negative_slope=`, which tf-keras does not know).
"""

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

BATCH_SIZE = 64


class Distiller(keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.teacher = teacher
        self.student = student

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1, temperature=3):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)
        distillation_loss = self.distillation_loss_fn(
            tf.nn.softmax(teacher_pred / self.temperature, axis=1),
            tf.nn.softmax(y_pred / self.temperature, axis=1),
        ) * (self.temperature ** 2)
        return self.alpha * student_loss + (1 - self.alpha) * distillation_loss

    def call(self, x):
        return self.student(x)


def _convnet(name, width):
    return keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(width, (3, 3), strides=(2, 2), padding="same"),
        layers.LeakyReLU(0.2),
        layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
        layers.Conv2D(2 * width, (3, 3), strides=(2, 2), padding="same"),
        layers.Flatten(),
        layers.Dense(10),
    ], name=name)


def build_model():
    teacher = _convnet("teacher", 64)
    teacher.trainable = False
    distiller = Distiller(student=_convnet("student", 16), teacher=teacher)
    distiller.compile(
        optimizer=keras.optimizers.Adam(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        distillation_loss_fn=keras.losses.KLDivergence(),
        alpha=0.1,
        temperature=10,
    )
    return distiller


def make_dataset(batch_size, input_context=None):
    x = tf.random.stateless_uniform((1024, 28, 28, 1), seed=(1, 2))
    y = tf.random.stateless_uniform((1024,), seed=(3, 4), maxval=10, dtype=tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.shuffle(1024).repeat().batch(batch_size)
