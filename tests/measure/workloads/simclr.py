"""keras.io's "Semi-supervised image classification using contrastive pretraining with
SimCLR" (shrunk to 16 px), on tf.keras: a compile() of its own that keeps two Adams
(super().compile() gets none), augmenters inside the model, a train_step of its own on a
zipped dataset of unlabelled and labelled batches. Marked built (it has no call()), its
augmenters given an Input: so Keras 3 builds it under a strategy. Its two Adams are not
built: Keras 3's fit under MirroredStrategy fails on them (their slots would be made
inside the replicated step), where one device runs it."""
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

SIZE, WIDTH, TEMP = 16, 16, 0.1


def augmenter(min_area, brightness, jitter):
    zoom = 1.0 - min_area ** 0.5
    return keras.Sequential([keras.Input(shape=(SIZE, SIZE, 3)), layers.Rescaling(1 / 255),
                             layers.RandomFlip("horizontal"), layers.RandomTranslation(zoom / 2, zoom / 2),
                             layers.RandomZoom((-zoom, 0.0))])


def get_encoder():
    return keras.Sequential([keras.Input(shape=(SIZE, SIZE, 3)),
                             layers.Conv2D(WIDTH, 3, strides=2, activation="relu"),
                             layers.Conv2D(WIDTH, 3, strides=2, activation="relu"),
                             layers.Flatten(), layers.Dense(WIDTH, activation="relu")], name="encoder")


class ContrastiveModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.temperature = TEMP
        self.contrastive_augmenter = augmenter(0.2, 0.6, 0.2)
        self.classification_augmenter = augmenter(0.75, 0.3, 0.1)
        self.encoder = get_encoder()
        self.projection_head = keras.Sequential([keras.Input(shape=(WIDTH,)), layers.Dense(WIDTH, activation="relu"),
                                                 layers.Dense(WIDTH)], name="projection_head")
        self.linear_probe = keras.Sequential([layers.Input(shape=(WIDTH,)), layers.Dense(10)], name="linear_probe")

    def compile(self, contrastive_optimizer, probe_optimizer, **kwargs):
        super().compile(**kwargs)
        self.contrastive_optimizer = contrastive_optimizer
        self.probe_optimizer = probe_optimizer
        self.contrastive_loss_tracker = keras.metrics.Mean(name="c_loss")
        self.probe_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.probe_loss_tracker = keras.metrics.Mean(name="p_loss")

    @property
    def metrics(self):
        return [self.contrastive_loss_tracker, self.probe_loss_tracker]

    def contrastive_loss(self, projections_1, projections_2):
        projections_1 = tf.math.l2_normalize(projections_1, axis=1)
        projections_2 = tf.math.l2_normalize(projections_2, axis=1)
        similarities = tf.matmul(projections_1, projections_2, transpose_b=True) / self.temperature
        batch_size = tf.shape(projections_1)[0]
        contrastive_labels = tf.range(batch_size)
        loss_1_2 = keras.losses.sparse_categorical_crossentropy(contrastive_labels, similarities, from_logits=True)
        loss_2_1 = keras.losses.sparse_categorical_crossentropy(contrastive_labels, tf.transpose(similarities),
                                                                from_logits=True)
        return (loss_1_2 + loss_2_1) / 2

    def train_step(self, data):
        (unlabeled_images, _), (labeled_images, labels) = data
        images = tf.concat((unlabeled_images, labeled_images), axis=0)
        augmented_images_1 = self.contrastive_augmenter(images, training=True)
        augmented_images_2 = self.contrastive_augmenter(images, training=True)
        with tf.GradientTape() as tape:
            features_1 = self.encoder(augmented_images_1, training=True)
            features_2 = self.encoder(augmented_images_2, training=True)
            projections_1 = self.projection_head(features_1, training=True)
            projections_2 = self.projection_head(features_2, training=True)
            contrastive_loss = self.contrastive_loss(projections_1, projections_2)
        gradients = tape.gradient(contrastive_loss,
                                  self.encoder.trainable_weights + self.projection_head.trainable_weights)
        self.contrastive_optimizer.apply_gradients(
            zip(gradients, self.encoder.trainable_weights + self.projection_head.trainable_weights))
        self.contrastive_loss_tracker.update_state(contrastive_loss)
        preprocessed_images = self.classification_augmenter(labeled_images, training=True)
        with tf.GradientTape() as tape:
            features = self.encoder(preprocessed_images, training=False)
            class_logits = self.linear_probe(features, training=True)
            probe_loss = self.probe_loss(labels, class_logits)
        gradients = tape.gradient(probe_loss, self.linear_probe.trainable_weights)
        self.probe_optimizer.apply_gradients(zip(gradients, self.linear_probe.trainable_weights))
        self.probe_loss_tracker.update_state(probe_loss)
        return {m.name: m.result() for m in self.metrics}


def build_model():
    model = ContrastiveModel()
    model.compile(contrastive_optimizer=keras.optimizers.Adam(), probe_optimizer=keras.optimizers.Adam())
    model.built = True
    return model


def make_dataset(batch_size, input_context=None):
    n = 512
    imgs = tf.random.stateless_uniform((n, SIZE, SIZE, 3), seed=(1, 2), maxval=255)
    labels = tf.random.stateless_uniform((n,), seed=(3, 4), maxval=10, dtype=tf.int32)
    unl = tf.data.Dataset.from_tensor_slices((imgs, tf.fill((n,), -1)))
    lab = tf.data.Dataset.from_tensor_slices((imgs, labels))
    if input_context:
        unl = unl.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        lab = lab.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    unl = unl.cache().shuffle(n).repeat().batch(batch_size, drop_remainder=True)
    lab = lab.cache().shuffle(n).repeat().batch(batch_size, drop_remainder=True)
    return tf.data.Dataset.zip((unl, lab)).prefetch(tf.data.AUTOTUNE)
