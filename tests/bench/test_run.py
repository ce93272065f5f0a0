"""The runner's account of a failed run (`rung.bench.run`), with real processes standing in
for a run's tasks: no TensorFlow."""

from __future__ import annotations

import sys
import time

import pytest

from rung.bench.plan import RunPlan, RunSpec, Task
from rung.bench.run import BenchError, Processes, _wait

# a task: waits, writes its error file (as rung.bench.task does), waits again, exits 1
TASK = """
import sys, time
time.sleep(float(sys.argv[2]))
open(sys.argv[1], "w").write(sys.argv[3] + "\\nTraceback ...\\n")
time.sleep(float(sys.argv[4]))
sys.exit(1)
"""


def _failing_run(tmp_path, lead: tuple[float, float], peer: tuple[float, float]) -> str:
    """Two workers that fail: (seconds to the error file, seconds more to the exit) each."""
    plan = RunPlan(RunSpec("multi_worker_mirrored", 2), [Task("worker", 0, None), Task("worker", 1, None)], "tf_keras")
    procs = Processes()
    errors = {0: "UnavailableError: The error could be from a previous operation. Restart your program to reset.",
              1: "ValueError: worker 1's own failure"}
    try:
        for task, (wrote, exited) in zip(plan.tasks, (lead, peer)):
            err = tmp_path / f"worker{task.index}-a0.error.txt"
            p = procs.start([sys.executable, "-c", TASK, str(err), str(wrote), errors[task.index], str(exited)], {},
                            tmp_path / f"worker{task.index}-a0.log")
            p.rung_task = task
        with pytest.raises(BenchError) as e:
            _wait(plan, procs, tmp_path / "result.json", tmp_path / "worker0-a0.error.txt", time.perf_counter(), 60,
                  None, tmp_path / "progress", None)
        return str(e.value)
    finally:
        procs.close()


def test_a_lead_that_fails_because_its_peer_failed_first_names_the_peer(tmp_path):
    """Worker 1 fails; worker 0 (the lead) fails after it, of its peer's absence, and exits
    while worker 1 is still exiting (TensorFlow's teardown): the cause reported is worker
    1's error, not the lead's, whose exit the runner sees first. (A bench here reported the
    lead's UnavailableError for a pipeline that failed on worker 1.)"""
    got = _failing_run(tmp_path, lead=(0.7, 0.0), peer=(0.5, 1.5))
    assert got == "multi_worker_mirrored:2: worker:1 failed: ValueError: worker 1's own failure"


def test_a_lead_that_fails_first_is_the_cause(tmp_path):
    got = _failing_run(tmp_path, lead=(0.3, 0.0), peer=(1.5, 0.0))
    assert got.startswith("multi_worker_mirrored:2: worker:0 failed: UnavailableError")
