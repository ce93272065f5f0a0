"""The same multi-worker training written by hand, the TensorFlow guide's way
("Multi-worker training with Keras"): tf-keras, MultiWorkerMirroredStrategy from
TF_CONFIG, the model built under the scope, a per-worker dataset from
distribute_datasets_from_function, model.fit (with --backup, BackupAndRestore as in the
guide's fault-tolerance section). For bench_launch.py to compare with the
train.py that rung generates. Prints one JSON line per epoch, as train.py does.

    TF_CONFIG=... python hand_written_mwms.py WORKLOAD.py --steps 30 --epochs 2 --batch 32
"""

import argparse
import importlib.util
import json
import os
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tensorflow as tf  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("workload")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--backup", metavar="DIR", help="with the guide's fault tolerance: BackupAndRestore(DIR)")
p.add_argument("--timeout", type=float, default=0,
               help="collective timeout in seconds (CommunicationOptions), as rung's train.py sets it; 0: none")
args = p.parse_args()

spec = importlib.util.spec_from_file_location("workload", args.workload)
workload = importlib.util.module_from_spec(spec)
spec.loader.exec_module(workload)

options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=args.timeout) if args.timeout else None
strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
with strategy.scope():
    model = workload.build_model()
dataset = strategy.distribute_datasets_from_function(lambda ctx: workload.make_dataset(args.batch, ctx))


class Timer(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.t = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.t
        print(json.dumps({"epoch": epoch + 1, "examples_per_second":
                          args.steps * args.batch * strategy.num_replicas_in_sync / seconds}), flush=True)


callbacks = [Timer()]
if args.backup:  # the guide's "Fault tolerance" section
    callbacks.append(tf.keras.callbacks.BackupAndRestore(backup_dir=args.backup))
model.fit(dataset, epochs=args.epochs, steps_per_epoch=args.steps, callbacks=callbacks, verbose=0)
