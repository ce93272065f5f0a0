"""rung: decide how to distribute TensorFlow training, from measurements.

    >>> import rung
    >>> decision = rung.advise(rung.load_scenario("scenario.yaml"))
    >>> decision.verdict, decision.to_json()["predicted"]
"""

from rung.errors import InputError
from rung.ladder import Decision, advise
from rung.spec import Scenario, load_scenario

__version__ = "0.1.0"
__all__ = ["Decision", "InputError", "Scenario", "advise", "load_scenario", "__version__"]
