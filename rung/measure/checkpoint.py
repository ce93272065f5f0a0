"""One checkpoint save of the model and its optimizer state, timed on this machine.

What a preemptible job pays at every checkpoint (`fleet.checkpoint_seconds`, which
goodput and Young's interval use): the save that Keras's BackupAndRestore makes, a
`tf.train.CheckpointManager` keeping one checkpoint of the model and its optimizer.
A save has a fixed cost (serialising every variable, the index, the manager's state
file, deleting the previous one) that the byte count alone misses.

Timed to a temporary folder on this machine's disk (removed after): a job that saves to
a bucket or a network file system pays that storage's rate, which rung cannot see from
here. The first save is timed apart (it traces the save function); the figure is the
median of the saves after it."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

SAVES = 5  # timed saves after the first


def checkpoint_save(tf, model, optimizers: list, saves: int = SAVES) -> dict:
    """The save's seconds (median of `saves` after a first one, timed apart), the first save's
    seconds and the bytes on disk of one checkpoint of the model and `optimizers` (those
    its step uses: a GAN's two)."""
    folder = tempfile.mkdtemp(prefix="rung-checkpoint-")
    try:
        state = {"model": model}
        for i, opt in enumerate(optimizers):
            state["optimizer" if i == 0 else f"optimizer_{i}"] = opt
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(**state), folder, max_to_keep=1)
        t = time.perf_counter()
        manager.save()
        first = time.perf_counter() - t
        times = []
        for _ in range(saves):
            t = time.perf_counter()
            path = manager.save()
            times.append(time.perf_counter() - t)
        written = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                      if f.startswith(os.path.basename(path) + "."))
        return {"checkpoint_seconds": statistics.median(times), "checkpoint_seconds_first": first,
                "checkpoint_bytes": written, "checkpoint_saves_timed": saves}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
