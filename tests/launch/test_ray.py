"""rung launch --engine ray on a local Ray instance that the generated launch_ray.py starts
and stops: multi-worker through Ray Train (a kill restarts the group, which resumes from
its backup), parameter servers on actors (a killed worker actor is restarted by Ray while
the coordinator carries on). Nothing of Ray is left afterwards: checked by the process
ids of Ray's daemons, never by ending processes by name."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from rung.examples import workload_examples

pytestmark = [pytest.mark.tf, pytest.mark.skipif(__import__("importlib").util.find_spec("ray") is None,
                                                 reason="ray not installed (pip install 'rung[ray]')")]
MLP = workload_examples()["mlp"]
RAY_DAEMONS = ("raylet", "gcs_server", "dashboard", "log_monitor", "monitor.py", "ray::")


def ray_pids() -> set[int]:
    """Process ids of Ray daemons and workers now running on this machine."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(d in cmd for d in RAY_DAEMONS) and "pytest" not in cmd:
            pids.add(int(entry))
    return pids


@pytest.fixture
def no_ray_left():
    before = ray_pids()
    yield
    deadline = time.time() + 30
    while time.time() < deadline and ray_pids() - before:
        time.sleep(0.5)
    assert not ray_pids() - before, "Ray processes left running"


def launch(*args):
    r = subprocess.run([sys.executable, "-m", "rung", "launch", str(MLP), "--engine", "ray", *args, "--json"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-1500:]
    return json.loads(r.stdout)


def test_multi_worker_on_ray_train_restarts_and_resumes(no_ray_left):
    r = launch("--strategy", "multi_worker_mirrored", "--workers", "2", "--steps", "30", "--kill", "1@12")
    assert r["engine"] == "ray" and r["keras"] == "tf_keras" and r["steps_completed"] == 30
    assert r["restarts"] == 1 and r["killed_at_step"] is not None
    assert r["resumed_from_step"] <= r["killed_at_step"] and r["killed_at_step"] - r["resumed_from_step"] <= 5
    assert {t["task"] for t in r["tasks"]} == {"worker:0", "worker:1"}
    assert 0 < r["ray_start_seconds"] < r["wall_seconds"]


def test_parameter_servers_on_ray_actors_carry_on_after_a_kill(no_ray_left):
    r = launch("--strategy", "parameter_server", "--workers", "2", "--ps-tasks", "1", "--steps", "200",
               "--kill", "1@30")
    assert r["steps_completed"] == 200 and r["killed_at_step"] is not None
    assert r["restarts"] == 1  # Ray restarted the worker actor: a new process answers
    assert {t["task"] for t in r["tasks"]} == {"worker:0", "worker:1", "ps:0"}


def test_an_address_nobody_answers_fails_in_seconds(no_ray_left):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "rung", "launch", str(MLP), "--engine", "ray", "--strategy",
                        "multi_worker_mirrored", "--address", f"127.0.0.1:{port}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "no Ray cluster answers" in r.stderr
    assert time.perf_counter() - t0 < 60  # seconds, not a hang
