"""Errors that reach the user as one line and exit code 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad input: what was received, what was expected, and where.

    `where` is the file (or flag) and `field` the dotted path inside it; the CLI
    prints `rung: error: <where>: <field>: <message>` and exits 2.
    """

    def __init__(self, where: str, field: str | None, message: str) -> None:
        self.where = where
        self.field = field
        self.message = message
        super().__init__(self.line())

    def line(self) -> str:
        parts = [self.where]
        if self.field:
            parts.append(self.field)
        parts.append(self.message)
        return ": ".join(parts)


class RunError(Exception):
    """A real run failed (a task crashed, a deadline passed): exit 1 with one line that says
    which run and why; not bad input, and not a bug in rung."""
