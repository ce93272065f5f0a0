"""The loss-scaling check (rung.measure.replicas): one step of the model's own
train_step under 2 replicas (MirroredStrategy on 2 logical CPU devices) against one
device over the same 2 batches. A custom step's per-replica `tf.reduce_mean` sums to 2x
the one-device gradient; Keras' own loss (compiled, or `self.compute_loss`) to 1x.
Real TensorFlow in a fresh process per check."""

from __future__ import annotations

from pathlib import Path

import pytest

from rung.measure.replicas import verdict

HERE = Path(__file__).parent / "workloads"
EXAMPLES = Path(__file__).parents[2] / "rung" / "examples" / "workloads"


def test_verdict_bands():
    assert verdict(1.0) == "scaled" and verdict(0.8) == "scaled" and verdict(1.3) == "scaled"
    assert verdict(2.0) == "not_scaled" and verdict(1.7) == "not_scaled"
    assert verdict(0.5) == "over_scaled"
    assert verdict(1.45) == "unclear" and verdict(None) == "unclear"
    assert verdict(4.0, replicas=4) == "not_scaled" and verdict(2.0, replicas=4) == "unclear"


@pytest.mark.tf
@pytest.mark.parametrize("name,keras,over_batch", [("custom_step", "keras3", "mean"), ("custom_step", "tf_keras", "mean"),
                                                   ("bn_custom_step", "keras3", None), ("sum_loss", "keras3", "sum"),
                                                   ("images_alone", "tf_keras", "mean")])
def test_a_per_replica_mean_takes_twice_the_gradient(name, keras, over_batch):
    """Also with BatchNormalization: each replica is compared with one device on its own
    batch, so the batch statistics are the same on both sides. A loss summed over the batch
    takes twice the gradient too, and one more step on the batches joined tells it from a
    mean (not with BatchNormalization, whose joined statistics differ: no name then). A
    subclassed model trained on images alone (no labels) is built on a batch of them: it
    was called on the first image before, and did not run under MirroredStrategy."""
    from rung.measure.profile import add_replica_check
    from rung.measure.replicas import check
    from rung.report.profile import replica_line

    r = check(HERE / f"{name}.py", 8, keras)
    assert r["checked"], r
    assert r["keras"] == keras
    assert r["gradient_ratio"] == pytest.approx(2.0, rel=0.02) and r["verdict"] == "not_scaled"
    assert r["loss_over_batch"] == over_batch
    out = {"notes": []}
    add_replica_check(out, r)
    assert out["loss_scaled_for_replicas"] is False
    # with BatchNormalization the mean is not told from a sum: the note says so rather than
    # name one (it named a mean before, whatever the step did)
    said = {"sum": "sums its loss over the batch", "mean": "averages its loss over each replica's batch",
            None: "whether it averages over each replica's batch or sums was not told apart"}[over_batch]
    assert said in out["notes"][-1]
    line = {"sum": "a sum over the batch", "mean": "a per-replica mean", None: "not divided by the global batch"}
    assert [k for k, v in line.items() if v in replica_line(r)] == [over_batch]


@pytest.mark.tf
@pytest.mark.parametrize("keras", ["keras3", "tf_keras"])
def test_keras_own_loss_in_a_custom_step_is_scaled_for_replicas(keras):
    """A custom train_step that takes its loss from self.compute_loss (the compiled loss)."""
    from rung.measure.replicas import check

    r = check(HERE / "custom_step_compiled.py", 16, keras)
    assert r["checked"], r
    assert r["gradient_ratio"] == pytest.approx(1.0, rel=0.02) and r["verdict"] == "scaled"
    assert r["loss_over_batch"] == "mean"


@pytest.mark.tf
def test_keras_own_train_step_is_not_run_again():
    """Keras' train_step scales its loss for replicas: a Keras application (BatchNorm, whose
    statistics a joined batch would change) or the mlp is not run under replicas."""
    from rung.measure.replicas import check

    for path in (HERE / "mobilenet.py", EXAMPLES / "mlp.py"):
        r = check(path, 8)
        assert r["checked"] is False and r["keras_train_step"] and r["verdict"] == "scaled", r


@pytest.mark.tf
def test_a_compute_loss_of_its_own_under_keras_train_step_is_checked():
    """Before, a model with Keras's train_step was never run under replicas, whatever its
    compute_loss did: this one's tf.reduce_mean passed as scaled, and is 2x the update."""
    from rung.measure.replicas import check

    r = check(HERE / "compute_loss.py", 8, "keras3")
    assert r["checked"], r
    assert r["gradient_ratio"] == pytest.approx(2.0, rel=0.02) and r["verdict"] == "not_scaled"


@pytest.mark.tf
def test_a_gan_with_its_own_optimizers_and_a_keras_loss_object():
    """The keras.io GAN (two optimizers, a BinaryCrossentropy object called in its own
    train_step): Keras 3 scales that loss for replicas; tf-keras refuses it under a
    strategy, and the check says what to change, in one line."""
    from rung.measure.replicas import check

    k3 = check(HERE / "gan.py", 8, "keras3")
    assert k3["checked"] and k3["verdict"] == "scaled", k3
    tk = check(HERE / "gan.py", 8, "tf_keras")
    assert tk["checked"] is False and "\n" not in tk["why"]
    assert "MirroredStrategy" in tk["why"] and "compute_average_loss" in tk["why"]
    assert "compute_average_loss" in tk["fails"]  # the profile's strategy_failure: STRATEGY_FAILS on tf-keras plans
    # TensorFlow's own sentence (250 characters) is quoted cut at a word, and says it is cut
    quoted = tk["fails"].split("(TensorFlow: ", 1)[1]
    assert quoted.endswith(" …)") and len(quoted) <= 162 and "Reduction.NONE" in quoted


@pytest.mark.tf
def test_random_augmentation_in_the_step_draws_the_same_numbers_on_one_device_and_in_each_replica():
    """keras.io's SimCLR augments its images inside its train_step (RandomFlip, RandomTranslation,
    RandomZoom) and returns a per-example contrastive loss the tape sums: not scaled, 2x. Each
    step advanced the layers' seed states, so the one-device steps and the replicas drew
    different augmentations, and three checks of the model read 1.97, 2.00 and 1.52 (its
    verdict moving between not_scaled and unclear). Every step now starts from the same seed
    states: the ratio is 2 to within float rounding."""
    from rung.measure.replicas import check

    r = check(HERE / "simclr.py", 16, "keras3")
    assert r["checked"] and r["verdict"] == "not_scaled", r
    assert r["gradient_ratio"] == pytest.approx(2.0, abs=1e-3)


@pytest.mark.tf
def test_a_compiled_loss_that_returns_one_number_is_left_undivided_on_keras_3(monkeypatch):
    """Keras's own train_step, a loss function of the file's own that ends in tf.reduce_mean:
    Keras 3 divides a loss across replicas in its reduction of the per-example values, which
    leaves one number as it is, so the replicas' summed gradients are 2x one device's (and fit
    logs 2x the loss); tf-keras divides whatever the loss returns (1x); the same function
    returning the per-example losses is 1x on Keras 3. Was: every model on Keras's own step
    passed as scaled without a run."""
    from rung.measure.profile import add_replica_check
    from rung.measure.replicas import check
    from rung.report.profile import replica_line

    path = HERE / "scalar_loss.py"
    r = check(path, 16, "keras3")
    assert r["checked"] and r["compiled_losses"] == ["smooth_l1"], r
    assert r["gradient_ratio"] == pytest.approx(2.0, rel=0.02) and r["verdict"] == "not_scaled"
    assert r["logged_loss_ratio"] == pytest.approx(2.0, rel=0.02)
    out = {"notes": []}
    add_replica_check(out, r)
    assert out["loss_scaled_for_replicas"] is False and out["compiled_loss_not_scaled"] == "smooth_l1"
    assert "the compiled loss smooth_l1 returns one number" in out["notes"][-1]
    assert "Keras 3 leaves undivided" in replica_line(r)
    legacy = check(path, 16, "tf_keras")
    assert legacy["checked"] and legacy["gradient_ratio"] == pytest.approx(1.0, rel=0.02), legacy
    out = {"notes": []}
    add_replica_check(out, legacy)
    assert out["loss_scaled_for_replicas"] is True and "compiled_loss_not_scaled" not in out
    monkeypatch.setenv("RUNG_TEST_PER_EXAMPLE", "1")
    per_example = check(path, 16, "keras3")
    assert per_example["checked"] and per_example["verdict"] == "scaled", per_example
    assert per_example["gradient_ratio"] == pytest.approx(1.0, rel=0.02)


@pytest.mark.tf
def test_a_compiled_keras_loss_made_to_sum_gives_n_times_the_update_on_either_keras(monkeypatch):
    """Keras's own MeanSquaredError(reduction="sum"): each replica sums its batch and the
    strategy sums their gradients, so under 2 replicas the gradient is 2x one device's step
    at the same per-device batch, on Keras 3 and on tf-keras alike (and for "none"). Was:
    every Keras loss passed as scaled without a run. With the default reduction the check
    is not run (Keras divides its own mean)."""
    from rung.measure.profile import add_replica_check
    from rung.measure.replicas import check
    from rung.report.profile import replica_line

    path = HERE / "summed_loss.py"
    for keras in ("keras3", "tf_keras"):
        r = check(path, 16, keras)
        assert r["checked"] and r["summed_losses"] == ["MeanSquaredError(reduction='sum')"], r
        assert r["gradient_ratio"] == pytest.approx(2.0, rel=0.02) and r["verdict"] == "not_scaled"
        assert r["loss_over_batch"] == "sum"  # one device on the two batches joined: their sum
        out = {"notes": []}
        add_replica_check(out, r)
        assert out["loss_scaled_for_replicas"] is False
        assert out["compiled_loss_sums"] == "MeanSquaredError(reduction='sum')"
        assert "sums over the batch rather than averaging, on either Keras" in out["notes"][-1]
        assert "compiled_loss_not_scaled" not in out
        assert "sums over the batch" in replica_line(r)
    monkeypatch.setenv("RUNG_TEST_REDUCTION", "none")
    r = check(path, 16, "tf_keras")
    assert r["summed_losses"] == ["MeanSquaredError(reduction='none')"] and r["verdict"] == "not_scaled", r
    monkeypatch.setenv("RUNG_TEST_REDUCTION", "sum_over_batch_size")
    r = check(path, 16, "keras3")
    assert r["checked"] is False and r["keras_train_step"], r


FIT_BOTH_WAYS = """
import json, os, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from rung.measure.workload import load_workload
w = load_workload(sys.argv[1])
def fit(strategy):
    with strategy.scope():
        m = w.build_model()
    return {k: v[-1] for k, v in m.fit(w.make_dataset(16), epochs=1, steps_per_epoch=1, verbose=0).history.items()}
one = fit(tf.distribute.OneDeviceStrategy("/cpu:0"))
two = fit(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
print(json.dumps({k: two[k] / one[k] for k in one}))
"""


@pytest.mark.tf
@pytest.mark.parametrize("keras", ["keras3", "tf_keras"])
def test_a_metric_set_with_assign_shows_the_replicas_sum(keras):
    """The premise of METRIC_SUMMED, measured: fit on one device and under 2 replicas, the
    same global batch, learning rate 0. A maximum kept with assign reads the sum of the
    two replicas' maxima (1.80x here); Keras's MAE beside it reads 1.00x. And rung reads
    the assign from the file (what profile and init say it from)."""
    import json
    import os
    import subprocess
    import sys

    from rung.kerasfit import assigning_metric_calls

    path = HERE / "max_metric.py"
    assert assigning_metric_calls(path.read_text()) == ["MaxError.update_state: self.top.assign (line 18)"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_USE_LEGACY_KERAS": "1" if keras == "tf_keras" else "0"}
    r = subprocess.run([sys.executable, "-c", FIT_BOTH_WAYS, str(path)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-1500:]
    ratio = json.loads(r.stdout.strip().splitlines()[-1])
    assert ratio["mae"] == pytest.approx(1.0, rel=0.01) and ratio["loss"] == pytest.approx(1.0, rel=0.01)
    assert 1.5 < ratio["max_error"] <= 2.0, ratio


@pytest.mark.tf
@pytest.mark.parametrize("keras", ["keras3", "tf_keras"])
def test_a_model_that_calls_itself_on_the_graph_it_holds_is_built_by_its_own_step(keras):
    """keras.io's graph attention network calls itself on the graph it holds, not on the
    node indices the dataset feeds. The replica check built the model made under the
    strategy by calling it on the indices ("too many values to unpack"), and its profile on
    tf-keras, where fit runs the model under every strategy, gave that as the strategy's
    failure: advise would have said every plan of several replicas fails before its first
    step. The model is built by one step of its own now, the update skipped."""
    from rung.measure.profile import add_replica_check
    from rung.measure.replicas import check

    r = check(HERE / "held_graph.py", 8, keras)
    assert r["checked"], r
    assert r["gradient_ratio"] == pytest.approx(1.0, rel=0.02) and r["verdict"] == "scaled"
    out = {"notes": []}
    add_replica_check(out, r)
    assert out["strategy_failure"] is None and out["loss_scaled_for_replicas"] is True
