"""Shared fixtures: where the scenarios live, and a helper that writes scenario files."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BUNDLED = REPO / "rung" / "examples" / "scenarios"
# The team's shared examples sit beside the repository (in CI too); the bundled
# copies keep a lone clone testable.
SHARED = Path(os.environ.get("RUNG_SHARED_SCENARIOS", REPO.parent / "shared" / "scenarios"))

VALID = {
    "schema": "rung/scenario/v1",
    "name": "test",
    "workload": {"params": 25.6e6, "optimizer": "momentum", "per_device_batch": 256,
                 "step_seconds": 0.21, "input_wait_seconds": 0.005,
                 "activation_bytes_per_example": 1e8},
    "hardware": {"device": "A100-80GB", "devices_per_host": 8, "intra_host": "nvlink",
                 "inter_host_gbps": 100, "max_hosts": 8},
    "goal": {"target_examples_per_second": 7000},
}


def valid_scenario(**blocks) -> dict:
    """A valid scenario mapping, with blocks' keys overridden (None deletes a key)."""
    data = copy.deepcopy(VALID)
    for block, changes in blocks.items():
        if not isinstance(changes, dict):
            data[block] = changes
            continue
        data.setdefault(block, {})
        for k, v in changes.items():
            if v is None:
                data[block].pop(k, None)
            else:
                data[block][k] = v
    return data


@pytest.fixture
def write_scenario(tmp_path):
    def write(data, name="scenario.yaml", raw: str | None = None) -> Path:
        p = tmp_path / name
        p.write_text(raw if raw is not None else yaml.safe_dump(data), encoding="utf-8")
        return p
    return write


def scenario_dirs() -> list[Path]:
    dirs = [BUNDLED]
    if (SHARED / "expected.json").exists():
        dirs.append(SHARED)
    return dirs


def expected_cases() -> list[tuple[Path, dict]]:
    cases = []
    for d in scenario_dirs():
        expected = json.loads((d / "expected.json").read_text())
        for name, exp in sorted(expected.items()):
            cases.append((d / name, exp))
    return cases


# A workload file's first half, as tests write one: TensorFlow and a one-layer regression
# model; each test adds its own make_dataset (what the test is about).
TINY_BUILD_MODEL = '''import tensorflow as tf


def build_model():
    inputs = tf.keras.Input((4,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
    model.compile("sgd", "mse")
    return model

'''


FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "ray")


def without_modules(statements: str, modules: tuple[str, ...], timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `statements` in a fresh interpreter: exit 1, naming them on stderr, if any of
    `modules` (or a module inside one) got imported; stdout is theirs."""
    code = ("import sys\n" + statements + "\n"
            f"bad = [m for m in sys.modules if m in {modules!r} or m.startswith(tuple(x + '.' for x in {modules!r}))]\n"
            "sys.stderr.write(repr(bad)); sys.exit(1 if bad else 0)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


def without_frameworks(statements: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`statements` (with `main` from rung.cli at hand) import neither TensorFlow, Keras nor
    Ray (`without_modules`)."""
    return without_modules("from rung.cli import main\n" + statements, FRAMEWORKS, timeout)


def interruptible() -> None:
    """preexec_fn for a child a test sends Ctrl-C (SIGINT) to, as a terminal would. A shell
    without job control starts background jobs with SIGINT ignored (POSIX), children
    inherit that, and Python then installs no KeyboardInterrupt handler: a suite run as
    `... &` saw `rung bench` ignore the test's Ctrl-C and leave its workers running."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def proc_pids() -> list[int]:
    """The ids of the processes now on this machine (its /proc)."""
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def proc_read(pid: int, name: str) -> bytes | None:
    """/proc/PID/name's bytes, or None for a process that ended meanwhile."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def processes_mentioning(text: str) -> list[int]:
    """Process ids whose command line contains `text` (a path of a test's own, never a
    program's name: nothing is ended by name)."""
    return [pid for pid in proc_pids() if text.encode() in (proc_read(pid, "cmdline") or b"")]


TAG = "RUNG_TEST_TAG"


def tagged_processes(tag: str) -> list[int]:
    """Process ids started with `RUNG_TEST_TAG=tag` in their environment, as every process a
    test starts inherits it (forked ones too: /proc shows the environment a process began
    with). A test that checks these checks its own processes alone, beside other tests'."""
    needle = f"{TAG}={tag}".encode()
    pids = []
    for pid in proc_pids():
        environ, stat = proc_read(pid, "environ"), proc_read(pid, "stat")
        if environ is None or stat is None or needle not in environ.split(b"\0"):
            continue
        if stat.rsplit(b")", 1)[1].split()[:1] == [b"Z"]:
            continue  # exited, not yet reaped
        pids.append(pid)
    return pids


@pytest.fixture
def own_tag(monkeypatch) -> str:
    """A tag in this test's environment that every process it starts inherits
    (`tagged_processes`); this test's own process, which has it only in os.environ, is not
    among them."""
    import uuid

    tag = uuid.uuid4().hex
    monkeypatch.setenv(TAG, tag)
    return tag


@pytest.fixture(autouse=True)
def grouped_as_marked(request):
    """A test marked with an xdist_group runs in its group's process when make test's first
    pass groups (--dist loadgroup: pytest-xdist then ends its id with "@" and the group's
    name). On pytest 9.2, pytest-xdist 3.8 leaves the id as it was and groups nothing,
    silently (pytest-dev/pytest-xdist#1386): the suite's Ray tests ran at once in both
    processes and took each other's Ray daemons for their own leftovers. Said here, on
    every grouped test, instead of in a failure that looks like rung's."""
    groups = [m.args[0] if m.args else m.kwargs.get("name", "default")
              for m in request.node.iter_markers("xdist_group")]
    if groups and getattr(request.config.option, "loadgroup", False) and "@" not in request.node.nodeid:
        pytest.fail(f"--dist loadgroup did not put this test in its group {groups[0]!r} (pytest "
                    f"{pytest.__version__} with pytest-xdist: pytest-dev/pytest-xdist#1386); install the versions "
                    "requirements-ci.txt pins", pytrace=False)
