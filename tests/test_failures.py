"""A failure of the user's model in one line, and what to do about what breaks only under
a strategy: TensorFlow's own messages (copied from real failures, TensorFlow 2.21: a
keras.io-style GAN, a StringLookup model under Keras 3's mirrored fit, a TextVectorization
adapted in make_dataset under parameter servers). Pure: no TensorFlow."""

from rung.failures import failure_line, hint

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

# Keras 3, model.fit under MirroredStrategy(2 logical CPUs) of keras.io's Switch Transformer
# (its router's keras.random.uniform has no seed), as rung bench's mirrored:2 run said it, in
# Keras's terminal bold (which the line drops)
UNSEEDED = ("\x1b[1mtf.function only supports singleton tf.Variables created on the first call. Make sure the "
            "tf.Variable is only created once or created outside tf.function. See "
            "https://www.tensorflow.org/guide/function#creating_tfvariables for more information.")

# Keras 3, model.fit under MirroredStrategy(2 logical CPUs) of a model with a StringLookup
STRINGS = ("Value for attr 'T' of string is not in the list of allowed values: float, double, int32, uint8, "
           "int16, int8, complex64, int64, qint8, quint8, qint32, bfloat16, qint16, quint16, uint16, complex128, "
           "half, uint32, uint64, variant\n\t; NodeDef: {{node AddN}}; Op<name=AddN; signature=inputs:N*T -> sum:T>")

# tf-keras, ParameterServerStrategy's chief, a make_dataset that adapts a TextVectorization
ADAPT_IN_FUNCTION = (
    "in user code:\n\n    File \"/tmp/nw/textvec_ds.py\", line 17, in make_dataset\n"
    "        t = _texts(); vec.adapt(t)\n"
    "    File \"/venv/lib/python3.11/site-packages/tf_keras/src/engine/base_preprocessing_layer.py\", line 305, "
    "in _disallow_inside_tf_function\n        raise RuntimeError(error_msg)\n\n"
    "    RuntimeError: Detected a call to `PreprocessingLayer.adapt` inside a `tf.function`. "
    "`PreprocessingLayer.adapt is a high-level endpoint that manages its own `tf.function`.")
# Keras 3, model.fit under MirroredStrategy(2 logical CPUs) of a model whose train_step builds
# its own optimizers and calls apply(grads): the same cond, no initializer named
SLOTS_COND = ("Graph execution error:\n\n2 root error(s) found.\n  (0) INVALID_ARGUMENT:  You must feed a value for "
              "placeholder tensor 'StatefulPartitionedCall/cond/else/_33/cond/Placeholder_2' with dtype int32\n"
              "\t [[{{node cond/Placeholder_2}}]]\n\t [[StatefulPartitionedCall/cond/then/_32/cond/Placeholder_3/_46]]\n"
              "  (1) INVALID_ARGUMENT:  You must feed a value for placeholder tensor "
              "'StatefulPartitionedCall/cond/else/_33/cond/Placeholder_2' with dtype int32\n"
              "\t [[{{node cond/Placeholder_2}}]]\n0 successful operations.\n"
              "0 derived errors ignored. [Op:__inference_multi_step_on_iterator_1913]")

# Keras 3, model.fit under MirroredStrategy(2 logical CPUs), compile(steps_per_execution=8)
LOOP = ("Graph execution error:\n\nDetected at node while/cond/Placeholder_1 defined at (most recent call last):\n"
        "\n\n2 root error(s) found.\n  (0) INVALID_ARGUMENT:  You must feed a value for placeholder tensor "
        "'while/body/_1/while/cond/then/_243/while/cond/Placeholder_1' with dtype int32\n"
        "\t [[{{node while/cond/Placeholder_1}}]]\n\t [[while/LoopControlInputs/_55/_21]]\n"
        "  (1) INVALID_ARGUMENT:  You must feed a value for placeholder tensor "
        "'while/body/_1/while/cond/then/_243/while/cond/Placeholder_1' with dtype int32\n"
        "\t [[{{node while/cond/Placeholder_1}}]]\n0 successful operations.\n"
        "0 derived errors ignored. [Op:__inference_multi_step_on_iterator_1773]")

# the bundled mlp compiled with jit_compile=True: multi-worker on 2 CPU workers, mirrored on
# 2 logical CPU devices (Keras 3)
XLA_COLLECTIVES = ("Collectives are not yet implemented for CPU devices when compiling with XLA. Attempted to "
                   "compile a collective running on/job:worker/replica:0/task:0/device:CPU:0. Please comment on "
                   "b/194942685 or file a new bug if you don't have access.")
XLA_VARIABLE = ("Graph execution error:\n\nDetected at node StatefulPartitionedCall defined at (most recent call "
                "last):\n  File \"/tmp/nw2/xla_probe.py\", line 12, in <module>\n\nTrying to access resource "
                "sequential/dense/kernel/replica_1/3 (defined @ /venv/lib/python3.11/site-packages/keras/src/backend/"
                "tensorflow/core.py:43) located in device /job:localhost/replica:0/task:0/device:CPU:1 from device "
                "/job:localhost/replica:0/task:0/device:CPU:0\n Cf. https://www.tensorflow.org/xla/known_issues"
                "#tfvariable_on_a_different_device\n\t [[{{node StatefulPartitionedCall}}]] "
                "[Op:__inference_multi_step_on_iterator_1456]")

# the same model under parameter_server:2 (a multi-output functional model, 2026-12-01):
# its variables on the ps task; the mirrored hint called them "the logical CPU devices a
# mirrored run uses"
XLA_PS = ("Trying to access resource dense/kernel/0 located in device /job:ps/replica:0/task:0/device:CPU:0 from "
          "device /job:worker/replica:0/task:0/device:CPU:0")


EAGER_PS = ("Traceback (most recent call last):\n  File \"/tmp/nc/ps_eager/train.py\", line 300, in main\n"
            "    model.fit(make_input(tf, workload, strategy, args), epochs=args.epochs, steps_per_epoch=args.steps,\n"
            "ValueError: When using `Model` with `ParameterServerStrategy`, `run_eagerly` is not supported.")

# Keras 3, model.fit under MirroredStrategy(2 logical CPUs) of a ragged bag of words and of a
# sparse multi-hot model (2026-12-02), the traceback's last lines
RAGGED = ("  File \"/venv/lib/python3.11/site-packages/tensorflow/python/distribute/values.py\", line 175, in "
          "<genexpr>\n    return tuple(v.device for v in self._values)\n                 ^^^^^^^^\n"
          "AttributeError: 'RaggedTensor' object has no attribute 'device'")
SPARSE = RAGGED.replace("RaggedTensor", "SparseTensor")

# tf-keras, rung bench's multi-worker task building a stateful GRU (2026-12-02)
STATEFUL = ("InputError: /tmp/p8/fixed_batch.py: build_model() raised ValueError: Stateful RNNs (created with "
            "`stateful=True`) are not yet supported with tf.distribute.Strategy. (line 7)")

# Keras 3's mirrored fit (2 logical CPUs) and tf-keras's build_model(), an Adam built with
# gradient_accumulation_steps=4 (2026-12-02)
ACCUMULATE_MIRRORED = ("RuntimeError: `merge_call` called while defining a new graph or a tf.function. This can often "
                       "happen if the function `fn` passed to `strategy.run()` contains a nested `@tf.function`")
ACCUMULATE_TF_KERAS = ("InputError: /tmp/p8/accum.py: build_model() raised TypeError: gradient_accumulation_steps is "
                       "not a valid argument, kwargs should be empty for `optimizer_experimental.Optimizer`. (line 7)")


# a workload that builds its model under a MirroredStrategy of its own, under the strategy of
# rung's run (TensorFlow 2.21, 2026-12-04), and the same model's step outside that scope
MIXING = ("RuntimeError: Mixing different tf.distribute.Strategy objects: <tensorflow.python.distribute."
          "one_device_strategy.OneDeviceStrategy object at 0x7fc4ca0419d0> is not <tensorflow.python.distribute."
          "mirrored_strategy.MirroredStrategy object at 0x7fc4c9b4c6d0>")
OUTSIDE = ('RuntimeError: Need to be inside "with strategy.scope()" for <tensorflow.python.distribute.'
           'mirrored_strategy.MirroredStrategy object at 0x7fb9f98ba510>')


def test_each_known_failure_gets_what_to_do_and_keeps_tensorflows_line():
    assert "model.built = True" in hint(KERAS3_BUILD)[0]
    advice, line = hint(SLOTS)
    assert "optimizer.build" in advice and line.startswith("(0) INVALID_ARGUMENT:  You must feed")
    advice, line = hint(SLOTS_COND)  # the same, with no initializer in TensorFlow's words
    assert "optimizer.build" in advice and line.startswith("(0) INVALID_ARGUMENT:  You must feed")
    assert "reduction=NONE" in hint(TF_KERAS_LOSS)[0]
    assert "TF_USE_LEGACY_KERAS=1" in hint(STRINGS)[0]
    assert "steps_per_execution=1" in hint(LOOP)[0]
    advice, line = hint(UNSEEDED)
    assert "keras.random.SeedGenerator" in advice and line.startswith("tf.function only supports singleton")
    assert "\x1b[" not in failure_line("ValueError", UNSEEDED)
    assert "adapt the layer once when the file is imported" in hint(ADAPT_IN_FUNCTION)[0]
    for xla in (XLA_COLLECTIVES, XLA_VARIABLE):
        advice, _ = hint(xla)
        assert "jit_compile=False" in advice and "not measured on this machine" in advice
    advice, line = hint(XLA_PS)
    assert "ps tasks" in advice and "on any hardware" in advice and "mirrored" not in advice
    assert line.startswith("Trying to access resource dense/kernel/0")
    advice, line = hint(EAGER_PS)
    assert "run_eagerly=False" in advice and "`run_eagerly` is not supported" in line
    advice, line = hint(RAGGED)
    assert advice.startswith("ragged features") and "to_tensor()" in advice and "TF_USE_LEGACY_KERAS=1" in advice
    assert line == "AttributeError: 'RaggedTensor' object has no attribute 'device'"
    assert "tf.sparse.to_dense" in hint(SPARSE)[0]
    assert "keras-team/keras#20582" in hint(ACCUMULATE_MIRRORED)[0]
    assert "GRADIENT_ACCUMULATION" in hint(ACCUMULATE_TF_KERAS)[0]
    advice, line = hint(STATEFUL)
    assert "stateful=False" in advice and "STATEFUL_RNN" in advice and "build_model() raised ValueError" in line
    # Keras 3's fit under OneDeviceStrategy, a compiled loss and images alone (what a train.py log holds)
    advice, line = hint("Traceback (most recent call last):\n  ...\nValueError: None values not supported.")
    assert advice.startswith("if make_dataset yields no labels") and "compile without loss=" in advice
    assert line == "ValueError: None values not supported."
    # tf-keras, rung bench's parameter-server chief building a mixed_float16 MLP (2026-12-04)
    advice, line = hint("InputError: /tmp/nc2/fp16.py: build_model() raised ValueError: Mixed precision is not "
                        "supported with the tf.distribute.Strategy: ParameterServerStrategyV2. Either stop using mixed "
                        "precision by removing the use of the mixed_float16 policy or use a different Strategy, e.g. "
                        "a MirroredStrategy. (line 10)")
    assert advice.startswith("the model uses the mixed_float16 policy") and "mixed_bfloat16" in advice
    assert "ParameterServerStrategyV2" in line
    # Keras 3's mirrored fit of a model compiled with an Adam made at import: not a strategy of the file's own
    advice, _ = hint("RuntimeError: Mixing different tf.distribute.Strategy objects: <tensorflow.python.distribute."
                     "mirrored_strategy.MirroredStrategy object at 0x7f5a4c113710> is not <tensorflow.python."
                     "distribute.distribute_lib._DefaultDistributionStrategy object at 0x7f5a3a491bd0>")
    assert advice.startswith("an object the model uses was made outside any tf.distribute strategy")
    for own in (MIXING, OUTSIDE):
        advice, line = hint(own)
        assert advice.startswith("build_model() builds the model under a tf.distribute strategy of its own")
        assert "take the strategy and `with strategy.scope():` out of build_model" in advice
        assert line == own
    # TensorFlow 2.21's words for a file that configures the runtime, or connects to a TPU, at import
    for late in ("Intra op parallelism cannot be modified after initialization.",
                 "Physical devices cannot be modified after being initialized"):
        advice, line = hint(late)
        assert advice.startswith("the file configures TensorFlow's runtime where rung imports it") and line == late
        assert "TF_NUM_INTRAOP_THREADS" in advice
    # two multi-worker workers on one machine caching to one file (rung bench, 2026-12-04)
    cached = ("AlreadyExistsError: There appears to be a concurrent caching iterator running - cache lockfile already "
              "exists ('/tmp/nc5/cache_0.lockfile'). If you are sure no other running TF computations are using this "
              "cache prefix, delete the lockfile and re-initialize the iterator.")
    advice, line = hint(cached)
    assert advice.startswith("make_dataset caches to a file path that every worker uses") and "input_pipeline_id" in advice
    assert line == cached
    advice, line = hint("ValueError: Please provide a TPU Name to connect to.")
    assert advice.startswith("the file connects to a TPU where rung imports it") and "__main__" in advice


def test_the_line_puts_the_hint_first_and_stays_short():
    text = failure_line("ValueError", TF_KERAS_LOSS)
    assert text.startswith("a Keras loss called in the model's own train_step or compute_loss") and "(ValueError: Please use" in text
    assert "ValueError: ValueError" not in text and len(text) < 400
    # the graph error's first line says nothing; the line that matters is the one kept
    assert "You must feed a value" in failure_line("InvalidArgumentError", SLOTS)


def test_an_unknown_failure_keeps_the_innermost_errors_words():
    # an "in user code:" trace: its first line says nothing; the error inside it does
    text = failure_line("RuntimeError", ADAPT_IN_FUNCTION.replace("PreprocessingLayer.adapt", "something else"))
    assert text.startswith("RuntimeError: Detected a call to `something else` inside a `tf.function`")


def test_of_several_root_errors_the_first_is_kept():
    # not "0 derived errors ignored.", the message's last line
    text = failure_line("InvalidArgumentError", LOOP.replace("while/cond/", "x/"))
    assert text.startswith("InvalidArgumentError: INVALID_ARGUMENT: You must feed a value for placeholder")


def test_an_aborted_collective_keeps_its_cause_not_tensorflows_generic_line():
    # TensorFlow 2.21's message (its two lines are in libtensorflow_framework.so)
    message = ("Collective ops is aborted by: cluster check alive failed, /job:worker/replica:0/task:1 is down\n"
               "The error could be from a previous operation. Restart your program to reset. [Op:__inference_f_12]")
    assert failure_line("UnavailableError", message) == (
        "UnavailableError: Collective ops is aborted by: cluster check alive failed, /job:worker/replica:0/task:1 "
        "is down")
    # the generic line alone is kept (without the op's name)
    assert failure_line("UnavailableError", message.splitlines()[1]) == (
        "UnavailableError: The error could be from a previous operation. Restart your program to reset.")


def test_other_failures_are_passed_on_as_they_were():
    assert hint("OOM when allocating tensor") is None
    # an op error: the line that is neither a node, a stack nor TensorFlow's OOM hint
    oom = ("Graph execution error:\n\nDetected at node 'dense/MatMul' defined at (most recent call last):\n"
           "  File \"train.py\", line 3, in <module>\nOOM when allocating tensor with shape[4096,4096] and type "
           "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n\t [[{{node dense/MatMul}}]]"
           "\nHint: If you want to see a list of allocated tensors when OOM happens, add "
           "report_tensor_allocations_upon_oom to RunOptions for current allocation info.")
    assert failure_line("ResourceExhaustedError", oom) == (
        "ResourceExhaustedError: OOM when allocating tensor with shape[4096,4096] and type float on "
        "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc")
    assert failure_line("RuntimeError", "") == "RuntimeError: "


# Keras 3, an eager train_step (rung's gradient count) on one example of an unbatched
# dataset: Keras prints the input's values, wrapped over lines as numpy wraps them
EAGER_VALUES = ("Exception encountered when calling Sequential.call().\n\n\x1b[1mInvalid input shape for input "
                "[0.8452202  0.5606429  0.19885044 0.99192464 0.46132833 0.08751538\n 0.95488137 0.25447795 "
                "0.08193276 0.39261165 0.60911226 0.3840801\n 0.79796064 0.06472657] with name 'keras_tensor' and "
                "path ''. Expected shape (None, 32), but input has incompatible shape (32,)\x1b[0m\n\n"
                "Arguments received by Sequential.call():\n  • inputs=tf.Tensor(shape=(32,), dtype=float32)\n"
                "  • training=True")


# Keras 3, a TensorFlow op on a KerasTensor in a functional model (keras.io's Transformer's
# compute_mask written with tf.not_equal): a message of many lines, with code in fences
KERAS_TENSOR = ("A KerasTensor cannot be used as input to a TensorFlow function. A KerasTensor is a symbolic "
                "placeholder for a shape and dtype, used when constructing Keras Functional models or Keras "
                "Functions. You can only use it as input to a Keras layer or a Keras operation (from the namespaces "
                "`keras.layers` and `keras.ops`). You are likely doing something like:\n\n```\nx = Input(...)\n"
                "...\ntf_fn(x)  # Invalid.\n```\n\nWhat you should do instead is wrap `tf_fn` in a layer:\n\n```\n"
                "class MyLayer(Layer):\n    def call(self, x):\n        return tf_fn(x)\n\nx = MyLayer()(x)\n```\n")


# Keras 3's fit of a model it cannot build (trainer.py): its cause comes last
KERAS3_UNBUILT = ("Unable to automatically build the model. Please build it yourself before calling "
                  "fit/evaluate/predict. A model is 'built' when its variables have been created and its `self.built` "
                  "attribute is True. Usually, calling the model on a batch of data is the right way to build it.\n"
                  "Exception encountered:\n'Model ContrastiveModel does not have a `call()` method implemented.'")


def test_keras_3_ops_under_tf_keras_say_what_to_use_instead():
    # keras.io's Transformer's compute_mask through `from tensorflow import keras`, under a
    # multi-worker run's tf-keras (a bench of it, TensorFlow 2.21)
    text = failure_line("AttributeError", "module 'tf_keras.api._v2.keras' has no attribute 'ops'")
    assert text.startswith("the model calls keras.ops or keras.random, Keras 3's alone, and tf-keras")
    assert text.endswith("(AttributeError: module 'tf_keras.api._v2.keras' has no attribute 'ops')")
    assert hint("module 'keras' has no attribute 'ops'") is None  # not tf-keras: not this


def test_tensorflow_2s_experimental_preprocessing_under_keras_3_says_where_it_went():
    text = failure_line("AttributeError", "module 'keras._tf_keras.keras.layers' has no attribute 'experimental'")
    assert text.startswith("tf.keras.layers.experimental.preprocessing is gone from Keras 3")
    assert hint("module 'numpy' has no attribute 'experimental'") is None


def test_a_message_of_many_lines_keeps_its_first_not_its_code_example():
    from rung.failures import message_line

    # before: "ValueError: ```", the last line of the message's code example
    assert failure_line("ValueError", KERAS_TENSOR).startswith(
        "ValueError: A KerasTensor cannot be used as input to a TensorFlow function.")
    # a message without code examples still ends on its innermost cause
    assert message_line(KERAS3_UNBUILT) == "'Model ContrastiveModel does not have a `call()` method implemented.'"


def test_a_tensors_printed_values_do_not_take_the_line():
    # before: "0.79796064 0.06472657] with name 'keras_tensor' ..." (the tail of the dump)
    text = failure_line("ValueError", EAGER_VALUES)
    assert text == ("ValueError: Invalid input shape for input [...] with name 'keras_tensor' and path ''. "
                    "Expected shape (None, 32), but input has incompatible shape (32,)")
    # a shape in brackets is kept
    assert "shape[4096,4096]" in failure_line("ResourceExhaustedError", "OOM when allocating tensor with "
                                              "shape[4096,4096] and type float")


# tf-keras, a layer's op error (keras.io's masked autoencoder's patches, called on one
# image where it takes a batch): tf-keras closes with "Call arguments received by layer"
TF_KERAS_CALL_ARGUMENTS = (
    "Exception encountered when calling layer 'patches' (type Patches).\n\n{{function_node "
    "__wrapped__ExtractImagePatches_device_/job:localhost/replica:0/task:0/device:CPU:0}} input must be "
    "4-dimensional[32,32,3] [Op:ExtractImagePatches] name: \n\nCall arguments received by layer 'patches' "
    "(type Patches):\n  \u2022 images=tf.Tensor(shape=(32, 32, 3), dtype=float32)")


def test_tf_keras_call_arguments_do_not_take_the_line():
    # before: "Call arguments received by layer 'patches' (type Patches):", and nothing of the error
    assert failure_line("InvalidArgumentError", TF_KERAS_CALL_ARGUMENTS) == (
        "InvalidArgumentError: input must be 4-dimensional[32,32,3]")


def test_a_model_made_before_build_model_is_told_how_to_make_it_there():
    from rung.failures import made_before_problem

    dense = made_before_problem(2, 4, ["sequential/dense/kernel", "sequential/dense/bias"])
    assert dense.startswith("build_model() returned a model whose variables were made before it was called (2 of its "
                            "4 variables: sequential/dense/kernel, sequential/dense/bias)")
    assert dense.endswith("make the model, every layer of it, inside build_model()")
    # keras.io's structured data: a Normalization adapted at import (Keras 3 names; tf-keras adds ":0")
    for names in (["normalization/mean", "normalization/variance", "normalization/count"],
                  ["normalization/mean:0", "normalization/variance:0", "normalization/count:0", "dense/kernel:0"]):
        said = made_before_problem(len(names), 9, names)
        assert said.endswith("(a Normalization adapted when the file is imported: adapt it there, or give it mean= "
                             "and variance=)")
    assert ", ..." in made_before_problem(4, 9, ["a", "b", "c", "d"])


def test_what_make_dataset_returned_instead_of_a_dataset_says_what_to_build():
    from rung.failures import not_a_dataset_problem

    class Batches:  # a keras.utils.Sequence's shape: indexed batches with a length
        def __getitem__(self, i):
            return i

        def __len__(self):
            return 1

    assert not_a_dataset_problem(32, ([1], [2])).endswith("wrap the arrays, "
                                                          "tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)")
    said = not_a_dataset_problem(32, Batches())
    assert said.startswith("make_dataset(32) returned Batches; expected a tf.data.Dataset of (features, labels) batches: "
                           "a keras.utils.Sequence (PyDataset) feeds one process's fit")
    assert not_a_dataset_problem(8, object()) == ("make_dataset(8) returned object; expected a tf.data.Dataset of "
                                                  "(features, labels) batches")

    def make_dataset(batch_size, input_context=None):  # a script's generator
        while True:
            yield [0] * batch_size, [0] * batch_size

    assert ("make_dataset is a Python generator (it yields)" in not_a_dataset_problem(32, make_dataset(32))
            and "tf.data.Dataset.from_generator(gen, output_signature=(...))" in not_a_dataset_problem(32, make_dataset(32)))
