"""rung: decide how to distribute TensorFlow training, from measurements.

    >>> import rung
    >>> decision = rung.advise(rung.load_scenario("scenario.yaml"))
    >>> decision.verdict, decision.to_json()["predicted"]

The names below load when first asked for (`rung._lazy`): a process that imports one
module of rung (train.py's checks, a bench task) does not load the ladder with it.
"""

from rung import _lazy

__version__ = "0.1.0"
__all__ = ["Decision", "InputError", "Scenario", "advise", "load_scenario", "__version__"]
__getattr__ = _lazy.names(__name__, {"InputError": "rung.errors", "Decision": "rung.ladder", "advise": "rung.ladder",
                                     "Scenario": "rung.spec", "load_scenario": "rung.spec"})
