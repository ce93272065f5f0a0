"""The bench's failure line for what breaks only under a strategy: TensorFlow's own
messages (copied from real failures of a keras.io-style GAN, TensorFlow 2.21), and what
to do about each. Pure: no TensorFlow."""

from rung.bench.hints import hint, one_line

KERAS3_BUILD = ("Unable to automatically build the model. Please build it yourself before calling "
                "fit/evaluate/predict. A model is 'built' when its variables have been created and its "
                "`self.built` attribute is True. Usually, calling the model on a batch of data is the right "
                "way to build it.\nException encountered:\n'Exception encountered when calling GAN.call().")
SLOTS = ("Graph execution error:\n\n2 root error(s) found.\n  (0) INVALID_ARGUMENT:  You must feed a value for "
         "placeholder tensor 'StatefulPartitionedCall/cond/else/_110/cond/Placeholder_2' with dtype int32\n"
         "\t [[{{node cond/Placeholder_2}}]]\n\t [[StatefulPartitionedCall/cond/else/_110/cond/StatefulPartitionedCall/"
         "adam_2/sequential_2_conv2d_4_kernel_momentum/replica_1/Initializer/ReadVariableOp/_100]]")
TF_KERAS_LOSS = ("ValueError: Please use `tf.keras.losses.Reduction.SUM` or `tf.keras.losses.Reduction.NONE` for "
                 "loss reduction when losses are used with `tf.distribute.Strategy`, except for specifying losses "
                 "in `Model.compile()` for use by the built-in training looop `Model.fit()`.")

# Keras 3, model.fit under MirroredStrategy(2 logical CPUs) of a model with a StringLookup
STRINGS = ("Value for attr 'T' of string is not in the list of allowed values: float, double, int32, uint8, "
           "int16, int8, complex64, int64, qint8, quint8, qint32, bfloat16, qint16, quint16, uint16, complex128, "
           "half, uint32, uint64, variant\n\t; NodeDef: {{node AddN}}; Op<name=AddN; signature=inputs:N*T -> sum:T>")


def test_each_known_failure_gets_what_to_do_and_keeps_tensorflows_line():
    assert "model.built = True" in hint(KERAS3_BUILD)[0]
    advice, line = hint(SLOTS)
    assert "optimizer.build" in advice and line.startswith("(0) INVALID_ARGUMENT:  You must feed")
    assert "reduction=NONE" in hint(TF_KERAS_LOSS)[0]
    assert "TF_USE_LEGACY_KERAS=1" in hint(STRINGS)[0]


def test_the_line_puts_the_hint_first_and_stays_short():
    text = one_line("ValueError", TF_KERAS_LOSS)
    assert text.startswith("a loss inside a custom train_step") and "(ValueError: Please use" in text
    assert "ValueError: ValueError" not in text and len(text) < 400
    # the graph error's first line says nothing; the line that matters is the one kept
    assert "You must feed a value" in one_line("InvalidArgumentError", SLOTS)


def test_other_failures_are_passed_on_as_they_were():
    assert hint("OOM when allocating tensor") is None
    assert one_line("ResourceExhaustedError", "OOM when allocating tensor\nmore") == \
        "ResourceExhaustedError: OOM when allocating tensor"
    assert one_line("RuntimeError", "") == "RuntimeError: "
