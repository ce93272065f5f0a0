"""`rung profile` on the bundled workloads, with real TensorFlow on this CPU.

Profiles run in-process (TensorFlow imported once); a few subprocess runs check the
command's exit codes and files. Kept short for 2 cores."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from rung.errors import InputError
from rung.examples import workload_examples

pytestmark = [pytest.mark.tf, pytest.mark.serial]
EXAMPLES = workload_examples()
HERE = Path(__file__).parent
STEPS, WARMUP = 12, 2


@pytest.fixture(scope="module")
def profiles():
    from rung.measure.profile import profile
    return {name: profile(EXAMPLES[name], steps=STEPS, warmup=WARMUP)
            for name in ("cnn", "mlp", "recommender", "slow_input", "text")}


def test_profile_v1_fields(profiles):
    required = {"params", "embedding_params", "param_dtype", "mixed_precision", "optimizer",
                "activation_bytes_per_example", "per_device_batch", "step_seconds", "input_wait_seconds",
                "step_time_cv", "dynamic_shapes", "input_bound", "input_wait_fraction", "step_seconds_p50",
                "step_seconds_p95", "gradient_bytes_dense", "gradient_bytes_sparse", "optimizer_slot_bytes",
                "peak_memory_bytes", "device", "tensorflow_version", "keras"}
    for p in profiles.values():
        assert required <= set(p) and p["schema"] == "rung/profile/v1"
        assert p["steps_timed"] == STEPS
        assert 0 < p["step_seconds_p50"] <= p["step_seconds_p95"]
        assert p["input_wait_seconds"] < p["step_seconds"]
        assert p["keras"] == "keras3" and p["tensorflow_version"].startswith("2.21")
        assert p["peak_memory_bytes"] is None and p["activation_bytes_estimated"]  # CPU: estimate only
        json.dumps(p, allow_nan=False)


def test_slow_input_is_input_bound_and_the_fast_one_is_not(profiles):
    slow, fast = profiles["slow_input"], profiles["cnn"]
    assert slow["input_bound"] and slow["input_wait_fraction"] >= 0.2
    assert not fast["input_bound"] and fast["input_wait_fraction"] < 0.2
    codes = {f["code"] for f in slow["pipeline"]["findings"]}
    assert {"NO_PREFETCH", "SEQUENTIAL_MAP"} <= codes
    assert not {"NO_PREFETCH", "SEQUENTIAL_MAP"} & {f["code"] for f in fast["pipeline"]["findings"]}


def test_a_plan_to_fix_the_pipeline_names_what_the_profile_found_in_it(profiles):
    """rung advise of an input-bound workload said fix_input_pipeline with a generic snippet
    (interleave, map, cache, batch, prefetch) and left out what the profile had found in
    the user's own pipeline; a plan that is not about the pipeline does not carry them."""
    from types import SimpleNamespace

    import rung.examples
    from rung.cli._decide import decide
    from rung.model.comm import DEFAULT_LINKS
    from rung.spec.profile import Profile

    def advised(name, profile):
        args = SimpleNamespace(workload=f"{name}.py", scenario=None, example=None,
                               hardware=str(Path(rung.examples.__file__).parent / "hardware.yaml"), device=None,
                               devices_per_host=None, max_hosts=None, inter_host_gbps=None, target=None,
                               reproducible=None, preemptible=None, target_step_seconds=None, step_time_cv=None,
                               keras="keras3")
        return decide(args, DEFAULT_LINKS, profile=Profile.model_validate(profile))[1]

    slow = advised("slow_input", profiles["slow_input"])
    found = [f["code"] for f in profiles["slow_input"]["pipeline"]["findings"]
             if f["code"] in ("NO_PREFETCH", "SEQUENTIAL_MAP", "SEQUENTIAL_INTERLEAVE", "PYTHON_IN_PIPELINE", "NO_CACHE")]
    assert slow.verdict == "fix_input_pipeline" and {"NO_PREFETCH", "SEQUENTIAL_MAP"} <= set(found)
    assert [f.code for f in slow.warnings if f.code in found] == found
    [prefetch] = [f.message for f in slow.warnings if f.code == "NO_PREFETCH"]
    assert ".prefetch(tf.data.AUTOTUNE)" in prefetch and "make_dataset's pipeline" in prefetch
    # the same findings on a fed pipeline would be noise beside a plan about devices
    d = advised("cnn", {**profiles["cnn"], "pipeline": profiles["slow_input"]["pipeline"]})
    assert d.verdict != "fix_input_pipeline" and not {"NO_PREFETCH", "SEQUENTIAL_MAP"} & set(d.codes)


@pytest.mark.parametrize("name,params,embedding", [
    ("cnn", 136_874, 0), ("mlp", 399_370, 0), ("recommender", 4_804_225, 4_800_000),
    ("slow_input", 66_250, 0), ("text", 80_017, 80_000),
])
def test_exact_parameter_counts(profiles, name, params, embedding):
    assert profiles[name]["params"] == params          # hand counts in each file's docstring
    assert profiles[name]["embedding_params"] == embedding


def test_optimizer_kind_and_slot_bytes(profiles):
    assert (profiles["cnn"]["optimizer"], profiles["cnn"]["optimizer_slot_bytes"]) == ("momentum", 136_874 * 4)
    assert (profiles["mlp"]["optimizer"], profiles["mlp"]["optimizer_slot_bytes"]) == ("adam", 399_370 * 8)
    assert (profiles["recommender"]["optimizer"], profiles["recommender"]["optimizer_slot_bytes"]) == \
        ("adagrad", 4_804_225 * 4)
    assert (profiles["slow_input"]["optimizer"], profiles["slow_input"]["optimizer_slot_bytes"]) == ("sgd", 0)


def test_recommender_gradients_split_dense_and_sparse(profiles):
    p = profiles["recommender"]
    batch = p["per_device_batch"]
    # two tables: batch rows of 32 float32 values and batch int32 indices each
    assert p["gradient_bytes_sparse"] == 2 * (batch * 32 * 4 + batch * 4)
    assert p["gradient_bytes_dense"] == (64 * 64 + 64 + 64 + 1) * 4
    assert profiles["mlp"]["gradient_bytes_sparse"] == 0
    assert profiles["mlp"]["gradient_bytes_dense"] == 399_370 * 4


@pytest.mark.parametrize("name,params,slots", [("mlp", 399_370, 2), ("cnn", 136_874, 1), ("slow_input", 66_250, 0)])
def test_checkpoint_save_holds_the_model_and_its_optimizer(profiles, name, params, slots):
    # TensorFlow's own checkpoint files: float32 weights and each optimizer slot (Adam 2,
    # momentum 1, SGD none), plus the index and counters (a few KiB)
    p = profiles[name]
    state = params * 4 * (1 + slots)
    assert state <= p["checkpoint_bytes"] <= state + 64 * 1024
    assert 0 < p["checkpoint_seconds"] and p["checkpoint_seconds_first"] > 0


def test_activation_estimate_for_the_mlp(profiles):
    # at least the input and both hidden layers' outputs are kept: (256 + 512 + 512) x 4 bytes
    act = profiles["mlp"]["activation_bytes_per_example"]
    assert 5120 <= act <= 2 * 5120


def test_dynamic_shapes_from_padded_batch(profiles):
    assert profiles["text"]["dynamic_shapes"]
    assert any("unknown non-batch" in d for d in profiles["text"]["dynamic_shape_details"])
    assert not profiles["cnn"]["dynamic_shapes"] and not profiles["recommender"]["dynamic_shapes"]


BAD = {
    "syntax.py": ("def build_model(:\n", "SyntaxError"),
    "importerror.py": ("import not_a_module_rung\n", "ModuleNotFoundError"),
    "nofn.py": ("import tensorflow as tf\ndef build_model():\n    return None\n", "defines no make_dataset()"),
    "notmodel.py": ("import tensorflow as tf\ndef build_model():\n    return 3\n"
                    "def make_dataset(b, input_context=None):\n    return None\n", "returned int"),
    "uncompiled.py": ("import tensorflow as tf\ndef build_model():\n"
                      "    return tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])\n"
                      "def make_dataset(b, input_context=None):\n    return None\n", "not compiled"),
}
MODEL = textwrap.dedent("""\
    import tensorflow as tf
    def build_model():
        m = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
        m.compile(optimizer="sgd", loss="mse")
        return m
    """)
BAD.update({
    "notdataset.py": (MODEL + "def make_dataset(b, input_context=None):\n    return [1, 2]\n", "returned list"),
    "ends.py": (MODEL + "def make_dataset(b, input_context=None):\n"
                "    return tf.data.Dataset.from_tensor_slices((tf.zeros((8, 2)), tf.zeros((8, 1)))).batch(b)\n",
                "is finite (2 batches)"),
    "generator_ends.py": (MODEL + "import numpy as np\n"
                          "def make_dataset(b, input_context=None):\n"
                          "    def gen():\n"
                          "        for _ in range(3):\n"
                          "            yield np.zeros((b, 2), 'float32'), np.zeros((b, 1), 'float32')\n"
                          "    sig = (tf.TensorSpec((b, 2), tf.float32), tf.TensorSpec((b, 1), tf.float32))\n"
                          "    return tf.data.Dataset.from_generator(gen, output_signature=sig)\n",
                          "dataset ended after 3 batches"),
    "batch_over_data.py": (MODEL + "def make_dataset(b, input_context=None):\n"
                           "    ds = tf.data.Dataset.from_tensor_slices((tf.zeros((3, 2)), tf.zeros((3, 1))))\n"
                           "    return ds.batch(b, drop_remainder=True).repeat()\n",
                           "larger than the data"),
    "shape_bug.py": (MODEL + "def make_dataset(b, input_context=None):\n"
                     "    ds = tf.data.Dataset.from_tensor_slices((tf.zeros((64, 3)), tf.zeros((64, 1))))\n"
                     "    return ds.repeat().batch(b)\n",
                     "training step (model.train_step on a batch of make_dataset) failed: ValueError: Input 0"),
    "label_bug.py": (MODEL + "def make_dataset(b, input_context=None):\n"
                     "    ds = tf.data.Dataset.from_tensor_slices((tf.zeros((64, 2)), tf.constant(['cat'] * 64)))\n"
                     "    return ds.repeat().batch(b)\n",
                     "training step (model.train_step on a batch of make_dataset) failed"),
    "wrongbatch.py": (MODEL + "def make_dataset(b, input_context=None):\n"
                      "    return tf.data.Dataset.from_tensor_slices((tf.zeros((64, 2)), tf.zeros((64, 1))))"
                      ".repeat().batch(7)\n", "yielded a batch of 7"),
    "raises.py": (MODEL + "def make_dataset(b, input_context=None):\n    raise ValueError('no data here')\n",
                  "make_dataset() raised ValueError: no data here"),
    # features alone suit a model whose own train_step needs no labels (a VAE), not this one
    "no_labels.py": (MODEL + "def make_dataset(b, input_context=None):\n"
                     "    return tf.data.Dataset.from_tensor_slices(tf.zeros((64, 2))).repeat().batch(b)\n",
                     "make_dataset yields features alone, no labels"),
    # the pipeline forgot .batch(): before, "yielded a batch of 2 examples" (the feature width)
    "unbatched.py": (MODEL + "def make_dataset(b, input_context=None):\n"
                     "    return tf.data.Dataset.from_tensor_slices((tf.zeros((64, 2)), tf.zeros(64))).repeat()\n",
                     "yields single examples, not batches (the labels are scalars (shape ())); end the "
                     "pipeline with .batch(batch_size)"),
    "four_parts.py": (MODEL + "def make_dataset(b, input_context=None):\n"
                      "    x = tf.zeros((64, 2))\n"
                      "    return tf.data.Dataset.from_tensor_slices((x, x, x, x)).repeat().batch(b)\n",
                      "yields tuples of 4; expected (features, labels)"),
})


@pytest.mark.parallel  # asserts nothing on speed
def test_a_file_on_tf_keras_itself_is_profiled_on_tf_keras(tmp_path):
    # before: Keras 3 behind tf.keras, and "build_model() returned Sequential; expected a
    # compiled tf.keras.Model" (exit 2) for a model built with `import tf_keras as keras`.
    # Here the model is in a module beside the workload, as teams keep it: before, only the
    # workload's own text was read, and profile refused the model on Keras 3, saying to leave
    # --keras out so that rung would choose tf-keras (kerasfit's readers test the file itself)
    keras2 = Path(__file__).parent / "workloads" / "keras2.py"
    (tmp_path / "keras2.py").write_text(keras2.read_text())
    (tmp_path / "work.py").write_text("from keras2 import build_model, make_dataset  # noqa: F401\n")
    r = subprocess.run([sys.executable, "-m", "rung", "profile", str(tmp_path / "work.py"), "--json", "--steps",
                        "4", "--warmup", "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-800:]
    p = json.loads(r.stdout)
    assert p["keras"] == "tf_keras" and p["params"] == 16 * 32 + 32 + 32 + 1
    assert any("imports tf_keras itself (import tf_keras (keras2.py, line 6))" in n for n in p["notes"])
    # Keras 3 asked for by name: one line that says what the model is and what to do
    r = subprocess.run([sys.executable, "-m", "rung", "profile", str(keras2), "--keras", "keras3"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "returned a tf-keras model (Sequential) where tf.keras is Keras 3" in r.stderr
    assert "--keras tf_keras" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_variables_a_subclassed_model_creates_on_its_first_step_are_counted():
    # Keras 3 cannot build a subclassed model from a shape alone (its layers wait for the
    # first call): counted before the step, it had 0 parameters (the bench's basis did)
    import tensorflow as tf

    from rung.measure import counts

    class AE(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.enc, self.dec = tf.keras.layers.Dense(8), tf.keras.layers.Dense(20)

        def call(self, x):
            return self.dec(self.enc(x))

    model = AE()
    model.compile("sgd", "mse")
    g = counts.gradient_counts(tf, model, (tf.zeros((4, 20)), tf.zeros((4, 20))))
    assert (g.params, g.variables, g.dense_bytes) == (20 * 8 + 8 + 8 * 20 + 20, 4, (20 * 8 + 8 + 8 * 20 + 20) * 4)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_workload_files_name_the_problem(tmp_path, name):
    from rung.measure.profile import profile
    text, words = BAD[name]
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        profile(path, batch=4, steps=2, warmup=2)
    assert err.value.where == str(path)
    assert words in err.value.message
    assert "\n" not in err.value.line() and "\x1b" not in err.value.line()
    assert len(err.value.line()) < 600




@pytest.mark.parallel  # asserts nothing on speed
def test_a_step_that_fails_at_the_default_batch_names_the_batch_the_file_keeps(tmp_path):
    """keras.io's DDIM at rung's default batch of 32: its step draws noise of its own batch_size
    (64 there) and fails on the shapes. The line said only TensorFlow's shapes, and that
    make_dataset yields features alone, which a model with a train_step of its own may (this
    one trains on images alone). Now it says the batch the file keeps, and the two ways to
    give it; either runs."""
    from rung.measure.profile import profile

    own_batch = (HERE / "workloads" / "own_batch.py").read_text()
    path = tmp_path / "ddim.py"
    path.write_text(own_batch)
    with pytest.raises(InputError) as err:
        profile(path, steps=2, warmup=1)
    line = err.value.message
    assert line.startswith("the training step (model.train_step on a batch of make_dataset) failed: "), line
    assert line.endswith("; the file sets batch_size = 8 and rung ran batches of 32, its default (it reads a "
                         "file's batch from BATCH_SIZE): give --batch 8, or name it BATCH_SIZE"), line
    assert "features alone" not in line and "\n" not in err.value.line()
    assert profile(path, batch=8, steps=2, warmup=1)["per_device_batch"] == 8
    assert own_batch.count("\nbatch_size = 8\n") == 1
    path.write_text(own_batch.replace("\nbatch_size = 8\n", "\nBATCH_SIZE = batch_size = 8\n"))
    assert profile(path, steps=2, warmup=1)["per_device_batch"] == 8


@pytest.mark.parallel  # asserts nothing on speed
def test_a_file_that_keeps_its_own_batch_size_is_told_the_batch_it_was_profiled_at(tmp_path):
    """keras.io's miniature GPT sets batch_size = 128 at the top and its step runs at any batch:
    the profile at rung's default of 32 ran, and nothing said that the file trains at 128 (its
    step, memory and plans follow the batch). Now a note says both numbers and how to give
    the file's; with --batch given, or BATCH_SIZE set, nothing is said."""
    from rung.measure.profile import profile
    from tests.conftest import TINY_BUILD_MODEL

    path = tmp_path / "gpt.py"
    path.write_text("batch_size = 128\n" + TINY_BUILD_MODEL + "\n\ndef make_dataset(b, input_context=None):\n"
                    "    return tf.data.Dataset.from_tensor_slices((tf.zeros((64, 4)), tf.zeros((64, 1))))"
                    ".repeat().batch(b)\n")
    p = profile(path, steps=2, warmup=1)
    said = [n for n in p["notes"] if "batch_size = 128" in n]
    assert p["file_batch_size"] == 128 and said == ["profiled at a batch of 32, rung's default (it reads a file's batch from BATCH_SIZE); the file "
                    "sets batch_size = 128: if each device trains on 128 examples a step, give --batch 128 or name "
                    "it BATCH_SIZE (the step time, its memory and the plan follow the batch)"]
    p = profile(path, batch=128, steps=2, warmup=1)
    assert p["file_batch_size"] is None and not any("batch_size = 128" in n for n in p["notes"])
    path.write_text(path.read_text().replace("batch_size = 128\n", "BATCH_SIZE = batch_size = 128\n"))
    p = profile(path, steps=2, warmup=1)
    assert p["per_device_batch"] == 128 and p["file_batch_size"] is None
    assert not any("batch_size = 128" in n for n in p["notes"])


def test_missing_and_non_python_files(tmp_path):
    from rung.measure.profile import profile
    with pytest.raises(InputError, match="no such workload file"):
        profile(tmp_path / "missing.py")
    (tmp_path / "w.txt").write_text("x")
    with pytest.raises(InputError, match="expected a Python file"):
        profile(tmp_path / "w.txt")


def run_cli(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "rung", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parallel  # asserts nothing on speed
def test_cli_bad_workload_exits_2_with_one_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import not_a_module_rung\n")
    r = run_cli("profile", str(path), "--json")
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "ModuleNotFoundError" in lines[0]


@pytest.mark.parallel  # asserts nothing on speed
def test_what_the_workload_prints_goes_to_stderr_and_json_on_stdout_stays_json(tmp_path):
    """A build_model() that calls model.summary() and print(), as keras.io's examples do:
    `rung profile --json` wrote them on stdout before the JSON, so `| jq` failed, and so did
    `rung advise`'s second measurement on tf-keras, which reads that JSON (an internal
    error). The workload's output now goes to stderr."""
    work = tmp_path / "chatty.py"
    work.write_text(EXAMPLES["mlp"].read_text().replace("    return model\n",
                                                        "    model.summary()\n    print('built!')\n    return model\n", 1))
    assert "model.summary()" in work.read_text()
    r = subprocess.run([sys.executable, "-m", "rung", "profile", str(work), "--json", "--steps", "3", "--warmup", "1",
                        "--no-replica-check"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-800:]
    assert json.loads(r.stdout)["schema"] == "rung/profile/v1"
    assert "built!" in r.stderr and "Total params" in r.stderr


@pytest.mark.parallel  # asserts nothing on speed
def test_cli_profile_writes_a_scenario_and_advise_plans_from_the_workload(tmp_path):
    out = tmp_path / "mlp-scenario.yaml"
    r = run_cli("profile", "--example", "mlp", "--steps", "6", "--warmup", "2", "--json",
                "--scenario-out", str(out), "--device", "A100-80GB", "--devices-per-host", "8",
                "--target", "100000")
    assert r.returncode == 0, r.stderr[-500:]
    prof = json.loads(r.stdout)
    from rung import advise, load_scenario
    s = load_scenario(out)
    assert s.workload.params == prof["params"] and s.workload.flops_per_example == prof["flops_per_example"]
    assert s.fleet.checkpoint_seconds == prof["checkpoint_seconds"] > 0  # the measured save, for goodput
    # Keras' own train_step scales its loss for replicas: known without running it again
    assert prof["replica_check"]["keras_train_step"] and s.workload.loss_scaled_for_replicas is True
    # planned for an A100, profiled on this CPU: the step is estimated from FLOPs, and says so
    assert s.workload.step_seconds_source == "estimated" and s.workload.step_seconds < prof["step_seconds"]
    assert s.hardware.device == "A100-80GB" and s.goal.target_examples_per_second == 100000
    # no sparse gradient: the step is not timed again under a strategy, and plans pay nothing for it
    assert prof["strategy_step_seconds_measured"] is None and s.workload.strategy_step_extra_seconds == 0
    d = advise(s)
    assert d.verdict in ("single_device", "mirrored", "fix_input_pipeline")
    assert d.warnings[0].code == "STEP_TIME_ESTIMATED"

    hw = tmp_path / "hw.yaml"
    hw.write_text("hardware: {device: A100-80GB, devices_per_host: 8, max_hosts: 4}\n"
                  "fleet: {preemptible: true, preemptions_per_host_hour: 0.5, checkpoint_seconds: 2.5}\n"
                  "goal: {target_examples_per_second: 1.0e6}\n")
    r = run_cli("advise", str(EXAMPLES["mlp"]), "--hardware", str(hw), "--steps", "6", "--json")
    assert r.returncode == 0, r.stderr[-500:]
    d = json.loads(r.stdout)
    assert d["schema"] == "rung/decision/v1"
    assert d["warnings"][0]["code"] == "STEP_TIME_ESTIMATED"
    assert d["inputs"]["workload"]["step_seconds_source"] == "estimated"
    # the same measurement (the first profile, saved), planned again by the CLI's own code
    from rung.cli import build_parser
    from rung.cli._decide import decide
    from rung.cli._plan import links
    from rung.cli.profile import scenario_text
    from rung.spec.profile import Profile

    saved, parser = Profile.model_validate(prof), build_parser()
    # with the team's own step time on that device, nothing is estimated
    args = parser.parse_args(["advise", "w.py", "--hardware", str(hw), "--target-step-seconds", "0.004"])
    s2, d2 = decide(args, links(None), saved)[:2]
    assert "STEP_TIME_ESTIMATED" not in [w.code for w in d2.warnings] and s2.workload.step_seconds == 0.004
    # the job's own save time (its storage, from the hardware file) stands over the one measured here
    args = parser.parse_args(["profile", "w.py", "--scenario-out", str(tmp_path / "kept.yaml"), "--hardware", str(hw)])
    assert yaml.safe_load(scenario_text(saved, args))["fleet"]["checkpoint_seconds"] == 2.5
    assert saved.checkpoint_seconds != 2.5


def test_a_step_faster_on_tf_keras_gives_a_one_device_plan_on_tf_keras(tmp_path):
    """keras.io's collaborative filtering shape with Adagrad: Keras 3 updates the whole table
    every step (114 ms here for 1.5M rows), tf-keras the rows looked up (0.9 ms;
    keras-team/keras#19992). rung advise planned parameter servers on 8 hosts from the Keras 3
    step, measured tf-keras's, found one device enough with it, and kept the 8 hosts, as rung
    init ran one device on Keras 3. Now the one-device plan runs on tf-keras and says how to
    get it. The oracle: the two steps as measured, their ratio well above any noise."""
    work = tmp_path / "clicks.py"
    work.write_text((HERE / "workloads" / "embedding_adagrad.py").read_text())
    hw = Path(EXAMPLES["mlp"]).parents[1] / "hardware.yaml"   # hosts of one CPU device, 10 Gb/s
    kept = tmp_path / "clicks-scenario.yaml"
    r = run_cli("advise", str(work), "--hardware", str(hw), "--target", "5000", "--steps", "10", "--warmup", "2",
                "--json", "--scenario-out", str(kept), timeout=600)
    assert r.returncode == 0, r.stderr[-800:]
    d = json.loads(r.stdout)
    said = next(w["message"] for w in d["warnings"] if w["code"] == "STEP_REMEASURED")
    found = re.search(r"too: ([\d.,]+) (µs|ms|s) a step, against ([\d.,]+) (µs|ms|s) on Keras 3", said)
    assert found, said
    tf_s, k3_s = u_seconds(found.group(1, 2)), u_seconds(found.group(3, 4))
    assert k3_s > 5 * tf_s, said  # Keras 3's dense update of the table: many times tf-keras's sparse one
    assert d["verdict"] == "single_device" and d["meets_goal"], (d["verdict"], said)
    assert d["inputs"]["workload"]["step_keras"] == "tf_keras"
    assert f"rung init {work} --strategy single_device --keras tf_keras" in said
    assert "with the Keras 3 step the plan was" in said
    # the scenario that decision was made on, written out: decided again without measuring, it
    # gives the same plan, and rung init of it writes a train.py on tf-keras
    from rung import advise, load_scenario
    s = load_scenario(kept)
    assert s.workload.step_keras == "tf_keras" and s.workload.step_seconds == pytest.approx(tf_s, rel=0.01)
    again = advise(s)
    assert (again.verdict, again.hosts) == (d["verdict"], d["hosts"])
    r = run_cli("init", str(work), "--scenario", str(kept), "--out", str(tmp_path / "job"))
    assert r.returncode == 0, r.stderr[-800:]
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in (tmp_path / "job" / "train.py").read_text()


@pytest.mark.parallel  # asserts nothing on speed
def test_a_model_keras_3_cannot_fit_under_a_strategy_gets_a_plan_on_tf_keras_that_runs(tmp_path):
    """keras.io's VQ-VAE trainer (a Model with its own train_step and no call()): Keras 3's fit
    under any strategy fails to build it, and rung's train.py runs even one device under
    OneDeviceStrategy, so rung advise's one-device plan warned STRATEGY_FAILS and rung init's
    train.py failed at once. tf-keras's fit builds it in its first step: the plan is made from
    the step measured there, runs on tf-keras, and the job rung launch writes from it trains."""
    work = tmp_path / "vqvae.py"
    work.write_text((HERE / "workloads" / "vqvae.py").read_text())
    hw = Path(EXAMPLES["mlp"]).parents[1] / "hardware.yaml"   # hosts of one CPU device
    kept = tmp_path / "vqvae-scenario.yaml"
    r = run_cli("advise", str(work), "--hardware", str(hw), "--target", "10", "--steps", "4", "--warmup", "1",
                "--json", "--scenario-out", str(kept), timeout=600)
    assert r.returncode == 0, r.stderr[-800:]
    d = json.loads(r.stdout)
    codes = [w["code"] for w in d["warnings"]]
    assert d["verdict"] == "single_device" and "STRATEGY_FAILS" not in codes, codes
    said = next(w["message"] for w in d["warnings"] if w["code"] == "STEP_REMEASURED")
    assert "fails under every tf.distribute strategy on Keras 3" in said and "does not have a `call()`" in said
    assert f"rung init {work} --strategy single_device --keras tf_keras" in said
    assert d["inputs"]["workload"]["step_keras"] == "tf_keras"
    r = run_cli("launch", str(work), "--scenario", str(kept), "--engine", "local", "--steps", "3",
                "--out", str(tmp_path / "job"), "--json", timeout=600)
    assert r.returncode == 0, r.stderr[-800:]
    assert json.loads(r.stdout)["keras"] == "tf_keras"


@pytest.mark.parallel  # asserts nothing on speed
def test_a_model_neither_keras_fits_under_a_strategy_keeps_strategy_fails_and_says_why_on_both():
    """The same VQ-VAE trainer with a layer argument only Keras 3 knows (LeakyReLU's
    negative_slope): tf-keras, measured again for the one-device plan, fails to build it, so
    the plan stays on Keras 3 and STRATEGY_FAILS says both failures."""
    import tempfile

    text = (HERE / "workloads" / "vqvae.py").read_text().replace(
        '    encoder_outputs = layers.Conv2D(latent_dim, 1, padding="same")(x)\n',
        '    x = layers.LeakyReLU(negative_slope=0.2)(x)\n'
        '    encoder_outputs = layers.Conv2D(latent_dim, 1, padding="same")(x)\n')
    assert "negative_slope" in text
    hw = Path(EXAMPLES["mlp"]).parents[1] / "hardware.yaml"
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder) / "vqvae_k3_args.py"
        work.write_text(text)
        r = run_cli("advise", str(work), "--hardware", str(hw), "--target", "10", "--steps", "4", "--warmup", "1",
                    "--json", timeout=600)
    assert r.returncode == 0, r.stderr[-800:]
    d = json.loads(r.stdout)
    assert d["verdict"] == "single_device" and d["inputs"]["workload"]["step_keras"] == "keras3"
    said = next(w["message"] for w in d["warnings"] if w["code"] == "STRATEGY_FAILS")
    assert "does not have a `call()`" in said                       # Keras 3's failure
    assert "On tf-keras, whose fit builds the model in its first step, it fails too" in said
    assert "negative_slope" in said                                  # and tf-keras's
    assert "STEP_REMEASURED" not in [w["code"] for w in d["warnings"]]


def test_a_table_updated_sparsely_is_timed_under_mirrored_variables_too():
    """tf-keras's Adagrad updates the rows looked up, but under the mirrored variables of
    MirroredStrategy and MultiWorkerMirroredStrategy it copies the whole table every step
    (0.3 ms against 22 ms for 1M x 64 rows here); Keras 3's Adagrad updates the whole table
    either way. The profile times the step under a one-device MirroredStrategy beside the
    plain one: the oracle is each Keras's own pair of steps, timed in one process."""
    work = HERE / "workloads" / "embedding_adagrad.py"
    found = {}
    for keras in ("tf_keras", "keras3"):
        r = run_cli("profile", str(work), "--keras", keras, "--steps", "6", "--warmup", "2", "--json", timeout=400)
        assert r.returncode == 0, r.stderr[-800:]
        found[keras] = json.loads(r.stdout)
    tf_keras, keras3 = found["tf_keras"], found["keras3"]
    plain, mirrored = tf_keras["strategy_step_seconds_measured"]
    assert mirrored > 3 * plain, (plain, mirrored)
    assert tf_keras["strategy_step_extra_seconds"] == pytest.approx(mirrored - plain)
    assert tf_keras["memory_copy_bytes_per_second"] > 1e8
    assert any("MirroredStrategy the step took" in n and "STRATEGY_STEP_SLOWER" in n for n in tf_keras["notes"])
    from rung.spec.profile import Profile, workload_block
    assert workload_block(Profile.model_validate(tf_keras))["strategy_step_extra_seconds"] > 0
    # Keras 3 copies nothing more under the strategy: within the noise guard, none
    plain, mirrored = keras3["strategy_step_seconds_measured"]
    assert keras3["strategy_step_extra_seconds"] == 0 and mirrored < 1.25 * plain, (plain, mirrored)
    # the optimizer's update timed alone: Keras 3's adds to the whole accumulator (31 ms of a
    # 45 ms step here), tf-keras's to the rows looked up (0.3 ms). The oracle is the two
    # Kerases' whole steps: most of what separates them is what separates their updates
    k3_update, tf_update = keras3["optimizer_update_seconds"], tf_keras["optimizer_update_seconds"]
    assert k3_update > 10 * tf_update > 0 and keras3["optimizer_update_ops"] > 0, (k3_update, tf_update)
    assert k3_update - tf_update > 0.4 * (keras3["step_seconds"] - tf_keras["step_seconds"]) > 0
    assert k3_update < 1.2 * keras3["step_seconds"]
    assert keras3["memory_copy_bytes_per_second"] > 1e8  # what carries it to a plan's device
    # and the profile says so on Keras 3, where the update is most of the step
    said = [n for n in keras3["notes"] if "keras-team/keras#19992" in n]
    assert said and "--keras tf_keras" in said[0] and not any("keras#19992" in n for n in tf_keras["notes"])


def u_seconds(parts) -> float:
    """'899 µs' / '115 ms' / '1.2 s' (rung.units.seconds) back to seconds."""
    value, unit = float(parts[0].replace(",", "")), parts[1]
    return value * {"µs": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def test_advise_measures_the_step_again_on_the_keras_its_plan_runs_on():
    """`rung advise WORKLOAD.py` profiles on Keras 3; a multi-worker plan runs on tf-keras
    (train.py), where the same model's step can differ by 2-3x: the step is measured there
    too, in a process of its own, and the plan is made from it."""
    hw = Path(EXAMPLES["mlp"]).parents[1] / "hardware.yaml"   # hosts of one CPU device, 10 Gb/s
    r = run_cli("advise", str(EXAMPLES["mlp"]), "--hardware", str(hw), "--target", "60000", "--steps", "6",
                "--warmup", "2", "--json")
    assert r.returncode == 0, r.stderr[-800:]
    d = json.loads(r.stdout)
    codes = [w["code"] for w in d["warnings"]]
    assert d["verdict"] == "multi_worker_mirrored", d["verdict"]
    # the hosts are CPU devices (hardware.accelerator: cpu): NCCL would not run on them
    assert d["strategy_options"]["communication"] == "RING", d["strategy_options"]
    assert "STEP_REMEASURED" in codes and "STEP_ON_OTHER_KERAS" not in codes
    said = next(w["message"] for w in d["warnings"] if w["code"] == "STEP_REMEASURED")
    tf_ms, k3_ms = (float(x.split(" ms")[0].split()[-1]) for x in said.split("a step, against"))
    # the plan rests on the step measured on tf-keras, the one the message gives first
    assert d["inputs"]["workload"]["step_keras"] == "tf_keras" and d["inputs"]["workload"]["step_seconds_source"] == "measured"
    assert d["inputs"]["workload"]["step_seconds"] * 1e3 == pytest.approx(tf_ms, rel=0.01)
    assert k3_ms > 0


@pytest.mark.parallel  # asserts nothing on speed
def test_a_model_that_builds_only_on_keras_3_gets_strategy_fails_on_a_plan_that_runs_on_tf_keras():
    """keras.io's examples are written for Keras 3: a layer argument tf-keras does not know
    (LeakyReLU's negative_slope) builds on Keras 3, where the step is measured, and fails on
    tf-keras, where a multi-worker fit runs. Before, the plan said only that its step was
    Keras 3's (STEP_ON_OTHER_KERAS), with the failure at the end of that warning's words."""
    hw = Path(EXAMPLES["mlp"]).parents[1] / "hardware.yaml"   # hosts of one CPU device
    # hosts whose step is 50 ms: this MLP's own 1 ms step pays a synchronous step's fixed
    # cost several times over, and 8 hosts at a fifth of linear do not pay (HOSTS_DO_NOT_PAY)
    r = run_cli("advise", str(HERE / "workloads" / "keras3_args.py"), "--hardware", str(hw), "--target", "1e7",
                "--target-step-seconds", "0.05", "--steps", "6", "--warmup", "2", "--no-replica-check", "--json")
    assert r.returncode == 0, r.stderr[-800:]
    d = json.loads(r.stdout)
    codes = [w["code"] for w in d["warnings"]]
    assert d["verdict"] == "multi_worker_mirrored" and "STEP_ON_OTHER_KERAS" not in codes, codes
    said = next(w["message"] for w in d["warnings"] if w["code"] == "STRATEGY_FAILS")
    # the line of LeakyReLU(negative_slope=...) in the file
    assert "build_model() raised TypeError" in said and "negative_slope" in said and "(line 18)" in said
    assert "tf-keras" in said and "rung: error" not in said


@pytest.mark.parallel  # asserts nothing on speed
def test_a_plan_on_tf_keras_from_a_step_estimated_for_a_gpu_is_checked_on_tf_keras(tmp_path):
    """A plan for GPUs rests on a step estimated from counted FLOPs, which the walk does not
    tie to a Keras (no STEP_ON_OTHER_KERAS): before, a multi-worker plan for A100s of keras.io's
    knowledge distillation said nothing, and every tf-keras run of it failed (rung launch:
    at the replica check; as keras.io writes it, at build_model). Now the model is profiled
    on tf-keras too and the plan made from that profile, whose failures are tf-keras's."""
    fleet = ["--device", "A100-80GB", "--devices-per-host", "8", "--max-hosts", "8", "--inter-host-gbps", "100",
             "--target", "2e5", "--steps", "6", "--warmup", "2", "--json"]
    r = run_cli("advise", str(HERE / "workloads" / "distill.py"), *fleet, timeout=400)
    assert r.returncode == 0, r.stderr[-800:]
    d = json.loads(r.stdout)
    codes = [w["code"] for w in d["warnings"]]
    assert d["verdict"] == "multi_worker_mirrored" and "STEP_ON_OTHER_KERAS" not in codes, codes
    w = d["inputs"]["workload"]
    assert w["step_keras"] == "tf_keras" and w["step_seconds_source"] == "estimated"
    fails = next(m["message"] for m in d["warnings"] if m["code"] == "STRATEGY_FAILS")
    assert "on tf-keras" in fails and "Reduction.NONE" in fails
    said = next(m["message"] for m in d["warnings"] if m["code"] == "STEP_REMEASURED")
    # the step the plan rests on is the one the message says came from the tf-keras profile
    planned = said.split("the step for A100-80GB is ")[1].split(" from that profile")[0].split()
    assert w["step_seconds"] == pytest.approx(u_seconds(planned), rel=0.01)
    # as keras.io writes it: LeakyReLU(negative_slope=...), which tf-keras cannot build
    as_written = tmp_path / "distill_as_written.py"
    as_written.write_text((HERE / "workloads" / "distill.py").read_text().replace(
        "layers.LeakyReLU(0.2)", "layers.LeakyReLU(negative_slope=0.2)"))
    r = run_cli("advise", str(as_written), *fleet, "--no-replica-check", timeout=400)  # it fails at build
    assert r.returncode == 0, r.stderr[-800:]
    d = json.loads(r.stdout)
    assert d["verdict"] == "multi_worker_mirrored" and d["warnings"][0]["code"] == "STRATEGY_FAILS", d["warnings"]
    said = d["warnings"][0]["message"]
    assert "build_model() raised TypeError" in said and "negative_slope" in said and "(line 48)" in said


@pytest.mark.parallel  # asserts nothing on speed
def test_cli_a_shape_bug_in_the_users_model_is_exit_2_one_line(tmp_path):
    path = tmp_path / "shape_bug.py"
    path.write_text(BAD["shape_bug.py"][0])
    r = run_cli("profile", str(path), "--steps", "2", "--json")
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "incompatible" in lines[0]
    assert "\x1b" not in r.stderr and "internal error" not in r.stderr


@pytest.mark.parallel  # asserts nothing on speed
def test_cli_scenario_out_writes_nothing_when_the_profile_fails(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def build_model():\n    pass\n")
    out = tmp_path / "s.yaml"
    r = run_cli("profile", str(bad), "--scenario-out", str(out))
    assert r.returncode == 2 and not out.exists()
    assert not list(tmp_path.glob(".s.yaml.*"))


def test_python_in_a_pipeline_is_found_and_carried_to_the_plan():
    """from_generator, py_function and numpy_function put Python into the pipeline (under
    parameter servers only the coordinator runs it); TensorFlow maps do not."""
    import tensorflow as tf

    from rung.measure.pipeline import python_in_pipeline
    from rung.spec.profile import Profile, workload_block

    base = tf.data.Dataset.from_tensor_slices(tf.zeros((8, 2)))
    gen = tf.data.Dataset.from_generator(lambda: iter([[0.0, 1.0]]), output_signature=tf.TensorSpec((2,)))
    assert python_in_pipeline(tf, gen)
    assert python_in_pipeline(tf, base.map(lambda x: tf.py_function(lambda y: y, [x], tf.float32)))
    assert python_in_pipeline(tf, base.map(lambda x: tf.numpy_function(lambda y: y, [x], tf.float32)))
    assert not python_in_pipeline(tf, base.map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE).batch(4))
    from rung.measure.profile import profile
    p = profile(Path(__file__).parent.parent / "launch" / "generator.py", steps=2, warmup=1)
    assert p["python_in_pipeline"] is True and workload_block(Profile.model_validate(p))["python_in_pipeline"]
    # its make_dataset takes the InputContext and ignores it, and its generator is seeded
    assert p["worker_input"] == "identical" and workload_block(Profile.model_validate(p))["worker_input"] == "identical"
    assert "INPUT_NOT_SHARDED" in {f["code"] for f in p["pipeline"]["findings"]}


@pytest.mark.parallel  # asserts nothing on speed
def test_a_dataset_made_outside_make_dataset_is_found_where_a_parameter_server_cluster_fails_on_it():
    """The oracle is a real cluster (tests/measure/ps_captured.py: one ps task, one worker,
    the coordinator here): a pipeline built on a dataset made at import fails there, with
    TensorFlow's "Unable to parse tensor proto", and the same pipeline made inside its
    function runs. captured_datasets counts 1 and 0 on them. keras.io's FeatureSpace example
    failed this way, which rung used to put down to the FeatureSpace."""
    from rung.failures import PS_CAPTURED_DATASET_PROBLEM, hint

    r = subprocess.run([sys.executable, str(Path(__file__).parent / "ps_captured.py")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    seen = json.loads(r.stdout)
    assert seen["inside"] == {"captured": 0, "cluster": "ran"}
    assert seen["outside"]["captured"] == 1 and "Unable to parse tensor proto" in seen["outside"]["cluster"]
    assert hint(seen["outside"]["cluster"])[0] == PS_CAPTURED_DATASET_PROBLEM


def test_a_dataset_made_outside_make_dataset_is_carried_to_the_plan(tmp_path):
    from rung.measure.profile import profile
    from rung.spec.profile import Profile, workload_block
    from tests.conftest import TINY_BUILD_MODEL

    path = tmp_path / "at_import.py"
    path.write_text(TINY_BUILD_MODEL + textwrap.dedent("""
        TABLE = tf.data.Dataset.from_tensor_slices((tf.random.normal((64, 4)), tf.random.normal((64, 1))))


        def make_dataset(batch_size, input_context=None):
            return TABLE.shuffle(64).repeat().batch(batch_size)
        """))
    p = profile(path, steps=2, warmup=1)
    assert p["captured_dataset"] is True and workload_block(Profile.model_validate(p))["captured_dataset"]
    [f] = [f for f in p["pipeline"]["findings"] if f["code"] == "CAPTURED_DATASET"]
    assert "Make the dataset inside make_dataset" in f["message"]
    path.write_text(path.read_text().replace("    return TABLE.", "    return tf.data.Dataset.from_tensor_slices("
                                             "(tf.random.normal((64, 4)), tf.random.normal((64, 1)))).")
                    .replace("TABLE = ", "UNUSED = "))
    assert profile(path, steps=2, warmup=1)["captured_dataset"] is False


@pytest.mark.parallel  # asserts nothing on speed
def test_a_second_parameter_of_the_files_own_is_left_at_its_default(tmp_path):
    """`def make_dataset(batch_size, training=True)`: rung profile handed it None (and an
    InputContext in its check across workers), so the profile timed a pipeline the file
    never runs by default. The file's make_dataset refuses anything but its default here:
    the profile runs, and says why the workers' input is not checked."""
    from rung.measure.profile import profile
    from tests.conftest import TINY_BUILD_MODEL

    path = tmp_path / "flagged.py"
    path.write_text(TINY_BUILD_MODEL + textwrap.dedent("""
        def make_dataset(batch_size, training=True):
            if training is not True:
                raise ValueError(f"make_dataset was handed training={training!r}")
            x, y = tf.random.normal((64, 4)), tf.random.normal((64, 1))
            return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64).repeat().batch(batch_size)
        """))
    p = profile(path, steps=2, warmup=1)
    assert p["step_seconds"] > 0
    assert "its second parameter, training=True, is a setting of its own" in p["worker_input_detail"]


def test_a_small_source_mapped_every_epoch_is_named_with_its_size():
    """NO_CACHE on 1,000 float32 values (3.91 KiB): the size in a unit that shows it (it read
    "0 MiB" for any source under half a mebibyte)."""
    import tensorflow as tf

    from rung.measure.pipeline import inspect_pipeline

    ds = tf.data.Dataset.from_tensor_slices(tf.zeros((1000,))).map(lambda x: x + 1).batch(10)
    [found] = [f for f in inspect_pipeline(tf, ds)["findings"] if f["code"] == "NO_CACHE"]
    assert "the source holds 3.91 KiB in memory" in found["message"]
    cached = tf.data.Dataset.from_tensor_slices(tf.zeros((1000,))).map(lambda x: x + 1).cache().batch(10)
    assert "NO_CACHE" not in {f["code"] for f in inspect_pipeline(tf, cached)["findings"]}


def test_a_source_read_from_files_is_named_by_what_the_files_hold(tmp_path):
    """A TFRecord pipeline's source is a tensor of file names: NO_CACHE said "the source holds
    4 B in memory" (the name's 4 B a string element was counted as) for a 340 KiB file. It
    names the files' size on disk; in-memory strings count their bytes; a file rung cannot
    stat (a bucket) is no reason to advise."""
    import tensorflow as tf

    from rung.measure.pipeline import inspect_pipeline

    def no_cache(ds):
        return [f["message"] for f in inspect_pipeline(tf, ds)["findings"] if f["code"] == "NO_CACHE"]

    path = tmp_path / "train.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        for _ in range(100):
            w.write(b"x" * 1000)  # 100 records of 1,000 B, plus 16 B of framing each: 101,600 B
    assert path.stat().st_size == 101_600
    [msg] = no_cache(tf.data.TFRecordDataset([str(path)]).map(tf.strings.length))
    assert "1 file of 99.2 KiB" in msg, msg
    [msg] = no_cache(tf.data.TFRecordDataset([str(path), str(path)]).map(tf.strings.length))
    assert "1 file of 99.2 KiB" in msg, msg  # the same file named twice is read twice, held once
    text = tmp_path / "lines.txt"
    text.write_text("a line of text\n" * 2048)  # 30,720 B
    [msg] = no_cache(tf.data.TextLineDataset(str(text)).map(tf.strings.length))
    assert "1 file of 30 KiB" in msg, msg
    assert no_cache(tf.data.TFRecordDataset("gs://a-bucket/train.tfrecord").map(tf.strings.length)) == []
    # paths read in a map, as image_dataset_from_directory reads its images: 3 files of 1,024 B
    images = []
    for i in range(3):
        images.append(tmp_path / f"{i}.jpg")
        images[-1].write_bytes(b"\0" * 1024)
    [msg] = no_cache(tf.data.Dataset.from_tensor_slices([str(f) for f in images]).map(tf.io.read_file))
    assert "the source, 3 files of 3 KiB on this disk" in msg, msg
    # 300 strings of 11 bytes: 3,300 B and a one-byte length each (3,600 B), not 300 x 4
    [msg] = no_cache(tf.data.Dataset.from_tensor_slices(["hello world"] * 300).map(tf.strings.length))
    assert "holds 3.52 KiB in memory" in msg, msg


@pytest.mark.parallel  # asserts nothing on speed
def test_what_each_worker_reads_is_told_apart_as_two_processes_see_it():
    """worker_input: a make_dataset that takes the InputContext and ignores it, drawing nothing
    at random, gives every worker the same batches (INPUT_NOT_SHARDED); one that maps a random
    augmentation over them (a Keras random layer, keras.io's image examples) gives every worker
    the same examples in the same order, augmented differently (INPUT_NOT_SHARDED too: it said
    "own_order" for tf.image's unseeded ops, and "draws nothing at random" for Keras's
    layers); one that shards a list of fewer files than workers gives one of them nothing
    (EMPTY_SHARD). The oracle: each variant run for worker 0 and worker 1 in two processes of
    their own, as workers run it."""
    import subprocess
    import sys

    import tensorflow as tf

    from rung.measure.pipeline import divides_batch, ps_worker_input, worker_input, worker_input_findings
    from tests.measure.workloads import worker_inputs as v

    script = Path(v.__file__)
    procs = [subprocess.Popen([sys.executable, str(script), str(i)], stdout=subprocess.PIPE, text=True,
                              stderr=subprocess.DEVNULL) for i in (0, 1)]
    digests = [dict(line.split() for line in p.communicate(timeout=120)[0].splitlines()) for p in procs]
    for state, fns in v.VARIANTS.items():
        for fn in fns:
            assert worker_input(tf, fn, 8)[0] == state, fn.__name__
            if state in ("identical", "own_order", "distinct", "augmented"):
                same = digests[0][fn.__name__] == digests[1][fn.__name__]
                assert same == (state == "identical"), fn.__name__
    for state, fns in v.PS_VARIANTS.items():
        for fn in fns:
            assert ps_worker_input(tf, fn, 8)[0] == state, fn.__name__
    # the tutorial's get_per_replica_batch_size halves the per-replica batch rung passes
    assert divides_batch(tf, v.tutorial_batch, 8)
    assert not any(divides_batch(tf, fn, 8) for fns in v.VARIANTS.values() for fn in fns if fn is not v.tutorial_batch)
    codes = {s: [f["code"] for f in worker_input_findings(s)] for s in v.VARIANTS}
    assert codes == {"identical": ["INPUT_NOT_SHARDED"], "augmented": ["INPUT_NOT_SHARDED"], "empty": ["EMPTY_SHARD"],
                     "own_order": [], "distinct": [], None: []}
    # the same examples in the same order, augmented at random: what the message says of it
    [augmented] = worker_input_findings("augmented")
    assert "the same examples in the same order, each augmenting them at random" in augmented["message"]
    assert "draws nothing at random" not in augmented["message"]
    [both] = worker_input_findings("identical", "identical")  # one finding, both fixes
    assert "input_pipeline_id" in both["message"] and "shuffle it without a seed" in both["message"]
    assert [f["code"] for f in worker_input_findings("distinct", "identical")] == ["INPUT_NOT_SHARDED"]
    assert [f["code"] for f in worker_input_findings("empty", "identical")] == ["EMPTY_SHARD", "INPUT_NOT_SHARDED"]


def test_ragged_and_sparse_parts_of_an_element_are_named():
    import tensorflow as tf

    from rung.measure.shapes import ragged_or_sparse_inputs

    ragged = tf.RaggedTensorSpec([None, None], tf.int32)
    sparse = tf.SparseTensorSpec([None, 100], tf.float32)
    dense = tf.TensorSpec([None, 4], tf.float32)
    assert ragged_or_sparse_inputs(tf, (ragged, dense)) == ["features is ragged"]
    assert ragged_or_sparse_inputs(tf, ({"b": sparse, "a": dense}, dense)) == ["features/b is sparse"]
    assert ragged_or_sparse_inputs(tf, ((dense, {"ids": ragged}), dense)) == ["features[1]/ids is ragged"]
    assert ragged_or_sparse_inputs(tf, (dense, ragged)) == ["labels is ragged"]
    assert ragged_or_sparse_inputs(tf, (dense, dense)) == [] and ragged_or_sparse_inputs(tf, dense) == []


def test_a_dynamic_part_of_a_dict_of_features_is_named_by_its_key():
    """keras.io's multi-input ticket model: a dict of features, named in the user's code by
    key (body, tags, title), not by a place in tf.nest's flattening."""
    import tensorflow as tf

    from rung.measure.shapes import dynamic_shape_details

    spec = ({"title": tf.TensorSpec([None, None], tf.int32), "body": tf.TensorSpec([None, 100], tf.int32),
             "tags": tf.TensorSpec([None, 12], tf.float32)},
            {"priority": tf.TensorSpec([None, 1], tf.float32)})
    details, notes = dynamic_shape_details(tf, spec, model=None, batches=[])
    assert details == ["features/title has shape (None, None): unknown non-batch dimension"]
    assert "features/body has shape (None, 100)" in notes[0]


def test_embedding_tables_whose_gradients_come_dense_are_named():
    """keras.io's collaborative filtering puts an embeddings_regularizer on its tables: the
    regularizer touches every row, so each table's gradient reaches the optimizer whole (a
    1,000 x 8 table: 8,000 values a step, where the lookup of 4 ids gives 4 rows). A table
    tied to the output layer is dense too; a plain lookup is not."""
    import tensorflow as tf

    from rung.measure.counts import gradient_counts

    def model_of(regularizer=None, tied=False):
        ids = tf.keras.Input((1,), dtype="int32")
        table = tf.keras.layers.Embedding(1000, 8, embeddings_regularizer=regularizer, name="table")
        x = tf.keras.layers.Flatten()(table(ids))
        if tied:  # scores against every row: the table used as a matrix
            x = tf.keras.layers.Lambda(lambda h: tf.matmul(h, table.embeddings, transpose_b=True))(x)
        m = tf.keras.Model(ids, tf.keras.layers.Dense(1)(x))
        m.compile("sgd", "mse")
        return m

    batch = (tf.constant([[1], [2], [3], [4]]), tf.zeros((4, 1)))
    plain = gradient_counts(tf, model_of(), batch)
    assert plain.dense_tables == [] and plain.embedding_params == 8000
    reg = gradient_counts(tf, model_of(tf.keras.regularizers.l2(1e-6)), batch)
    assert reg.dense_tables == [("table", 8000, "embeddings_regularizer")] and reg.embedding_params == 0
    assert reg.dense_bytes == 4 * (8000 + 8 + 1)  # the table, then the Dense kernel and bias
    tied = gradient_counts(tf, model_of(tied=True), batch)
    assert tied.dense_tables == [("table", 8000, "")]


def test_synchronized_batch_norm_layers_are_counted():
    """BatchNormalization(synchronized=True) all-reduces its statistics every step under a
    synchronous strategy (a 1-layer CNN's multi-worker step on 2 CPU workers: 20.2 and 21 ms
    against 11.2 and 12 ms for its unsynchronized twin, docs/results.md)."""
    import tensorflow as tf

    from rung.measure.counts import synchronized_batch_norms

    m = tf.keras.Sequential([tf.keras.Input((4, 4, 2)), tf.keras.layers.BatchNormalization(synchronized=True),
                             tf.keras.layers.BatchNormalization(), tf.keras.layers.Flatten(),
                             tf.keras.layers.Dense(1)])
    assert synchronized_batch_norms(tf, m) == 1
    assert synchronized_batch_norms(tf, tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])) == 0


def test_a_model_that_fixes_its_batch_is_profiled_at_it_and_its_stateful_layers_counted():
    """keras.Input(batch_size=16), as a stateful RNN needs: the model runs at no other batch.
    Before, the profile ran at 32, and its activation count (traced at B and 2B) failed the
    profile ("activation_bytes_per_example: Input should be a valid number")."""
    from rung.measure.profile import profile

    stateful = HERE / "workloads" / "stateful.py"
    p = profile(stateful, steps=3, warmup=1)
    assert p["per_device_batch"] == 16 and p["stateful_rnn_layers"] == 1
    assert p["activation_bytes_per_example"] > 0  # counted at the one batch the model takes
    assert any(n.startswith("the model fixes its batch at 16") for n in p["notes"])
    with pytest.raises(InputError, match="received 32; the model fixes its batch at 16"):
        profile(stateful, batch=32, steps=3, warmup=1)


def test_stateful_recurrent_layers_are_counted_and_only_they():
    import tensorflow as tf

    from rung.measure.counts import fixed_batch, stateful_rnns

    def gru(stateful, bidirectional=False, batch_size=4):
        layer = tf.keras.layers.GRU(3, stateful=stateful)
        layer = tf.keras.layers.Bidirectional(layer) if bidirectional else layer
        return tf.keras.Sequential([tf.keras.Input((5, 2), batch_size=batch_size), layer])

    assert [stateful_rnns(tf, gru(True)), stateful_rnns(tf, gru(False)), stateful_rnns(tf, gru(True, True))] == [1, 0, 2]
    assert fixed_batch(gru(True)) == 4 and fixed_batch(gru(False, batch_size=None)) is None


def test_weights_no_optimizer_updates_are_counted_apart():
    """A frozen layer and BatchNorm's moving statistics: held by every replica and read from
    the PS every step, though `params` (trainable, as the scenario contract says) leaves them out."""
    import tensorflow as tf

    from rung.measure.counts import non_trainable_params

    frozen = tf.keras.layers.Dense(16, trainable=False)
    m = tf.keras.Sequential([tf.keras.Input((8,)), frozen, tf.keras.layers.BatchNormalization(),
                             tf.keras.layers.Dense(1)])
    assert non_trainable_params(m) == 8 * 16 + 16 + 2 * 16  # the frozen kernel and bias, mean and variance


def test_a_frozen_base_keeps_no_activations_and_runs_no_backward_pass():
    """No gradient reaches a frozen layer, so the backward pass reads only the head's input.
    TensorFlow's tape still builds gradient ops through the base (Keras 3 leaves its
    tf.Variables trainable), which nothing reads and TensorFlow prunes before the step runs.
    Before, they were counted: a frozen ResNet50 base at 64 px kept 8.7 MB an example, now
    8,232 B (its pooled 2,048 features and the logits)."""
    import tensorflow as tf

    from rung.measure.counts import activation_bytes, flops_per_example, ops_per_step

    def model(frozen):
        base = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(256, activation="relu"),
                                    tf.keras.layers.Dense(64, activation="relu")])
        base.trainable = not frozen
        m = tf.keras.Sequential([base, tf.keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        return m

    batch = (tf.zeros((4, 8)), tf.zeros((4, 1)))
    frozen, trained = activation_bytes(tf, model(True), batch)[0], activation_bytes(tf, model(False), batch)[0]
    assert 64 * 4 <= frozen <= 64 * 4 + 16  # the head's input, and the loss's difference
    assert trained >= (8 + 256 + 64) * 4  # the base's input and outputs, which its gradients read
    # FLOPs: the forward pass and the head's backward, not 3x the forward (a frozen ResNet50
    # base at 64 px: 1.90 GFLOP an example before, 0.63 now, its forward pass ~0.67)
    forward = 2 * (8 * 256 + 256 * 64 + 64)  # the matmuls
    frozen_flops, trained_flops = flops_per_example(tf, model(True), batch), flops_per_example(tf, model(False), batch)
    assert forward <= frozen_flops <= 1.2 * forward
    assert trained_flops >= 2.5 * forward
    # kernels: the base's gradient kernels do not run (a frozen ResNet50 base: 2,031 a step
    # counted before, 879 now)
    assert ops_per_step(tf, model(True), batch) <= 0.6 * ops_per_step(tf, model(False), batch)  # 24 and 52 here


def test_an_optimizer_that_accumulates_its_gradients_is_read():
    """Keras 3's gradient_accumulation_steps: no replicated strategy runs it (its mirrored fit
    failed here with "`merge_call` called while defining a new graph", keras-team/keras#20582;
    tf-keras's optimizers refuse the argument)."""
    import tensorflow as tf

    from rung.measure.counts import optimizer_accumulation_steps

    def model(**kw):
        m = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
        m.compile(tf.keras.optimizers.Adam(1e-3, **kw), "mse")
        return m

    assert optimizer_accumulation_steps(model(gradient_accumulation_steps=4)) == 4
    assert optimizer_accumulation_steps(model()) == 1


def test_a_distillers_teacher_is_held_and_run_not_trained():
    """keras.io's knowledge distillation: the train_step runs the teacher forward and updates
    the student alone. Before, the teacher (trainable, as Keras sees it) counted in `params`,
    so a plan all-reduced its weights every step, and FLOPs were the student's call() x 3: the
    keras.io-sized pair counted 1.45M parameters (20,490 trained) and 1.63 MFLOP an example,
    where the step runs 119 (the teacher's forward pass)."""
    import tensorflow as tf

    from rung.measure.counts import flops_per_example, gradient_counts, non_trainable_params

    class Distiller(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.teacher = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(512),
                                                tf.keras.layers.Dense(4)])
            self.student = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4)])

        def call(self, x):
            return self.student(x)

        def train_step(self, data):
            x, _ = data
            target = tf.nn.softmax(self.teacher(x, training=False))
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.keras.losses.categorical_crossentropy(target, self(x), from_logits=True))
            self.optimizer.apply_gradients(zip(tape.gradient(loss, self.student.trainable_variables),
                                               self.student.trainable_variables))
            return {"loss": loss}

    m = Distiller()
    m.compile("sgd")
    batch = (tf.zeros((4, 8)), tf.zeros((4, 1)))
    m(batch[0])
    g = gradient_counts(tf, m, batch)
    assert (g.params, g.variables) == (8 * 4 + 4, 2)  # the student's kernel and bias
    assert non_trainable_params(m, g.params) == 8 * 512 + 512 + 512 * 4 + 4  # the teacher
    teacher_forward = 2 * (8 * 512 + 512 * 4)
    assert teacher_forward <= flops_per_example(tf, m, batch) <= 1.3 * teacher_forward + 3 * 2 * 8 * 4 * 3


@pytest.mark.parallel  # asserts nothing on speed
def test_a_compiled_loss_on_data_without_labels_fails_keras3_fit_under_every_strategy(tmp_path):
    """keras.io's diffusion models' pattern (images alone, compile(loss=...), their own
    train_step). The world first: Keras 3's fit of it fails under OneDeviceStrategy and runs
    with no strategy (when Keras stops building the loss on labels None, this test says so).
    Then rung: the profile records it, so single-device plans on Keras 3 warn STRATEGY_FAILS,
    and the bench's failure line says what to change. Before, nothing was said and the
    bench stopped with "ValueError: None values not supported." alone."""
    import tensorflow as tf

    from rung.kerasfit import UNLABELLED_LOSS_PROBLEM
    from rung.measure.counts import unlabelled_compiled_loss
    from rung.measure.profile import profile
    from rung.measure.workload import load_workload

    path = HERE / "workloads" / "unlabelled_loss.py"
    w = load_workload(path)
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
        model = w.build_model()
    with pytest.raises(ValueError, match="None values not supported"):
        model.fit(w.make_dataset(8), epochs=1, steps_per_epoch=1, verbose=0)
    plain = w.build_model()
    plain.fit(w.make_dataset(8), epochs=1, steps_per_epoch=1, verbose=0)
    element = w.make_dataset(8).element_spec
    assert unlabelled_compiled_loss(tf, plain, element)
    assert not unlabelled_compiled_loss(tf, plain, (element, element))  # labelled: fit builds the loss on them
    bare = type(plain)()
    bare.compile(optimizer="adam")  # no compiled loss: nothing to build
    assert not unlabelled_compiled_loss(tf, bare, element)

    p = profile(path, steps=3, warmup=1)
    assert p["strategy_failure"] == UNLABELLED_LOSS_PROBLEM and p["strategy_fails_on_one_device"]
    assert p["non_trainable_params"] == 11_011  # the EMA copy: held, never trained

    # its noise drawn as keras.io's DDIM draws it, keras.random without a seed: MirroredStrategy's
    # fit refuses that too, and both are said at once (one at a time, the first fix met the second)
    from rung.kerasfit import UNSEEDED_RANDOM_PROBLEM

    unseeded = tmp_path / "unseeded_denoiser.py"
    text = path.read_text()
    assert text.count("noises = tf.random.normal(") == 1
    unseeded.write_text(text.replace("noises = tf.random.normal(", "noises = keras.random.normal("))
    p = profile(unseeded, steps=3, warmup=1)
    assert p["strategy_failure"] == UNLABELLED_LOSS_PROBLEM + "; and " + UNSEEDED_RANDOM_PROBLEM
    assert p["strategy_fails_on_one_device"]
    # and without call(), as keras.io's DDIM is: Keras 3's build under a strategy fails on that
    # too once the loss is fixed, and is tried without the loss to say so (before, the loss's
    # finding stood for both; launch then stopped on the build)
    no_call = tmp_path / "no_call_denoiser.py"
    text = unseeded.read_text()
    for line in ("    def call(self, x, training=False):\n        return self.network(x, training=training)\n",
                 "    m.build((None, 16, 16, 3))\n"):
        assert text.count(line) == 1
        text = text.replace(line, "")
    no_call.write_text(text)
    p = profile(no_call, steps=3, warmup=1)
    first, build, draws = p["strategy_failure"].split("; and ")
    assert (first, draws) == (UNLABELLED_LOSS_PROBLEM, UNSEEDED_RANDOM_PROBLEM) and p["strategy_fails_on_one_device"]
    assert build.startswith("mark the model built in build_model()") and "does not have a `call()`" in build, build
    # a compile() of its own that takes other arguments cannot be called again without the loss:
    # the build is not tried, and the profile says what it found (called so, compile() raises
    # TypeError, which would end the profile)
    own_compile = tmp_path / "own_compile_denoiser.py"
    text = no_call.read_text()
    for old_text, new_text in (
            ("    def train_step(self, images):\n",
             "    def compile(self, learning_rate, **kwargs):\n"
             "        super().compile(optimizer=keras.optimizers.Adam(learning_rate), **kwargs)\n\n"
             "    def train_step(self, images):\n"),
            ("m.compile(optimizer=keras.optimizers.Adam(1e-3), loss=", "m.compile(1e-3, loss=")):
        assert text.count(old_text) == 1, old_text
        text = text.replace(old_text, new_text)
    own_compile.write_text(text)
    p = profile(own_compile, steps=3, warmup=1)
    assert p["strategy_failure"] == UNLABELLED_LOSS_PROBLEM + "; and " + UNSEEDED_RANDOM_PROBLEM


def test_a_model_input_declared_with_an_unknown_length_is_traced_with_what_the_dataset_feeds():
    """keras.io's translation Transformer declares keras.Input(shape=(None,)) and is fed
    sentences padded to 20 tokens: before, the profile called its shapes dynamic for that,
    which a TPU plan warns of. The oracle is the trace itself, under jit_compile (what a TPU
    step is): static data traces the model once, at (8, 20); padded batches of different
    lengths trace it with the length unknown, and the dataset's own line says so."""
    import numpy as np
    import tensorflow as tf

    from rung.measure.shapes import dynamic_shape_details

    traced = []

    class Seen(tf.keras.layers.Layer):
        def call(self, x):
            traced.append(tuple(x.shape))
            return x

    def model():
        inp = tf.keras.Input((None,), dtype="int32", name="tokens")
        x = Seen()(tf.keras.layers.Embedding(50, 4)(inp))
        m = tf.keras.Model(inp, tf.keras.layers.Dense(1)(tf.keras.layers.GlobalAveragePooling1D()(x)))
        m.compile("sgd", "mse", jit_compile=True)
        return m

    static = tf.data.Dataset.from_tensor_slices((np.ones((32, 20), "int32"), np.ones((32, 1), "float32")))
    static = static.batch(8, drop_remainder=True)
    m = model()
    dyn, notes = dynamic_shape_details(tf, static.element_spec, m, list(static.take(2)))
    assert dyn == [] and any(n.startswith("model input tokens (None, None) declared with an unknown dimension")
                             for n in notes)
    traced.clear()
    m.fit(static, epochs=1, verbose=0)
    assert traced == [(8, 20, 4)]

    lengths = tf.data.Dataset.range(1, 33).map(lambda n: (tf.ones([n], tf.int32), tf.ones([1])))
    padded = lengths.padded_batch(8)
    m = model()
    dyn, notes = dynamic_shape_details(tf, padded.element_spec, m, list(padded.take(4)))
    assert dyn == ["features has shape (None, None): unknown non-batch dimension (4 different shapes in 4 batches "
                   "read)"] and not any("model input" in n for n in notes)
    traced.clear()
    m.fit(padded, epochs=1, verbose=0)
    assert traced == [(None, None, 4)]


def test_a_dimension_the_spec_leaves_unknown_is_dynamic_only_when_batches_differ():
    """timeseries_dataset_from_array's windows are (None, None, 1) in the spec and (B, 48, 1)
    in every batch: before, TPU plans were told of dynamic shapes. A padded batch of texts
    of different lengths stays dynamic."""
    import numpy as np
    import tensorflow as tf

    from rung.measure.shapes import dynamic_shape_details

    series = np.arange(400, dtype="float32")[:, None]
    windows = tf.keras.utils.timeseries_dataset_from_array(series[:-48], series[48:, 0], sequence_length=48,
                                                           batch_size=16)
    assert windows.element_spec[0].shape.as_list() == [None, None, 1]
    seen = list(windows.take(8))
    dyn, notes = dynamic_shape_details(tf, windows.element_spec, None, seen)
    assert dyn == [] and any("the same (48, 1) after the batch in all 8 batches read" in n for n in notes)
    assert dynamic_shape_details(tf, windows.element_spec, None)[0]  # no batches read: the spec alone
    # read only when the spec leaves a dimension unknown (the profile passes a reader)
    reads = []
    static = tf.data.Dataset.from_tensors(tf.ones([2, 3])).element_spec
    assert dynamic_shape_details(tf, static, None, lambda: reads.append(1) or [])[0] == [] and reads == []
    assert dynamic_shape_details(tf, windows.element_spec, None, lambda: reads.append(1) or seen)[0] == []
    assert reads == [1]

    lengths = tf.data.Dataset.range(1, 40).map(lambda n: (tf.ones([n]), n))
    texts = lengths.padded_batch(4)
    dyn, _ = dynamic_shape_details(tf, texts.element_spec, None, list(texts.take(8)))
    assert dyn == ["features has shape (None, None): unknown non-batch dimension (8 different shapes in 8 batches "
                   "read)"]


@pytest.mark.parallel
def test_a_model_built_under_a_strategy_of_the_files_own_is_refused_in_one_line(tmp_path):
    """A file written after a try at distributing by hand, its strategy made where the text
    does not show rung (a method): rung profile ran it, then failed at the first step with
    TensorFlow's 'Need to be inside "with strategy.scope()"'; under a run's strategy its
    build failed with "Mixing different tf.distribute.Strategy objects" and two addresses.
    Both now say what to change, naming the file's strategy and line."""
    import tensorflow as tf

    from rung.errors import InputError
    from rung.measure.workload import build_checked_model, load_workload

    work = tmp_path / "by_hand.py"
    work.write_text(textwrap.dedent("""\
        import tensorflow as tf

        class Setup:
            def strategy(self):
                return tf.distribute.OneDeviceStrategy("/cpu:0")

        def build_model():
            with Setup().strategy().scope():
                model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
                model.compile(optimizer="sgd", loss="mse")
            return model

        def make_dataset(batch_size, input_context=None):
            return tf.data.Dataset.from_tensors((tf.zeros((batch_size, 4)), tf.zeros((batch_size, 2)))).repeat()
        """))
    w = load_workload(work)  # the text shows no strategy made where rung runs it: imported
    with pytest.raises(InputError) as e:
        build_checked_model(w, tf)
    assert e.value.message.startswith("build_model() builds the model under a tf.distribute strategy of its own "
                                      "(OneDeviceStrategy); rung calls build_model() inside the scope of the strategy "
                                      "each run uses"), e.value.message
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope(), pytest.raises(InputError) as e:
        build_checked_model(w, tf)
    assert e.value.message.endswith("(RuntimeError: Mixing different tf.distribute.Strategy objects (line 8))"), \
        e.value.message
    assert "object at 0x" not in e.value.message


@pytest.mark.parallel  # asserts nothing on speed
def test_a_file_that_sets_threads_after_the_runtime_started_is_told_what_to_do_instead(tmp_path):
    """A team's CPU tuning at the top of the file: the bench's and train.py's strategies
    start TensorFlow's runtime before the import (MultiWorkerMirroredStrategy must configure
    its collectives first), and the import failed on TensorFlow's "cannot be modified after
    initialization" with nothing on what to do."""
    import tensorflow as tf

    from rung.errors import InputError
    from rung.measure.workload import load_workload

    float(tf.constant(1.0) + 1.0)  # the runtime has started, as under a run's strategy
    work = tmp_path / "threads.py"
    work.write_text("import tensorflow as tf\n\ntf.config.threading.set_inter_op_parallelism_threads(2)\n\n\n"
                    "def build_model():\n    pass\n\n\ndef make_dataset(batch_size, input_context=None):\n    pass\n")
    with pytest.raises(InputError) as e:
        load_workload(work)
    assert e.value.message.startswith("cannot be imported: the file configures TensorFlow's runtime where rung "
                                      "imports it"), e.value.message
    assert "TF_NUM_INTEROP_THREADS" in e.value.message
    assert e.value.message.endswith("(RuntimeError: Inter op parallelism cannot be modified after initialization.) "
                                    "(line 3)"), e.value.message
    # `rung profile` in a process of its own: it profiled the file with the file's threads and
    # said nothing, and bench and launch refused it after. It starts the runtime first as they
    # do, and refuses it in the same line
    r = run_cli("profile", str(work), "--json")
    assert r.returncode == 2 and r.stdout == "", r.stderr[-800:]
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"rung: error: {work}: cannot be imported: the file configures TensorFlow's runtime"), line


@pytest.mark.parallel
def test_a_cache_file_every_worker_would_share_is_found_and_one_of_each_workers_is_not(tmp_path):
    """`.cache("/tmp/cache")` in make_dataset: the bench's multi-worker and parameter-server
    runs failed on TensorFlow's "concurrent caching iterator running - cache lockfile
    already exists" (two workers on one machine write the same files). The profile finds the
    shared path from make_dataset's graphs for two workers' contexts; a path with the
    pipeline's id in it, and a cache in memory, are not claimed; nothing is written."""
    import tensorflow as tf

    from rung.measure.pipeline import shared_file_caches

    shared = str(tmp_path / "cache")

    def make(path_of):
        def make_dataset(batch_size, input_context=None):
            ds = tf.data.Dataset.range(64)
            return ds.cache(path_of(input_context)).repeat().batch(batch_size)
        return make_dataset

    assert shared_file_caches(tf, make(lambda ctx: shared), 8) == [shared]
    assert shared_file_caches(tf, make(lambda ctx: f"{shared}_{ctx.input_pipeline_id if ctx else 0}"), 8) == []
    assert shared_file_caches(tf, make(lambda ctx: ""), 8) == []  # .cache() in memory
    assert shared_file_caches(tf, lambda batch_size: tf.data.Dataset.range(8).cache(shared).batch(batch_size), 4) \
        == [shared]                                                # no context: every worker's the same
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parallel
def test_a_command_line_parsed_at_import_sees_the_files_own_not_rungs(tmp_path):
    """A script that became a workload kept `args = parser.parse_args()` at its top: it read
    rung's own command line (`profile work.py --steps 3`), and argparse printed its usage
    under the name rung ("usage: rung [-h] [--lr LR]", "rung: error: unrecognized arguments:
    profile ...") and exited 2, as if rung had refused its own `profile`. The file now sees
    `python workload.py`'s command line: its defaults apply; an argument it requires stops it
    in rung's line."""
    from rung.errors import InputError
    from rung.measure.workload import load_workload

    text = textwrap.dedent("""\
        import argparse
        import sys
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=0.5)
        {extra}
        args = parser.parse_args()
        SEEN = list(sys.argv)

        def build_model():
            pass

        def make_dataset(batch_size, input_context=None):
            pass
        """)
    work = tmp_path / "args.py"
    work.write_text(text.format(extra=""))
    argv = list(sys.argv)
    w = load_workload(work)
    assert w.module.args.lr == 0.5 and w.module.SEEN == [str(work)]
    assert sys.argv == argv
    work.write_text(text.format(extra='parser.add_argument("--data", required=True)'))
    with pytest.raises(InputError) as e:
        load_workload(work)
    assert e.value.message.startswith("the file exited while it was imported (SystemExit: 2): a command line "
                                      "parsed at its top (argparse's parse_args()) gets no arguments from rung"), \
        e.value.message
    assert sys.argv == argv
    r = run_cli("profile", str(work), "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines()[-1].startswith(f"rung: error: {work}: the file exited while it was imported")
    assert "usage: args.py" in r.stderr and "usage: rung" not in r.stderr  # argparse's own lines name the file


@pytest.mark.parallel  # asserts nothing on speed
def test_a_file_that_turns_eager_execution_off_is_refused_in_one_line(tmp_path):
    """`tf.compat.v1.disable_eager_execution()` left at the top from TensorFlow 1 code: rung
    profile stopped on "rung: internal error: TypeError: int() argument must be ... not
    'SymbolicTensor'". It is the file's to change, said in one line with its line; in a
    process of its own, as the switch is the whole process's and not undone."""
    work = tmp_path / "graph_mode.py"
    work.write_text(EXAMPLES["mlp"].read_text().replace(
        "import tensorflow as tf\n", "import tensorflow as tf\n\ntf.compat.v1.disable_eager_execution()\n", 1))
    at = work.read_text().splitlines().index("tf.compat.v1.disable_eager_execution()") + 1
    r = run_cli("profile", str(work), "--json")
    assert r.returncode == 2 and r.stdout == "", r.stderr[-800:]
    [line] = r.stderr.strip().splitlines()
    assert line == (f"rung: error: {work}: the file turns TensorFlow 2's eager execution off where rung imports it "
                    "(tf.compat.v1.disable_eager_execution() or disable_v2_behavior(), TensorFlow 1's graph mode), for "
                    "the whole process and for good: tf.distribute's strategies under Keras fit, and rung, run "
                    f"eagerly; remove that call (fit compiles the training step into a graph itself) (line {at})")


@pytest.mark.parallel  # asserts nothing on speed
def test_a_session_cleared_in_build_model_is_named_not_taken_for_variables_made_before(tmp_path):
    """keras.backend.clear_session() at the start of build_model(), as notebooks write it:
    every bench run failed on "IndexError: pop from empty list" (the strategy's scope,
    reset with the graph), and the profile said the model's variables were made before
    build_model() was called. Read from the text; reached through a method, where the text
    does not show it, from the graph the call replaced. In processes of their own (it resets
    Keras's state)."""
    body = ("import tensorflow as tf\n\n\nclass Builder:\n    def fresh(self):\n"
            "        tf.keras.backend.clear_session()\n"
            "        m = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(2)])\n"
            "        m.compile(optimizer='adam', loss='mse')\n        return m\n\n\n"
            "def build_model():\n    {call}\n\n\n"
            "def make_dataset(batch_size, input_context=None):\n"
            "    return tf.data.Dataset.from_tensors((tf.zeros((batch_size, 8)), tf.zeros((batch_size, 2))))"
            ".repeat()\n")
    for name, call, said in [
            ("text", "tf.keras.backend.clear_session()\n    return Builder().fresh()", "clear_session (line 13)"),
            ("method", "return Builder().fresh()", "clear_session, reached from build_model()")]:
        work = tmp_path / f"{name}.py"
        work.write_text(body.format(call=call))
        r = run_cli("profile", str(work), "--json")
        assert r.returncode == 2 and r.stdout == "", r.stderr[-800:]
        [line] = r.stderr.strip().splitlines()
        assert line.startswith(f"rung: error: {work}: the file clears Keras's session where rung builds the model "
                               f"({said}): "), line
        assert "made before" not in line
    # under a run's strategy (the bench's tasks build so), the line is not lost to the
    # scope's exit ("IndexError: pop from empty list")
    script = textwrap.dedent(f"""\
        import tensorflow as tf
        from rung.errors import InputError
        from rung.measure.workload import build_checked_model, load_workload
        w = load_workload({str(tmp_path / "method.py")!r})
        try:
            with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                build_checked_model(w, tf)
        except InputError as e:
            print("InputError", e.message[:60])
        """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    assert r.stdout.strip() == "InputError the file clears Keras's session where rung builds the model", r.stdout


@pytest.mark.parallel
def test_a_build_model_that_takes_the_strategy_is_told_rung_passes_none(tmp_path):
    """`def build_model(strategy):` with its own `with strategy.scope():`, from a try at
    distributing by hand: "build_model() raised TypeError: build_model() missing 1 required
    positional argument: 'strategy'". Said before anything is called, in the line `rung init`
    reads from the text; a parameter with a default is fine."""
    from rung.errors import InputError
    from rung.measure.workload import load_workload

    work = tmp_path / "takes.py"
    work.write_text("def build_model(strategy, lr=0.1):\n    pass\n\n\n"
                    "def make_dataset(batch_size, input_context=None):\n    pass\n")
    with pytest.raises(InputError) as e:
        load_workload(work)
    assert e.value.message == ("build_model() requires strategy (line 1), and rung calls build_model() with no "
                               "arguments (contract: workload v1): give it a default; rung calls build_model() inside "
                               "the scope of each run's strategy, so the file needs no strategy or scope of its own")
    work.write_text("def build_model(lr=0.1, **kwargs):\n    pass\n\n\n"
                    "def make_dataset(batch_size, input_context=None):\n    pass\n")
    load_workload(work)


@pytest.mark.parallel
def test_a_script_that_trains_at_import_is_refused_before_it_runs(tmp_path):
    """A keras.io-style script given build_model() and make_dataset() and kept whole: rung
    profile imported it, and it trained its 3 epochs (its progress bars above the profile)
    before rung measured anything; a 30-epoch script would have taken hours, in every process
    rung starts. Now refused before the import, in one line."""
    from rung.errors import InputError
    from rung.measure.workload import load_workload

    work = tmp_path / "script.py"
    marker = tmp_path / "trained"
    work.write_text(textwrap.dedent(f"""\
        import pathlib
        import tensorflow as tf

        def build_model():
            model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
            model.compile(optimizer="sgd", loss="mse")
            return model

        def make_dataset(batch_size, input_context=None):
            return tf.data.Dataset.from_tensors((tf.zeros((batch_size, 4)), tf.zeros((batch_size, 2)))).repeat()

        model = build_model()
        model.fit(make_dataset(8), steps_per_epoch=2, epochs=3, verbose=0)
        pathlib.Path({str(marker)!r}).write_text("it ran")
        """))
    with pytest.raises(InputError) as e:
        load_workload(work)
    assert e.value.message.startswith("the file trains a model where rung runs it (model.fit (line 13)): every "
                                      "process rung starts would train it first"), e.value.message
    assert not marker.exists()  # refused before the import


GLOBAL_MODEL = """\
import tensorflow as tf

shared = tf.keras.layers.Dense(8, activation="relu")
shared.build((None, 4))
{model}
adam = tf.keras.optimizers.Adam()

def build_model():
    {build}
    model.compile(optimizer={optimizer}, loss="mse")
    return model

def make_dataset(batch_size, input_context=None):
    return tf.data.Dataset.from_tensors((tf.zeros((batch_size, 4)), tf.zeros((batch_size, 2)))).repeat()
"""


@pytest.mark.parallel
def test_a_model_whose_variables_were_made_before_build_model_was_called_is_refused(tmp_path):
    """keras.io's transfer learning keeps its base model at the top of the file, and a
    newcomer's script builds the model there. rung calls build_model() inside each run's
    strategy scope, and variables made outside it are not replicated: a bench of a model
    built at the top of the file ran mirrored:2 and multi-worker:2 with no exchange at all
    (multi-worker 1.3 ms a step against 13.3 predicted), and nothing was said. The model made
    inside build_model() from the same text is the control."""
    import tensorflow as tf

    from rung.errors import InputError
    from rung.measure.workload import build_checked_model, load_workload

    inside = "model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8), tf.keras.layers.Dense(2)])"
    cases = {"top": ("model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])", "pass", '"sgd"'),
             "shared": ("", "model = tf.keras.Sequential([tf.keras.Input((4,)), shared, tf.keras.layers.Dense(2)])",
                        '"sgd"'),
             "inside": ("", inside, '"sgd"'),
             "optimizer": ("", inside, "adam"),  # an Adam made at import: Keras 3's mirrored fit failed on it
             "optimizer_inside": ("", inside, "tf.keras.optimizers.Adam()")}
    said = {}
    for name, (model, build, optimizer) in cases.items():
        (tmp_path / f"{name}.py").write_text(GLOBAL_MODEL.format(model=model, build=build, optimizer=optimizer))
        w = load_workload(tmp_path / f"{name}.py")
        for strategy in (None, tf.distribute.OneDeviceStrategy("/cpu:0")):
            try:
                with strategy.scope() if strategy else contextlib.nullcontext():
                    build_checked_model(w, tf)
                said[name, strategy is None] = None
            except InputError as e:
                said[name, strategy is None] = e.message
    for fine in ("inside", "optimizer_inside"):
        assert said[fine, True] is None and said[fine, False] is None, said[fine, True]
    for alone in (True, False):  # the profile's build, and a run's under its strategy
        assert said["top", alone].startswith("build_model() returned a model whose variables were made before it was "
                                             "called (all 2 of its variables: ")
        assert said["shared", alone].startswith("build_model() returned a model whose variables were made before it "
                                                "was called (2 of its 4 variables: ")
        assert "make the model, every layer of it, inside build_model()" in said["shared", alone]
        assert said["optimizer", alone].startswith("build_model() returned a model whose variables were made before "
                                                   "it was called (its optimizer, Adam)")
        assert said["optimizer", alone].endswith("(the optimizer too: model.compile(optimizer="
                                                 "tf.keras.optimizers.Adam(...)) there)")


METRIC_AT_IMPORT = """\
import tensorflow as tf

ACC = tf.keras.metrics.SparseCategoricalAccuracy(name="acc")

def build_model():
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics={metrics})
    return model

def make_dataset(batch_size, input_context=None):
    return tf.data.Dataset.from_tensors((tf.zeros((batch_size, 4)), tf.zeros((batch_size,), tf.int32))).repeat()
"""


@pytest.mark.parallel
def test_a_metric_made_at_import_and_compiled_is_refused_on_both_kerases(tmp_path):
    """`ACC = tf.keras.metrics.SparseCategoricalAccuracy()` at the top, passed to compile:
    the profile said nothing and advise planned multi-worker, while every tf-keras run
    failed when build_model() compiled it under its strategy (rung bench: single_device,
    multi-worker and parameter servers on tf-keras, "Metric ... was created inside a
    different distribution strategy scope than the model"). The same metric made in
    build_model(), or named, is the control. Oracle: tf-keras's own refusal, run here."""
    script = textwrap.dedent("""\
        import sys
        import tensorflow as tf
        from rung.errors import InputError
        from rung.measure.workload import build_checked_model, load_workload
        for path in sys.argv[1:]:
            w = load_workload(path)
            for strategy in (None, tf.distribute.OneDeviceStrategy("/cpu:0")):
                try:
                    if strategy is None:
                        build_checked_model(w, tf)
                    else:
                        with strategy.scope():
                            w.build_model()  # the file as written: does Keras itself refuse it?
                            build_checked_model(w, tf)
                    said = "ok"
                except InputError as e:
                    said = "rung: " + e.message[:120]
                except Exception as e:
                    said = "keras: " + str(e)[:200]
                print(path.rsplit("/", 1)[-1], strategy is None, said)
        """)
    cases = {"top": "[ACC]", "inside": "[tf.keras.metrics.SparseCategoricalAccuracy(name='acc')]",
             "named": "['accuracy']", "nested": "[[ACC]]"}
    paths = []
    for name, metrics in cases.items():
        paths.append(tmp_path / f"{name}.py")
        paths[-1].write_text(METRIC_AT_IMPORT.format(metrics=metrics))
    for legacy in ("1", "0"):
        r = subprocess.run([sys.executable, "-c", script, *map(str, paths)], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "TF_USE_LEGACY_KERAS": legacy})
        assert r.returncode == 0, r.stderr[-1500:]
        said = {(f, alone == "True"): rest for f, alone, rest in (line.split(" ", 2) for line in r.stdout.splitlines())}
        for fine in ("inside.py", "named.py"):
            assert said[fine, True] == said[fine, False] == "ok", (legacy, said)
        for top in ("top.py", "nested.py"):
            # rung refuses it alone (the profile) and under a strategy, in its line
            assert said[top, True].startswith("rung: build_model() returned a model whose variables were made before "
                                              "it was called (its metric acc)"), (legacy, said)
            if legacy == "1":  # the oracle: tf-keras itself refuses it under a strategy
                assert said[top, False].startswith("keras: Metric"), said
                assert "different distribution strategy scope" in said[top, False], said


@pytest.mark.parallel
def test_variables_tf_keras_wraps_for_mixed_precision_are_known_as_made_in_build_model():
    """tf-keras hands the model an AutoCastVariable around each variable made under
    mixed_float16: the check above called all of them made before the call (rung bench of
    tests/measure/workloads/mixed16.py would have refused it on tf-keras)."""
    script = textwrap.dedent(f"""\
        import tensorflow as tf
        from rung.measure.workload import build_checked_model, load_workload
        w = load_workload({str(HERE / "workloads" / "mixed16.py")!r})
        with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
            model = build_checked_model(w, tf)
        print(type(model.weights[0]).__name__, len(model.weights))
        """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TF_USE_LEGACY_KERAS": "1"})
    assert r.returncode == 0, r.stderr[-1500:]
    assert r.stdout.split()[0] == "AutoCastVariable"


@pytest.mark.parallel  # asserts nothing on speed
def test_what_keras_ops_in_compute_mask_becomes_on_both_kerases():
    """keras.io's sequence-to-sequence Transformer masks padding in its embedding's
    compute_mask with keras.ops.not_equal, which tf-keras (multi-worker, parameter servers)
    lacks. rung's hint said to use the TensorFlow op, and tf.not_equal there fails Keras 3's
    functional build ("A KerasTensor cannot be used as input to a TensorFlow function");
    Python's != builds on both. The hint's words, against both Kerases."""
    from rung.failures import KERAS3_API_ON_TF_KERAS

    # both ways in one process of each Keras: each model built on its own (its error kept)
    script = textwrap.dedent("""\
        import json
        import tensorflow as tf
        def build(how):
            class Embed(tf.keras.layers.Layer):
                def __init__(self):
                    super().__init__()
                    self.table = tf.keras.layers.Embedding(50, 4)
                def call(self, x):
                    return self.table(x)
                def compute_mask(self, x, mask=None):
                    return tf.not_equal(x, 0) if how == "tf" else x != 0
            x = tf.keras.Input((6,), dtype="int64")
            m = tf.keras.Model(x, tf.keras.layers.GlobalAveragePooling1D()(Embed()(x)))
            return m(tf.constant([[1, 2, 0, 0, 0, 0]])).shape
        out = {}
        for how in ("tf", "python"):
            try:
                build(how)
                out[how] = None
            except Exception as e:
                out[how] = str(e)
        print(json.dumps(out))
        """)
    built = {}
    for keras, env in (("keras3", {}), ("tf_keras", {"TF_USE_LEGACY_KERAS": "1"})):
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                           env={**os.environ, **env})
        assert r.returncode == 0, r.stderr[-800:]
        errors = json.loads(r.stdout.strip().splitlines()[-1])
        for how, error in errors.items():
            built[keras, how] = error is None
        if errors["tf"] is not None:
            assert "KerasTensor cannot be used as input to a TensorFlow function" in errors["tf"], errors["tf"]
    assert built == {("keras3", "tf"): False, ("keras3", "python"): True,
                     ("tf_keras", "tf"): True, ("tf_keras", "python"): True}
    assert "in a layer's compute_mask" in KERAS3_API_ON_TF_KERAS and "(inputs != 0)" in KERAS3_API_ON_TF_KERAS


@pytest.mark.parallel  # asserts nothing on speed
def test_keras_3_clips_each_replicas_share_and_tf_keras_the_sum():
    """CLIPPING_PER_REPLICA's premise, against one device: one SGD step (learning rate 1) of
    clipping that bites (threshold 0.01), the same 64 examples on one device and on two
    logical CPU devices. Keras 3 clips each replica's half before summing: twice one
    device's update, for each kind of clipping. tf-keras sums, then clips: the same update.
    The profile's reading of the optimizer's clipping, on both Kerases."""
    script = textwrap.dedent("""\
        import sys
        import numpy as np
        import tensorflow as tf
        from rung.measure.counts import gradient_clipping
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        keras = tf.keras
        x = np.random.RandomState(0).rand(64, 8).astype("float32")
        y = np.random.RandomState(1).rand(64, 1).astype("float32")
        def update(strategy, kind):
            with strategy.scope():
                keras.utils.set_random_seed(0)
                m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
                m.compile(optimizer=keras.optimizers.SGD(1.0, **{kind: 0.01}), loss="mse")
            before = [v.numpy() for v in m.weights]
            m.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(64), epochs=1, verbose=0)
            return np.linalg.norm(np.concatenate([(v.numpy() - b).ravel() for v, b in zip(m.weights, before)])), m
        for kind in ("clipnorm", "global_clipnorm", "clipvalue"):
            one, m = update(tf.distribute.OneDeviceStrategy("/cpu:0"), kind)
            two, _ = update(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), kind)
            print(kind, two / one, gradient_clipping(m))
        """)
    for keras, env, ratio in (("keras3", {}, 2.0), ("tf_keras", {"TF_USE_LEGACY_KERAS": "1"}, 1.0)):
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                           env={**os.environ, **env})
        assert r.returncode == 0, r.stderr[-1500:]
        rows = [line.split() for line in r.stdout.splitlines()]
        assert [k for k, _, _ in rows] == ["clipnorm", "global_clipnorm", "clipvalue"], r.stdout
        for kind, measured, read in rows:
            assert float(measured) == pytest.approx(ratio, rel=0.01), (keras, kind, measured)
            assert read == f"{kind}=0.01"


@pytest.mark.parallel  # asserts nothing on speed
def test_a_train_step_that_clips_doubles_the_replica_checks_gradients_on_both_kerases():
    """A train_step that divides its loss as Keras does and clips with
    tf.clip_by_global_norm: the replica check sees 2x one device's gradients under 2
    replicas while clipping bites (0.01), on Keras 3 and tf-keras alike, and 1x when it
    does not (1e6). So a not_scaled verdict of such a step may be the clipping alone, and
    rung says so (CLIPPING_PER_REPLICA); the file's clipping call is read with its line."""
    from rung.kerasfit import step_clipping_calls
    from rung.measure import replicas

    path = HERE / "workloads" / "clipped_step.py"
    assert step_clipping_calls(path.read_text()) == ["Clipped.train_step: tf.clip_by_global_norm (line 20)"]
    seen = {}
    for clip in ("0.01", "1e6"):
        for keras in ("keras3", "tf_keras"):
            os.environ["RUNG_TEST_CLIP"] = clip
            try:
                found = replicas.check(path, 32, keras)
            finally:
                del os.environ["RUNG_TEST_CLIP"]
            assert found.get("checked"), found
            seen[clip, keras] = (round(found["gradient_ratio"], 2), found["verdict"])
    assert seen == {("0.01", "keras3"): (2.0, "not_scaled"), ("0.01", "tf_keras"): (2.0, "not_scaled"),
                    ("1e6", "keras3"): (1.0, "scaled"), ("1e6", "tf_keras"): (1.0, "scaled")}


@pytest.mark.parallel  # asserts nothing on speed
def test_a_train_step_that_logs_its_replicas_share_of_the_loss_is_found_on_both_kerases():
    """TensorFlow's distributed-training guide divides the loss by the global batch
    (compute_average_loss) and feeds that to a Mean tracker: right gradients, and under 2
    replicas a logged loss of half one device's on the same batches (fit shows the same
    half). A step whose loss is a per-replica mean logs what one device does (and is
    LOSS_NOT_SCALED instead)."""
    from rung.measure import replicas

    seen = {}
    for name, keras in (("logged_share", "keras3"), ("logged_share", "tf_keras"), ("custom_step", "keras3")):
        found = replicas.check(HERE / "workloads" / f"{name}.py", 16, keras)
        assert found.get("checked"), found
        seen[name, keras] = (found["verdict"], round(found["logged_loss_ratio"], 2), found["logged_loss_divided"])
    assert seen == {("logged_share", "keras3"): ("scaled", 0.5, True), ("logged_share", "tf_keras"): ("scaled", 0.5, True),
                    ("custom_step", "keras3"): ("not_scaled", 1.0, False)}


@pytest.mark.parallel  # asserts nothing on speed
def test_a_text_vectorization_layer_is_profiled_on_tf_keras(tmp_path):
    """tf-keras's TextVectorization lists a VocabWeightHandler among the model's weights (no
    variable, no name, no shape): profiling on tf-keras stopped with "internal error:
    AttributeError: 'VocabWeightHandler' object has no attribute 'name'", and rung advise
    planned multi-worker on the Keras 3 step (STEP_ON_OTHER_KERAS, "measuring it on tf-keras
    here failed")."""
    work = HERE / "workloads" / "text_vectorization.py"
    script = textwrap.dedent(f"""\
        import tensorflow as tf
        from rung.measure.counts import non_trainable_params
        from rung.measure.workload import build_checked_model, load_workload
        w = load_workload({str(work)!r})
        with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
            model = build_checked_model(w, tf)
        print(",".join(sorted({{type(v).__name__ for v in model.weights}})), non_trainable_params(model),
              non_trainable_params(model, trained=35_137))
        """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TF_USE_LEGACY_KERAS": "1"})
    assert r.returncode == 0, r.stderr[-1500:]
    kinds, frozen, held = r.stdout.split()
    assert "VocabWeightHandler" in kinds.split(",") and frozen == "0" and held == "0"
    r = run_cli("profile", str(work), "--keras", "tf_keras", "--json", "--steps", "4", "--warmup", "1", timeout=600)
    assert r.returncode == 0, r.stderr[-800:]
    p = json.loads(r.stdout)
    # 1,000 x 32 embedding, 3 x 32 x 32 + 32 convolution, 32 + 1 dense: by hand
    assert p["keras"] == "tf_keras" and p["params"] == 32_000 + 3_104 + 33


def test_batches_of_different_shapes_are_timed_against_one_batch_again():
    """Sequences of 8 to 512 steps, one length a batch: a step's cost follows the length (a
    cost proportional to it would vary by CV 0.56, and the step's fixed part makes it less).
    The profile times each of 12 batches beside one batch timed as often and keeps the
    difference; a synchronous plan then waits for the slowest replica's batch (LOAD_IMBALANCE),
    the term's E[max of N] by hand. A model of static shapes is not timed so (the bundled CNN)."""
    r = run_cli("profile", str(HERE / "workloads" / "varlen.py"), "--steps", "6", "--warmup", "2", "--json",
                timeout=400)
    assert r.returncode == 0, r.stderr[-800:]
    p = json.loads(r.stdout)
    assert p["dynamic_shapes"]
    distinct, same = p["batch_time_cv_raw"]
    assert 0.2 < p["batch_time_cv"] <= distinct < 0.8, p["batch_time_cv_raw"]
    assert p["batch_time_cv"] == pytest.approx(max(0.0, distinct ** 2 - same ** 2) ** 0.5)
    from rung.ladder import advise
    from rung.spec import parse_scenario
    from rung.spec.profile import Profile, workload_block
    from tests.conftest import valid_scenario

    block = workload_block(Profile.model_validate(p))
    assert block["batch_time_cv"] == p["batch_time_cv"]
    s = parse_scenario(valid_scenario(workload=block, goal={"target_examples_per_second": 2 * 32 / p["step_seconds"]}))
    d = advise(s)
    assert d.verdict == "mirrored" and "LOAD_IMBALANCE" in d.codes
    compute = d.prediction.compute_seconds
    # E[max of 8 standard normals] 1.4236 (Harter 1961): one host's 8 replicas
    assert d.prediction.load_imbalance_seconds == pytest.approx(compute * p["batch_time_cv"] * 1.4236, rel=1e-3)
    static = json.loads(run_cli("profile", str(EXAMPLES["cnn"]), "--steps", "4", "--warmup", "1", "--json",
                                timeout=400).stdout)
    assert static["batch_time_cv"] == 0 and static["batch_time_cv_raw"] is None
