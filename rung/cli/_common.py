"""Helpers the subcommands share: a progress display, and writing a file whole or not at all."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from rung.errors import InputError


class Progress:
    """A progress display on stderr for long work: only when both stdout and stderr are a
    terminal, and never with `quiet` (--json: the output is data)."""

    def __init__(self, quiet: bool = False) -> None:
        self.enabled = not quiet and sys.stderr.isatty() and sys.stdout.isatty()
        self._p = self._task = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn

            self._p = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                   TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self._p.__enter__()
            self._task = self._p.add_task("starting", total=None)
        return self

    def __exit__(self, *exc) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)

    def phase(self, message: str) -> None:
        if self._p is not None:
            self._p.update(self._task, description=message, completed=0, total=None)

    def step(self, done: int, total: int) -> None:
        if self._p is not None:
            self._p.update(self._task, completed=done, total=total)


@contextlib.contextmanager
def output_to_stderr():
    """Everything written to standard output inside, by Python (`print`, Keras's
    `model.summary()` and progress bars) or by native code (file descriptor 1), goes to
    standard error: the user's code runs inside, and rung's own output on stdout (`--json`
    for a pipe) must be rung's alone."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    before = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = before
        os.dup2(saved, 1)
        os.close(saved)


def check_writable(path: str, flag: str) -> None:
    """Refuse, before any work, a destination that cannot take the file."""
    dest = Path(path)
    if dest.is_dir():
        raise InputError(path, None, f"is a directory; expected a file path for {flag}")
    if not dest.parent.exists():
        raise InputError(path, None, f"its folder {dest.parent} does not exist (the file for {flag})")


def write_atomically(path: str, text: str, flag: str) -> None:
    """Write the whole file or nothing: a temporary file beside it, then a rename."""
    check_writable(path, flag)
    dest = Path(path)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)  # as open() would make it, not mkstemp's owner-only 0600
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
