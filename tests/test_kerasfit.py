"""rung.kerasfit: which workload files import Keras 3 itself (pure: no TensorFlow)."""

from __future__ import annotations

import pytest

from rung.kerasfit import keras3_import_problem, keras3_imports


def test_imports_of_keras_3_itself_are_found_with_their_lines():
    source = "\n".join([
        "import os",
        "import keras",                                  # line 2
        "from keras import layers, ops",                 # line 3
        "import tensorflow as tf",
        "from tensorflow import keras as tfk",           # tf.keras: follows TF_USE_LEGACY_KERAS
        "import tf_keras",
        "from tensorflow.keras import layers as L",
        "import keras_nlp",                              # another package, not Keras
        "def build():",
        "    from keras.layers import Dense",            # line 10, inside a function
        "    import keras.src.ops as o, numpy",          # line 11
        "    from .keras import x",                      # a relative import of the user's own
    ])
    assert keras3_imports(source) == ["import keras (line 2)", "from keras import layers, ops (line 3)",
                                      "from keras.layers import Dense (line 10)", "import keras.src.ops (line 11)"]


def test_a_file_on_tf_keras_or_one_that_does_not_parse_has_none():
    assert keras3_imports("import tensorflow as tf\nmodel = tf.keras.Sequential()\n") == []
    assert keras3_imports("import keras(\n") == []  # its import says what is wrong


def test_the_problem_names_the_first_import_and_the_fix():
    text = keras3_import_problem(["import keras (line 2)", "from keras import ops (line 3)"])
    assert "import keras (line 2), ..." in text and "from tensorflow import keras" in text


def test_imports_of_tf_keras_itself_are_found_apart_from_keras_3():
    from rung.kerasfit import tf_keras_imports

    source = "import tensorflow as tf\nimport tf_keras as keras\nfrom tf_keras import layers\nimport keras\n"
    assert tf_keras_imports(source) == ["import tf_keras (line 2)", "from tf_keras import layers (line 3)"]
    assert keras3_imports(source) == ["import keras (line 4)"]
    assert tf_keras_imports("from tensorflow import keras\n") == []


def test_tf_keras_legacy_optimizers_make_a_tf_keras_model_and_say_why():
    """tf.keras.optimizers.legacy.Adam: Keras 3 refuses it ("`keras.optimizers.legacy` is not
    supported in Keras 3"), so the file is run on tf-keras everywhere, as one importing tf_keras."""
    from rung.kerasfit import tf_keras_imports, tf_keras_reason

    source = "\n".join([
        "import tensorflow as tf",
        "from tensorflow.keras.optimizers.legacy import SGD",          # line 2
        "opt = tf.keras.optimizers.legacy.Adam(1e-3)",                  # line 3
        "other = tf.keras.optimizers.Adam(1e-3)",                       # Keras 3's: not claimed
    ])
    found = tf_keras_imports(source)
    assert found == ["from tensorflow.keras.optimizers.legacy import SGD (line 2)", "optimizers.legacy (line 3)"]
    assert tf_keras_reason(found) == ("the workload uses tf-keras's legacy optimizers (from tensorflow.keras.optimizers"
                                      ".legacy import SGD (line 2)), which Keras 3 does not have")
    assert tf_keras_reason(["import tf_keras (line 2)"]) == "the workload imports tf_keras itself (import tf_keras (line 2))"


def test_calls_that_compile_with_xla_are_found_with_their_lines():
    from rung.kerasfit import jit_compile_calls

    source = "\n".join([
        "import tensorflow as tf",
        "m.compile(optimizer='adam', loss='mse', jit_compile=True)",   # line 2
        "m.compile(optimizer='adam', jit_compile=False)",              # off: not XLA
        "m.compile(jit_compile=flag)",                                  # unknown until it runs: not claimed
        "step = tf.function(train, jit_compile=True)",                 # line 5
        "m.compile(jit_compile=None)",
    ])
    assert jit_compile_calls(source) == ["compile(jit_compile=True) (line 2)", "function(jit_compile=True) (line 5)"]
    assert jit_compile_calls("m.compile(optimizer='adam')") == []
    assert jit_compile_calls("def broken(:") == []


def test_calls_that_name_the_mixed_float16_policy_are_found_with_their_lines():
    from rung.kerasfit import mixed_float16_calls

    source = "\n".join([
        "import tensorflow as tf",
        "tf.keras.mixed_precision.set_global_policy('mixed_float16')",      # line 2
        "p = mixed_precision.Policy(name='mixed_float16')",                  # line 3: by keyword
        "tf.keras.layers.Dense(4, dtype='mixed_bfloat16')",                  # bfloat16: no loss scaling
        "set_global_policy(POLICY)",                                         # a variable: not claimed
        "print('mixed_float16')",                                            # line 6: a literal is a literal
    ])
    assert mixed_float16_calls(source) == ["set_global_policy('mixed_float16') (line 2)",
                                           "Policy('mixed_float16') (line 3)", "print('mixed_float16') (line 6)"]
    assert mixed_float16_calls("def broken(:") == []
    # a name the file assigns the literal is followed; one it computes is not claimed
    named = "\n".join([
        "POLICY = 'mixed_float16'",
        "OTHER = 'float32'",
        "tf.keras.mixed_precision.set_global_policy(POLICY)",                # line 3
        "tf.keras.mixed_precision.set_global_policy(OTHER)",
        "tf.keras.mixed_precision.set_global_policy(os.environ['POLICY'])",
    ])
    assert mixed_float16_calls(named) == ["set_global_policy(POLICY='mixed_float16') (line 3)"]


def test_calls_that_put_python_into_a_pipeline_are_found_with_their_lines():
    from rung.kerasfit import python_input_calls

    source = "\n".join([
        "import tensorflow as tf",
        "ds = tf.data.Dataset.from_generator(gen, output_signature=spec)",       # line 2
        "ds = ds.map(lambda x: tf.py_function(f, [x], tf.float32))",             # line 3
        "ds = ds.map(lambda x: tf.numpy_function(f, [x], tf.float32))",          # line 4
        "ds = ds.map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)",     # TensorFlow ops only
    ])
    assert python_input_calls(source) == ["from_generator (line 2)", "py_function (line 3)",
                                          "numpy_function (line 4)"]
    assert python_input_calls("ds = tf.data.Dataset.from_tensor_slices(x)") == []
    assert python_input_calls("def broken(:") == []


def test_calls_that_run_eagerly_are_found_with_their_lines():
    from rung.kerasfit import jit_compile_calls, run_eagerly_calls

    source = "\n".join([
        "m.compile(optimizer='adam', run_eagerly=False)",
        "m.compile(optimizer='adam', loss='mse',",
        "          run_eagerly=True)",                                   # the call starts on line 2
        "m.compile(run_eagerly=debug)",                                  # a variable: not claimed
    ])
    assert run_eagerly_calls(source) == ["compile(run_eagerly=True) (line 2)"]
    assert run_eagerly_calls("tf.config.run_functions_eagerly(True)\ntf.config.run_functions_eagerly(False)\n") == \
        ["run_functions_eagerly(True) (line 1)"]
    assert jit_compile_calls(source) == []                               # each keyword its own
    assert run_eagerly_calls("m.compile(jit_compile=True)") == [] and run_eagerly_calls("def broken(:") == []


def test_ragged_or_sparse_inputs_put_a_mirrored_run_on_tf_keras():
    """Keras 3's mirrored fit fails on ragged and sparse batches (reproduced with TF 2.21);
    tf-keras runs them. Multi-worker and parameter servers are on tf-keras anyway."""
    from rung.bench.plan import keras_for
    from rung.kerasfit import keras3_mirrored_failures, runs_on_tf_keras

    [(code, what)] = keras3_mirrored_failures(ragged_or_sparse_inputs=True)
    assert code == "RAGGED_OR_SPARSE_INPUTS" and "'RaggedTensor' object has no attribute 'device'" in what
    assert runs_on_tf_keras("mirrored", ragged_or_sparse_inputs=True) and not runs_on_tf_keras("mirrored")
    assert not runs_on_tf_keras("single_device", ragged_or_sparse_inputs=True)
    # a one-host plan runs where its step was measured: tf-keras when rung advise found it faster there
    assert runs_on_tf_keras("single_device", step_keras="tf_keras")
    assert runs_on_tf_keras("mirrored", step_keras="tf_keras")
    assert not runs_on_tf_keras("single_device", step_keras="keras3")
    assert not runs_on_tf_keras("tpu", step_keras="tf_keras")
    assert keras_for("mirrored", {"ragged_or_sparse_inputs": True}) == "tf_keras"
    assert keras_for("mirrored", {"ragged_or_sparse_inputs": False}) == "keras3"


def test_clipping_puts_a_mirrored_run_on_tf_keras_unless_the_file_is_keras_3s():
    """Keras 3 clips each replica's share under MirroredStrategy; tf-keras clips the sum
    (tests/measure/test_profile.py measures both). The calls are read with their lines."""
    from rung.bench.plan import keras_for
    from rung.kerasfit import clipping_calls, clipping_moves_to_tf_keras, keras3_mirrored_failures

    source = "\n".join([
        "opt = keras.optimizers.AdamW(1e-3,",
        "                             clipnorm=1.0)",                   # the call starts on line 1
        "sgd = SGD(clipvalue=0)",                                       # 0: no clipping
        "sgd = SGD(global_clipnorm=limit)",                             # a variable: not claimed
        "m.compile(optimizer=Adam(global_clipnorm=2))",
    ])
    assert clipping_calls(source) == ["AdamW(clipnorm=1.0) (line 1)", "Adam(global_clipnorm=2) (line 5)"]
    [(code, what)] = keras3_mirrored_failures(gradient_clipping="clipnorm=1")
    assert code == "CLIPPING_PER_REPLICA" and "clipnorm=1" in what and "2.00x" in what
    assert keras_for("mirrored", {"gradient_clipping": "clipnorm=1"}) == "tf_keras"
    assert keras_for("single_device", {"gradient_clipping": "clipnorm=1"}) == "keras3"
    assert clipping_moves_to_tf_keras("clipnorm=1", keras3_import=True) is None


def test_clipping_calls_in_a_train_step_are_found_with_their_lines():
    from rung.kerasfit import step_clipping_calls

    source = "\n".join([
        "class GAN(keras.Model):",
        "    def train_step(self, data):",
        "        grads = [tf.clip_by_value(g, -1, 1) for g in grads]",       # line 3
        "        preds = keras.ops.clip(preds, 0, 1)",                          # not a gradient clip's name
        "        grads, _ = clip_by_global_norm(grads, 5.0)",                   # line 5, imported bare
        "    def test_step(self, data):",
        "        tf.clip_by_norm(g, 1.0)",                                      # not the train step
        "def train_step(model):",
        "    tf.clip_by_norm(g, 1.0)",                                          # not a method
    ])
    assert step_clipping_calls(source) == ["GAN.train_step: tf.clip_by_value (line 3)",
                                           "GAN.train_step: clip_by_global_norm (line 5)"]
    assert step_clipping_calls("def broken(:") == []


def test_compiled_losses_the_file_defines_are_found_and_keras_own_are_not():
    from rung.kerasfit import compiled_loss_calls

    source = "\n".join([
        "import keras",
        "class Focal(keras.losses.Loss):",
        "    def call(self, y, p): return y",
        "def smooth_l1(y, p): return y",
        "mse = keras.losses.MeanSquaredError()",
        "a.compile(optimizer='adam', loss=smooth_l1)",                            # line 6
        "b.compile(loss={'box': smooth_l1, 'cls': Focal(gamma=2), 'aux': 'mse'})",  # line 7
        "c.compile(loss=['mse', keras.losses.Huber()])",                        # Keras's own
        "d.compile(loss=mse)",                                                  # a Keras loss by a name
        "e.compile(loss=keras.losses.mean_squared_error)",
        "f.fit(x, loss=smooth_l1)",                                             # not compile
        "g.compile(loss=lambda y, p: tf.reduce_mean(tf.abs(y - p)))",           # line 12
    ])
    assert compiled_loss_calls(source) == ["compile(loss=smooth_l1) (line 6)",
                                           "compile(loss=smooth_l1, Focal) (line 7)",
                                           "compile(loss=<lambda>) (line 12)"]
    assert compiled_loss_calls("def broken(:") == []


def test_losses_made_to_sum_over_the_batch_are_found_by_their_reduction():
    from rung.kerasfit import summed_loss_calls

    source = "\n".join([
        "import keras, tf_keras",
        "a = keras.losses.MeanSquaredError(reduction='sum')",                  # line 2
        "b = keras.losses.SparseCategoricalCrossentropy(reduction='none')",    # line 3
        "c = tf_keras.losses.Huber(reduction=tf_keras.losses.Reduction.SUM)",  # line 4
        "d = keras.losses.MeanSquaredError()",
        "e = keras.losses.MeanSquaredError(reduction='sum_over_batch_size')",
        "f = keras.losses.MeanSquaredError(reduction=REDUCTION)",              # not known from the text
        "g = keras.losses.Huber(reduction=tf_keras.losses.Reduction.AUTO)",
    ])
    assert summed_loss_calls(source) == ["MeanSquaredError(reduction='sum') (line 2)",
                                         "SparseCategoricalCrossentropy(reduction='none') (line 3)",
                                         "Huber(reduction='sum') (line 4)"]
    assert summed_loss_calls("def broken(:") == []


@pytest.mark.parametrize("source,expect", [
    ("x = 1", (None, None)),
    ("BATCH_SIZE = 64", (64, None)),
    ("BATCH_SIZE = 32 * 4", (128, None)),
    ("BATCH_SIZE: int = 16", (16, None)),
    ("BATCH_SIZE = 8\nBATCH_SIZE = 24", (24, None)),  # the last one is the module's
    ("BATCH_SIZE = None", (None, None)),
    ("if __name__ == '__main__':\n    BATCH_SIZE = 7", (None, None)),  # not set on import
    ('BATCH_SIZE = "32"', (None, 'BATCH_SIZE = "32" (line 1) is not a whole number')),
    ("BATCH_SIZE = 64.0", (None, "BATCH_SIZE = 64.0 (line 1) is not a whole number")),
    ("BATCH_SIZE = 0", (None, "BATCH_SIZE = 0 (line 1) is not a batch; expected a whole number of at least 1")),
    ("BATCH_SIZE = 32 * strategy.num_replicas_in_sync",
     (None, "BATCH_SIZE = 32 * strategy.num_replicas_in_sync (line 1) is not a whole number rung can read without "
            "running the file")),
    ("import os\nBATCH_SIZE = int(os.environ.get('BS', 64))", (None, "BATCH_SIZE = int(os.environ.get('BS', 64)) "
                                                               "(line 2) is not a whole number rung can read")),
])
def test_the_files_batch_size_is_read_without_running_it(source, expect):
    from rung.kerasfit import file_batch_size

    n, why = file_batch_size(source)
    assert n == expect[0] and (why is None if expect[1] is None else why.startswith(expect[1])), (n, why)


@pytest.mark.parametrize("source,batch,said", [
    ("batch_size = 64", 32, 64),  # keras.io's way: the bench's step at 32 is told of 64
    ("batch_size = 16 * 4", 32, 64),
    ("batch_size = 32", 32, None),  # the batch it ran at: nothing to say
    ("BATCH_SIZE = 8\nbatch_size = 64", 8, None),  # rung's own name wins, and was used
    ("batch_size = 64.0", 32, None),  # not a batch rung can give
    ("batch_size = 8 * strategy.num_replicas_in_sync", 32, None),
    ("x = 1", 32, None),
])
def test_the_bench_names_the_batch_size_a_file_keeps_under_keras_ios_name(tmp_path, source, batch, said):
    """`rung bench` and `rung launch` read the file without importing it (no TensorFlow in
    their process)."""
    from rung.kerasfit import batch_hint, file_kept_batch

    path = tmp_path / "w.py"
    path.write_text(source + "\n")
    assert file_kept_batch(path, batch) == said
    if said:  # what a run that fails on its shapes adds (a run that goes through: a note, tests of bench and launch)
        assert batch_hint(said, batch) == (
            f"the file sets batch_size = {said} and rung ran batches of {batch}, its default (it reads a "
            f"file's batch from BATCH_SIZE): give --batch {said}, or name it BATCH_SIZE")


def test_a_batch_size_that_is_not_a_batch_is_refused_when_the_file_runs(tmp_path):
    """rung profile reads BATCH_SIZE from the imported module: "32" or 0 was taken as 32
    without a word."""
    from rung.errors import InputError
    from rung.measure.workload import load_workload

    for text, ok in (('BATCH_SIZE = "32"', None), ("BATCH_SIZE = 0", None), ("BATCH_SIZE = 8 * 2", 16), ("", 32)):
        path = tmp_path / f"w{abs(hash(text))}.py"
        path.write_text(text + "\ndef build_model():\n    pass\ndef make_dataset(batch_size):\n    pass\n")
        w = load_workload(path)
        if ok:
            assert w.default_batch == ok
        else:
            with pytest.raises(InputError, match="BATCH_SIZE is .*; expected a whole number of at least 1"):
                w.default_batch


def test_assign_in_a_metrics_update_state_is_found_and_assign_add_is_not():
    from rung.kerasfit import assigning_metric_calls

    source = "\n".join([
        "class Top(keras.metrics.Metric):",
        "    def update_state(self, y, p, sample_weight=None):",
        "        self.top.assign(tf.maximum(self.top, 1.0))",        # line 3
        "        self.count.assign_add(1.0)",                        # sums right
        "        self.total.assign(self.total + 2.0)",               # so does this
        "        self.seen.assign(tf.add(x, self.seen))",            # and this
        "        self.ema.assign(self.ema * 0.9 + 0.1)",             # line 7: not an accumulation
        "    def reset_state(self):",
        "        self.top.assign(0.0)",                              # not an update
        "class Averaged(Metric):",
        "    def __init__(self):",
        "        self.v = self.add_variable((), 'zeros', aggregation='mean')",
        "    def update_state(self, y, p):",
        "        self.v.assign(1.0)",                                # its own aggregation
        "class Layer(keras.layers.Layer):",
        "    def update_state(self, x):",
        "        self.v.assign(x)",                                  # not a metric
    ])
    assert assigning_metric_calls(source) == ["Top.update_state: self.top.assign (line 3)",
                                              "Top.update_state: self.ema.assign (line 7)"]
    assert assigning_metric_calls("def broken(:") == []


def test_calls_that_divide_the_batch_by_the_replicas_are_found_with_their_lines():
    from rung.kerasfit import per_replica_batch_calls

    source = "\n".join([
        "def make_dataset(batch_size, input_context=None):",
        "    if input_context:",
        "        batch_size = input_context.get_per_replica_batch_size(batch_size)",  # line 3
        "    return ds.batch(batch_size)",
    ])
    assert per_replica_batch_calls(source) == ["get_per_replica_batch_size (line 3)"]
    assert per_replica_batch_calls("ds = ds.batch(batch_size)") == []


def test_recurrent_layers_made_stateful_are_found_with_their_lines():
    from rung.kerasfit import stateful_calls

    source = "\n".join([
        "x = tf.keras.layers.GRU(32, stateful=True)(inp)",
        "y = tf.keras.layers.LSTM(8, stateful=False, return_sequences=True)(x)",
        "z = keras.layers.SimpleRNN(4, stateful=STATEFUL)(y)",  # a name, not the literal: not read
    ])
    assert stateful_calls(source) == ["GRU(stateful=True) (line 1)"]


def test_optimizers_built_to_accumulate_are_found_with_their_lines():
    from rung.kerasfit import accumulation_calls

    source = "\n".join([
        "opt = keras.optimizers.Adam(1e-3, gradient_accumulation_steps=4)",
        "sgd = tf.keras.optimizers.SGD(gradient_accumulation_steps=1)",  # 1: no accumulation
        "adamw = AdamW(gradient_accumulation_steps=STEPS)",  # a name, not a literal: not read
    ])
    assert accumulation_calls(source) == ["Adam(gradient_accumulation_steps=4) (line 1)"]


def test_strategies_the_file_makes_where_rung_runs_it_are_found_with_their_lines(tmp_path):
    """A file written after a try at distributing by hand. What rung runs of it: its top
    level, build_model(), make_dataset() and the file's functions they call; not a
    `__main__` block, nor a function nothing of those calls."""
    from rung.kerasfit import strategy_calls

    source = "\n".join([
        "import tensorflow as tf",
        "from tensorflow.distribute import OneDeviceStrategy",
        "strategy = tf.distribute.MirroredStrategy()",  # line 3: at import
        "def pick():",
        "    return tf.distribute.experimental.ParameterServerStrategy(resolver)",  # line 5: build_model calls it
        "def build_model():",
        "    with pick().scope():",
        "        return tf.keras.Sequential([])",
        "def make_dataset(batch_size, input_context=None):",
        "    one = OneDeviceStrategy('/cpu:0')",  # line 10
        "    return tf.data.Dataset.range(4)",
        "def train_by_hand():",  # the team's own: rung never calls it
        "    return tf.distribute.MultiWorkerMirroredStrategy()",
        "class Trainer:",
        "    strategy = tf.distribute.TPUStrategy(r)",  # line 15: a class's body runs at import
        "    def fit(self):",
        "        return tf.distribute.MirroredStrategy()",  # its method does not
        "if __name__ == '__main__':",
        "    s = tf.distribute.MirroredStrategy()",
        "print(tf.distribute.get_strategy())",  # the current one, not a new one
    ])
    assert strategy_calls(source) == ["MirroredStrategy (line 3)", "ParameterServerStrategy (line 5)",
                                      "OneDeviceStrategy (line 10)", "TPUStrategy (line 15)"]
    assert strategy_calls("import tensorflow as tf\ndef build_model():\n    return tf.keras.Sequential([])") == []
    (tmp_path / "dist.py").write_text("import tensorflow as tf\n\nSTRATEGY = tf.distribute.MirroredStrategy()\n")
    assert strategy_calls("from dist import STRATEGY\n", tmp_path) == ["MirroredStrategy (dist.py, line 3)"]


def test_keras_fits_where_rung_runs_the_file_are_found_and_other_fits_are_not():
    """A script that became a workload: its fit at the top trains the model in every process
    rung starts. Found where rung runs the file (as strategies are); only a fit with a
    keyword Keras's alone takes, or of what the file's text shows is a Keras model, is claimed."""
    from rung.kerasfit import file_problem, fit_calls

    source = "\n".join([
        "import tensorflow as tf",
        "scaler = StandardScaler().fit(x)",                 # scikit-learn's: not claimed
        "def pretrain(m):",
        "    m.fit(x, y, steps_per_epoch=10)",               # line 4: build_model calls it
        "def build_model():",
        "    m = tf.keras.Sequential([])",
        "    pretrain(m)",
        "    return m",
        "def make_dataset(batch_size, input_context=None):",
        "    return None",
        "history = build_model().fit(x, y, epochs=3, batch_size=32)",  # line 11: at import
        "def main():",
        "    model.fit(x, epochs=3)",                          # the team's own: rung never calls it
        "if __name__ == '__main__':",
        "    model.fit(x, y, epochs=30)",
        "model.fit(ds)",                          # no Keras keyword, and nothing says model is one: not claimed
    ])
    assert fit_calls(source) == ["m.fit (line 4)", "fit (line 11)"]
    assert file_problem(source).startswith("the file trains a model where rung runs it (m.fit (line 4), fit (line 11))")
    assert file_problem("import tensorflow as tf\nmodel.fit(x, epochs=2)\ns = tf.distribute.MirroredStrategy()\n") \
        .startswith("the file constructs a tf.distribute strategy of its own")  # the strategy first: it crashes
    assert file_problem("def build_model():\n    pass\n") is None
    # a bare fit of what is a Keras model by the file's own text: a name it compiles, one
    # assigned from build_model(), build_model() itself; on an endless dataset that fit never
    # returns. A bare fit of anything else is still not claimed
    source = "\n".join([
        "import tensorflow as tf",
        "def build_model():",
        "    return tf.keras.Sequential([])",
        "def make_dataset(batch_size, input_context=None):",
        "    return None",
        "net = tf.keras.Sequential([])",
        "net.compile('sgd', 'mse')",
        "net.fit(ds)",                                         # line 8: compiled
        "model = build_model()",
        "model.fit(make_dataset(32))",                         # line 10: from build_model()
        "build_model().fit(ds)",                               # line 11
        "scaler.fit(x)",                                       # not a model by the text: not claimed
        "km = KMeans(3)",
        "km.fit(x)",
    ])
    assert fit_calls(source) == ["net.fit (line 8)", "model.fit (line 10)", "fit (line 11)"]


def test_a_session_cleared_where_rung_builds_the_model_is_found_and_one_at_the_top_is_not():
    """Notebooks call clear_session() before building a model. At the top of the file it is
    harmless; in build_model() (or a function it calls) it runs inside each run's strategy
    scope and resets the graph that scope lives in."""
    from rung.kerasfit import clear_session_calls, file_problem

    source = "\n".join([
        "import tensorflow as tf",
        "tf.keras.backend.clear_session()",               # the top: not claimed
        "def fresh():",
        "    keras.backend.clear_session()",              # line 4: build_model calls it
        "def build_model():",
        "    fresh()",
        "    tf.keras.backend.clear_session()",           # line 7
        "    return tf.keras.Sequential([])",
        "def make_dataset(batch_size, input_context=None):",
        "    return None",
        "def main():",
        "    tf.keras.backend.clear_session()",           # the team's own: rung never calls it
    ])
    assert clear_session_calls(source) == ["clear_session (line 4)", "clear_session (line 7)"]
    assert file_problem(source).startswith("the file clears Keras's session where rung builds the model "
                                           "(clear_session (line 4), clear_session (line 7)): ")
    assert clear_session_calls("import tensorflow as tf\ntf.keras.backend.clear_session()\n") == []


def test_a_models_own_train_step_and_compute_loss_are_found_with_their_lines():
    from rung.kerasfit import own_step_defs

    source = "\n".join([
        "class Siamese(tf.keras.Model):",
        "    def call(self, x):",
        "        return x",
        "    def train_step(self, data):",  # line 4
        "        return {}",
        "def train_step(data):",  # a function of the file, not a model's method: not read
        "    pass",
        "class Net(keras.Model):",
        "    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):",  # line 9
        "        return 0.0",
    ])
    assert own_step_defs(source) == ["Siamese.train_step (line 4)", "Net.compute_loss (line 9)"]
    assert own_step_defs("model = tf.keras.Sequential([])") == []
    assert own_step_defs("class (") == []  # not Python: its import says so


def test_a_models_own_step_in_a_module_beside_the_workload_is_found(tmp_path):
    from rung.kerasfit import own_step_defs

    (tmp_path / "models.py").write_text("import os\nfrom pkg import nets\n"
                                        "class Siamese:\n    def train_step(self, data):\n        return {}\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "nets.py").write_text("import models  # read once\n\nclass Net:\n"
                                               "    def compute_loss(self, *a):\n        return 0.0\n")
    source = "import tensorflow as tf\nfrom models import Siamese\nimport not_here\n"
    assert own_step_defs(source, tmp_path) == ["Siamese.train_step (models.py, line 4)",
                                               "Net.compute_loss (pkg/nets.py, line 4)"]
    assert own_step_defs(source) == []  # without the folder: the file alone


def test_every_reader_reads_the_modules_the_workload_imports_from_its_folder(tmp_path):
    """A team's model in models.py beside the workload: before, only own_step_defs read it.
    A sibling `import tf_keras as keras` left profile on Keras 3, which then refused the
    model and said to leave --keras out so rung would choose tf-keras (it had been left out);
    a sibling `import keras` went unwarned by init under multi-worker."""
    from rung import kerasfit

    (tmp_path / "models.py").write_text("\n".join([
        "import keras",                                                     # line 1
        "import tf_keras as tfk",
        "from nets import layers_of",
        "def make(strategy):",
        "    model = tfk.Sequential([tfk.layers.GRU(4, stateful=True)])",  # line 5
        "    model.compile(jit_compile=True, run_eagerly=True,",
        "                  optimizer=tfk.optimizers.Adam(gradient_accumulation_steps=4))",
        "    return model",
    ]) + "\n")
    (tmp_path / "nets.py").write_text("import tensorflow as tf\nimport work  # the workload, imported back\n"
                                      "def layers_of(ctx):\n"
                                      "    ds = tf.data.Dataset.from_generator(lambda: iter([]), output_signature=None)\n"
                                      "    return ctx.get_per_replica_batch_size(64)\n")
    # the workload, read once although nets.py imports it back
    source = "import tensorflow as tf\nfrom models import make\nimport keras\n"
    (tmp_path / "work.py").write_text(source)
    assert kerasfit.keras3_imports(source, tmp_path) == ["import keras (line 3)", "import keras (models.py, line 1)"]
    source = "import tensorflow as tf\nfrom models import make\n"
    (tmp_path / "work.py").write_text(source)
    assert kerasfit.keras3_imports(source, tmp_path) == ["import keras (models.py, line 1)"]
    assert kerasfit.tf_keras_imports(source, tmp_path) == ["import tf_keras (models.py, line 2)"]
    assert kerasfit.stateful_calls(source, tmp_path) == ["GRU(stateful=True) (models.py, line 5)"]
    assert kerasfit.jit_compile_calls(source, tmp_path) == ["compile(jit_compile=True) (models.py, line 6)"]
    assert kerasfit.run_eagerly_calls(source, tmp_path) == ["compile(run_eagerly=True) (models.py, line 6)"]
    assert kerasfit.accumulation_calls(source, tmp_path) == [
        "Adam(gradient_accumulation_steps=4) (models.py, line 7)"]
    # and a module the sibling imports in turn
    assert kerasfit.python_input_calls(source, tmp_path) == ["from_generator (nets.py, line 4)"]
    assert kerasfit.per_replica_batch_calls(source, tmp_path) == ["get_per_replica_batch_size (nets.py, line 5)"]
    # without the folder, the workload's text alone: none of them
    for reader in (kerasfit.keras3_imports, kerasfit.tf_keras_imports, kerasfit.stateful_calls,
                   kerasfit.jit_compile_calls, kerasfit.python_input_calls):
        assert reader(source) == []
    # the workload's own findings come first, then its modules', each in line order
    assert kerasfit.keras3_imports("from models import make\nfrom keras import ops\n", tmp_path) == [
        "from keras import ops (line 2)", "import keras (models.py, line 1)"]


def test_a_package_beside_the_workload_is_read_through_its_relative_imports(tmp_path):
    """`from team.model import Net`, where team/model.py says `from .blocks import Block` and
    team/blocks.py holds the train_step: Python runs team/__init__.py, team/model.py and
    team/blocks.py, and so are they read. A relative import that leaves the folder is not."""
    from rung.kerasfit import keras3_imports, own_step_defs

    root = tmp_path / "work"  # the workload's folder
    team = root / "team"
    (team / "sub").mkdir(parents=True)
    (team / "__init__.py").write_text("import keras\n")
    (team / "model.py").write_text("from .blocks import Block\nfrom . import sub\n")
    (team / "blocks.py").write_text("class Block:\n    def train_step(self, data):\n        return {}\n")
    (team / "sub" / "__init__.py").write_text("from ..blocks import Block\nfrom .... import outside\n")
    (tmp_path / "outside.py").write_text("class Out:\n    def train_step(self, data):\n        return {}\n")
    source = "from team.model import Net\n"
    assert keras3_imports(source, root) == ["import keras (team/__init__.py, line 1)"]
    assert own_step_defs(source, root) == ["Block.train_step (team/blocks.py, line 2)"]
    # the workload runs as a script: its own relative import names no package
    assert own_step_defs("from .team.blocks import Block\n", root) == []
