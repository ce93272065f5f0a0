"""What Keras 3's `model.fit` cannot run under MirroredStrategy, where tf-keras can: one
rule for advise (the warning), init and launch (train.py on tf-keras) and bench (the
mirrored run on tf-keras). Each was reproduced here with TensorFlow 2.21 and Keras 3 on two
logical CPU devices; tf-keras ran the same models. Pure: no TensorFlow."""

from __future__ import annotations

STRING_INPUTS = "STRING_INPUTS"
STEPS_PER_EXECUTION = "STEPS_PER_EXECUTION"


def keras3_mirrored_failures(string_inputs: bool = False, steps_per_execution: int = 1) -> list[tuple[str, str]]:
    """(code, what fails) for each reason Keras 3's fit fails on this model under
    MirroredStrategy; empty when it runs."""
    out = []
    if string_inputs:
        out.append((STRING_INPUTS, "the model takes string features, and Keras 3's model.fit under "
                                   "MirroredStrategy fails on them (an AddN over the replicas' strings, "
                                   "tensorflow#80951)"))
    if steps_per_execution > 1:
        out.append((STEPS_PER_EXECUTION, f"the model is compiled with steps_per_execution={steps_per_execution}, "
                                         "and Keras 3's model.fit under MirroredStrategy fails with it (\"You "
                                         "must feed a value for placeholder tensor\" inside its step loop, "
                                         "keras-team/keras#19246)"))
    return out
