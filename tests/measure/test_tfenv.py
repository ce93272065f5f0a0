"""TensorFlow as rung's measuring commands import it (rung.measure.tfenv)."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.tf

# A C++ ERROR line TensorFlow writes every time: PrintV2 to its native log
LOGS_AN_ERROR = """
from rung.measure.tfenv import import_tensorflow
tf = import_tensorflow()
tf.raw_ops.PrintV2(input=tf.constant("rung-native-error-line"), output_stream="log(error)")
"""


@pytest.mark.parametrize("env,shown", [({}, False), ({"TF_CPP_MIN_LOG_LEVEL": "2"}, True),
                                       ({"RUNG_TF_VERBOSE": "1"}, True)])
def test_tensorflows_native_error_log_stays_off_the_terminal_unless_asked_for(env, shown):
    """keras.io's U-Net profiled with grappler's "E0000 ... remapper failed: ... Mutation::Apply
    error" above its panel: a fallback of TensorFlow's own, harmless, alarming. rung's
    measuring commands now keep the native log below FATAL off the terminal; a level the
    user set is kept, and RUNG_TF_VERBOSE=1 shows it all."""
    clean = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "RUNG_TF_VERBOSE")}
    r = subprocess.run([sys.executable, "-c", LOGS_AN_ERROR], capture_output=True, text=True, timeout=120,
                       env={**clean, **env})
    assert r.returncode == 0, r.stderr[-1500:]
    assert ("logging_ops.cc" in r.stderr and "rung-native-error-line" in r.stderr) == shown, r.stderr[-1500:]
