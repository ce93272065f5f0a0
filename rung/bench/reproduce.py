"""A bench run reproduced by the fleet simulation from its own inputs: the one-device
step and its measured spread (a lognormal with the measured coefficient of variation),
the counted gradient bytes, the measured link, the test bed's shared cores, an injected
straggler, and a calibration when one was fitted. The simulation draws every worker's
compute each step and waits for the slowest; the rest of the step is the model's
(`throughput.sync_terms` with the bench's `Testbed`). Synchronous runs only (mirrored,
multi-worker): a parameter-server run's workers on a test bed share the cores (their
compute as co-located replicas take it, the rest of their steps in turn), which the
asynchronous simulation does not model. Pure: no TensorFlow."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from rung.bench import predict
from rung.errors import InputError
from rung.model import preemption
from rung.model.simulate import simulate_sync
from rung.spec.benchresult import BenchResult
from rung.spec.calibration import Calibration

SCHEMA = "rung/bench-simulation/v1"
STEPS = 20_000   # simulated steps per run: the simulation's expectation, not one more noisy sample


def basis_of(b: BenchResult, where: str, calibration: Optional[Calibration] = None,
             keras: Optional[str] = None) -> tuple[predict.Basis, float]:
    """The bench's basis (for a run on `keras`: the one-device step on that Keras when the
    bench measured it) and the all-reduce's share of goodput (1.0 uncalibrated)."""
    found = b.basis_for(keras)
    if not found:
        raise InputError(where, "basis", "the bench file has no basis (no single_device run, or written by an "
                                         "older rung): run rung bench again")
    c = calibration or b.fitted_calibration
    cpu = c.testbed_cpu_seconds_per_byte if c else 0.0
    sync = c.testbed_sync_seconds if c else 0.0
    share = c.allreduce_share_of_goodput if c else 1.0
    basis = predict.Basis(found.one_device_step_seconds, found.dense_gradient_bytes, found.sparse_gradient_bytes,
                          found.step_time_cv, found.link_bytes_per_second, found.link_rtt_seconds,
                          cpu_seconds_per_byte=cpu, sync_seconds=sync, cores=found.cores or b.cores or 1,
                          variables=found.variables, optimizer=found.optimizer or "sgd", ps_costs=b.ps_costs,
                          non_trainable_params=found.non_trainable_params,
                          sync_batch_norm_layers=found.sync_batch_norm_layers, logged_values=found.logged_values,
                          metric_variables=found.metric_variables,
                          sparse_gradient_tensors=found.sparse_gradient_tensors,
                          strategy_step_extra_seconds=found.strategy_step_extra_seconds,
                          steps_per_execution=found.steps_per_execution, step_cpu_cores=found.step_cpu_cores)
    return basis, share


def reproduce(b: BenchResult, where: str = "<bench>", calibration: Optional[Calibration] = None, seed: int = 0,
              steps: int = STEPS) -> dict:
    """Each synchronous multi-replica run of `b`: measured, the closed form, simulated."""
    basis_of_bench, share = basis_of(b, where, calibration)
    calibrated = bool(calibration or b.fitted_calibration)
    out = []
    for r in b.runs:
        if r.strategy not in ("mirrored", "multi_worker_mirrored") or r.replicas < 2 or not r.examples_per_second:
            continue
        if r.kill and r.kill.happened and r.whole is None:
            continue  # killed, but not timed whole (an older bench file): nothing to compare
        straggle = r.straggler.factor if r.straggler else 1.0
        shares = r.shares_cores is not False
        basis_run = basis_of(b, where, calibration, r.keras)[0]
        # the calibration's fixed cost when there is one, else what the run measured
        basis = replace(basis_run, small_allreduce_seconds=r.small_allreduce_seconds,
                        logged_value_seconds=r.logged_value_seconds) if calibrated else \
            predict.with_fixed_cost(basis_run, r.testbed_sync_seconds, shares, r.small_allreduce_seconds,
                                    r.logged_value_seconds)
        s = predict.scenario_for(basis, r.strategy, r.replicas)
        links, bed = predict.run_links(basis, r.strategy, r.replicas, straggle, share, r.option, shares)
        hosts = 1 if r.strategy == "mirrored" else r.replicas
        sim = simulate_sync(s, hosts, steps, seed, "lognormal", basis.step_time_cv, links, bed)
        closed = predict.predict_step_seconds(basis, r.strategy, r.replicas, straggle, share, r.option,
                                              shares_cores=shares)["step"]
        per_step = r.replicas * b.per_replica_batch
        row = {"run": r.name, "strategy": r.strategy, "replicas": r.replicas, "straggler_factor": straggle,
               "measured_examples_per_second": r.examples_per_second,
               "closed_form_examples_per_second": per_step / closed,
               "simulated_examples_per_second": per_step / sim["step_seconds_mean"],
               "simulated_straggler_seconds": sim["straggler_seconds_mean"]}
        if r.whole is not None:
            killed = _killed(b, r, r.whole, sim["step_seconds_mean"], closed)
            if killed is None:
                continue
            row.update(killed, run=r.whole_name)
        row["simulated_over_measured"] = row["simulated_examples_per_second"] / row["measured_examples_per_second"]
        out.append(row)
    return {"schema": SCHEMA, "workload": b.workload, "steps_simulated": steps, "seed": seed,
            "step_time_cv": basis_of_bench.step_time_cv, "allreduce_share_of_goodput": share, "runs": out}


def _killed(b: BenchResult, r, whole, step: float, closed_step: float) -> Optional[dict]:
    """A killed run, whole: its steps, the steps lost since the last checkpoint
    (`preemption.resumed_from_step`), every checkpoint taken and the restart.
    - Each checkpoint's cost is read off this run's own step times (part of its measured
      step-time distribution: `rung.bench.bench._checkpoint_seconds`; 0 in bench files
      written before it was recorded).
    - Beside the simulation, `from_unkilled_run`: the same accounting on the measured step
      of this configuration's unkilled run, which isolates the kill's cost from the
      modelled step's level.
    - The restart is the bench's own detection (its poll, the wait for the run to stall,
      ending every task: taken from this run) and a fresh start to the first step: the
      mean of the fresh starts of this configuration (strategy, replicas, straggler: a
      slowed worker starts slowly too) the bench saw, i.e. the killed run's first (before
      its timed window) and the unkilled run's when there is one; never the killed run's
      own restart."""
    def factor(x) -> float:
        return x.straggler.factor if x.straggler else 1.0

    starts = [x.startup_seconds for x in b.runs if x.strategy == r.strategy and x.replicas == r.replicas
              and factor(x) == factor(r) and x.startup_seconds]
    if not starts:
        return None
    startup = sum(starts) / len(starts)
    k, every = whole.steps_before_kill, r.kill.save_freq_steps or 1
    per_step = r.replicas * b.per_replica_batch
    ckpt = whole.checkpoint_seconds or 0.0

    def rate(step_seconds: float) -> float:
        # the fresh start's time to its first step holds that step: the restart is the rest
        restart = whole.detection_seconds + startup - step_seconds
        wall = preemption.killed_run_seconds(whole.steps + b.warmup, k, every, step_seconds, restart, ckpt)
        warm = b.warmup * step_seconds + (b.warmup // every) * ckpt
        return whole.steps * per_step / (wall - warm)  # timed from the warm-up's end

    # the kill's accounting alone, on the measured step of this configuration's unkilled run
    # (the bench's own twin): what the kill costs, apart from how well the step is modelled
    twin = next((x for x in b.runs if x.strategy == r.strategy and x.replicas == r.replicas and factor(x) == factor(r)
                 and not (x.kill and x.kill.happened) and x.step_seconds_mean), None)
    unkilled = None
    if twin is not None:
        eps = rate(twin.step_seconds_mean)
        unkilled = {"step_seconds": twin.step_seconds_mean, "examples_per_second": eps,
                    "over_measured": eps / whole.examples_per_second}
    return {"kill": {"steps_before_kill": k, "checkpoint_every_steps": every,
                     "resumed_from_step": r.kill.resumed_from_step,
                     "predicted_resumed_from_step": preemption.resumed_from_step(k, every),
                     "detection_seconds": whole.detection_seconds, "startup_seconds": startup,
                     "fresh_starts_seconds": starts, "checkpoint_seconds": whole.checkpoint_seconds,
                     "measured_restart_first_step_seconds": whole.restart_first_step_seconds,
                     "from_unkilled_run": unkilled},
            "measured_examples_per_second": whole.examples_per_second,
            "closed_form_examples_per_second": rate(closed_step),
            "simulated_examples_per_second": rate(step)}
