"""Two streams zipped, each element printed where it is produced (tf.print in a map runs on
the worker that runs the pipeline): "plain" is sharded by the InputContext and not shuffled,
"shuffled" is shuffled without a seed, and "flipped" is the plain element as a 2x2 image
through a random layer made at import (keras.io's way), printed as its right column's sum
(8p + 4 as it is, 8p + 2 flipped), and "keyed" is a stateless draw seeded by the element
itself (keras.io's U-Net and stateless augmentation recipes key their draws so). Under
parameter servers every worker runs a copy of the coordinator's pipeline, whose context is
one pipeline: the plain stream is the same on every worker, the shuffled one each worker's
own, the flips each worker's own, and the keyed draws the same on every worker."""
import tensorflow as tf

FLIP = tf.keras.layers.RandomFlip("horizontal")
RIGHT_COLUMN = tf.constant([[[[0.0], [1.0]], [[0.0], [1.0]]]])


def build_model():
    m = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    return m


def _plain(input_context):
    plain = tf.data.Dataset.range(1_000_000)
    if input_context is not None:
        plain = plain.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return plain


def plain_stream(batch_size, input_context=None):
    """The plain stream alone, as a workload's make_dataset."""
    return _plain(input_context).map(lambda p: (tf.cast([p, p], tf.float32), tf.cast(p, tf.float32))).repeat() \
        .batch(batch_size)


def _flipped(p):
    image = tf.reshape(tf.range(4, dtype=tf.float32) + tf.cast(p, tf.float32) * 4, (1, 2, 2, 1))
    return tf.reduce_sum(FLIP(image, training=True) * RIGHT_COLUMN)


def _keyed(p):
    return tf.random.stateless_uniform((), seed=tf.stack([p, tf.constant(7, tf.int64)]), maxval=1000,
                                       dtype=tf.int64)


def keyed_stream(batch_size, input_context=None):
    """The plain stream with a draw keyed by each element alone, as a workload's make_dataset."""
    return _plain(input_context).map(lambda p: (tf.cast(tf.stack([p, _keyed(p)]), tf.float32),
                                                tf.cast(p, tf.float32))).repeat().batch(batch_size)


def augmented_stream(batch_size, input_context=None):
    """The plain stream through the random layer alone, as a workload's make_dataset."""
    return _plain(input_context).map(lambda p: (tf.stack([tf.cast(p, tf.float32), _flipped(p)]),
                                                tf.cast(p, tf.float32))).repeat().batch(batch_size)


def make_dataset(batch_size, input_context=None):
    plain = _plain(input_context)
    shuffled = tf.data.Dataset.range(1_000_000).shuffle(10_000)

    def example(p, s):
        with tf.control_dependencies([tf.print("PLAIN", p, "SHUFFLED", s, "FLIPPED", _flipped(p), "KEYED", _keyed(p))]):
            x = tf.cast(tf.stack([p, s]), tf.float32)
        return x, tf.reduce_sum(x)

    # prefetched, so each worker makes batches ahead however few steps the coordinator gives it
    return tf.data.Dataset.zip((plain, shuffled)).map(example).repeat().batch(batch_size).prefetch(8)
