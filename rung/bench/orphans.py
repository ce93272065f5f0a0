"""A process the bench starts ends when the process that started it is gone.

The bench's tasks and servers run in sessions of their own (so a straggler's SIGSTOP or a
kill reaches one task's whole group), which also puts them out of reach of a signal to
the bench's own group. The bench ends them itself (`rung.bench.run.Processes`, psbench's
`finally`), but a bench that dies without running its `finally` (SIGKILL, an abort inside
TensorFlow, `os._exit`) left them serving for ever: three psbench servers ran orphaned for
49 minutes here. Each child therefore watches its parent and exits once it has been
reparented (Linux gives an orphan to init or to a subreaper; `ip netns exec` execs its
command, so a test host's task is still the bench's child).
"""

from __future__ import annotations

import os
import threading
import time

POLL_SECONDS = 0.5


def exit_with_parent(poll_seconds: float = POLL_SECONDS) -> None:
    """Exit this process (at once, status 1) when its parent is no longer the one it had
    when this was called. Returns after starting the watch, a daemon thread."""
    parent = os.getppid()
    if parent == 1:  # already an orphan of init: whoever started us is gone
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll_seconds)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="rung-exit-with-parent", daemon=True).start()


# prctl(2): PR_SET_PDEATHSIG, the signal the kernel sends a process when its parent dies
_PR_SET_PDEATHSIG = 1


def killed_with_parent(sig: int | None = None):
    """A `preexec_fn` for a child that runs code of someone else's (the user's train.py,
    which cannot be asked to watch its parent): the kernel sends it `sig` (SIGKILL unless
    given; SIGTERM for a child that must clean up, as launch_ray.py shuts its Ray instance
    down) when the process that started it dies, by any death, SIGKILL included (Linux's
    PR_SET_PDEATHSIG, which survives exec). None where prctl is not there (not Linux): the
    caller's own `finally` is then all there is.

    Linux ties the signal to the *thread* that forked: start such children from a thread
    that lives as long as they should (the launcher's main thread)."""
    import signal

    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    signum = int(signal.SIGKILL if sig is None else sig)

    def preexec() -> None:
        _ask(prctl, signum, parent)

    return preexec


def die_with_parent(named: str | None = None) -> None:
    """This process is sent SIGKILL by the kernel when its parent dies: for code running in
    a process someone else started, a Ray worker, whose parent is its node's raylet. Ray's
    own way out (the worker sees the raylet gone and exits) is code the worker must run,
    which one busy in TensorFlow did not always get to (a RayTrainWorker of launch_ray.py's
    ran on 17 minutes after its raylet had ended). With `named`, only when the parent's
    name (/proc's comm) is that: a parent of another kind may end before this process
    should. Nothing where prctl is not there."""
    import signal

    parent = os.getppid()
    if parent == 1 and named is None:  # already an orphan of init: whoever started us is gone
        os._exit(1)
    if named is not None:
        try:
            with open(f"/proc/{parent}/comm") as f:
                if f.read().strip() != named:
                    return
        except OSError:
            return
    prctl = _prctl()
    if prctl is not None:
        _ask(prctl, int(signal.SIGKILL), parent)


def _prctl():
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # looked up before a fork, not in the child
    except (OSError, AttributeError):
        return None


def _ask(prctl, signum: int, parent: int) -> None:
    prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was asked for: none will come
        os._exit(1)
