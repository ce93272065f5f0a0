"""The readable report of a profile."""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from rung import units as u
from rung.model.inputs import INPUT_BOUND_FRACTION
from rung.model.ps import BASELINE_METRIC_VARIABLES


def pipeline_alone(p: dict, bound: bool) -> str:
    """What the pipeline alone delivers, and (not input-bound) how many devices as fast as
    this one it feeds: one host's pipeline makes every device's batch, so it keeps about
    step / pipeline of them fed (`inputs.host_pipeline_floor`)."""
    pipe = p["pipeline_seconds_per_batch"]
    if not pipe or pipe < 1e-6:
        return "costs no more per batch than that fixed cost"
    text = f"delivers a batch every {u.seconds(pipe)} beyond that cost"
    if not bound:
        text += (f": about {max(1, int(p['step_seconds'] / pipe)):,} devices as fast as this one, on one host with "
                 "this CPU, before they wait on it")
    return text


def _borderline(p: dict) -> str:
    """The input wait's 95% interval on both sides of the input-bound line: the verdict
    above could have gone the other way on this machine's noise."""
    ci = p.get("input_wait_seconds_ci95")
    step = p["step_seconds"]
    if not ci or step <= 0:
        return ""
    lo, hi = ci[0] / step, ci[1] / step
    if not lo < INPUT_BOUND_FRACTION <= hi:
        return ""
    return (f"borderline: the wait's 95% interval, {u.percent(lo)}-{u.percent(hi)} of the step, spans the "
            f"{u.percent(INPUT_BOUND_FRACTION)} line; profile again with more --steps on a quiet machine "
            "(rung advise marks a plan that turns on it CLOSE_CALL)")


def render(p: dict, console: Console | None = None) -> None:
    console = console or Console()
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    bound = p["input_bound"]
    t.add_row("measured on", f"{p['device']} ({p['device_name']}), TensorFlow {p['tensorflow_version']}, "
                             f"tf.keras = {'Keras 3' if p['keras'] == 'keras3' else 'tf-keras'}")
    t.add_row("batch", f"{p['per_device_batch']} examples; {p['steps_timed']} steps timed after "
                       f"{p['warmup_steps']} warm-up")
    lo, hi = p["step_seconds_ci95"]
    t.add_row("step", f"mean {u.seconds(p['step_seconds'])} (95% interval {u.seconds(lo)}-{u.seconds(hi)}), "
                      f"p50 {u.seconds(p['step_seconds_p50'])}, p95 {u.seconds(p['step_seconds_p95'])}, "
                      f"CV {p['step_time_cv']:.2f} (step to step, this device)")
    t.add_row("split", Text(f"input wait {u.seconds(p['input_wait_seconds'])} "
                            f"({u.percent(p['input_wait_fraction'])}) + compute {u.seconds(p['compute_seconds'])}"
                            + ("  → INPUT-BOUND" if bound else "  (not input-bound)"),
                            style="bold red" if bound else "green"))
    borderline = _borderline(p)
    if borderline:
        t.add_row("", Text(borderline, style="yellow"))
    alone = pipeline_alone(p, bound)
    t.add_row("", Text(f"the wait is net of next()'s fixed cost ({u.seconds(p['iterator_overhead_seconds'])} a "
                       f"call; {u.seconds(p['input_wait_seconds_raw'])} before it is taken off); the pipeline "
                       f"alone {alone}", style="dim"))
    t.add_row("throughput", u.rate(p["per_device_batch"] / p["step_seconds"]))
    t.add_row("parameters", f"{int(p['params']):,} trainable ({p['param_dtype']}, policy {p['mixed_precision_policy']})"
              + (f", {int(p['embedding_params']):,} in embedding tables" if p["embedding_params"] else "")
              + (f"; {int(p['non_trainable_params']):,} not trained (weights the optimizer does not "
                 "update, such as frozen layers, BatchNorm statistics or a distiller's teacher: held by every "
                 "replica, read from the PS every step)" if p.get("non_trainable_params") else ""))
    update = p.get("optimizer_update_seconds")
    t.add_row("optimizer", f"{p['optimizer_class']} → {p['optimizer']}; slots {u.gib(p['optimizer_slot_bytes'])}"
              + (f"; its update alone {u.seconds(update)} a step ({u.percent(update / p['step_seconds'])} of the "
                 "step; FLOPs leave it out: an estimate for another device adds it by memory bandwidth)"
                 if update else ""))
    tensors = p.get("sparse_gradient_tensors")
    t.add_row("gradients/step", f"dense {u.gib(p['gradient_bytes_dense'])}, sparse (IndexedSlices) "
                                f"{u.gib(p['gradient_bytes_sparse'])}"
              + (f" in {tensors} tensor(s): three collectives each, in sequence, under multi-worker" if tensors else ""))
    act = p["activation_bytes_per_example"]
    t.add_row("activations", ("n/a" if act is None else f"{u.gib(act)} per example")
              + (f" + {u.gib(p['activation_bytes_fixed'])} per step" if p.get("activation_bytes_fixed") else "")
              + (" (estimate)" if p["activation_bytes_estimated"] else " (measured)"))
    flops = p.get("flops_per_example")
    t.add_row("compute", (f"{u.flop(flops)} per example to train" if flops else "FLOPs not counted")
              + (f", {p['ops_per_step']:,} kernels per step" if p.get("ops_per_step") else ""))
    t.add_row("peak memory", u.gib(p["peak_memory_bytes"]) if p["peak_memory_bytes"] is not None
              else "not measured on this machine")
    if p.get("checkpoint_seconds") is not None:
        t.add_row("checkpoint", f"one save of the model and optimizer {u.seconds(p['checkpoint_seconds'])} "
                                f"({u.gib(p['checkpoint_bytes'])} to this machine's disk; the first "
                                f"{u.seconds(p['checkpoint_seconds_first'])})")
    if p.get("jit_compile"):
        t.add_row("XLA", "the step is compiled with XLA (jit_compile=True); parameter-server workers cannot run it on "
                         "the ps tasks' variables, and run without it (JIT_COMPILE)")
    if p.get("run_eagerly"):
        eager = p.get("eager_step_seconds")
        why = "tf.config.run_functions_eagerly(True)" if p.get("functions_run_eagerly") else "compile(run_eagerly=True)"
        t.add_row("run eagerly", f"{why}: fit runs each step op by op"
                  + (f", {u.seconds(eager)} a step ({eager / p['step_seconds']:.1f}x the graph step above)"
                     if eager else "")
                  + "; rung plans with the graph step (RUN_EAGERLY)")
    t.add_row("dynamic shapes", "; ".join(p["dynamic_shape_details"]) if p["dynamic_shapes"] else "none")
    raw = p.get("batch_time_cv_raw")
    if raw:
        t.add_row("batch to batch", f"CV {p.get('batch_time_cv', 0.0):.2f} net of noise (batches of different shapes "
                                    f"{raw[0]:.2f}, one batch again {raw[1]:.2f}): a synchronous step waits for its "
                                    "slowest replica's batch (LOAD_IMBALANCE)")
    if p.get("string_inputs"):
        t.add_row("string inputs", f"{', '.join(p.get('string_input_details') or [])}: Keras 3's fit fails on them "
                                   "under MirroredStrategy (tensorflow#80951), a TPU takes none (STRING_INPUTS)")
    if p.get("sync_batch_norm_layers"):
        t.add_row("sync batch norm", f"{p['sync_batch_norm_layers']} BatchNormalization layer(s) with "
                                     "synchronized=True: six small all-reduces a layer every step, in sequence, "
                                     "under a synchronous strategy (SYNC_BATCH_NORM)")
    if (p.get("logged_values") or 0) > 1:
        t.add_row("logged values", f"{p['logged_values']} a step (the loss, each output's loss, each metric): "
                                   "multi-worker fit all-reduces each across the workers, one after another, "
                                   "every step")
    if (p.get("metric_variables") or 0) > BASELINE_METRIC_VARIABLES:
        t.add_row("metric variables", f"{p['metric_variables']} (a total and a count for each loss tracker and metric): "
                                      "under parameter servers they live on the PS, and every step updates and "
                                      "reads each there")
    if (p.get("optimizer_accumulation_steps") or 1) > 1:
        t.add_row("accumulation", f"the optimizer accumulates gradients over {p['optimizer_accumulation_steps']} steps "
                                  "(gradient_accumulation_steps): no replicated strategy runs it "
                                  "(GRADIENT_ACCUMULATION)")
    if p.get("gradient_clipping"):
        t.add_row("clipping", f"the optimizer clips its gradients ({p['gradient_clipping']}): Keras 3 under "
                              "MirroredStrategy clips each replica's share before summing them, tf-keras the sum "
                              "(CLIPPING_PER_REPLICA)")
    if p.get("stateful_rnn_layers"):
        t.add_row("stateful RNN", f"{p['stateful_rnn_layers']} recurrent layer(s) with stateful=True: tf-keras builds "
                                  "them under no tf.distribute strategy, so multi-worker and parameter servers "
                                  "cannot run them (STATEFUL_RNN)")
    if p.get("dense_embedding_tables"):
        t.add_row("dense embeddings", f"{'; '.join(p['dense_embedding_tables'])}: their gradients reach the optimizer "
                                      "whole, not as the rows looked up (DENSE_EMBEDDING_GRADIENTS)")
    if p.get("ragged_or_sparse_inputs"):
        t.add_row("ragged/sparse", f"{', '.join(p.get('ragged_or_sparse_input_details') or [])}: Keras 3's fit fails "
                                   "on them under MirroredStrategy; rung runs mirrored on tf-keras "
                                   "(RAGGED_OR_SPARSE_INPUTS)")
    if p.get("keras3_imports"):
        t.add_row("Keras 3 import", f"{'; '.join(p['keras3_imports'])}: multi-worker and parameter-server fit run "
                                    "on tf-keras, which cannot train a model built from `keras` (KERAS3_IMPORT)")
    rc = p.get("replica_check")
    if rc:
        t.add_row("loss under replicas", replica_line(rc))
    if p.get("logged_loss_divided"):
        t.add_row("logged loss", "the train_step logs its replica's share of the loss: 1/N of one device's under N "
                                 "replicas, though training is right (LOGGED_LOSS_DIVIDED)")
    if p.get("step_clipping"):
        t.add_row("clipping in step", f"{p['step_clipping']}: the step runs once per replica, so each replica's "
                                      "gradients are clipped before they are summed"
                                      + (", which alone gives N times once clipping bites (the check above may "
                                         "be that)" if (rc or {}).get("verdict") == "not_scaled" else "")
                                      + " (CLIPPING_PER_REPLICA)")
    if p.get("assigning_metrics"):
        t.add_row("metrics under replicas", f"{p['assigning_metrics']}: a state set with assign is read as the sum "
                                            "of the replicas' copies: under N replicas, the sum of N replicas' "
                                            "values (METRIC_SUMMED)")
    if p.get("worker_input") or p.get("worker_input_detail"):
        t.add_row("across workers", worker_input_line(p.get("worker_input"), p.get("worker_input_detail")))
    if p.get("ps_worker_input"):
        t.add_row("across PS workers", PS_WORKER_INPUT[p["ps_worker_input"]])
    items = [t]
    if p.get("loss_scaled_for_replicas") is False:
        what = (f"the compiled loss {p['compiled_loss_not_scaled']} is not divided across replicas on Keras 3"
                if p.get("compiled_loss_not_scaled") else
                f"the compiled loss {p['compiled_loss_sums']} sums over the batch, on either Keras"
                if p.get("compiled_loss_sums") else
                "the train_step's (or compute_loss's) loss is not divided across replicas as Keras' own is")
        items.append(Text.assemble(("  • ", "yellow"), ("LOSS_NOT_SCALED", "bold yellow"),
                                   f": {what} (see the note below)"))
    if p.get("strategy_failure"):
        where = ("under every tf.distribute strategy, OneDeviceStrategy included" if p.get("strategy_fails_on_one_device")
                 else "under a MirroredStrategy of two replicas")
        items.append(Text.assemble(("  • ", "yellow"), ("STRATEGY_FAILS", "bold yellow"),
                                   f": fit fails {where} on {'tf-keras' if p.get('keras') == 'tf_keras' else 'Keras 3'}: "
                                   f"{p['strategy_failure']}"))
    findings = p["pipeline"]["findings"]
    if findings:
        items.append(Text("Input pipeline", style="bold"))
        items.extend(Text.assemble(("  • ", "yellow"), (f["code"], "bold yellow"), f": {f['message']}")
                     for f in findings)
    elif p["pipeline"].get("error"):
        items.append(Text(p["pipeline"]["error"], style="dim"))
    fx = p.get("fixes")
    if fx:
        lo, hi = fx["speedup_ci95"]
        verdict = (f"{fx['speedup']:.2f}x {'faster' if fx['speedup'] >= 1 else 'slower'}" if fx["significant"]
                   else "no change beyond the noise")
        items.append(Text(f"With rung's fixes ({', '.join(fx['applied'])}): step {u.seconds(fx['step_seconds'])}, "
                          f"input wait {u.percent(fx['input_wait_fraction'])} → {verdict} (measured over "
                          f"{fx['rounds']} alternating rounds; speed-up {lo:.2f}-{hi:.2f} at 95%)", style="cyan"))
    elif bound:
        items.append(Text("Run with --try-fixes to measure what rung's pipeline fixes buy.", style="cyan"))
    items.extend(Text(f"note: {n}", style="dim") for n in p["notes"])
    console.print(Panel(Group(*items), title=f"rung profile · {p['workload']}", title_align="left",
                        border_style="red" if bound else "green"))


WORKER_INPUT = {
    "distinct": "multi-worker: worker 0's and worker 1's make_dataset(batch, InputContext) differ (sharded, or "
                "drawn at random)",
    "own_order": "multi-worker: make_dataset does not use the InputContext: every worker reads all the data, each "
                 "in its own random order",
    "identical": "multi-worker: every worker reads the same batches in the same order (INPUT_NOT_SHARDED)",
    "augmented": "multi-worker: every worker reads the same examples in the same order, each augmenting them at "
                 "random (INPUT_NOT_SHARDED)",
    "empty": "multi-worker: worker 1 of 2 gets no batch (EMPTY_SHARD)",
}


PS_WORKER_INPUT = {
    "own_order": "every worker runs a copy of the coordinator's pipeline, each in its own random order",
    "identical": "every worker runs a copy of the coordinator's pipeline: the same batches in the same order "
                 "(INPUT_NOT_SHARDED)",
    "augmented": "every worker runs a copy of the coordinator's pipeline: the same examples in the same order, "
                 "each augmenting them at random (INPUT_NOT_SHARDED)",
}


def worker_input_line(state, detail) -> str:
    """What each worker's pipeline yields, in words (rung.measure.pipeline.worker_input)."""
    return WORKER_INPUT.get(state) or f"not checked: {detail}"


def replica_line(rc: dict) -> str:
    if rc.get("keras_train_step"):
        return "scaled: Keras' own train_step (not run under replicas)"
    if not rc.get("checked"):
        return "not checked (see the notes)"
    own = rc.get("compiled_losses")
    if own and rc["verdict"] == "not_scaled" and rc.get("keras") == "keras3":
        return (f"NOT scaled: the compiled loss {', '.join(own)} returns one number, which Keras 3 leaves undivided: "
                f"N times the update under N replicas (summed gradients of {rc['replicas']} replicas "
                f"{rc['gradient_ratio']:.2f}x one device's)")
    summed = rc.get("summed_losses")
    if summed and rc["verdict"] == "not_scaled":
        return (f"NOT scaled: the compiled loss {', '.join(summed)} sums over the batch: N times the update under "
                f"N replicas (summed gradients of {rc['replicas']} replicas {rc['gradient_ratio']:.2f}x one device's)")
    what = {"scaled": "scaled for replicas as Keras' own loss is",
            "not_scaled": "NOT scaled: " + {"sum": "a sum over the batch, ", "mean": "a per-replica mean, "}.get(
                rc.get("loss_over_batch"), "not divided by the global batch: ") + "N times the update under N replicas",
            "over_scaled": "divided across replicas twice: 1/N of the update",
            "unclear": "unclear (random layers or per-replica statistics)"}[rc["verdict"]]
    return f"{what} (summed gradients of {rc['replicas']} replicas {rc['gradient_ratio']:.2f}x one device's)"
