"""The runner's account of a failed run (`rung.bench.run`), with real processes standing in
for a run's tasks: no TensorFlow."""

from __future__ import annotations

import sys
import time

import pytest

from rung.bench.plan import RunPlan, RunSpec, Task
from rung.bench.run import BenchError, Processes, _wait

# a task: writes its error file (as rung.bench.task does) and exits 1, each some seconds after
# the other task's error file exists ("after") or after it started ("now"). Ordered by the
# other's file, not by the clock from start: under a loaded machine's start-up delays, two
# sleeps from start (0.5 s and 0.7 s) once came out the other way round (CI, parallel pass)
TASK = """
import os, sys, time
err, other, text = sys.argv[1:4]
def wait(when, seconds):
    while when == "after" and not os.path.exists(other):
        time.sleep(0.01)
    time.sleep(float(seconds))
wait(sys.argv[4], sys.argv[5])
open(err, "w").write(text + "\\nTraceback ...\\n")
wait(sys.argv[6], sys.argv[7])
sys.exit(1)
"""


def _failing_run(tmp_path, lead: tuple, peer: tuple) -> str:
    """Two workers that fail, each ("now" or "after", seconds to its error file, "now" or
    "after", seconds more to its exit): "after" counts from the other's error file."""
    plan = RunPlan(RunSpec("multi_worker_mirrored", 2), [Task("worker", 0, None), Task("worker", 1, None)], "tf_keras")
    procs = Processes()
    errors = {0: "UnavailableError: The error could be from a previous operation. Restart your program to reset.",
              1: "ValueError: worker 1's own failure"}
    try:
        for task, when in zip(plan.tasks, (lead, peer)):
            err = tmp_path / f"worker{task.index}-a0.error.txt"
            other = tmp_path / f"worker{1 - task.index}-a0.error.txt"
            p = procs.start([sys.executable, "-c", TASK, str(err), str(other), errors[task.index],
                             *map(str, when)], {}, tmp_path / f"worker{task.index}-a0.log")
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
    # the lead writes 0.2 s after the peer's error and exits at once; the peer exits 0.5 s
    # after the lead's error
    got = _failing_run(tmp_path, lead=("after", 0.2, "now", 0.0), peer=("now", 0.3, "after", 0.5))
    assert got == "multi_worker_mirrored:2: worker:1 failed: ValueError: worker 1's own failure"


def test_a_lead_that_fails_first_is_the_cause(tmp_path):
    got = _failing_run(tmp_path, lead=("now", 0.3, "now", 0.0), peer=("after", 1.2, "now", 0.0))
    assert got.startswith("multi_worker_mirrored:2: worker:0 failed: UnavailableError")


# a task that logs as TensorFlow does, says one line of its own and dies by a signal
CRASH = """
import os, resource, signal, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
print("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR")
print("I1204 17:10:14.951160   28679 coordination_service.cc:502] Waiting for 1/2 tasks to connect.")
print("/job:worker/replica:0/task:1")
print("building the model")
print("To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.")
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_a_task_that_crashes_is_said_to_crash_by_its_signal_with_its_own_last_line(tmp_path):
    """A worker that crashed inside TensorFlow (SIGSEGV: a multi-worker worker that made a
    MirroredStrategy of its own did) leaves no error file: the line said "exit code -11" and
    the last lines of TensorFlow's start-up logging."""
    plan = RunPlan(RunSpec("multi_worker_mirrored", 2), [Task("worker", 0, None), Task("worker", 1, None)], "tf_keras")
    procs = Processes()
    try:
        p = procs.start([sys.executable, "-c", CRASH], {}, tmp_path / "worker0-a0.log")
        p.rung_task = plan.tasks[0]
        q = procs.start([sys.executable, "-c", "import time; time.sleep(30)"], {}, tmp_path / "worker1-a0.log")
        q.rung_task = plan.tasks[1]
        with pytest.raises(BenchError) as e:
            _wait(plan, procs, tmp_path / "result.json", tmp_path / "worker0-a0.error.txt", time.perf_counter(), 60,
                  None, tmp_path / "progress", None)
    finally:
        procs.close()
    assert str(e.value) == ("multi_worker_mirrored:2: worker:0 failed: crashed with SIGSEGV (signal 11), last output: "
                            "building the model")


def test_how_a_process_ended_is_said_in_words():
    import signal

    from rung.bench.run import exit_words

    assert exit_words(1) == "exited with code 1"
    assert exit_words(-signal.SIGABRT) == "crashed with SIGABRT (signal 6)"
    assert exit_words(-signal.SIGKILL) == "was ended by SIGKILL (signal 9)"  # told to stop, not a fault of its own
    assert exit_words(-200) == "was ended by signal 200"


def test_a_tasks_own_line_about_the_file_is_kept_whole_and_tensorflows_gets_what_to_change_first():
    """rung's InputError, longer than a TensorFlow line is cut to and naming TensorFlow's words
    in it, went through the hints again: its advice twice and the line cut in the middle."""
    from rung.bench.task import error_line
    from rung.errors import InputError
    from rung.failures import own_strategy_problem

    ours = InputError("/w/work.py", None, f"{own_strategy_problem('MirroredStrategy')} (RuntimeError: Mixing "
                                           "different tf.distribute.Strategy objects (line 8))")
    assert error_line(ours) == f"InputError: {ours}" and len(error_line(ours)) > 300
    # rung's own line, quoting TensorFlow's words of a failure it explains: no hint on top
    from rung.failures import made_before_problem

    made = InputError("/w/work.py", None, made_before_problem(0, 4, [], "Adam"))
    assert error_line(made) == f"InputError: {made}"
    # rung's line that only passes TensorFlow's on (a build that fails on tf-keras alone) gets the fix first
    stateful = InputError("/w/work.py", None, "build_model() raised ValueError: Stateful RNNs (created with "
                                              "`stateful=True`) are not yet supported with tf.distribute.Strategy.")
    assert error_line(stateful).startswith("InputError: /w/work.py: the model has recurrent layers with stateful=True")
    assert error_line(stateful).endswith("(build_model() raised ValueError: Stateful RNNs (created with "
                                         "`stateful=True`) are not yet supported with tf.distribute.Strategy.)")
    theirs = RuntimeError("Mixing different tf.distribute.Strategy objects: <a> is not <b>")
    assert error_line(theirs).startswith("build_model() builds the model under a tf.distribute strategy of its own")
    assert error_line(theirs).endswith("(RuntimeError: Mixing different tf.distribute.Strategy objects: <a> is not "
                                       "<b>)")
