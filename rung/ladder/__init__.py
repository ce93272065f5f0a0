"""The ladder: from a scenario to a Decision (verdict, reasons, rejected rungs, review).

The names below load when first asked for (`rung._lazy`), so that importing
`rung.ladder.codes` alone does not build the model and the walk."""

from rung import _lazy

__all__ = ["Decision", "Finding", "Rejection", "advise"]
__getattr__ = _lazy.names(__name__, {"Decision": "rung.ladder.decision", "Finding": "rung.ladder.decision",
                                     "Rejection": "rung.ladder.decision", "advise": "rung.ladder.walk"})
