"""Importing TensorFlow for measurement: choose the Keras behind `tf.keras`, keep
TensorFlow's native start-up chatter off the user's terminal, and describe the device.

Only `rung.measure` and `rung.bench` import this module.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

KERAS_CHOICES = ("keras3", "tf_keras")


@contextlib.contextmanager
def quiet_native_stderr():
    """Send file descriptor 2 to a temporary file (TensorFlow's C++ start-up logs about
    CUDA and oneDNN). What was written is replayed if the block fails, or when
    RUNG_TF_VERBOSE=1."""
    if os.environ.get("RUNG_TF_VERBOSE") == "1":
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if failed:
                tmp.seek(0)
                sys.stderr.write(tmp.read().decode(errors="replace")[-4000:])


def import_tensorflow(keras: str | None = None):
    """Import TensorFlow with the requested Keras behind tf.keras ('keras3' or 'tf_keras';
    None keeps the environment's choice). Must run before anything imports tf.keras."""
    if keras == "tf_keras":
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
    elif keras == "keras3":
        os.environ.pop("TF_USE_LEGACY_KERAS", None)
    # TensorFlow's C++ log below FATAL stays off the terminal: its ERROR lines here are
    # grappler's own fallbacks ("remapper failed: ... Mutation::Apply error" on keras.io's
    # U-Net) and CPU notes ("oneDNN supports DT_INT32 only on platforms with AVX-512"), and
    # what fails reaches Python as an exception, which rung says in one line. A level set by
    # the user is kept; RUNG_TF_VERBOSE=1 shows everything.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0" if os.environ.get("RUNG_TF_VERBOSE") == "1" else "3")
    with quiet_native_stderr():
        import tensorflow as tf

        tf.config.list_physical_devices()
        tf.get_logger().setLevel("ERROR")
    return tf


def keras_flavor(tf) -> str:
    """Which Keras backs tf.keras in this process: 'keras3' or 'tf_keras'."""
    # Keras 3 exposes itself to TensorFlow as `keras._tf_keras.keras` (with a 3.x
    # __version__); tf-keras as `tf_keras.api._v2.keras` (no __version__ there). Where
    # the Model class lives says which one builds the user's model.
    return "tf_keras" if tf.keras.Model.__module__.startswith("tf_keras") else "keras3"


def device_description(tf) -> dict:
    """The device a one-device profile runs on, and whether it reports memory."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        return {"device": "GPU:0", "device_name": details.get("device_name", "GPU"), "reports_memory": True}
    import platform

    return {"device": "CPU:0", "device_name": platform.processor() or platform.machine(), "reports_memory": False}
