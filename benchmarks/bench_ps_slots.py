"""Does an optimizer slot cost a parameter-server step a remote round trip of its own?

A local cluster of one PS task and one worker (real `tf.distribute.Server`s, as
`rung.bench.psbench` starts them) and a coordinator here fit the same model of many small
variables (a stack of Dense(8) layers) under three optimizers: SGD (no slot), SGD with
momentum (one slot per variable) and Adam (two). Each round times a short and a long fit
of each optimizer, interleaved; the per-step cost is the slope between the fastest short
and the fastest long fit (free of the fit's fixed cost, and of the rounds a neighbour on
this shared machine slowed, as `rung.bench.psbench` takes its figures). If each slot were
read and updated remotely like its variable, momentum would add variables x 0.15 ms a
step over SGD, and Adam twice that.

    python benchmarks/bench_ps_slots.py [--layers 64] [--rounds 5]

Writes benchmarks/out/ps-slots.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _ps_cluster import ps_strategy  # noqa: E402

OPTIMIZERS = {"sgd": 0, "momentum": 1, "adam": 2}  # slots per variable


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=64, help="Dense layers (two variables each)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--short", type=int, default=10)
    ap.add_argument("--long", type=int, default=120)
    a = ap.parse_args()

    from rung.model.comm import DEFAULT_LINKS

    with ps_strategy(1) as (tf, strategy):

        def make(optimizer):
            with strategy.scope():
                inp = tf.keras.Input((8,))
                h = inp
                for _ in range(a.layers):
                    h = tf.keras.layers.Dense(8)(h)
                model = tf.keras.Model(inp, h)
                model.compile(optimizer, "mse")
            return model

        models = {"sgd": make(tf.keras.optimizers.SGD(0.01)),
                  "momentum": make(tf.keras.optimizers.SGD(0.01, momentum=0.9)),
                  "adam": make(tf.keras.optimizers.Adam(1e-3))}
        data = tf.keras.utils.experimental.DatasetCreator(
            lambda ctx: tf.data.Dataset.from_tensors((tf.zeros([8, 8]), tf.zeros([8, 8]))).repeat())

        def fit(model, steps):
            t = time.perf_counter()
            model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
            return time.perf_counter() - t

        for model in models.values():  # trace and warm every model first
            fit(model, a.short)
        shorts = {name: [] for name in models}
        longs = {name: [] for name in models}
        for r in range(a.rounds):
            for name, model in models.items():
                shorts[name].append(fit(model, a.short))
                longs[name].append(fit(model, a.long))
            print(f"round {r + 1}: " + ", ".join(
                f"{n} {(longs[n][-1] - shorts[n][-1]) / (a.long - a.short) * 1e3:.1f} ms" for n in models), flush=True)

    variables = 2 * a.layers
    step = {n: (min(longs[n]) - min(shorts[n])) / (a.long - a.short) for n in OPTIMIZERS}
    rows = {}
    for name, slots in OPTIMIZERS.items():
        if_remote = variables * slots * DEFAULT_LINKS.ps_variable_seconds  # what slots as remote variables add
        rows[name] = {"slots": slots, "step_seconds": step[name], "over_sgd_seconds": step[name] - step["sgd"],
                      "slots_as_remote_variables_would_add_seconds": if_remote,
                      "short_fit_seconds": shorts[name], "long_fit_seconds": longs[name]}
        print(f"{name:9s} {step[name] * 1e3:5.1f} ms a step, {(step[name] - step['sgd']) * 1e3:+5.1f} ms over SGD "
              f"(slots read and updated remotely would add {if_remote * 1e3:.1f} ms)")
    out = REPO / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "ps-slots.json").write_text(json.dumps({"variables": variables, "rounds": a.rounds, "short": a.short,
                                                   "long": a.long, "optimizers": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
