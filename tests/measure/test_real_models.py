"""rung on models nobody on the project wrote: Keras applications (weights=None, small
inputs), a subclassed model with its own train_step (with and without a compiled loss),
a multi-input multi-output model with dict features, FTRL and a mixed_float16 policy.
Real TensorFlow on this CPU. Counts are checked against hand counts (in each file's
docstring) or against Keras itself; decisions are checked for stability over repeated
profiles on this noisy machine."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from rung.examples import workload_examples

pytestmark = [pytest.mark.tf, pytest.mark.serial]
HERE = Path(__file__).parent / "workloads"
STEPS, WARMUP = 12, 2  # 4 blocks of 3 steps: the wait's median of means sets a stalled step aside


@pytest.fixture(scope="module")
def profiles():
    from rung.measure.profile import profile
    names = ("custom_step", "custom_step_compiled", "wide_deep", "ftrl", "mixed16", "gan", "vae", "siamese",
             "apply_built")
    return {n: profile(HERE / f"{n}.py", steps=STEPS, warmup=WARMUP) for n in names}


@pytest.fixture(scope="module")
def resnet50():
    """ResNet50 is the Keras application here (its count against Keras's, its FLOPs against
    the paper's; MobileNetV2 was too, and took 30 s of the suite for the same assertions).
    Its profile is half of `profiles`' work (tracing, counting and saving 23.5 M parameters,
    not its steps), and its tests assert nothing on speed: they run in the parallel pass,
    in one process (`on_resnet50`). Its steps take ~0.2 s here, far longer than any stall
    of its in-memory pipeline: 2 blocks of 3."""
    from rung.measure.profile import profile
    return profile(HERE / "resnet50.py", steps=6, warmup=1)


def on_resnet50(test):
    """Reads the `resnet50` fixture: in the parallel pass, in one of its processes (the
    profile once)."""
    return pytest.mark.xdist_group("resnet50")(pytest.mark.parallel(test))


@pytest.mark.parametrize("name,params,embedding,dense,sparse,slots", [
    # 80 looked-up rows of 16 float32 + 80 int32 indices; Adam keeps 2 float32 slots
    ("custom_step", 16_810, 16_000, 810 * 4, 80 * 16 * 4 + 80 * 4, 16_810 * 8),
    ("custom_step_compiled", 321, 0, 321 * 4, 0, 0),
    # two tables, 64 rows of 8 float32 and 64 int32 indices each
    ("wide_deep", 56_370, 56_000, 370 * 4, 2 * (64 * 8 * 4 + 64 * 4), 56_370 * 8),
    # FTRL: two slots per parameter (accumulator and linear), not one
    ("ftrl", 101, 0, 101 * 4, 0, 101 * 8),
    # mixed_float16: float32 variables and float32 Adam slots
    ("mixed16", 19_210, 0, 19_210 * 4, 0, 19_210 * 8),
    # a GAN: two optimizers of its own, each handed its half of the model's gradients
    ("gan", 322_690, 0, 322_690 * 4, 0, 322_690 * 8),
    # two parts, 8x16+16 and 16+1, each stepped by an optimizer of its own through Keras 3's
    # apply(grads): Adam's two slots on the first part's 144, SGD none
    ("apply_built", 161, 0, 161 * 4, 0, 144 * 8),
])
def test_counts_from_the_models_own_train_step(profiles, name, params, embedding, dense, sparse, slots):
    p = profiles[name]
    # the step's gradients replayed through its optimizers alone: timed for every one of these
    # (apply(grads) once replayed the first part's gradients onto the model's first variables)
    assert p["optimizer_update_seconds"] > 0 and p["optimizer_update_ops"] > 0, p["notes"]
    assert (p["params"], p["embedding_params"]) == (params, embedding)
    # one IndexedSlices gradient per table looked up: custom_step's one, wide_deep's two
    assert p["sparse_gradient_tensors"] == {"custom_step": 1, "wide_deep": 2}.get(name, 0)
    if embedding:  # and the plan takes the count (without embedding rows it has nothing to gather)
        from rung.spec.profile import Profile, workload_block
        assert workload_block(Profile.model_validate(p))["sparse_gradient_tensors"] == p["sparse_gradient_tensors"]
    assert (p["gradient_bytes_dense"], p["gradient_bytes_sparse"]) == (dense, sparse)
    assert p["optimizer_slot_bytes"] == slots and p["gradients_observed"]


@pytest.mark.parametrize("name,logged,metric_variables", [
    # the loss's tracker, or the one Mean tracker a train_step of its own keeps: 2 variables
    ("custom_step", 1, 2), ("custom_step_compiled", 1, 2), ("ftrl", 1, 2), ("mixed16", 1, 2), ("vae", 1, 2),
    ("siamese", 1, 2),
    # two outputs with a loss each: the loss and each output's (Keras 3 logs them as tf-keras
    # does), a Mean each
    ("wide_deep", 3, 6),
    # its own train_step returns d_loss and g_loss, and its metrics are their two Means
    ("gan", 2, 4),
])
def test_the_values_a_step_logs_are_counted(profiles, name, logged, metric_variables):
    """What fit logs a step, which multi-worker fit all-reduces one by one, and its metrics'
    variables, which parameter-server steps update and read on the PS: counted by hand from
    each file (its compile's losses and metrics, or what its train_step returns and the
    trackers its `metrics` lists)."""
    from rung.spec.profile import Profile, workload_block

    assert profiles[name]["logged_values"] == logged
    assert workload_block(Profile.model_validate(profiles[name]))["logged_values"] == logged
    assert profiles[name]["metric_variables"] == metric_variables
    assert workload_block(Profile.model_validate(profiles[name]))["metric_variables"] == metric_variables


@on_resnet50
def test_a_keras_application_counts_as_keras_does(resnet50):
    import tensorflow as tf
    m = tf.keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10)
    trainable = sum(math.prod(v.shape) for v in m.trainable_weights)
    p = resnet50
    assert p["params"] == trainable and p["gradient_bytes_dense"] == trainable * 4
    assert p["flops_per_example"] > 0 and p["ops_per_step"] > 100
    # a functional model is built (no build to try under a strategy), written with tf.keras
    assert not p.get("strategy_failure") and not p["keras3_imports"]
    # fed from memory: 0.2-0.5% of its step waited on input here, alone and beside three busy
    # loops on two cores (the parallel pass's load, and more)
    assert not p["input_bound"] and p["input_wait_fraction"] < 0.2
    assert 0 < p["iterator_overhead_seconds"] and p["input_wait_seconds"] <= p["input_wait_seconds_raw"]


@on_resnet50
def test_resnet50_flops_match_the_published_count(resnet50):
    """He et al. 2016: 3.8-4.1 GMAC forward at 224 px; convolutions scale with the spatial
    area, so at 32 px about 8.2 GFLOP x (32/224)^2 = 167 MFLOP forward, 502 MFLOP to train."""
    assert resnet50["flops_per_example"] == pytest.approx(3 * 8.2e9 * (32 / 224) ** 2, rel=0.15)


def test_mixed_precision_is_said_and_activations_do_not_depend_on_the_batch(profiles):
    from rung.measure.profile import profile
    p = profiles["mixed16"]
    assert p["mixed_precision"] and p["param_dtype"] == "float32"
    assert any("emulates" in n for n in p["notes"])
    bigger = profile(HERE / "mixed16.py", batch=2 * p["per_device_batch"], steps=2, warmup=1)
    assert bigger["activation_bytes_per_example"] == p["activation_bytes_per_example"]


def test_measured_slots_travel_into_the_plan(profiles):
    from rung.model import throughput
    from rung.spec import parse_scenario
    from rung.spec.profile import Profile, workload_block
    from tests.conftest import valid_scenario
    block = workload_block(Profile.model_validate(profiles["ftrl"]))
    assert block["optimizer_slot_bytes"] == 808.0 and block["optimizer"] == "adagrad"
    s = parse_scenario(valid_scenario(workload=block))
    assert throughput.replica(s).optimizer_bytes == 808.0  # not 404 (one Adagrad slot)


def test_fed_pipelines_are_not_input_bound(profiles):
    """Every model here reads a cached or in-memory prefetched pipeline: the device is fed.
    The wait counted is net of next()'s fixed cost, calibrated beside every step."""
    for name, p in profiles.items():
        assert p["input_wait_fraction"] < 0.2, name
        assert 0 < p["iterator_overhead_seconds"] and p["input_wait_seconds"] <= p["input_wait_seconds_raw"]


def test_a_tiny_fast_model_is_fed_not_input_bound():
    """ftrl: a sub-millisecond step fed from memory (its pipeline alone measured 0 beyond
    next()'s fixed cost here; not asserted: a mean of 20 batches moves with one stall). Taking a ready batch costs ~0.2 ms here, a quarter of the step,
    which counted as wait made it 'input-bound'; net of the iterator's cost it is not, in
    every one of 3 runs here. (The bundled text example was the model here: its pipeline maps
    and pads every batch at about the step's own CPU cost, so on a slower 2-core CI
    machine it really fell behind, 20% of the step, and the test failed there.)"""
    from rung.measure.profile import profile
    from rung.model.inputs import INPUT_BOUND_FRACTION
    runs = [profile(HERE / "ftrl.py", steps=STEPS, warmup=WARMUP) for _ in range(3)]
    for p in runs:
        seen = (p["input_wait_seconds_raw"], p["iterator_overhead_seconds"], p["step_seconds"],
                p["input_wait_seconds_ci95"])
        # CI once measured this step at 3.5 ms (0.7 ms here) and the net wait at 20%: the
        # producer thread starved of CPU by the step on a loaded 2-core machine. With two
        # busy loops beside it here, 1 profile in 6 did the same (net 20%, interval 0-71%).
        # Such a call must come as a borderline one (its interval reaches below the line, so
        # advise marks a plan that turns on it CLOSE_CALL), never as a confident one.
        assert not p["input_bound"] or p["input_wait_seconds_ci95"][0] / p["step_seconds"] < INPUT_BOUND_FRACTION, seen
        assert p["input_wait_seconds_raw"] > p["input_wait_seconds"]


def test_an_xla_compiled_step_is_measured_and_carried_to_the_plan(profiles):
    """compile(jit_compile=True): the profile times the step with XLA, as the model asks,
    and carries it into the scenario (advise warns JIT_COMPILE on a parameter-server plan)."""
    from rung.measure.profile import profile
    from rung.spec.profile import Profile, workload_block
    p = profile(HERE.parent.parent / "launch" / "xla.py", steps=4, warmup=1)
    assert p["jit_compile"] is True and workload_block(Profile.model_validate(p))["jit_compile"] is True
    assert p["run_eagerly"] is False and p["eager_step_seconds"] is None  # compiled into a graph
    assert profiles["ftrl"]["jit_compile"] is False


def test_a_model_that_runs_eagerly_is_timed_both_ways_and_carried_to_the_plan():
    """compile(run_eagerly=True): fit runs each step op by op. The profile times the graph
    step (what the plan uses) and a few eager steps, which take longer (here a 0.7 ms
    graph step of a small MLP took 5.7 ms eagerly, as fit's own epochs did)."""
    from rung.measure.profile import profile
    from rung.spec.profile import Profile, workload_block
    p = profile(HERE.parent.parent / "launch" / "eager.py", steps=4, warmup=1)
    assert p["run_eagerly"] is True and p["eager_step_seconds"] > 1.5 * p["step_seconds"]
    block = workload_block(Profile.model_validate(p))
    assert block["run_eagerly"] is True and block["eager_step_seconds"] == p["eager_step_seconds"]


def test_a_file_that_runs_every_function_eagerly_is_timed_as_fit_runs_without_it(tmp_path):
    """tf.config.run_functions_eagerly(True) left in a file, a debugging switch: every
    tf.function runs op by op, and the profile timed its "graph" step eagerly (12.1 ms for a
    0.6 ms step, 20x) and said nothing. It now times the graph step with the switch off, the
    eager steps for the factor, says which switch, and puts the switch back as the file set it."""
    import tensorflow as tf

    from rung.measure.profile import profile
    from rung.spec.profile import Profile, workload_block

    work = tmp_path / "debug_switch.py"
    work.write_text((HERE.parent.parent / "launch" / "eager.py").read_text()
                    .replace(", run_eagerly=True)", ")")
                    .replace("import tensorflow as tf\n", "import tensorflow as tf\n\ntf.config.run_functions_eagerly(True)\n"))
    try:
        p = profile(work, steps=4, warmup=1)
        assert tf.config.functions_run_eagerly()  # as the file set it
    finally:
        tf.config.run_functions_eagerly(False)
    assert p["functions_run_eagerly"] is True and p["run_eagerly"] is True
    assert p["eager_step_seconds"] > 1.5 * p["step_seconds"]
    assert any(n.startswith("the file calls tf.config.run_functions_eagerly(True)") for n in p["notes"])
    assert workload_block(Profile.model_validate(p))["run_eagerly"] is True


def test_verdicts_are_stable_over_repeated_profiles():
    """Profile the same model three times; plan each for a fixed fleet and targets whose
    margins are wide (one device at half its speed; 3x one device on 8 hosts): the verdict
    must not move with this machine's noise, and no decision is a close call."""
    from rung.cli._plan import plan_scenario
    from rung.ladder import advise
    from rung.measure.profile import DEFAULT_STEPS, profile
    from rung.spec.profile import Profile
    from types import SimpleNamespace

    # the profile's own default of steps: with 12, four blocks of three steps gave a 95%
    # interval of -34%..+41% on one CI run, which a 2x margin no longer clears once the
    # three profiles also drift apart
    runs = [profile(workload_examples()["cnn"], steps=DEFAULT_STEPS, warmup=3) for _ in range(3)]
    eps = runs[0]["per_device_batch"] / runs[0]["step_seconds"]
    for factor, expected in ((0.5, "single_device"), (3.0, "multi_worker_mirrored")):
        verdicts = []
        for p in runs:
            args = SimpleNamespace(hardware=None, device=None, devices_per_host=1, max_hosts=8, inter_host_gbps=100,
                                   target=factor * eps, reproducible=None, preemptible=None,
                                   target_step_seconds=None, step_time_cv=None)
            s, _ = plan_scenario(Profile.model_validate(p), args, where="test", require=False)
            d = advise(s)
            verdicts.append(d.verdict)
            c = d.to_json()["confidence"]
            assert not c["close_call"], (factor, [r["step_seconds"] for r in runs], c["noise_band"], c["slower"], c["faster"])
        assert verdicts == [expected] * 3


@pytest.mark.parallel  # asserts nothing on speed
def test_bench_runs_a_subclassed_model_under_its_strategies(tmp_path):
    """Its own train_step hands the optimizer one IndexedSlices gradient (its embedding's
    rows): the multi-worker run times one small collective in its cluster and predicts
    the gradient's three in sequence with it."""
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(HERE / "custom_step.py"), "--runs",
                        "single_device,mirrored:2,multi_worker_mirrored:2", "--steps", "4", "--warmup", "1", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-800:]
    out = json.loads(r.stdout)
    runs = {(run["strategy"], run["replicas"]): run for run in out["runs"]}
    assert set(runs) == {("single_device", 1), ("mirrored", 2), ("multi_worker_mirrored", 2)}
    assert all(run["examples_per_second"] > 0 for run in runs.values())
    mw = runs[("multi_worker_mirrored", 2)]
    assert out["basis"]["sparse_gradient_tensors"] == 1
    # measured by the run's probe (a failed probe says why in the notes)
    assert "small_allreduce_seconds" in mw, mw["notes"]
    latency = mw["small_allreduce_seconds"]
    assert 0 < latency < 0.05  # a few bytes between two processes on loopback
    # the exchange term is the three latencies and the bytes (9 KB on loopback: microseconds)
    assert 0 <= mw["predicted_terms"]["comm"] - 3 * latency < 1e-3


def test_try_fixes_reports_a_speedup_only_outside_its_interval():
    from io import StringIO

    from rich.console import Console

    from rung.measure.profile import profile
    from rung.report.profile import render
    p = profile(workload_examples()["slow_input"], steps=6, warmup=1, try_fixes=True)
    fx = p["fixes"]
    lo, hi = fx["speedup_ci95"]
    assert lo <= fx["speedup"] <= hi and fx["rounds"] >= 3
    assert fx["significant"] == (not lo <= 1.0 <= hi)
    out = StringIO()
    render(p, Console(file=out, width=200))
    text = out.getvalue()
    assert ("no change beyond the noise" in text) == (not fx["significant"])


def test_a_gan_with_two_optimizers_of_its_own(profiles):
    p = profiles["gan"]
    # the two Adams it steps with, not the RMSprop Keras compiled in and never used
    assert p["optimizer_class"] == "Adam + Adam" and p["optimizer"] == "adam"
    # it cannot be called: its whole train_step is counted (discriminator on real and fake,
    # generator twice): more than three passes of its generator's first two layers alone
    # (2 x (64 x 3136 + 7 x 7 x 64 x 4 x 4 x 64) = 6.8 MFLOP per example)
    assert p["flops_per_example"] > 3 * 2 * (64 * 3136 + 7 * 7 * 64 * 4 * 4 * 64)
    # the save holds both networks and both optimizers' slots
    assert 3 * 322_690 * 4 <= p["checkpoint_bytes"] <= 3 * 322_690 * 4 + 64 * 1024


def test_a_keras_io_vae_on_images_alone_from_keras_3_itself(profiles):
    from rung.spec.profile import Profile, workload_block

    p = profiles["vae"]
    # a dataset of images alone reached the model's own train_step; its whole step is
    # counted (no call()): within 15% of three times the hand-counted forward pass
    assert 0.85 <= p["flops_per_example"] / (3 * 13_321_856) <= 1.15
    assert p["keras3_imports"] == ["import keras (line 12)", "from keras import layers, ops (line 14)"]
    assert workload_block(Profile(**p))["keras3_import"] is True
    assert not any("model.built = True" in n for n in p["notes"])  # it is marked built
    # the keras.io GAN is not: a strategy's fit would fail on it, and the profile says so
    # first, once (a note said it again in other words)
    gan = profiles["gan"]
    assert "model.built = True" in gan["strategy_failure"] and "does not have a `call()`" in gan["strategy_failure"]
    assert not any("model.built = True" in n for n in gan["notes"])
    # none of the other workloads imports Keras 3 itself
    assert not any(profiles[n]["keras3_imports"] for n in profiles if n != "vae")


def test_a_model_keras_3_cannot_build_under_a_strategy_fails_every_plan_on_keras_3(profiles, tmp_path):
    """keras.io's Siamese network: its call() takes the triplet, and Keras 3's fit under a
    strategy builds an unbuilt model on the anchors alone (a plain fit and tf-keras build it
    in the first step, and train). Before, the profile said nothing and train.py's
    OneDeviceStrategy failed at launch. The build Keras 3 would run is run, on a fresh model."""
    from rung.measure.profile import profile

    p = profiles["siamese"]
    assert p["keras"] == "keras3" and p["strategy_fails_on_one_device"] is True
    why = p["strategy_failure"]
    assert "on the batch's features alone" in why and "model.built = True" in why
    assert "expects 3 named input(s)" in why and "received 1 input tensors" in why  # Keras's own words
    # a subclassed model marked built, and the GAN without call() (the build fails there too)
    assert profiles["vae"].get("strategy_failure") is None and not profiles["vae"].get("strategy_fails_on_one_device")
    assert profiles["gan"]["strategy_fails_on_one_device"] is True
    assert "does not have a `call()` method" in profiles["gan"]["strategy_failure"]
    # functional models are built: no build to try
    # (and ResNet50: test_a_keras_application_counts_as_keras_does)
    assert not any(profiles[n].get("strategy_failure") for n in ("custom_step_compiled", "wide_deep"))
    # what the finding says to do, done: marked built, Keras 3 builds nothing and the failure is gone
    built = tmp_path / "siamese_built.py"
    built.write_text((HERE / "siamese.py").read_text().replace(
        "    model = SiameseModel(siamese_network)\n", "    model = SiameseModel(siamese_network)\n    model.built = True\n"))
    assert "model.built = True" in built.read_text()
    fixed = profile(built, steps=4, warmup=1)
    assert fixed.get("strategy_failure") is None and not fixed.get("strategy_fails_on_one_device")


@pytest.mark.parallel  # asserts nothing on speed
def test_a_keras_3_model_under_tf_keras_is_one_clear_line():
    r = subprocess.run([sys.executable, "-m", "rung", "profile", str(HERE / "vae.py"), "--keras", "tf_keras"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "returned a Keras 3 model (VAE) under tf-keras" in r.stderr and "import keras (line 12)" in r.stderr


@pytest.mark.parallel  # asserts nothing on speed
@pytest.mark.parametrize("name,said", [
    ("gan", "(RuntimeError: Unable to automatically build the model"),
    # Keras's own words were all it said: its frames are hidden from the traceback, and the
    # build's failure is told by fit failing before on_train_begin on a model not built
    ("siamese", "on the batch's features alone"),
])
def test_a_model_that_cannot_run_under_a_strategy_is_told_what_to_do(name, said):
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(HERE / f"{name}.py"), "--runs", "single_device",
                        "--steps", "4", "--warmup", "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1
    line = r.stderr.strip().splitlines()[-1]
    assert "model.built = True" in line and said in line


@pytest.mark.parallel  # asserts nothing on speed
def test_a_one_device_run_keras_3_cannot_build_hands_the_basis_to_tf_keras():
    """keras.io's VAE (no call()) from tf.keras: Keras 3 cannot build it under a strategy,
    tf-keras can, and multi-worker and parameter servers run on tf-keras. Before, the one-
    device run on Keras 3 failing ended the bench, and the runs rung advise plans for it
    (on tf-keras) were never tried; now the one-device run on tf-keras is their basis and
    the runs on Keras 3 fail alone, with what to change."""
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(HERE / "vae_tf_keras.py"), "--runs",
                        "single_device,mirrored:2,multi_worker_mirrored:2", "--steps", "4", "--warmup", "1", "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr[-1500:]  # runs failed; the bench finished
    b = json.loads(r.stdout)
    assert [(x["strategy"], x["keras"]) for x in b["runs"]] == \
        [("single_device", "tf_keras"), ("multi_worker_mirrored", "tf_keras")], b["runs"]
    one, mw = b["runs"]
    assert one["basis_for_keras"] == "tf_keras" and mw["predicted_step_seconds"] > 0
    assert [f["run"] for f in b["failed"]] == ["single_device", "mirrored:2"]
    assert all("model.built = True" in f["error"] for f in b["failed"])
    assert any(n.startswith("the one-device run on keras3 failed") for n in b["notes"])
    # keras.io's GAN fails on tf-keras too (a loss that averages under a strategy): nothing
    # compares without a one-device run, and the one line gives both reasons
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(HERE / "gan.py"), "--runs",
                        "single_device,multi_worker_mirrored:2,mirrored:2", "--steps", "4", "--warmup", "1"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and r.stdout == ""
    [line] = r.stderr.strip().splitlines()[-1:]
    assert "model.built = True" in line and "and single_device@tf_keras, the basis of the runs on tf-keras" in line
    assert "reduction=NONE" in line


@pytest.mark.parallel  # asserts nothing on speed
def test_a_bench_of_a_model_marked_built_whose_layers_are_not_names_them(tmp_path):
    # the hint's "mark it built" was all the bench said to a model that was marked built
    seq = "keras.Sequential([keras.Input(shape=(SIZE, SIZE, 3)), layers.Rescaling(1 / 255),"
    f = tmp_path / "simclr_unbuilt_augmenters.py"
    f.write_text((HERE / "simclr.py").read_text().replace(seq, "keras.Sequential([layers.Rescaling(1 / 255),"))
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(f), "--runs", "single_device", "--steps", "4",
                        "--warmup", "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1
    line = r.stderr.strip().splitlines()[-1]
    assert "build every layer of the model, not only the model (model.built = True): contrastive_augmenter " \
           "(Sequential), classification_augmenter (Sequential) are not" in line, line


def test_a_whole_train_step_counts_as_three_forward_passes_on_a_model_that_can_be_called():
    # the fallback for models without call() (the train_step's own graph, backward ops
    # included) against the 3x-forward rule (Kaplan et al. 2020) where both apply
    import tensorflow as tf
    from tensorflow.python.profiler import model_analyzer, option_builder

    from rung.measure import counts
    from rung.measure.workload import build_checked_model, load_workload

    w = load_workload(workload_examples()["cnn"])
    model = build_checked_model(w, tf)
    batch = next(iter(w.make_dataset(16)))
    opts = option_builder.ProfileOptionBuilder.float_operation()
    opts["output"] = "none"
    step = model_analyzer.profile(counts._train_graph(tf, model, batch, 16), options=opts).total_float_ops / 16
    assert 0.85 <= step / counts.flops_per_example(tf, model, batch) <= 1.15


def test_activations_after_a_layer_that_loses_the_batch_size_are_counted():
    # TextVectorization splits strings, so every tensor after it has an unknown leading
    # dimension in the traced graph. Hand count per example: the Embedding's output
    # (20 x 64 float32 = 5,120 B, read by the pooling's gradient) and the pooled vector
    # (64 float32 = 256 B, read by the Dense's gradient); before the fix it counted 4 B.
    import tensorflow as tf

    from rung.measure import counts

    words = tf.constant(["good bad movie plot", "actor great awful boring fun story"] * 8)
    vec = tf.keras.layers.TextVectorization(max_tokens=50, output_sequence_length=20)
    vec.adapt(words)
    inp = tf.keras.Input(shape=(1,), dtype=tf.string)
    x = tf.keras.layers.GlobalAveragePooling1D()(tf.keras.layers.Embedding(50, 64)(vec(inp)))
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(x))
    model.compile("sgd", tf.keras.losses.BinaryCrossentropy(from_logits=True))
    batch = (tf.expand_dims(words, -1), tf.zeros((16,)))
    per_example, _, _ = counts.activation_bytes(tf, model, batch)
    assert 5_120 + 256 <= per_example <= 2 * (5_120 + 256)
    # FLOPs the same way: before, the profiler skipped the unshaped Mean and MatMul and the
    # count rounded to 0 per example (which a scenario refuses). Hand count of the forward
    # pass: the pooling's mean over 20 x 64 = 1,280, the Dense's 2 x 64 + 1 = 129, and a few
    # elementwise ops of the vectorizer's; training is 3x forward
    flops = counts.flops_per_example(tf, model, batch)
    assert 3 * (1_280 + 129) <= flops <= 1.1 * 3 * (1_280 + 129)


def test_the_counts_share_one_trace_of_the_train_step_per_batch_size():
    # activation bytes trace the train step at B and 2B and kernels per step at B: with the
    # profile's shared TrainGraphs that is two traces, not three, and the same counts
    import tensorflow as tf

    from rung.measure import counts

    inp = tf.keras.Input((8,))
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(tf.keras.layers.Dense(16, activation="relu")(inp)))
    model.compile("adam", "mse")
    batch = (tf.zeros((4, 8)), tf.zeros((4, 1)))
    alone = (counts.activation_bytes(tf, model, batch), counts.ops_per_step(tf, model, batch))
    traced = []
    step = model.train_step
    model.train_step = lambda data: traced.append(1) or step(data)
    graphs = counts.TrainGraphs(tf, model, batch)
    shared = (counts.activation_bytes(tf, model, batch, graphs), counts.ops_per_step(tf, model, batch, graphs))
    assert len(traced) == 2 and shared == alone
    # the per-example activations by hand: the input (8) and the hidden layer's output and
    # its ReLU mask (16 + 16), float32, are what the gradients read
    assert alone[0][0] >= 4 * (8 + 16)


def test_the_profile_reads_steps_per_execution():
    import tensorflow as tf

    from rung.measure import counts
    from rung.measure.profile import profile

    inp = tf.keras.Input((4,))
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(inp))
    assert counts.steps_per_execution(model) == 1  # not compiled
    model.compile("sgd", "mse", steps_per_execution=8)
    assert counts.steps_per_execution(model) == 8
    looped = Path(__file__).parent.parent / "bench" / "looped_mlp.py"
    p = profile(looped, steps=4, warmup=1)
    assert p["steps_per_execution"] == 4 and not p["string_inputs"]


def test_fourier_transforms_are_counted_by_hand():
    # TensorFlow's profiler registers no FLOPs for FFT ops (a spectral layer's): before,
    # they counted 0. 5 N log2 N a complex transform of N points, 2.5 N log2 N a real one
    import tensorflow as tf

    from rung.measure import counts

    @tf.function
    def spectral(x, r):
        return tf.signal.fft(x), tf.signal.rfft(r), tf.signal.fft2d(x), tf.signal.irfft(tf.signal.rfft(r))

    g = spectral.get_concrete_function(tf.TensorSpec([4, 8, 64], tf.complex64), tf.TensorSpec([4, 64])).graph
    found = {}
    for op in g.get_operations():
        if op.type in counts._FFT:
            found.setdefault(op.type, []).append(counts.fft_flops(op))
    assert found["FFT"] == [4 * 8 * 5 * 64 * 6]              # 32 transforms of 64 points
    assert found["RFFT"] == [4 * 2.5 * 64 * 6] * 2           # 4 real transforms of 64
    assert found["FFT2D"] == [4 * 5 * 512 * 9]               # 4 transforms of 8 x 64 points
    assert found["IRFFT"] == [4 * 2.5 * 64 * 6]              # back to 64 real points
    assert counts._graph_flops(tf, g, 4) >= sum(sum(v) for v in found.values())


def test_einsums_are_counted_by_hand_and_in_attention():
    # TensorFlow's profiler registers no FLOPs for Einsum, which Keras' EinsumDense and
    # MultiHeadAttention's projections use: before, their FLOPs were left out
    import tensorflow as tf

    from rung.measure import counts

    def graph_of(fn, *specs):
        return tf.function(fn).get_concrete_function(*specs).graph

    cases = [("abc,cd->abd", [(2, 3, 4), (4, 5)], 2 * 2 * 3 * 4 * 5),      # contracted: a multiply and an add
             ("ab,ab->ab", [(2, 3), (2, 3)], 2 * 3),                        # elementwise: a multiply
             ("...ij,jk->...ik", [(7, 2, 3), (3, 4)], 2 * 7 * 2 * 3 * 4)]   # an ellipsis of batch dims
    for equation, shapes, flops in cases:
        g = graph_of(lambda x, y, e=equation: tf.einsum(e, x, y), *[tf.TensorSpec(s) for s in shapes])
        op = next(o for o in g.get_operations() if o.type == "Einsum")
        assert counts.einsum_flops(op) == flops, equation
    # self-attention over 16 tokens of width 8, 2 heads of 4: per example, Q, K and V
    # projections 3 x 16 x 2 x 8 x 8 = 6,144, scores and the weighted sum 2 x (2 x 16 x 16 x 4
    # x 2) = 8,192, the output projection 16 x 2 x 8 x 8 = 2,048: 16,384 in matmuls and
    # einsums, plus biases, softmax and the pooling (under a quarter of that); training 3x
    inp = tf.keras.Input((16, 8))
    x = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp)
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(tf.keras.layers.GlobalAveragePooling1D()(x)))
    model.compile("sgd", "mse")
    flops = counts.flops_per_example(tf, model, (tf.zeros((4, 16, 8)), tf.zeros((4, 1))))
    assert 3 * 16_384 <= flops <= 3 * (16_384 + 4_096)


def test_a_recurrent_layers_steps_are_counted():
    # an LSTM runs its cell in a While loop, whose body the profiler never sees: before,
    # a bidirectional LSTM counted 1/50 of its FLOPs. Hand count per example: 10 steps of
    # the four gates' matmuls, 2 x 8 x 64 (input) + 2 x 16 x 64 (state) = 3,072 each, so
    # 30,720, plus the gates' elementwise ops (under a quarter of that); training 3x
    import tensorflow as tf

    from rung.measure import counts

    model = tf.keras.Sequential([tf.keras.Input((10, 8)), tf.keras.layers.LSTM(16), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    flops = counts.flops_per_example(tf, model, (tf.zeros((4, 10, 8)), tf.zeros((4, 1))))
    assert 3 * 30_720 <= flops <= 3 * (30_720 + 7_680)


SLOTS_CHECK = """
import json, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from rung.measure import counts
from rung.measure.workload import load_workload
w = load_workload(sys.argv[1])
out = {}
for variant in ("two Adams", "two SGDs", "two Adams built"):
    with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
        m = w.build_model()
        if variant == "two SGDs":
            m.contrastive_optimizer, m.probe_optimizer = tf.keras.optimizers.SGD(), tf.keras.optimizers.SGD()
        if variant == "two Adams built":
            m.contrastive_optimizer.build(m.encoder.trainable_weights + m.projection_head.trainable_weights)
            m.probe_optimizer.build(m.linear_probe.trainable_weights)
    said = counts.unbuilt_optimizers_with_slots(tf, m)
    try:
        m.fit(w.make_dataset(8), steps_per_epoch=2, epochs=1, verbose=0)
        ran = True
    except Exception as e:
        ran = "You must feed a value for placeholder tensor" in str(e) and "failed so"
    out[variant] = [said, ran]
print(json.dumps(out))
"""


@pytest.mark.parallel  # asserts nothing on speed
def test_optimizers_a_train_step_builds_inside_the_replicated_step_are_found_as_keras_3_fails_on_them():
    """keras.io's SimCLR keeps two Adams of its own, which its train_step builds on their
    first apply_gradients: inside the replicated step, where Keras 3's fit under
    MirroredStrategy fails. Before, nothing said so until a mirrored run failed (the bench
    said what to change; advise and init did not). What the profile reads (an unbuilt
    optimizer of the model's own that keeps slots) is checked against Keras 3's real
    MirroredStrategy fit of two logical devices, in three variants: each must agree."""
    r = subprocess.run([sys.executable, "-c", SLOTS_CHECK, str(HERE / "simclr.py")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["two Adams"] == [["contrastive_optimizer (Adam)", "probe_optimizer (Adam)"], "failed so"]
    assert out["two SGDs"] == [[], True]          # plain SGD keeps no slots: nothing made in the step
    assert out["two Adams built"] == [[], True]   # the fix the message gives


UNSEEDED_CHECK = """
import json, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from rung.measure import counts
from rung.measure.profile import profile
from rung.measure.workload import load_workload
out = {}
for name, path in (("unseeded", sys.argv[1]), ("seeded", sys.argv[2])):
    w = load_workload(path)
    counts.clear_global_seed_generator()  # as in a fresh process
    with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
        m = w.build_model()
    try:
        m.fit(w.make_dataset(8), steps_per_epoch=2, epochs=1, verbose=0)
        ran = True
    except Exception as e:
        ran = "tf.function only supports singleton tf.Variables" in str(e) and "failed so"
    p = profile(path, steps=3, warmup=1)
    out[name] = [p.get("strategy_failure"), p.get("strategy_fails_on_one_device"), ran]
print(json.dumps(out))
"""


@pytest.mark.parallel  # asserts nothing on speed
def test_random_numbers_drawn_without_a_seed_in_the_step_are_found_as_keras_3_mirrored_fit_fails_on_them(tmp_path):
    """keras.io's Switch Transformer jitters its router's logits with keras.random.uniform and
    no seed. Keras 3 makes its global SeedGenerator on first use, inside the first step: fit
    ran without a strategy and under OneDeviceStrategy, and under MirroredStrategy failed
    ("tf.function only supports singleton tf.Variables created on the first call"), which
    nothing said before a mirrored run. What the profile reads (the global generator made
    by the step) is checked against Keras 3's real mirrored fit of two logical devices, with
    the router's draws unseeded and with a SeedGenerator of its own: each must agree."""
    from rung.kerasfit import UNSEEDED_RANDOM_PROBLEM

    seeded = tmp_path / "seeded.py"
    seeded.write_text((HERE / "unseeded.py").read_text().replace("SEEDED = False", "SEEDED = True"))
    r = subprocess.run([sys.executable, "-c", UNSEEDED_CHECK, str(HERE / "unseeded.py"), str(seeded)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["unseeded"] == [UNSEEDED_RANDOM_PROBLEM, None, "failed so"]  # one device runs it
    assert out["seeded"] == [None, None, True]  # the fix the message gives


@pytest.mark.parallel  # asserts nothing on speed
def test_the_profile_warns_of_optimizers_built_inside_the_replicated_step():
    from rung.measure.profile import profile

    p = profile(HERE / "simclr.py", steps=4, warmup=1)
    assert p["keras"] == "keras3" and not p.get("strategy_fails_on_one_device")
    why = p["strategy_failure"]
    assert why.startswith("build every optimizer the train_step uses in build_model()")
    assert "contrastive_optimizer (Adam), probe_optimizer (Adam)" in why
    # both Adams' slots counted, beside nothing for Keras's own (unused) optimizer
    assert p["optimizer"] == "adam" and p["optimizer_slot_bytes"] == 2 * 4 * p["params"]


def test_a_model_marked_built_whose_layers_are_not_is_told_to_build_them(tmp_path):
    """keras.io's SimCLR with augmenters that are Sequentials without an Input, as a newcomer
    may write them: marked built (model.built = True, as rung's advice said), Keras 3's fit
    under a strategy still builds it, as some layer is not built, and fails (no call()).
    The advice was to mark the model built, which it was; now it names the layers by the
    attributes that hold them. Not marked built: both are said."""
    import tensorflow as tf

    from rung.measure import counts
    from rung.measure.workload import load_workload

    text = (HERE / "simclr.py").read_text()
    seq = "keras.Sequential([keras.Input(shape=(SIZE, SIZE, 3)), layers.Rescaling(1 / 255),"
    assert seq in text
    said = {}
    for name, edit in (("marked", text), ("unmarked", text.replace("    model.built = True\n", ""))):
        f = tmp_path / f"{name}.py"
        f.write_text(edit.replace(seq, "keras.Sequential([layers.Rescaling(1 / 255),"))
        w = load_workload(f)
        element = next(iter(w.make_dataset(4)))
        said[name] = counts.keras3_strategy_build_failure(tf, w.build_model, element, "/cpu:0")
    layers = "contrastive_augmenter (Sequential), classification_augmenter (Sequential)"
    assert said["marked"].startswith(f"build every layer of the model, not only the model (model.built = True): "
                                     f"{layers} are not (give a Sequential its keras.Input")
    assert said["unmarked"].startswith("mark the model built in build_model() once its parts are built")
    assert f"these layers are not built either, and must be: {layers}" in said["unmarked"]
    for why in said.values():
        assert "does not have a `call()` method" in why  # Keras's own words, last


def test_activations_of_a_step_that_takes_one_batch_size_alone_are_counted_at_it():
    """keras.io's Switch Transformer reshapes its tokens to a constant batch x length, its
    inputs leaving the batch open: the count traced the step at twice the batch as well,
    which failed, and the profile said "activations n/a". Now the step is counted at its
    batch alone, as for a batch the inputs fix. By hand, at B = 8, the float32 tensors the
    backward pass keeps: the first Dense's input (32 x 3), its ReLU's output (32 x 5), the
    second Dense's input (that output reshaped, 8 x 20) and the loss's difference (8 x 1):
    (96 + 160 + 160 + 8) x 4 / 8 = 212 bytes an example, in 5 tensors."""
    import keras
    import tensorflow as tf
    from keras import layers, ops

    from rung.measure import counts

    b = 8

    class Tokens(layers.Layer):
        def call(self, x):
            return ops.reshape(x, [b * 4, 3])  # the batch fixed by a constant

    i = keras.Input((4, 3))
    x = layers.Dense(5, activation="relu")(Tokens()(i))
    model = keras.Model(i, layers.Dense(1)(ops.reshape(x, [b, 20])))
    model.compile("sgd", "mse")
    assert counts.fixed_batch(model) is None
    assert counts.activation_bytes(tf, model, (tf.zeros((b, 4, 3)), tf.zeros((b, 1)))) == (212, 0, 5)


def test_a_ctc_loss_leaves_flops_uncounted_and_says_why():
    """keras.io's "OCR model for reading Captchas" adds tf.nn.ctc_loss with a layer's
    add_loss. On dense labels its loops run TensorFlow 1 functions (function.Defun) that keep
    no shapes: before, the profile's note was Python's AttributeError ('_DefinedFunction'
    object has no attribute 'graph'); now it names the loop and why it cannot be counted
    (a partial count would plan a device from too few FLOPs). Kernels are still counted."""
    import tensorflow as tf

    from rung.measure import counts

    image, labels = tf.keras.Input((16, 8), name="image"), tf.keras.Input((3,), name="label")

    class CTC(tf.keras.layers.Layer):
        def call(self, y_true, y_pred):
            n = tf.shape(y_true)[0]
            self.add_loss(tf.reduce_mean(tf.nn.ctc_loss(tf.cast(y_true, tf.int32), y_pred, tf.fill([n], 3),
                                                        tf.fill([n], 16), logits_time_major=False, blank_index=-1)))
            return y_pred

    model = tf.keras.Model([image, labels], CTC(name="ctc")(labels, tf.keras.layers.Dense(5)(image)))
    model.compile("adam")
    batch = {"image": tf.zeros((4, 16, 8)), "label": tf.ones((4, 3))}
    with pytest.raises(ValueError, match=r"a While op \(.*ctc_loss_dense/While, inside tf.nn.ctc_loss\) runs a "
                                         r"TensorFlow 1 function \(function.Defun\)"):
        counts.flops_per_example(tf, model, batch)
    assert counts.ops_per_step(tf, model, batch) > 0


@pytest.mark.parametrize("layer,loops", [
    ("LSTM(16)", False),                              # cuDNN on a GPU: one kernel, whatever the length
    ("Bidirectional(tf.keras.layers.LSTM(16))", False),
    ("LSTM(16, recurrent_dropout=0.1)", True),        # Keras runs it cell by cell, on a GPU too
    ("GRU(16, activation='relu')", True),
    ("SimpleRNN(16)", True),                          # never cuDNN
])
def test_kernels_of_a_recurrent_loop_count_per_step_unless_cudnn_runs_it(layer, loops):
    # the oracle is the sequence's length: a loop Keras runs cell by cell launches its
    # body's kernels at every step, so 40 steps launch 20 x the body more than 20 steps;
    # a cuDNN-eligible layer launches the same kernels at any length. Before, every loop's
    # body was left out, so a non-cuDNN RNN planned for a GPU was under-counted in launches
    import tensorflow as tf

    from rung.measure import counts

    def kernels(steps):
        inp = tf.keras.Input((steps, 8))
        model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(eval(f"tf.keras.layers.{layer}")(inp)))
        model.compile("sgd", "mse")
        return counts.ops_per_step(tf, model, (tf.zeros((4, steps, 8)), tf.zeros((4, 1))))

    short, long = kernels(20), kernels(40)
    if not loops:
        assert long == short
        return
    per_step = (long - short) / 20
    assert per_step == int(per_step)
    # a cell's forward and backward kernels: at least the forward matmuls and activation and
    # their gradients (SimpleRNN: 2 matmuls, an add, a tanh forward; 4 matmuls and a tanh
    # gradient back) and at most a few hundred (an LSTM's four gates with dropout masks)
    assert 10 <= per_step <= 300
    assert counts.cudnn_eligible(tf.keras.layers.Dense(1)) is None



RECURRENT_KEPT = "\n".join([
    "import sys, tensorflow as tf",
    "from rung.measure import counts",
    "def kept(layer, steps):",
    "    inp = tf.keras.Input((steps, 8))",
    "    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(eval(f'tf.keras.layers.{layer}')(inp)))",
    "    model.compile('sgd', 'mse')",
    "    return counts.activation_bytes(tf, model, (tf.zeros((4, steps, 8)), tf.zeros((4, 1))))[0]",
    "for layer in sys.argv[1:]:",
    "    print(layer, kept(layer, 20), kept(layer, 40))",
])


@pytest.mark.parallel  # asserts nothing on speed
@pytest.mark.parametrize("legacy", ["0", "1"], ids=["keras3", "tf_keras"])
def test_a_recurrent_layer_keeps_every_steps_activations(legacy):
    """The oracle is the sequence's length: 40 steps keep 20 steps' more than 20 do. Before,
    a loop's per-step tensors (the TensorLists the backward loop reads) counted 0 B: an
    LSTM(32) over 120 steps of 7 features counted 388 B an example, where it keeps 111 KB.
    tf-keras runs its LSTM and GRU as functions of their own, whose gradient the tape calls
    outside gradient_tape/: none of their steps counted (136 B)."""
    import os
    import subprocess
    import sys

    # what a cell's backward step must read, per example, in float32 values: the step's
    # input (8) and state, and its gates (an LSTM: h, c and four gates; a GRU: h and three;
    # a SimpleRNN: h and its output), up to a few more of the state's width that Keras keeps
    bounds = {"LSTM(16)": (8 + 6 * 16, 8 + 10 * 16), "GRU(16)": (8 + 4 * 16, 8 + 8 * 16),
              "SimpleRNN(16)": (8 + 2 * 16, 8 + 4 * 16)}
    r = subprocess.run([sys.executable, "-c", RECURRENT_KEPT, *bounds], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TF_USE_LEGACY_KERAS": legacy}, check=True)
    for line in r.stdout.splitlines():
        layer, short, long = line.split()
        per_step = (int(long) - int(short)) / 20 / 4  # float32 values an example keeps per step
        least, most = bounds[layer]
        assert least <= per_step <= most, (layer, per_step)
    assert len(r.stdout.splitlines()) == len(bounds)
