"""rung launch --engine ray on a local Ray instance that the generated launch_ray.py starts
and stops: multi-worker through Ray Train (a kill restarts the group, which resumes from
its backup), parameter servers on actors across two test hosts (a killed worker actor is
restarted by Ray on its node while the coordinator carries on). Nothing of Ray is left
afterwards: checked by the process ids of Ray's daemons, never by ending processes by
name."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rung.examples import workload_examples
from tests.conftest import proc_pids, proc_read, processes_mentioning

pytestmark = [pytest.mark.tf, pytest.mark.serial,
              pytest.mark.skipif(__import__("importlib").util.find_spec("ray") is None,
                                 reason="ray not installed (pip install 'rung[ray]')")]
MLP = workload_examples()["mlp"]
XLA = Path(__file__).parent / "xla.py"
# two nodes in network namespaces of their own need root, unshare and nsenter
TWO_NODES = os.geteuid() == 0 and bool(shutil.which("unshare") and shutil.which("nsenter"))
RAY_DAEMONS = ("raylet", "gcs_server", "dashboard", "log_monitor", "monitor.py", "ray::")


def command(pid: int) -> str:
    """A process's command line, or "" for one that ended meanwhile."""
    return (proc_read(pid, "cmdline") or b"").replace(b"\0", b" ").decode(errors="replace")


def ray_pids() -> set[int]:
    """Process ids of Ray daemons and workers now running on this machine."""
    pids = set()
    for pid in proc_pids():
        cmd = command(pid)
        if any(d in cmd for d in RAY_DAEMONS) and "pytest" not in cmd:
            pids.add(pid)
    return pids


def described(pids: set[int]) -> list[str]:
    """Each process: its id, parent's id and the start of its command line (for a failure's
    message)."""
    out = []
    for pid in sorted(pids):
        cmd, stat = proc_read(pid, "cmdline"), proc_read(pid, "stat")
        if cmd is None or stat is None:
            continue  # ended meanwhile
        ppid = stat.rpartition(b")")[2].split()[1].decode()
        line = cmd.replace(b"\0", b" ").decode(errors="replace")
        out.append(f"{pid} (parent {ppid}): {line[:120]}")
    return out


@pytest.fixture
def no_ray_left(monkeypatch):
    """A temporary folder of the test's own for everything it starts (TMPDIR: rung's files and
    Ray's, whose session folder goes there too), and no Ray process left when it ends. These
    tests run one after another in one process of the parallel pass (`ray_tests`), beside
    tests that start no Ray: the daemons that are new are the test's own."""
    temp = Path(tempfile.mkdtemp(prefix="rt"))  # short: Ray's socket paths go under it
    monkeypatch.setenv("TMPDIR", str(temp))
    before = ray_pids()
    yield temp
    deadline = time.time() + 30
    while time.time() < deadline and ray_pids() - before:
        time.sleep(0.5)
    left = ray_pids() - before
    assert not left, f"Ray processes left running: {described(left)}"
    shutil.rmtree(temp, ignore_errors=True)


def ray_tests(test):
    """Starts Ray on this machine, and asserts nothing on speed: in the parallel pass, in one
    process (xdist_group), one after another."""
    return pytest.mark.xdist_group("ray")(pytest.mark.parallel(test))


def rung_temp_files(prefix: str = "rung-") -> set[Path]:
    """What rung left in the test's temporary folder (no_ray_left's)."""
    return set(Path(os.environ["TMPDIR"]).glob(prefix + "*"))


def launch(*args, workload=MLP):
    before = rung_temp_files()
    r = subprocess.run([sys.executable, "-m", "rung", "launch", str(workload), "--engine", "ray", *args, "--json"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-1500:]
    # without --out, neither the job's folder nor the launcher's own state is left behind
    left = [p for p in rung_temp_files() - before if p.name.startswith(("rung-launch-", "rung-ray-"))]
    assert not left, left
    return json.loads(r.stdout)


def relative_reader(folder: Path, model: Path) -> Path:
    """The model, in `folder`, reading a file of that folder by a relative path when it is
    imported, as `python workload.py` run there would (open("vocab.txt"))."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("a b c\n")
    path = folder / model.name
    path.write_text('VOCAB = open("vocab.txt").read().split()  # relative: the folder rung runs in\n'
                    + model.read_text())
    return path


def team_folder(folder: Path, model: Path) -> Path:
    """A workload that takes its model from the team's own training script, train.py beside
    it. launch_ray.py imported rung's train.py as `train` too, and the workload's import
    failed on every worker ("cannot import name 'build_model' from 'train'"): rung's is
    imported under a name of its own now."""
    (folder / "train.py").write_text(model.read_text())
    (folder / "job.py").write_text("from train import BATCH_SIZE, build_model, make_dataset  # noqa: F401\n"
                                   if "BATCH_SIZE" in model.read_text() else
                                   "from train import build_model, make_dataset  # noqa: F401\n")
    return folder / "job.py"


@pytest.mark.skipif(TWO_NODES, reason="the two-node test runs the same kill, restart and resume, across a link")
@ray_tests
def test_multi_worker_on_ray_train_restarts_and_resumes(tmp_path, no_ray_left):
    r = launch("--strategy", "multi_worker_mirrored", "--workers", "2", "--steps", "30", "--kill", "1@12",
               workload=team_folder(tmp_path, MLP))
    assert r["engine"] == "ray" and r["keras"] == "tf_keras" and r["steps_completed"] == 30
    assert r["restarts"] == 1 and r["killed_at_step"] is not None
    assert r["resumed_from_step"] <= r["killed_at_step"] and r["killed_at_step"] - r["resumed_from_step"] <= 5
    assert {t["task"] for t in r["tasks"]} == {"worker:0", "worker:1"}
    assert 0 < r["ray_start_seconds"] < r["wall_seconds"]


@ray_tests
def test_an_address_nobody_answers_fails_in_seconds(no_ray_left):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    t0 = time.perf_counter()
    before = rung_temp_files()
    r = subprocess.run([sys.executable, "-m", "rung", "launch", str(MLP), "--engine", "ray", "--strategy",
                        "multi_worker_mirrored", "--address", f"127.0.0.1:{port}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "no Ray cluster answers" in r.stderr
    assert time.perf_counter() - t0 < 60  # seconds, not a hang
    assert not rung_temp_files() - before  # nothing left behind on failure either


@ray_tests
def test_a_launcher_killed_by_sigkill_ends_its_ray_job_and_instance(tmp_path, no_ray_left):
    # Before, launch_ray.py ran on in its own session with the Ray instance it started (seen:
    # both still up 15 s after `rung launch` was SIGKILLed, a 20,000-step job with no one to
    # end it). The kernel now sends it SIGTERM when the launcher dies, which Ray's driver
    # turns into an exit that shuts its instance down (no_ray_left checks the daemons)
    import signal

    before = ray_pids()
    out = tmp_path / "job"
    launcher = subprocess.Popen([sys.executable, "-m", "rung", "launch", str(MLP), "--engine", "ray", "--strategy",
                                 "multi_worker_mirrored", "--workers", "2", "--steps", "400", "--epochs", "50",
                                 "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        # training has begun: the chief's backup folder has its first files
        while time.time() < deadline and not (any((out / "checkpoints").glob("**/*")) and ray_pids() - before):
            assert launcher.poll() is None, "the launch ended before it could be killed"
            time.sleep(0.2)
        job = processes_mentioning(str(out / "launch_ray.py"))
        assert job, "launch_ray.py and its Ray instance did not start training within 120 s"
        launcher.kill()
        launcher.wait(timeout=10)
        deadline = time.time() + 60
        while time.time() < deadline and processes_mentioning(str(out / "launch_ray.py")):
            time.sleep(0.2)
        assert not processes_mentioning(str(out / "launch_ray.py")), "launch_ray.py outlived its launcher"
    finally:
        for pid in processes_mentioning(str(out / "launch_ray.py")):  # this test's own job, if the check failed
            os.killpg(pid, signal.SIGTERM)


def children(pid: int) -> list[int]:
    """The ids of the processes whose parent is `pid`."""
    out = []
    for p in proc_pids():
        stat = proc_read(p, "stat")
        if stat is not None and stat.rpartition(b")")[2].split()[1] == str(pid).encode():
            out.append(p)
    return out


FREEZER = Path("/sys/fs/cgroup/freezer")


@ray_tests
@pytest.mark.skipif(os.geteuid() != 0 or not (FREEZER / "cgroup.procs").exists(),
                    reason="freezing a process needs root and the cgroup v1 freezer")
def test_a_ray_train_worker_that_cannot_run_ends_with_its_raylet(tmp_path, no_ray_left):
    # A full test run once left a RayTrainWorker running for 17 minutes after its launcher,
    # driver and raylet had ended: Ray's way out (the worker sees the raylet gone and exits)
    # is code the worker itself must run. Here one worker cannot run at all (frozen in a
    # cgroup, where even SIGKILL waits for the thaw) when its raylet is killed: the kernel
    # must have sent it SIGKILL all the same (prctl's PR_SET_PDEATHSIG, asked by
    # launch_ray.py's worker), pending until the thaw, which ends it
    import signal

    group = FREEZER / f"rung-test-{os.getpid()}"
    try:
        group.mkdir()
    except OSError as e:  # a read-only /sys/fs/cgroup (a container's)
        pytest.skip(f"no freezer cgroup can be made here: {e}")
    out = tmp_path / "job"
    launcher = subprocess.Popen([sys.executable, "-m", "rung", "launch", str(MLP), "--engine", "ray", "--strategy",
                                 "multi_worker_mirrored", "--workers", "2", "--steps", "400", "--epochs", "50",
                                 "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        deadline, raylet = time.time() + 120, None
        while time.time() < deadline and worker is None:
            assert launcher.poll() is None, "the launch ended before training began"
            time.sleep(0.2)
            if not any((out / "checkpoints").glob("**/*")):
                continue  # training has begun once the chief's backup folder has its first files
            driver = processes_mentioning(str(out / "launch_ray.py"))
            raylet = next((p for d in driver for p in children(d) if "raylet/raylet" in command(p)), None)
            workers = [p for p in children(raylet) if "ray::RayTrainWorker" in command(p)] if raylet else []
            worker = workers[0] if len(workers) == 2 else None
        assert worker is not None, "no two Ray Train workers training within 120 s"
        (group / "cgroup.procs").write_text(str(worker))
        (group / "freezer.state").write_text("FROZEN")
        deadline = time.time() + 10
        while time.time() < deadline and (group / "freezer.state").read_text().strip() != "FROZEN":
            time.sleep(0.05)
        os.kill(raylet, signal.SIGKILL)
        deadline = time.time() + 10
        while time.time() < deadline and b"\tZ" not in (proc_read(raylet, "status") or b"\tZ"):
            time.sleep(0.05)  # until the raylet has died (a zombie until its parent reaps it)
        status = (proc_read(worker, "status") or b"").decode()
        pending = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith(("SigPnd", "ShdPnd"))]
        assert any(mask & (1 << (signal.SIGKILL - 1)) for mask in pending), \
            f"no SIGKILL pending for the frozen worker after its raylet died: {pending}"
        (group / "freezer.state").write_text("THAWED")
        deadline = time.time() + 10
        while time.time() < deadline and b"\tZ" not in (proc_read(worker, "status") or b"\tZ"):
            time.sleep(0.05)
        assert b"\tZ" in (proc_read(worker, "status") or b"\tZ"), "the thawed worker did not end"
        launcher.wait(timeout=120)  # its job failed: the raylet is gone
    finally:
        if group.exists():
            (group / "freezer.state").write_text("THAWED")
            for pid in (group / "cgroup.procs").read_text().split():  # back to the root group
                (FREEZER / "cgroup.procs").write_text(pid)
            group.rmdir()
        for pid in processes_mentioning(str(out / "launch_ray.py")):  # this test's own job, if a check failed
            os.killpg(pid, signal.SIGTERM)
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


@pytest.mark.skipif(not TWO_NODES,
                    reason="test hosts need root (and util-linux's unshare and nsenter)")
@ray_tests  # asserts nothing on speed: the link's rate measured is at most the shaped one
def test_a_ray_cluster_of_two_nodes_across_a_shaped_link(tmp_path, no_ray_left):
    """A Ray head in one test host and a worker node in another, joined by a 200 Mbit/s
    tbf link (`ray start` in each network namespace; Ray 2.60 authenticates the joining
    node with the cluster token). The second node does not see the driver's files, as a
    second machine would not: it starts in a mount namespace of its own, where an empty
    tmpfs covers the driver's folder (the job, its temporary files, the workload). A
    multi-worker launch (Ray Train) and a parameter-server launch, each with a kill, and
    the bench's multi-worker and parameter-server runs place their workers on both nodes.
    Closing the test hosts ends every process in them by id."""
    from rung.bench.netns import TestNet, leftovers

    ray_cli = str(Path(sys.executable).parent / "ray")
    driver, shared = tmp_path / "driver", tmp_path / "shared"
    driver.mkdir()
    shared.mkdir()
    # test hosts named apart from the benches' ("r..."), whose tests in this pass check that
    # none of theirs is left
    with TestNet(2, 200, tag=f"n{os.getpid() % 100000}") as net:
        head, node = net.address(0), net.address(1)
        env = {**os.environ, "RAY_AUTH_MODE": "token"}
        common = ["--num-cpus=2", "--object-store-memory=300000000", "--disable-usage-stats"]
        r = subprocess.run(net.wrap(0, [ray_cli, "start", f"--node-ip-address={head}", "--head", "--port=6379",
                                        "--include-dashboard=false", *common]),
                           env=env, capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr[-800:]
        start = f"mount -t tmpfs rung-test {driver} && exec {ray_cli} start --node-ip-address={node} " \
                f"--address={head}:6379 " + " ".join(common)
        r = subprocess.run(net.wrap(1, ["unshare", "--mount", "--propagation", "private", "sh", "-c", start]),
                           env=env, capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr[-800:]
        # the team's file, where only the driver sees it, and named as rung's own script is: the
        # second node writes both copies, and the workload's once took the place of rung's
        team = driver / "train.py"
        # reading a file by a relative path when imported, from the folder rung runs in (here
        # one both nodes see): Ray Train's workers imported it in Ray's own folder, where it
        # failed (FileNotFoundError); they start in the driver's folder where they see it
        (shared / "vocab.txt").write_text("a b c\n")
        team.write_text('VOCAB = open("vocab.txt").read().split()\n' + MLP.read_text())
        # in the second node's mount namespace (its raylet's), the driver's folder is empty
        raylet = next(pid for pid in subprocess.run(["ip", "netns", "pids", net.namespace(1)], capture_output=True,
                                                    text=True).stdout.split()
                      if b"raylet" in Path(f"/proc/{pid}/cmdline").read_bytes())
        seen = subprocess.run(["nsenter", f"--mount=/proc/{raylet}/ns/mnt", "ls", "-A", str(driver)],
                              capture_output=True, text=True)
        assert seen.returncode == 0 and seen.stdout == "", seen
        # multi-worker through Ray Train: train.py and the workload travel to the second
        # node with the job, what the workers tell the driver goes through an actor, and the
        # backups sit in a folder both nodes see; worker 1 is killed on its way and the group
        # restarts from the last backup
        r = subprocess.run(net.wrap(0, [sys.executable, "-m", "rung", "launch", str(team), "--engine",
                                        "ray", "--address", f"{head}:6379", "--strategy", "multi_worker_mirrored",
                                        "--workers", "2", "--steps", "30", "--kill", "1@12", "--checkpoint-dir",
                                        str(shared / "checkpoints"), "--json"]),
                           env={**env, "TMPDIR": str(driver)}, capture_output=True, text=True, timeout=600, cwd=shared)
        assert r.returncode == 0, r.stderr[-1500:]
        d = json.loads(r.stdout)
        # (the local test of the same kill, skipped where this one runs, asserts these too)
        assert d["engine"] == "ray" and d["keras"] == "tf_keras" and 0 < d["ray_start_seconds"] < d["wall_seconds"]
        assert {t["task"] for t in d["tasks"]} == {"worker:0", "worker:1"}
        assert d["steps_completed"] == 30 and d["restarts"] == 1 and d["killed_at_step"] is not None
        assert d["resumed_from_step"] <= d["killed_at_step"] and d["killed_at_step"] - d["resumed_from_step"] <= 5
        assert {t["node"] for t in d["tasks"]} == {head, node}, d["tasks"]
        assert not [p.name for p in shared.glob("checkpoints/.rung-shared-*")]  # the probes are removed
        # parameter servers train a model compiled with jit_compile=True, which train.py
        # turns off (an XLA step cannot read the ps tasks' variables) and says so; worker 1 is
        # killed on its way, and Ray restarts its actor (on the node it is pinned to) while the
        # coordinator carries on
        # (the chief, on the driver's node, takes the model from the team's train.py beside the
        # workload: the servers never import it)
        (driver / "ps").mkdir()
        xla = team_folder(driver / "ps", XLA)
        r = subprocess.run(net.wrap(0, [sys.executable, "-m", "rung", "launch", str(xla), "--engine", "ray",
                                        "--address", f"{head}:6379", "--strategy", "parameter_server", "--workers",
                                        "2", "--ps-tasks", "1", "--steps", "100", "--kill", "1@20", "--json"]),
                           env={**env, "TMPDIR": str(driver)}, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-1500:]
        d = json.loads(r.stdout)
        assert d["steps_completed"] == 100 and d["killed_at_step"] is not None
        assert d["restarts"] == 1  # Ray restarted the worker actor: a new process answers
        assert {t["task"] for t in d["tasks"]} == {"worker:0", "worker:1", "ps:0"}
        workers = {t["node"] for t in d["tasks"] if t["task"].startswith("worker")}
        assert workers == {head, node}, d["tasks"]  # one worker on each side of the link
        assert any(n.startswith("jit_compile=True turned off") for n in d["notes"]), d["notes"]
        # the honest test on the cluster: one device against two hosts, beside the predictions.
        # Every run after the first uses tf-keras, and so does the one-device run, their basis,
        # through Ray's runtime_env (mirrored on Ray is one task, as single_device is; the local
        # bench test runs it)
        before = rung_temp_files("rung-bench-")
        r = subprocess.run(net.wrap(0, [sys.executable, "-m", "rung", "bench", str(MLP), "--engine", "ray",
                                        "--address", f"{head}:6379", "--runs",
                                        "single_device,multi_worker_mirrored:2,parameter_server:2",
                                        "--steps", "6", "--warmup", "2", "--json"]),
                           env={**env, "TMPDIR": str(driver)}, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-1500:]
        b = json.loads(r.stdout)
        assert b["link"]["where"].startswith("Ray nodes (2)")
        assert b["link"]["bytes_per_second"] < 1.2 * 200e6 / 8  # the shaped link, not loopback
        runs = {(x["strategy"], x["replicas"]): x for x in b["runs"]}
        assert list(runs) == [("single_device", 1), ("multi_worker_mirrored", 2), ("parameter_server", 2)]
        # the PS run is predicted with the costs psbench measured on the cluster, on the node its
        # coordinator ran on (as a Ray task there: before, the model's 10 ms default, said in a
        # note); across the link each variable's read and update pay its extra round trip
        m = b["ps_costs"]["2"]
        assert m["ray_node"] in (head, node) and m["keras_dispatch_seconds"] > 0 and "reused_from" not in m
        assert m["cores"] == os.cpu_count()  # the Ray task read the cores of the machine it ran on
        # (the tbf link adds no delay of its own: its round trip came out 106 µs against
        # loopback's 26 in one run, and no longer than loopback's in another)
        extra = 2 * max(0.0, b["link"]["rtt_seconds"] - m["loopback_rtt_seconds"])
        assert m["variable_seconds"] == pytest.approx(m["variable_seconds_loopback"] + extra)
        assert not any("default costs" in n for n in b["notes"]), b["notes"]
        assert any(n.startswith(f"parameter-server costs measured on the Ray node at {m['ray_node']}, where each "
                                "run's coordinator is placed") for n in b["notes"]), b["notes"]
        for x in runs.values():
            assert x["engine"] == "ray" and x["examples_per_second"] > 0 and x["predicted_step_seconds"] > 0
            assert x["keras"] == "tf_keras"
        one = runs[("single_device", 1)]["step_seconds_mean"]
        mw = runs[("multi_worker_mirrored", 2)]
        # where Ray Train placed the two workers, read in each: one on each side of the link
        assert sorted(mw["worker_nodes"]) == sorted([head, node]) and mw["hosts"] == 2
        ps = runs[("parameter_server", 2)]
        assert sorted(ps["worker_nodes"]) == sorted([head, node]) and ps["ps_nodes"][0] in (head, node)
        # one worker shares the ps task's node (Ray places tasks round the two nodes), which the
        # prediction (every worker across the link) does not describe: said beside the run (it
        # came out +165% here: 161 ms predicted, 60.9 measured)
        assert any(n.startswith("1 of 2 worker(s) ran on a node that holds a parameter-server task")
                   for n in ps["notes"]), ps["notes"]
        # two workers on one machine's cores: 2 x the cores the one-device run's steps kept
        # busy (read in its Ray task) over the machine's, at least 1x
        basis = b["bases"]["tf_keras"] if b.get("bases") else b["basis"]
        factor = max(1.0, 2 * min(basis["step_cpu_cores"], basis["cores"]) / basis["cores"])
        assert mw["predicted_terms"]["compute"] == pytest.approx(factor * one)
        # two nodes, one kernel (network namespaces of this machine): the test bed's terms
        # stay; rank 0 of Ray Train measured the fixed cost of a step, as a local run does
        assert mw["shares_cores"] is True and mw["testbed_sync_seconds"] > 0 and mw["probe"]["local_step_seconds"] > 0
        # each Ray task's copy of the workload is removed with the task (none left in the temp folder)
        left = [p for p in rung_temp_files("rung-bench-") - before if (p / MLP.name).exists()]
        assert not left, left
    assert leftovers(net.tag) == [], "test hosts left behind"


# The tail of launch_ray.py's log when train.py stopped on its workload in Ray Train workers
# (a Keras 3 file under multi_worker_mirrored, rung launch --engine ray, 2026-12-03). Before,
# rung printed "the Ray job failed (exit code 1): [Rank 0,1 Error Snippet]:" and nothing of
# train.py's line, which Ray keeps in the workers' own logs: the workers now raise it
RAY_STOP_LOG = """\
ray.train.WorkerGroupError: Training failed due to worker errors:
[Rank 0,1 Error Snippet]:
Traceback (most recent call last):
  File "/tmp/nb/rayjob/launch_ray.py", line 144, in worker_loop
    raise RuntimeError(train.STOPPED[-1]) from None
RuntimeError: train.py: workload: /w/unseeded.py: build_model() returned a Keras 3 model, built from `import keras`
"""


@pytest.mark.parallel  # starts no Ray
def test_a_workload_train_py_stops_on_in_ray_workers_is_one_line_exit_2():
    from rung.errors import InputError
    from rung.launch.local import workload_error

    bad = workload_error(RAY_STOP_LOG, anywhere=True)
    assert isinstance(bad, InputError)
    assert str(bad) == "/w/unseeded.py: build_model() returned a Keras 3 model, built from `import keras`"
    assert workload_error(RAY_STOP_LOG) is None  # a local task's line starts with it
    assert workload_error("RuntimeError: something else\n", anywhere=True) is None


@pytest.mark.parallel  # starts no Ray
def test_bench_on_ray_refuses_what_only_local_runs_do():
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(MLP), "--engine", "ray", "--straggler", "1:2",
                        "--runs", "multi_worker_mirrored:2"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--engine local" in r.stderr


@pytest.mark.skipif(TWO_NODES, reason="the two-node test runs a parameter-server bench with psbench on a Ray node, "
                                       "and the bench's local Ray instance runs in test_a_run_that_fails_on_ray...")
@ray_tests
def test_a_parameter_server_bench_on_a_local_ray_instance_is_predicted_with_this_machines_costs(no_ray_left):
    """psbench runs as a Ray task on the node the coordinator is placed on, here the local
    instance's node, this machine, so it measures what the instance's parameter-server runs
    pay. With the model's 10 ms default, such a run here came out +118% (12.3 ms predicted,
    5.6 measured); with this machine's costs, +10%."""
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(MLP), "--engine", "ray", "--runs",
                        "single_device,parameter_server:1", "--steps", "4", "--warmup", "1", "--json"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-1500:]
    b = json.loads(r.stdout)
    m = b["ps_costs"]["1"]
    assert m["keras_dispatch_seconds"] > 0 and "reused_from" not in m and m["cores"] == os.cpu_count()
    assert m["ray_node"]  # measured by a Ray task on the instance's node, as on a cluster
    assert m["variable_seconds"] == m["variable_seconds_loopback"]  # one node: no link to add
    assert not any("default costs" in n for n in b["notes"]), b["notes"]
    assert [x["engine"] for x in b["runs"]] == ["ray", "ray"]


@ray_tests
def test_a_run_that_fails_on_ray_fails_alone_with_what_to_change(tmp_path, no_ray_left):
    """keras.io's VAE (no call()) from tf.keras: Keras 3 cannot build it under a strategy.
    On Ray a failed run raised rung's plain RunError, so the first one ended the bench (the
    local runner's failures are the run's alone), and it said Ray's wrapper and TensorFlow's
    words ("RayTaskError(RuntimeError): Unable to automatically build the model") where a
    local run says what to change. Now the one-device run on tf-keras is the basis, as
    locally, and the multi-worker run on Ray Train runs."""
    # (read from a folder of its own, with a file it reads by a relative path: the bench's Ray
    # tasks imported it in Ray's folder, FileNotFoundError; they start where the bench runs now)
    vae = relative_reader(tmp_path, Path(__file__).parents[1] / "measure" / "workloads" / "vae_tf_keras.py")
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(vae), "--engine", "ray", "--runs",
                        "single_device,mirrored:2,multi_worker_mirrored:2", "--steps", "3", "--warmup", "1", "--json"],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert r.returncode == 1, r.stderr[-1500:]
    b = json.loads(r.stdout)
    assert [(x["strategy"], x["keras"], x["engine"]) for x in b["runs"]] == \
        [("single_device", "tf_keras", "ray"), ("multi_worker_mirrored", "tf_keras", "ray")], b["runs"]
    assert [f["run"] for f in b["failed"]] == ["single_device", "mirrored:2"]
    for f in b["failed"]:
        assert "on Ray failed: under a tf.distribute strategy Keras 3 builds the model" in f["error"], f["error"]
        assert "model.built = True" in f["error"] and "RayTaskError" not in f["error"]


@ray_tests
def test_a_file_that_does_not_import_on_ray_is_bad_input_named_by_its_own_path(tmp_path, no_ray_left):
    # as a local bench says it (exit 2, one line); before, exit 1 with Ray's wrapper, and
    # then the path of the task's copy of the file on the Ray worker
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_module_rung\n")
    r = subprocess.run([sys.executable, "-m", "rung", "bench", str(bad), "--engine", "ray", "--runs", "single_device"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stdout == "", r.stderr[-1500:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"rung: error: {bad}: cannot be imported: ModuleNotFoundError"), line


@ray_tests
def test_a_workload_every_ray_train_worker_stops_on_is_said_at_once_without_ray_trains_retries(tmp_path, no_ray_left):
    """keras.io's VAE imports Keras 3 itself; launch_ray.py's workers run tf-keras, and
    train.py stops on it in each. Before, each worker raised the line, and Ray Train
    restarted the group --max-failures (3) times, each try stopping alike (70 s here), and
    its error ("Training failed due to worker errors") was the log's last word. Now every
    worker returns once all stopped, and the driver says the line."""
    vae = Path(__file__).parent.parent / "measure" / "workloads" / "vae.py"
    r = subprocess.run([sys.executable, "-m", "rung", "launch", str(vae), "--engine", "ray", "--strategy",
                        "multi_worker_mirrored", "--workers", "2", "--steps", "2", "--out", str(tmp_path / "job")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(
        f"rung: error: {vae}: build_model() returned a Keras 3 model, built from `import keras`")
    log = (tmp_path / "job" / "launch_ray.log").read_text(errors="replace")
    assert "Training failed" not in log and "WorkerGroupError" not in log


def launcher_check(tmp_path, script: str, *args: str):
    """A multi-worker job's launch_ray.py (rung init), and `script` run beside it (it
    imports launch_ray, no Ray): what the script prints, as JSON."""
    r = subprocess.run([sys.executable, "-m", "rung", "init", str(MLP), "--strategy", "multi_worker_mirrored",
                        "--out", str(tmp_path / "job")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "job"), *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# One try of a Ray Train group whose two workers stopped on the workload, and one where
# only worker 1 did (a failure Ray Train retries): what the driver makes of the board
# (launch_ray.py's Board, a Ray actor in a run, a plain object here)
STOPS_CHECK = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import launch_ray as L
L.STOP_WAIT_SECONDS = 0.5
board = L.Board()
def try_(ports, ranks):  # the workers of one try, at once
    from concurrent.futures import ThreadPoolExecutor
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"h:{p}" for p in ports]}, "task": {}})
    with ThreadPoolExecutor(len(ranks)) as pool:
        return list(pool.map(lambda r: L.all_stopped(board, r, f"train.py: workload: w.py: stop {r}"), ranks))
lone = try_((1, 2), [1])
seen = [lone, L.stopped_line(board.summary(), 2)]
both = try_((3, 4), [0, 1])
seen += [both, L.stopped_line(board.summary(), 2)]
print(json.dumps(seen))
"""


@pytest.mark.parallel  # no Ray, no TensorFlow
def test_the_driver_says_a_stop_only_when_every_worker_of_one_try_stopped(tmp_path):
    lone, after_lone, both, after_both = launcher_check(tmp_path, STOPS_CHECK)
    # worker 1 alone: it waits for worker 0 in vain and raises (Ray Train retries); nothing to say
    assert lone == [False] and after_lone is None
    # the next try (new addresses), both: each returns, and the driver says worker 0's line,
    # the lone stop of the try before notwithstanding
    assert both == [True, True] and after_both == "train.py: workload: w.py: stop 0"


# Two workers' probes of --checkpoint-dir, at once: in one folder both see (a shared file
# system), and each in a folder of its own (what two machines without one see)
SHARED_CHECK = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import launch_ray as L
from concurrent.futures import ThreadPoolExecutor
L.SHARED_WAIT_SECONDS = 1.0
def probe(folders):
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda r: L.unshared_line(folders[r], "run1", r, 2, f"10.0.0.{r + 1}"), (0, 1)))
shared = os.path.join(sys.argv[2], "shared")
one = probe([shared, shared])
L.remove_probes(shared, "run1", range(2))
two = probe([os.path.join(sys.argv[2], "a"), os.path.join(sys.argv[2], "b")])
print(json.dumps([one, sorted(os.listdir(shared)), two]))
"""


@pytest.mark.parallel  # no Ray, no TensorFlow
def test_workers_that_do_not_share_the_checkpoint_folder_are_told_so(tmp_path):
    one, left, two = launcher_check(tmp_path, SHARED_CHECK, str(tmp_path))
    assert one == [None, None] and left == []  # each saw the other's file; rank 0 removes them after the run
    a = str(tmp_path / "a")
    assert two[0] == (f"launch_ray.py: --checkpoint-dir {a} is not one folder for every worker: worker 0 "
                      "(node 10.0.0.1) does not see worker 1's file there after 1 s. Ray Train restarts the "
                      "group from the chief's backup, which every worker reads there: give a folder every "
                      "node mounts (NFS, a cloud bucket)")
    assert "worker 1 (node 10.0.0.2) does not see worker 0's file" in two[1]


# Every worker of a node reads the kill's marker at its start, at once (a CI run's two
# workers on one machine both saw it, and the second's removal raised FileNotFoundError:
# a third try of the group). Sixteen threads at a barrier, twenty times
MARKER_CHECK = """
import json, os, sys, tempfile, threading
sys.path.insert(0, sys.argv[1])
import launch_ray as L
errors, steps = [], []
for _ in range(20):
    board, marker = L.Board(), os.path.join(tempfile.mkdtemp(), "killed")
    with open(marker, "w") as f:
        f.write("12")
    gate = threading.Barrier(16)
    def worker():
        gate.wait()
        try:
            L.take_kill_marker(board, marker)
        except Exception as e:
            errors.append(type(e).__name__)
    threads = [threading.Thread(target=worker) for _ in range(16)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    steps.append([board.summary()["killed_step"], os.path.exists(marker)])
L.take_kill_marker(board, marker)  # none left: nothing to say
print(json.dumps({"errors": errors, "steps": steps}))
"""


@pytest.mark.parallel  # no Ray, no TensorFlow
def test_the_workers_of_a_node_take_the_kill_marker_at_once(tmp_path):
    seen = launcher_check(tmp_path, MARKER_CHECK)
    assert seen["errors"] == [] and seen["steps"] == [[12, False]] * 20


@ray_tests
def test_workers_go_to_the_gpu_nodes_and_ask_for_their_gpus(tmp_path, no_ray_left):
    """A Ray cluster as most are: a head without GPUs (the driver's node) and a node with
    two (declared to Ray: none is here, and TensorFlow runs on the CPU where Ray shows
    it one). launch_ray.py --use-gpu of a parameter-server job put worker 0 on the head and
    asked no GPU for any worker. Now, with --gpus-per-worker 1, both workers train on the
    GPU node, each holding one of its GPUs, and the ps task is on the head; a multi-worker
    job's two workers (Ray Train's) are there too. Three parameter-server workers of one GPU,
    or two multi-worker workers of two, ask for more GPUs than there are: one line, before
    any task starts. (Two nodes on this machine: ray.cluster_utils.)"""
    from ray.cluster_utils import Cluster

    r = subprocess.run([sys.executable, "-m", "rung", "init", str(MLP), "--strategy", "parameter_server",
                        "--workers", "2", "--ps-tasks", "1", "--out", str(tmp_path / "job")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4, "num_gpus": 0})
    try:
        gpu_node = cluster.add_node(num_cpus=4, num_gpus=2).node_id
        cluster.wait_for_nodes()
        script = [sys.executable, str(tmp_path / "job" / "launch_ray.py"), "--address", cluster.address,
                  "--gpus-per-worker", "1"]
        r = subprocess.run(script + ["--steps", "10"], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-1500:]
        d = json.loads(r.stdout.strip().splitlines()[-1])
        assert d["steps_completed"] == 10
        where = {t["task"]: t["node_id"] for t in d["tasks"]}
        assert where["worker:0"] == where["worker:1"] == gpu_node, d["tasks"]
        assert where["ps:0"] == cluster.head_node.node_id
        # multi-worker: Ray Train's workers ask for the GPU each (resources_per_worker)
        r = subprocess.run([sys.executable, "-m", "rung", "init", str(MLP), "--strategy", "multi_worker_mirrored",
                            "--workers", "2", "--out", str(tmp_path / "mw")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([sys.executable, str(tmp_path / "mw" / "launch_ray.py"), *script[2:], "--steps", "10",
                            "--checkpoint-dir", str(tmp_path / "ck")], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-1500:]
        d = json.loads(r.stdout.strip().splitlines()[-1])
        assert d["steps_completed"] == 10 and {t["node_id"] for t in d["tasks"]} == {gpu_node}, d["tasks"]
        # three workers of one GPU, or two of two: more than the cluster's two GPUs, one line
        # each, before any task starts (Ray Train would wait for them without end)
        for job, extra in (("job", ["--workers", "3"]), ("mw", ["--gpus-per-worker", "2"])):
            r = subprocess.run([sys.executable, str(tmp_path / job / "launch_ray.py"), *script[2:], *extra],
                               capture_output=True, text=True, timeout=600)
            last = r.stderr.strip().splitlines()[-1]
            workers, gpus = (3, 1) if job == "job" else (2, 2)
            assert r.returncode == 1 and last.startswith(
                f"launch_ray.py: {workers} worker(s) of {gpus} GPU(s) each do not fit the cluster's live nodes (GPUs: ") \
                and last.endswith("); --gpus-per-worker 0 runs them on CPUs") and sorted(last.split("(GPUs: ")[1]
                                                                                  .split(")")[0].split(", ")) == \
                ["0", "2"], r.stderr[-800:]
    finally:
        cluster.shutdown()
