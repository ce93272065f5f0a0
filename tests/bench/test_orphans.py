"""A child the bench starts ends when the bench dies without ending it (SIGKILL skips every
`finally`): real processes, a real kill."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

# the parent: starts children in sessions of their own (as the bench does), prints their
# pids, then waits to be killed
PARENT = """
import json, subprocess, sys, time
mode = sys.argv[1]
if mode == "plain":
    child = "from rung.bench.orphans import exit_with_parent; exit_with_parent(0.1); import time; time.sleep(120)"
    pids = [subprocess.Popen([sys.executable, "-c", child], start_new_session=True).pid]
elif mode.startswith("pdeathsig"):
    # asks, says so, then runs nothing that could notice: only the kernel can end it early.
    # The pids are printed once it has asked: a parent killed before (a loaded machine took
    # more than the test's half second to import rung here) leaves a child nothing asked for
    child = ("from rung.bench.orphans import die_with_parent; die_with_parent(%s); print(flush=True); "
             "import time; time.sleep(120)")
    import os
    here = open(f"/proc/{os.getpid()}/comm").read().strip()  # this parent's name, as its child reads it
    name = {"pdeathsig": None, "pdeathsig-named": here, "pdeathsig-other": "raylet"}[mode]
    proc = subprocess.Popen([sys.executable, "-c", child % repr(name)], start_new_session=True, stdout=subprocess.PIPE)
    proc.stdout.readline()
    pids = [proc.pid]
elif mode == "warm":
    # a bench's warm process and a task forked from it, a long one-device run of the mlp
    import os
    from pathlib import Path
    from rung.bench.warm import WarmStarters
    from rung.examples import workload_examples
    d = Path(sys.argv[2])  # the test's own folder: this process is killed before it could remove one
    cfg = {"workload": str(workload_examples()["mlp"]), "batch": 16, "steps": 100000, "warmup": 1,
           "collective_timeout": 60, "ps_tasks": 1, "strategy": "single_device", "replicas": 1, "option": None,
           "keras": "keras3", "probe": False, "role": "single", "index": 0}
    (d / "task.json").write_text(json.dumps(cfg))
    starter = WarmStarters(d).get("keras3", dict(os.environ))
    child = starter.spawn(str(d / "task.json"), dict(os.environ, TMPDIR=str(d)), d / "task.log", None, [])
    pids = [starter.proc.pid, child.pid]
else:
    from rung.bench.plan import free_ports
    from rung.bench.psbench import start_servers
    _, procs = start_servers(free_ports(2))
    pids = [p.pid for p in procs]
print(json.dumps(pids), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def _orphans_after_killing_their_parent(mode: str, wait_seconds: float, *args: str) -> list[int]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, mode, *args], stdout=subprocess.PIPE, text=True)
    pids = json.loads(parent.stdout.readline())
    try:
        time.sleep(0.5)
        assert all(_alive(p) for p in pids)  # they run while their parent does
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)
        return [p for p in pids if _alive(p)]
    finally:
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_child_exits_when_its_parent_is_killed():
    assert _orphans_after_killing_their_parent("plain", 10) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl's PR_SET_PDEATHSIG is Linux's")
def test_a_ray_worker_asking_to_die_with_its_parent_is_killed_by_the_kernel():
    """`die_with_parent`, which the bench's Ray tasks and servers call (their parent is the
    node's raylet): a child that watches nothing is ended all the same."""
    assert _orphans_after_killing_their_parent("pdeathsig", 10) == []
    # asked only when the parent has the name given (Ray's workers: "raylet")
    assert _orphans_after_killing_their_parent("pdeathsig-named", 10) == []
    assert len(_orphans_after_killing_their_parent("pdeathsig-other", 2)) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_psbench_servers_end_when_psbench_is_killed():
    """The servers (one PS task, one worker) started by psbench, which end in its `finally`:
    a SIGKILL skips it, and they must end anyway, as soon as they notice."""
    assert _orphans_after_killing_their_parent("servers", 30) == []


@pytest.mark.tf
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_warm_process_and_its_tasks_end_when_the_bench_is_killed(tmp_path):
    """A bench's warm process (`rung.bench.warm`) ends with the bench killed by SIGKILL (its
    input closes, and the kernel sends it the parent-death signal), and a task forked from
    it ends with it, as it watches its parent."""
    assert _orphans_after_killing_their_parent("warm", 15, str(tmp_path)) == []
