"""keras.io's "Image classification with Vision Transformer" (Khalid Salama), shrunk to
32 px as a newcomer copies it: patches cut by tf.image.extract_patches in a layer of its
own, a learned position Embedding (its gradient is IndexedSlices), MultiHeadAttention,
AdamW. 43 trainable variables, 84,234 parameters.

Forward multiply-adds per example by hand: the patch projection 16 x 192 x 32 (98,304); in
each of 2 blocks the Q, K and V projections 3 x 16 x 32 x 128 (196,608), the scores and the
weighted values 2 x 4 x 16 x 16 x 32 (65,536), the output projection 16 x 128 x 32 (65,536)
and the MLP 2 x 16 x 32 x 64 (65,536); the head 512 x 64 + 64 x 32 + 32 x 10 (35,136):
919,872, so 5.52 MFLOP to train (3 x 2 x MACs) before layer norms, softmax and GELU.
`rung profile` counted 5.8 MFLOP. Kept for benchmarks/bench_ps.py --workload."""
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

image_size = 32
patch_size = 8
num_patches = (image_size // patch_size) ** 2
projection_dim = 32
num_heads = 4
transformer_units = [projection_dim * 2, projection_dim]
transformer_layers = 2
mlp_head_units = [64, 32]


def mlp(x, hidden_units, dropout_rate):
    for units in hidden_units:
        x = layers.Dense(units, activation=tf.nn.gelu)(x)
        x = layers.Dropout(dropout_rate)(x)
    return x


class Patches(layers.Layer):
    def __init__(self, patch_size):
        super().__init__()
        self.patch_size = patch_size

    def call(self, images):
        batch_size = tf.shape(images)[0]
        patches = tf.image.extract_patches(
            images=images,
            sizes=[1, self.patch_size, self.patch_size, 1],
            strides=[1, self.patch_size, self.patch_size, 1],
            rates=[1, 1, 1, 1],
            padding="VALID",
        )
        patch_dims = patches.shape[-1]
        return tf.reshape(patches, [batch_size, -1, patch_dims])


class PatchEncoder(layers.Layer):
    def __init__(self, num_patches, projection_dim):
        super().__init__()
        self.num_patches = num_patches
        self.projection = layers.Dense(units=projection_dim)
        self.position_embedding = layers.Embedding(input_dim=num_patches, output_dim=projection_dim)

    def call(self, patch):
        positions = tf.range(start=0, limit=self.num_patches, delta=1)
        return self.projection(patch) + self.position_embedding(positions)


def build_model():
    inputs = layers.Input(shape=(image_size, image_size, 3))
    patches = Patches(patch_size)(inputs)
    encoded = PatchEncoder(num_patches, projection_dim)(patches)
    for _ in range(transformer_layers):
        x1 = layers.LayerNormalization(epsilon=1e-6)(encoded)
        att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=projection_dim, dropout=0.1)(x1, x1)
        x2 = layers.Add()([att, encoded])
        x3 = layers.LayerNormalization(epsilon=1e-6)(x2)
        x3 = mlp(x3, transformer_units, 0.1)
        encoded = layers.Add()([x3, x2])
    rep = layers.LayerNormalization(epsilon=1e-6)(encoded)
    rep = layers.Flatten()(rep)
    rep = layers.Dropout(0.5)(rep)
    features = mlp(rep, mlp_head_units, 0.5)
    logits = layers.Dense(10)(features)
    model = keras.Model(inputs=inputs, outputs=logits)
    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=1e-4),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
    return model


def make_dataset(batch_size, input_context=None):
    x = tf.random.uniform((512, image_size, image_size, 3))
    y = tf.random.uniform((512,), maxval=10, dtype=tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context is not None:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
