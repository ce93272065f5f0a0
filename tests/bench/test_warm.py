"""Warm starts (`rung.bench.warm`): the bench's tasks forked from a process that imported
TensorFlow once. Real TensorFlow, real processes, a real kill; each warm run is checked
against the same run started cold."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rung.bench.plan import RunSpec, plan_run
from rung.bench.run import BenchError, execute
from rung.examples import workload_examples

pytestmark = [pytest.mark.tf, pytest.mark.serial]
MLP = str(workload_examples()["mlp"])


@pytest.fixture(scope="module")
def starters(tmp_path_factory):
    from rung.bench.warm import WarmStarters

    with WarmStarters(tmp_path_factory.mktemp("warm")) as w:
        yield w


def _cfg(plan, workload: str, steps: int) -> dict:
    """A run's config, as `rung.bench.bench._one_run` writes it."""
    return {"workload": workload, "batch": 16, "steps": steps, "warmup": 1, "collective_timeout": 60, "ps_tasks": 1,
            "strategy": plan.spec.strategy, "replicas": plan.spec.replicas, "option": None, "keras": plan.keras,
            "probe": False}


def _run(tmp: Path, name: str, workload: str, strategy: str, replicas: int, warm, steps: int = 6, **kw):
    plan = plan_run(RunSpec(strategy, replicas))
    cfg = _cfg(plan, workload, steps)
    if kw.get("kill"):
        cfg.update(backup_dir=str(tmp / f"{name}-backup"), save_freq=2)
    run_dir = tmp / name
    run_dir.mkdir()
    starter = warm.get(plan.keras, dict(os.environ)) if warm is not None else None
    return execute(plan, cfg, run_dir, 180, warm=starter, **kw), run_dir


def test_a_run_forked_warm_gives_what_the_same_run_started_cold_gives(tmp_path, starters):
    warm, warm_dir = _run(tmp_path, "warm", MLP, "single_device", 1, starters)
    cold, cold_dir = _run(tmp_path, "cold", MLP, "single_device", 1, None)
    for out in (warm, cold):
        assert len(out.result["ends"]) == 7 and out.result["keras"] == "keras3"
    # the warm task skipped the import its warm process measured; the cold one paid it itself
    imported = starters.get("keras3", {}).import_seconds
    assert imported > 0 and warm.attempts[0]["import_seconds"] == imported
    # the import's CPU time, not what it waited on the disk (never more than its wall time)
    assert imported <= starters.get("keras3", {}).import_wall_seconds
    assert cold.attempts[0]["import_seconds"] == 0.0
    # the warm process reaped its child and wrote how it ended: as Popen would, 0
    assert [f.read_text() for f in warm_dir.glob("*.exit")] == ["0"]
    assert list(cold_dir.glob("*.exit")) == []


def test_a_task_that_fails_forked_warm_fails_as_it_does_cold(tmp_path, starters):
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('this workload cannot be imported')\n")
    errors = []
    for name, warm in (("warm", starters), ("cold", None)):
        with pytest.raises(BenchError) as e:
            _run(tmp_path, name, str(bad), "single_device", 1, warm)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "this workload cannot be imported" in errors[0]
    # the forked task exited with the cold one's code, not the warm process's
    (code,) = [f.read_text() for f in (tmp_path / "warm").glob("*.exit")]
    assert int(code) != 0


def test_a_killed_warm_worker_is_reaped_and_the_restart_starts_cold(tmp_path, starters):
    out, run_dir = _run(tmp_path, "mw", MLP, "multi_worker_mirrored", 2, starters, steps=10, kill=(1, 4), restarts=1)
    assert out.recovery["restarts"] == 1 and out.recovery["killed_at_step"] >= 4
    first, restart = out.attempts
    assert first["import_seconds"] > 0 and restart["import_seconds"] == 0.0
    exits = {f.name: int(f.read_text()) for f in run_dir.glob("*.exit")}
    # worker 1 died of the kill (SIGKILL, -9, as Popen reports it); worker 0, stalled
    # without its peer, was ended with every task before the restart
    assert exits.get("worker1-a0.exit") == -9 and set(exits) == {"worker0-a0.exit", "worker1-a0.exit"}
    assert len(out.result["ends"]) >= 1


def test_warm_starts_can_be_turned_off(tmp_path, monkeypatch):
    from rung.bench.warm import WarmStarters

    monkeypatch.setenv("RUNG_WARM_START", "0")
    with WarmStarters(tmp_path) as w:
        assert w.get("keras3", dict(os.environ)) is None
    assert list(tmp_path.iterdir()) == []  # no warm process was started


def test_a_warm_process_that_cannot_start_hands_its_tasks_to_cold_starts(tmp_path):
    """A warm process that dies before answering (here: its TensorFlow fails to import) is
    not used again: its runs start cold, and run."""
    from rung.bench.warm import WarmStarters

    broken_tf = tmp_path / "site" / "tensorflow"
    broken_tf.mkdir(parents=True)
    (broken_tf / "__init__.py").write_text("raise ImportError('a TensorFlow that does not load')\n")
    (tmp_path / "w").mkdir()
    with WarmStarters(tmp_path / "w") as w:
        env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
        starter = w.get("keras3", env)
        assert starter is not None and not starter.ready() and starter.broken == "exited (1)"
        assert w.get("keras3", env) is None
        plan = plan_run(RunSpec("single_device", 1))
        (tmp_path / "run").mkdir()
        out = execute(plan, _cfg(plan, MLP, 3), tmp_path / "run", 180, warm=starter)
        assert len(out.result["ends"]) == 4 and out.attempts[0]["import_seconds"] == 0.0
    assert "a TensorFlow that does not load" in (tmp_path / "w" / "warm-keras3.log").read_text()


def test_forked_tasks_draw_their_own_random_numbers(tmp_path, starters):
    """A fork copies NumPy's global generator: without a reseed in each child, every
    forked task of a file that draws its data from np.random drew the same numbers
    (0.3155... in all three tasks of a bench here), unlike cold processes."""
    drawn = tmp_path / "drawn"
    drawn.mkdir()
    w = tmp_path / "draws.py"
    w.write_text(f'''import os
import numpy as np
import tensorflow as tf
open(os.path.join({str(drawn)!r}, str(os.getpid())), "w").write(repr(np.random.rand()))
def build_model():
    m = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    return m
def make_dataset(batch_size, input_context=None):
    return tf.data.Dataset.from_tensors((tf.ones([4]), tf.ones([1]))).repeat().batch(batch_size)
''')
    for name in ("a", "b"):
        out, _ = _run(tmp_path, name, str(w), "single_device", 1, starters, steps=2)
        assert out.attempts[0]["import_seconds"] > 0  # forked warm
    draws = [f.read_text() for f in drawn.iterdir()]
    assert len(draws) == 2 and draws[0] != draws[1]
