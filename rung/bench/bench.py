"""`rung bench`: every requested strategy run for real on this machine, each beside the
model's prediction for the same configuration."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional

from pydantic import ValidationError

from rung import units as u
from rung.bench import cpuload, predict
from rung.bench.netns import TestNet, check_can_make_hosts
from rung.bench.plan import ONE_HOST_KERAS, RunSpec, keras_for, plan_run, task_environment
from rung.bench.run import PORT_RETRIES, BenchError, execute, port_taken_line, step_stats, workdir
from rung.bench.warm import WarmStarters
from rung.errors import InputError
from rung.failures import hint
from rung.kerasfit import (TF_KERAS_DEFINES, keras3_imports, keras3_mirrored_failures, tf_keras_imports, tf_keras_reason,
                           workload_text)
from rung.model import comm as model_comm
from rung.model.testbed import MAX_CPU_SHARE
from rung.spec.benchresult import PsCosts

SCHEMA = "rung/bench/v1"
CALIBRATION_SCHEMA = "rung/calibration/v1"
SAVE_FREQ_STEPS = 5      # BackupAndRestore interval when a kill is requested
COLLECTIVE_TIMEOUT_SECONDS = 60


def _link(net: Optional[TestNet], nbytes: int) -> dict:
    """Measure the link the runs use: between test hosts 0 and 1, else loopback."""
    from rung.bench.plan import free_ports

    port = free_ports(1)[0]
    serve = [sys.executable, "-m", "rung.bench.linkbench", "serve", str(port)]
    probe_host = "127.0.0.1"
    if net is not None and net.hosts >= 2:
        serve, probe_host = net.wrap(1, serve), net.address(1)
    srv = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        probe = [sys.executable, "-m", "rung.bench.linkbench", "probe", probe_host, str(port), str(nbytes)]
        if net is not None and net.hosts >= 2:
            probe = net.wrap(0, probe)
        out = subprocess.run(probe, capture_output=True, text=True, timeout=120, check=True)
        m = json.loads(out.stdout)
    finally:
        srv.kill()
        srv.wait(timeout=10)
    m["where"] = "test hosts 0 -> 1" if net is not None and net.hosts >= 2 else "loopback"
    return m


PSBENCH_TIMEOUT_SECONDS = 300


def _psbench_here(workers: int) -> tuple[str, None]:
    """`python -m rung.bench.psbench WORKERS` on this machine: its output (and no Ray node)."""
    # it ends with os._exit (and its servers are killed): TensorFlow's autograph files go
    # to a folder of its own, removed here
    with tempfile.TemporaryDirectory(prefix="rung-psbench-") as scratch:
        out = subprocess.run([sys.executable, "-m", "rung.bench.psbench", str(workers)], capture_output=True,
                             text=True, timeout=PSBENCH_TIMEOUT_SECONDS, check=True,
                             env=dict(os.environ, TMPDIR=scratch))
    return out.stdout, None


def _ps_costs(link: dict, workers: int, reuse: Optional[dict[str, PsCosts]] = None,
              failures: Optional[list[str]] = None,
              measure: Callable[[int], tuple[str, Optional[str]]] = _psbench_here) -> Optional[PsCosts]:
    """Parameter-server dispatch and remote-variable costs with `workers` workers
    (rung.bench.psbench, over loopback: on this machine, or by `measure` on the Ray node a
    run's coordinator is placed on), or the ones `reuse` holds for that count (`--ps-costs`:
    measured by an earlier bench). Across test hosts, or Ray nodes, each variable's read and
    update also pay the link's extra round trip over loopback's. None when psbench failed;
    why is appended to `failures`."""
    m = (reuse or {}).get(str(workers))
    if m is None:
        why = None
        try:
            text, node = measure(workers)
            m = PsCosts.model_validate_json(text.strip().splitlines()[-1])
            if node is not None:
                m = m.model_copy(update={"ray_node": node})
        except subprocess.CalledProcessError as e:
            last = [ln.strip() for ln in (e.stderr or "").splitlines() if ln.strip()]
            why = f"exit code {e.returncode}" + (f": {last[-1][:300]}" if last else "")
        except subprocess.TimeoutExpired:
            why = f"no result within {PSBENCH_TIMEOUT_SECONDS} s"
        except (ValidationError, IndexError):
            why = "its output was not one line of costs"
        if why is not None:
            if failures is not None:
                failures.append(f"rung.bench.psbench {workers} failed ({why})")
            return None
    loopback = m.variable_seconds if m.variable_seconds_loopback is None else m.variable_seconds_loopback
    on_link = loopback
    if link.get("where", "").startswith(("test hosts", "Ray nodes")):
        on_link += 2 * max(0.0, link["rtt_seconds"] - (m.loopback_rtt_seconds or 0.0))
    return m.model_copy(update={"variable_seconds_loopback": loopback, "variable_seconds": on_link})


def _gradient_bytes(strategy: str, n: int, dense: float, sparse: float) -> float:
    """Bytes each replica sends per step: ring all-reduce 2(N-1)/N of the dense gradients
    plus its rows to every other replica (all-gather); PS: push of gradients and rows."""
    if strategy == "single_device" or n <= 1 and strategy != "parameter_server":
        return 0.0
    if strategy == "parameter_server":
        return dense + sparse
    return 2 * (n - 1) / n * dense + (n - 1) * sparse


def _surface_input_error(err: BenchError, chose_tf_keras: bool = False, asked: Optional[str] = None) -> None:
    """The workload's own error (bad input: exit 2, one line). `chose_tf_keras`: rung ran
    the file on tf-keras for every run (multi-worker and parameter servers run only there),
    and a model that does not build there may be one written for Keras 3 alone: said. So
    when `asked` (--keras) chose tf-keras."""
    found = _RUNGS_INPUT_ERROR.search(str(err))  # rung's own, not TensorFlow's ClosureInputError
    if found:
        rest = str(err)[found.end():]
        message = rest.split(": ", 1)[-1]
        if chose_tf_keras and "build_model() raised" in message:
            message += ("; every run of this bench is on tf-keras (multi-worker and parameter-server fit run only "
                        "there, and so does their one-device basis), so the model must build on tf-keras too "
                        f"({TF_KERAS_DEFINES})")
        elif asked == "tf_keras" and "build_model() raised" in message:
            message += f"; --keras tf_keras ran it on tf-keras, where the model must build as {TF_KERAS_DEFINES}"
        raise InputError(rest.split(":")[0], None, message) from None


_RUNGS_INPUT_ERROR = re.compile(r"(?<![A-Za-z_.])InputError: ")


def bench(workload: str, batch: int, runs: list[RunSpec], steps: int = 20, warmup: int = 3,
          hosts: Optional[int] = None, link_mbit: Optional[float] = None,
          straggler: Optional[tuple[int, float]] = None, kill: Optional[tuple[int, int]] = None,
          deadline_seconds: float = 300.0, calibrate: bool = False, calibration_points=None, ps_tasks: int = 1,
          on_run: Optional[Callable[[str], None]] = None,
          on_progress: Optional[Callable[[int, int], None]] = None,
          engine: str = "local", address: Optional[str] = None,
          reuse_ps_costs: Optional[dict[str, PsCosts]] = None, keras: Optional[str] = None) -> dict:
    """Run `runs` of `workload` here and set the model's prediction beside each. `keras`:
    the Keras of the one-host runs (single_device, mirrored), as `rung init --keras` runs
    train.py; None for rung's own choice (Keras 3 unless the model needs tf-keras)."""
    if not Path(workload).is_file():
        raise InputError(workload, None, "no such workload file")
    notes = ["weak scaling: every replica keeps the per-replica batch; the global batch grows with replicas"]
    if runs[0].strategy != "single_device":
        runs = [RunSpec("single_device", 1)] + [r for r in runs if r.strategy != "single_device"]
        notes.append("single_device was added first: it is the basis of every prediction and efficiency "
                     "(on the Keras of the runs it is the basis of)")
    if hosts:
        check_can_make_hosts()
        need = max(r.replicas for r in runs if r.strategy in ("multi_worker_mirrored", "parameter_server")) \
            if any(r.strategy in ("multi_worker_mirrored", "parameter_server") for r in runs) else 1
        if hosts < need:
            raise InputError("--hosts", None, f"{hosts} test hosts for runs that need {need}")
    if link_mbit and not hosts:
        raise InputError("--link-mbit", None, "shapes the links between test hosts; give --hosts too")
    if engine == "ray":
        for flag, given in (("--hosts", hosts), ("--straggler", straggler), ("--kill", kill)):
            if given:
                raise InputError(flag, None, "goes with --engine local (on Ray, the cluster's own nodes are the "
                                             "hosts; `rung launch --engine ray --kill` shows recovery)")
        notes.append("ran on Ray: " + (f"the cluster at {address}" if address else "a local Ray instance started "
                                                                                    "and stopped by this bench"))
    work = workdir()
    base = {"workload": str(Path(workload).resolve()), "batch": batch, "steps": steps, "warmup": warmup,
            "collective_timeout": COLLECTIVE_TIMEOUT_SECONDS, "ps_tasks": ps_tasks}
    source, folder = workload_text(workload)
    legacy = tf_keras_imports(source, folder)
    if legacy and keras == "keras3":
        raise InputError("--keras", None, f"keras3 cannot run this workload: {tf_keras_reason(legacy)}, so its model "
                                          "is a tf-keras model; leave --keras out")
    if legacy:
        base["model"] = {"tf_keras_import": True}
        notes.append(f"every run on tf-keras: {tf_keras_reason(legacy)}, so its model is a "
                     "tf-keras model (rung init's train.py does the same)")
    elif keras is not None:
        base["model"] = {"keras_asked": keras}
        notes.append(f"{' and '.join(s for s in ONE_HOST_KERAS if any(r.strategy == s for r in runs))} ran on "
                     f"{keras}, as asked (--keras; rung init --keras {keras} runs train.py there)")
    elif all(keras_for(r.strategy) == "tf_keras" for r in runs if r.strategy != "single_device") \
            and len(runs) > 1 and not keras3_imports(source, folder):
        # multi-worker and parameter servers only: the one-device step they are predicted
        # from (and their efficiency taken against) is the step on their Keras
        base["model"] = {"tf_keras_runs": True}
        notes.append("single_device ran on tf-keras: every other run uses it (Keras 3's fit cannot run "
                     "multi-worker or parameter servers), and the same model's step can differ 2-3x between "
                     "the two Kerases (docs/bench.md)")
    out_runs: list[dict] = []
    failed: list[dict] = []
    # parameter servers and their coordinator get a test host of their own, after the workers'
    has_ps = any(r.strategy == "parameter_server" for r in runs)
    ps_host = bool(hosts) and has_ps
    net_ctx = TestNet(hosts + ps_host, link_mbit) if hosts else nullcontext(None)
    ray_ctx = nullcontext(None)
    if engine == "ray":
        from rung.bench.ray_engine import RayCluster

        ray_ctx = RayCluster(address)
    # a bench on local processes forks its tasks from a warm process per Keras (`rung.bench.warm`)
    warm_ctx = WarmStarters(work) if engine == "local" else nullcontext(None)
    try:
        with net_ctx as net, ray_ctx as cluster, warm_ctx as warm:
            link_bytes = int(min(100e6, (link_mbit or 8000) * 1e6 / 8 * 1.5))
            if on_run:
                on_run("measuring the link")
            if cluster is not None:
                from rung.bench.ray_engine import measure_link

                link = measure_link(cluster, link_bytes)
            else:
                link = _link(net, link_bytes)
            ps_costs = None
            # psbench: on this machine for local runs; on Ray, on the node each run's
            # coordinator is placed on (a local instance's node is this machine)
            if has_ps:
                if on_run:
                    counts = {str(r.replicas) for r in runs if r.strategy == "parameter_server"}
                    on_run("reading parameter-server costs" if counts <= set(reuse_ps_costs or {})
                           else "measuring parameter-server costs"
                           + (" on the coordinator's Ray node" if cluster is not None and address else ""))
                failures: list[str] = []
                measure = _psbench_here
                if cluster is not None:
                    from rung.bench.ray_engine import psbench_on_ray

                    measure = functools.partial(psbench_on_ray, cluster, timeout=PSBENCH_TIMEOUT_SECONDS)
                ps_costs = {str(r.replicas): _ps_costs(link, r.replicas, reuse_ps_costs, failures, measure)
                            for r in runs if r.strategy == "parameter_server"}
                default = u.seconds(model_comm.DEFAULT_LINKS.ps_dispatch_seconds)
                whose = f"the Ray cluster's at {address}" if address else "this machine's"
                notes.extend(f"{f}: its parameter-server runs are predicted with the model's default costs "
                             f"({default} of dispatch a step, docs/model.md), not {whose}" for f in failures)
                for n, m in ps_costs.items():
                    if m is not None and m.reused_from:
                        notes.append(f"parameter-server costs for {n} worker(s) reused from {m.reused_from} "
                                     "(an earlier measurement on a machine with these cores), not measured again")
                nodes = sorted({m.ray_node for m in ps_costs.values() if m is not None and m.ray_node})
                if address and nodes:
                    notes.append(f"parameter-server costs measured on the Ray node at {', '.join(nodes)}, where each "
                                 "run's coordinator is placed (psbench over that node's loopback; each variable's "
                                 "read and update add the link's extra round trip between nodes)")
            basis = None
            bases: dict[str, predict.Basis] = {}  # the one-device step's basis on each Keras measured
            no_basis: set[str] = set()  # the Keras whose one-device run failed

            def plan_keras(spec) -> str:
                return spec.keras or keras_for(spec.strategy, base.get("model"))

            def falls_back(spec) -> bool:
                """The one-device run on Keras 3 may fail alone when runs on tf-keras follow
                (multi-worker, parameter servers) and the file builds there (no Keras 3 import
                of its own): a one-device run on tf-keras is then the basis (keras.io's GAN
                and VAE, without call(), which Keras 3 cannot build under any strategy)."""
                return spec.strategy == "single_device" and spec.keras is None and plan_keras(spec) == "keras3" \
                    and any(plan_keras(r) == "tf_keras" for r in runs) and not keras3_imports(source, folder)

            def attempt(spec, label, *args, **kwargs) -> Optional[dict]:
                """One run; a run that fails is recorded and the bench goes on to the next
                (the single-device run excepted: nothing else compares without it)."""
                try:
                    return _one_run(spec, *args, **kwargs)
                except BenchError as e:
                    if spec.strategy == "single_device" and spec.keras is None and not falls_back(spec):
                        raise
                    # why, without the run's label the error begins with: the record and every
                    # line that shows it name the run
                    why = str(e).removeprefix(f"{spec.label}: ")
                    failed.append({"run": label, "strategy": spec.strategy, "replicas": spec.replicas,
                                   "option": spec.option, "error": why + _builds_on_keras_3_only(
                                       why, plan_keras(spec), out_runs)})
                    if on_run:
                        on_run(f"{label} failed; going on")
                    return None

            def one_device_on(keras: str) -> tuple[RunSpec, Optional[dict]]:
                """A one-device run on the Keras named: the basis of the runs on it."""
                s = RunSpec("single_device", 1, keras=keras)
                if on_run:
                    on_run(s.label)
                return s, attempt(s, s.label, base, work, net, link, None, None, None, deadline_seconds,
                                  on_progress, steps + warmup, cluster=cluster, warm=warm)

            for spec in runs:
                multi = spec.strategy in ("multi_worker_mirrored", "parameter_server")
                if spec.option == "nccl" and out_runs and not any(
                        d.startswith("/gpu") for d in (out_runs[0].get("devices") or [])):
                    notes.append(f"{spec.label} not run: NcclAllReduce needs GPUs and this machine has none "
                                 "(not measured on this machine)")
                    continue
                killed_sync = kill and spec.strategy == "multi_worker_mirrored" and not straggler
                if (straggler and multi) or killed_sync:
                    # the same run without the straggler (or the kill) first, so the slowdown
                    # (or the kill's cost) is measured against it
                    label = f"{spec.label} (no {'straggler' if straggler else 'kill'})"
                    if on_run:
                        on_run(label)
                    twin = attempt(spec, label, base, work, net, link, bases.get(plan_keras(spec), basis), None,
                                   kill if straggler else None, deadline_seconds, on_progress, steps + warmup,
                                   tag="-plain", cluster=cluster, warm=warm)
                    if twin is None:
                        continue  # the same configuration with the straggler or the kill would fail as well
                    out_runs.append(twin)
                label = spec.label + (f" (worker {straggler[0]} slowed {straggler[1]:g}x)" if straggler and multi else "")
                if on_run:
                    on_run(label)
                # a run with a straggler or a kill takes the test bed's fixed cost (and small
                # all-reduce) its twin measured
                measured_by = out_runs[-1] if ((straggler and multi) or killed_sync) else {}
                run = attempt(spec, label, base, work, net, link, bases.get(plan_keras(spec), basis), straggler,
                              kill, deadline_seconds, on_progress, steps + warmup, cluster=cluster,
                              testbed_sync=measured_by.get("testbed_sync_seconds"),
                              small_allreduce=measured_by.get("small_allreduce_seconds"),
                              logged_value=measured_by.get("logged_value_seconds"), warm=warm)
                if run is None and basis is None and falls_back(spec):
                    first = failed[-1]
                    spec, run = one_device_on("tf_keras")
                    if run is None:  # nothing compares without a one-device run: both reasons
                        raise BenchError(f"{first['run']}: {first['error']}; and {spec.label}, the basis of the "
                                         f"runs on tf-keras: {failed[-1]['error']}")
                    run["basis_for_keras"] = "tf_keras"
                    no_basis.add("keras3")
                    notes.append("the one-device run on keras3 failed (see the failed runs), so every prediction "
                                 "and efficiency is from the one-device step on tf_keras, where multi-worker and "
                                 "parameter-server fit run; the same model's step can differ 2-3x between the two "
                                 "Kerases (docs/bench.md)")
                if run is None:
                    continue  # a twin measured before it stays: a run of this configuration
                out_runs.append(run)
                if straggler and multi:
                    plain, slow = out_runs[-2], out_runs[-1]
                    slow["straggler"]["slowdown"] = slow["step_seconds_mean"] / plain["step_seconds_mean"]
                    slow["straggler"]["throughput_kept"] = slow["examples_per_second"] / plain["examples_per_second"]
                elif killed_sync:
                    plain, killed = out_runs[-2], out_runs[-1]
                    whole = (killed.get("kill") or {}).get("whole_run")
                    if whole and plain.get("examples_per_second"):
                        whole["throughput_kept"] = whole["examples_per_second"] / plain["examples_per_second"]
                if spec.strategy == "single_device" and basis is None:
                    r0 = out_runs[-1]
                    facts = {k: r0["_grads"].get(k) for k in ("string_inputs", "steps_per_execution",
                                                              "ragged_or_sparse_inputs", "gradient_clipping")
                             if r0["_grads"].get(k) is not None}
                    if keras3_imports(source, folder):  # tf-keras cannot train it: clipping stays on Keras 3
                        facts.pop("gradient_clipping", None)
                    base["model"] = {**base.get("model", {}), **facts}
                    failures = keras3_mirrored_failures(**facts)
                    if failures and not legacy and any(r.strategy == "mirrored" for r in runs):
                        notes.append("mirrored ran on tf-keras, as rung init's train.py would: "
                                     + "; ".join(f"{w} ({code})" for code, w in failures))
                    basis = _basis_of_run(r0, link, ps_costs)
                    bases[r0.get("keras") or plan_keras(spec)] = basis
                    # the later runs on another Keras (multi-worker and parameter servers run on
                    # tf-keras) are predicted from a one-device step on their own Keras: the same
                    # model's step can differ by 2-3x between the two (docs/bench.md)
                    for flavour in sorted({keras_for(r.strategy, base.get("model")) for r in runs} - set(bases)
                                          - no_basis):
                        keras3 = keras3_imports(source, folder) if flavour == "tf_keras" else []
                        if keras3:  # tf-keras cannot build a model of Keras 3's own: those runs fail alone
                            notes.append(f"the runs on {flavour} are predicted from the one-device step on "
                                         f"{r0.get('keras')}: the workload imports Keras 3 itself ({keras3[0]}), "
                                         f"so no one-device run on {flavour} was tried (a model built from `keras` "
                                         "fails there); a model built from tf.keras there runs, and its step can "
                                         "differ 2-3x between the two Kerases (docs/bench.md)")
                            continue
                        _, extra = one_device_on(flavour)
                        if extra is None:
                            notes.append(f"the runs on {flavour} are predicted from the one-device step on "
                                         f"{r0.get('keras')}: the one-device run on {flavour} failed")
                            continue
                        bases[flavour] = _basis_of_run(extra, link, ps_costs)
                        extra["basis_for_keras"] = flavour
                        out_runs.append(extra)
                        ratio = extra["step_seconds_mean"] / r0["step_seconds_mean"]
                        notes.append(f"the runs on {flavour} are predicted from the one-device step on {flavour}, "
                                     f"{extra['step_seconds_mean'] * 1e3:.1f} ms ({ratio:.2f}x the step on "
                                     f"{r0.get('keras')}); their scaling efficiency is against it too")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    used = [d for r in out_runs for d in (r.get("devices") or [])]
    if used and not any(d.startswith("/gpu") for d in used):
        notes.append("no GPU on this machine: single_device and mirrored ran on (logical) CPU devices; the GPU "
                     "path (the GPUs present, NCCL) is not measured on this machine")
    if not hosts and any(r.strategy in ("multi_worker_mirrored", "parameter_server") for r in runs):
        notes.append(f"local multi-process runs share this machine's {os.cpu_count()} cores: the multi-worker "
                     "prediction counts compute, the link, the co-location overhead and the fixed cost of a step "
                     "each run measures, not the CPU the gRPC collectives spend streaming gradient bytes on the "
                     "same cores until --calibrate fits it, so a model with megabytes of gradients comes out "
                     "faster than measured (docs/results.md)")
    # the calibration's runs are multi-worker: their basis is the one-device step on their Keras
    calibration = _calibrate(out_runs, bases.get(keras_for("multi_worker_mirrored", base.get("model")), basis), link,
                             link_mbit, straggler, calibration_points) if calibrate else None
    if calibration and calibration.get("fitted"):
        calibration.update(ps_calibration(ps_costs))
    elif calibration and ps_calibration(ps_costs):
        calibration["why"] += ("; the parameter-server costs measured here go into a calibration only beside a fitted "
                               "link: add multi_worker_mirrored:2 to --runs")
    if calibrate and not link_mbit:
        notes.append("calibrated on an unshaped link (" + link["where"] + "): it gives rung advise a hop latency "
                     "but no link efficiency; calibrate with --hosts and --link-mbit to measure a network link")
    for r in out_runs:
        r.pop("_grads", None)
    return {"schema": SCHEMA, "workload": workload, "per_replica_batch": batch, "weak_scaling": True, "failed": failed,
            "steps": steps, "warmup": warmup, "hosts": hosts or 1, "link_mbit": link_mbit,
            "link": link, "straggler": straggler and {"worker": straggler[0], "factor": straggler[1]},
            "kill": kill and {"worker": kill[0], "step": kill[1]}, "runs": out_runs,
            "calibration": calibration, "cores": os.cpu_count(), "notes": notes,
            "ps_costs": ps_costs and {k: v and v.model_dump(mode="json", exclude_none=True) for k, v in ps_costs.items()},
            "basis": basis and _basis_record(basis),
            **({"bases": {k: _basis_record(v) for k, v in bases.items()}} if len(bases) > 1 else {})}


def _basis_of_run(r: dict, link: dict, ps_costs: Optional[dict]) -> predict.Basis:
    """A single-device run as the basis of the predictions; the run is marked as one."""
    basis = predict.Basis(r["step_seconds_mean"], r["_grads"]["dense"], r["_grads"]["sparse"],
                          r["step_time_cv"] or 0.0, link["bytes_per_second"], link["rtt_seconds"],
                          cores=os.cpu_count() or 1, variables=r["_grads"].get("variables"),
                          optimizer=r["_grads"].get("optimizer") or "sgd", ps_costs=ps_costs,
                          non_trainable_params=r["_grads"].get("non_trainable_params") or 0.0,
                          sync_batch_norm_layers=r["_grads"].get("sync_batch_norm_layers") or 0,
                          logged_values=r["_grads"].get("logged_values"),
                          metric_variables=r["_grads"].get("metric_variables"),
                          sparse_gradient_tensors=r["_grads"].get("sparse_tensors"),
                          strategy_step_extra_seconds=r["_grads"].get("strategy_extra") or 0.0,
                          steps_per_execution=r["_grads"].get("steps_per_execution") or 1,
                          step_cpu_cores=r.get("step_cpu_cores"))
    r.update(predicted_step_seconds=r["step_seconds_mean"], prediction_error=0.0, scaling_efficiency=1.0,
             gradient_bytes_per_step=0.0)
    return basis


def _basis_record(b: predict.Basis) -> dict:
    return {"one_device_step_seconds": b.one_device_step_seconds, "dense_gradient_bytes": b.dense_gradient_bytes,
            "sparse_gradient_bytes": b.sparse_gradient_bytes, "step_time_cv": b.step_time_cv,
            "link_bytes_per_second": b.link_bytes_per_second, "link_rtt_seconds": b.link_rtt_seconds,
            "cores": b.cores, "variables": b.variables, "optimizer": b.optimizer,
            "non_trainable_params": b.non_trainable_params, "sync_batch_norm_layers": b.sync_batch_norm_layers,
            "logged_values": b.logged_values, "metric_variables": b.metric_variables,
            "sparse_gradient_tensors": b.sparse_gradient_tensors,
            "strategy_step_extra_seconds": b.strategy_step_extra_seconds,
            "steps_per_execution": b.steps_per_execution, "step_cpu_cores": b.step_cpu_cores}


def beside_ps_line(worker_nodes: list[str], ps_nodes: list[str]) -> Optional[str]:
    """What a parameter-server run on Ray says when some of its workers ran on a node that
    holds a ps task (Ray places the tasks round the nodes): their variables moved over that
    node's loopback, where the prediction, like advise's plan, puts parameter servers on
    hosts of their own and every worker's variables across the link. None when no worker
    did, or when every task shared one node (loopback for all: what the prediction takes)."""
    beside = sum(w in ps_nodes for w in worker_nodes)
    if not beside or len(set(worker_nodes) | set(ps_nodes)) < 2:
        return None
    return (f"{beside} of {len(worker_nodes)} worker(s) ran on a node that holds a parameter-server task: their "
            "variables travel over that node's loopback, not the link, and the prediction (parameter servers on "
            "hosts of their own, as advise plans them) takes every worker across the link; a cluster of "
            f"{len(worker_nodes) + len(ps_nodes)} nodes or more gives each worker a node without one")


def _hosts(spec, multi: bool, net, worker_nodes) -> int:
    """The hosts a run's workers ran on: one test host each, the distinct Ray nodes Ray
    placed them on, or this machine alone."""
    if not multi:
        return 1
    if worker_nodes:
        return len(set(worker_nodes))
    return spec.replicas if net is not None else 1


def _one_run(spec, base, work, net, link, basis, straggler, kill, deadline, on_progress, total_steps,
             tag: str = "", cluster=None, testbed_sync: Optional[float] = None,
             small_allreduce: Optional[float] = None, warm: Optional[WarmStarters] = None,
             logged_value: Optional[float] = None) -> dict:
    """One run on local processes (test hosts when `net`), or on Ray when `cluster`.
    A multi-worker run measures the test bed's fixed cost of a step in its own cluster
    (`task._probe`), except with a straggler or a kill, which would slow the probe too:
    those take `testbed_sync` (and `small_allreduce`, `logged_value`), their twin's."""
    multi = spec.strategy in ("multi_worker_mirrored", "parameter_server")
    addresses = [net.address(i) for i in range(spec.replicas)] if (net is not None and multi) else None
    ps_host = (net.hosts - 1, net.address(net.hosts - 1)) if (addresses and spec.strategy == "parameter_server") \
        else None
    plan = plan_run(spec, addresses, ps_tasks=base["ps_tasks"], straggler=straggler if multi else None,
                    model=base.get("model"), ps_host=ps_host)
    my_kill = kill if (kill and multi) else None
    # the run's processes share this machine's cores (the test bed's terms apply), unless
    # Ray places its workers on machines of their own (one per worker)
    shares_cores = not (multi and cluster is not None and cluster.kernels >= spec.replicas)
    cfg = dict(base, strategy=spec.strategy, replicas=spec.replicas, option=spec.option, keras=plan.keras,
               probe=spec.strategy == "multi_worker_mirrored" and not straggler and not my_kill,
               # the probe also times one small collective when the model queues some: six a
               # synchronized BatchNorm layer, three a sparse gradient (the basis counted both)
               small_allreduce=bool(basis is not None and (basis.sync_batch_norm_layers
                                                           or basis.sparse_gradient_bytes)),
               # ... and what one more logged value costs a fit, for a model that logs more than its loss
               logged_values=bool(basis is not None and (basis.logged_values or 0) > 1))
    if my_kill:
        cfg["backup_dir"] = str(work / f"backup-{spec.label.replace(':', '-')}{tag}{'-slow' if straggler else ''}")
        cfg["save_freq"] = SAVE_FREQ_STEPS
    wrap = (lambda t, cmd: net.wrap(t.host, cmd) if t.host is not None else cmd) if net is not None else None
    progress = (lambda s: on_progress(s, total_steps)) if on_progress else None
    run_dir = work / (spec.label.replace(":", "-") + tag + ("-slow" if straggler and multi else ""))
    run_dir.mkdir()
    retried: list[str] = []  # a task's port taken before it bound it: the run started again on new ports
    try:
        if cluster is not None:
            from rung.bench.ray_engine import execute_on_ray

            outcome = execute_on_ray(cluster, spec.strategy, spec.replicas, cfg, base["ps_tasks"])
        else:
            netns = (lambda t: net.namespace(t.host) if t.host is not None else None) if net is not None else None
            while True:
                starter = warm.get(plan.keras, task_environment(os.environ, plan.lead, plan.keras)) if warm else None
                try:
                    outcome = execute(plan, cfg, run_dir, deadline, wrap=wrap, on_progress=progress, kill=my_kill,
                                      restarts=1, warm=starter, netns=netns)
                    break
                except BenchError:
                    taken = port_taken_line(run_dir) if multi else None
                    if taken is None or len(retried) == PORT_RETRIES:
                        raise
                    retried.append(taken)
                    plan = plan_run(spec, addresses, ps_tasks=base["ps_tasks"],
                                    straggler=straggler if multi else None, model=base.get("model"), ps_host=ps_host)
                    run_dir = run_dir.with_name(f"{run_dir.name.split('~')[0]}~ports{len(retried)}")
                    run_dir.mkdir()
    except BenchError as e:
        if plan.keras == keras_for("single_device", base.get("model")) and \
                (spec.strategy == "single_device" or hint(str(e)) is None):
            model = base.get("model") or {}
            _surface_input_error(e, chose_tf_keras=bool(model.get("tf_keras_runs")),
                                 asked=model.get("keras_asked"))
            # (the file itself is at fault: exit 2, one line; a failure rung knows to be met
            # only under a strategy, as a mixed_float16 model's under parameter servers, is
            # this run's, recorded, and the bench goes on)
        # else the file ran on the single-device run's Keras, and this run's Keras is what
        # fails (a model built from Keras 3's own `import keras`, under tf-keras): the
        # run's failure, recorded, and the bench goes on
        raise
    global_batch = base["batch"] * (1 if spec.strategy == "parameter_server" else spec.replicas)
    stats = step_stats(outcome.result, base["warmup"], global_batch)
    worker_nodes = getattr(outcome, "worker_nodes", None)  # a Ray run's; a local run's outcome has none
    run = {"strategy": spec.strategy, "replicas": spec.replicas, "option": spec.option,
           "engine": "ray" if cluster is not None else "local",
           "hosts": _hosts(spec, multi, net, worker_nodes),
           "link_mbit": net.link_mbit if (net is not None and multi) else None,
           "keras": outcome.result.get("keras"), "devices": outcome.result.get("devices") or None, **stats, "wall_seconds": outcome.wall_seconds,
           "processes": outcome.tasks_started,
           "notes": [f"started again on new ports: {why}" for why in retried] + outcome.notes,
           "_grads": outcome.result.get("gradients"),
           "shares_cores": shares_cores,
           "ps_tasks": base["ps_tasks"] if spec.strategy == "parameter_server" else 0}
    if worker_nodes:
        run["worker_nodes"] = worker_nodes
    ps_nodes = getattr(outcome, "ps_nodes", None)
    if ps_nodes:
        run["ps_nodes"] = ps_nodes
        beside = beside_ps_line(worker_nodes or [], ps_nodes)
        if beside:
            run["notes"].append(beside)
    machine = getattr(outcome, "machine", None)  # a Ray run's outcome has none
    if machine is not None:
        run["machine"] = machine
        if machine["outside_cpu_share"] >= cpuload.BUSY_SHARE:
            run["notes"].append(cpuload.busy_line(machine))
    if straggler and multi:
        run["straggler"] = {"worker": straggler[0], "factor": straggler[1]}
    if outcome.result.get("jit_compile_off"):
        run["notes"] = list(run["notes"] or []) + [
            "ran without XLA, as rung init's train.py runs it: the model's jit_compile=True step cannot read the "
            "variables the ps tasks hold (JIT_COMPILE)"]
    if outcome.result.get("functions_run_eagerly"):
        run["notes"] = list(run["notes"] or []) + [
            "ran every tf.function eagerly, as the file asks (tf.config.run_functions_eagerly(True)): each step op by "
            "op, as train.py would run it, and slower than the graph step fit runs once the call is removed "
            "(RUN_EAGERLY)"]
    if outcome.result.get("run_eagerly_off"):
        run["notes"] = list(run["notes"] or []) + [
            "ran with a graph, as rung init's train.py runs it: tf-keras refuses the model's run_eagerly=True under "
            "parameter servers, while the one-device basis ran eagerly (RUN_EAGERLY)"]
    if len(stats.get("step_seconds_rounds") or []) > 1:
        shown = ", ".join(f"{x * 1e3:.1f}" for x in stats["step_seconds_rounds"])
        run["notes"] = list(run["notes"] or []) + [
            f"per step: the median of {len(stats['step_seconds_rounds'])} epochs of one fit ({shown} ms), after a "
            f"first epoch that also paid the fit's fixed cost ({stats['fit_fixed_seconds'] * 1e3:.0f} ms)"]
    attempts = getattr(outcome, "attempts", None) or []
    if attempts and attempts[0].get("ends") and spec.strategy != "parameter_server":
        # launch to the first step's end: import, cluster set-up, model, the first (traced) step
        # (a task forked warm skipped the import: the import its warm process took is added)
        run["startup_seconds"] = attempts[0]["ends"][0] - attempts[0]["launched_at"] + attempts[0]["import_seconds"]
        run["warm_start"] = attempts[0]["import_seconds"] > 0
    if my_kill:
        warmup = outcome.result.get("warmup", base["warmup"])  # whole calls of a steps_per_execution model
        total_steps += warmup - base["warmup"]
        rec = dict(outcome.recovery)
        killed = rec.get("killed_at_step", 0)
        lost = 0
        if spec.strategy == "multi_worker_mirrored" and rec.get("restarts"):
            # the restarted fit runs only the steps after its restored checkpoint
            resumed_from = total_steps - len(outcome.result.get("ends", []))
            lost = max(0, killed - resumed_from)
            rec["resumed_from_step"] = resumed_from
        run["kill"] = {"worker": my_kill[0], "step": my_kill[1], "save_freq_steps": SAVE_FREQ_STEPS,
                       "happened": "killed_at_step" in rec, "steps_lost": lost,
                       "completed_all_steps": _completed(outcome.result), **rec}
        whole = _whole_run(attempts, warmup, total_steps, global_batch) \
            if spec.strategy == "multi_worker_mirrored" and rec.get("restarts") else None
        if whole:
            run["kill"]["whole_run"] = whole
        elif spec.strategy == "multi_worker_mirrored" and rec.get("restarts"):
            run["notes"].append("the killed run is not timed whole: the kill came during the warm-up (or its "
                                "timeline was lost); kill after the warm-up to compare it with the unkilled run")
        if "killed_at_step" not in rec:
            run["notes"].append(f"the run finished before its progress showed step {my_kill[1]}: worker "
                                f"{my_kill[0]} was never killed (give it more --steps)")
    probe = outcome.result.get("probe")
    if probe:
        run["probe"] = probe
        if probe.get("small_allreduce_seconds") is not None:
            run["small_allreduce_seconds"] = probe["small_allreduce_seconds"]
        if probe.get("logged_value_seconds") is not None:
            run["logged_value_seconds"] = probe["logged_value_seconds"]
    elif outcome.result.get("probe_error"):
        run["notes"] = list(run["notes"] or []) + [
            "the test bed's fixed cost of a multi-worker step was not measured, so the prediction leaves it out "
            f"(its probe failed: {outcome.result['probe_error']})"]
    if testbed_sync is None and probe and basis is not None:
        testbed_sync = _testbed_sync(probe, basis, spec.replicas, shares_cores)
        if testbed_sync is not None:
            whose = "the test bed's" if shares_cores else "these hosts'"
            run["notes"] = list(run["notes"] or []) + [
                f"{whose} fixed cost of a multi-worker step, {testbed_sync * 1e3:.1f} ms, is part of the "
                f"prediction: measured in this run's cluster with a {probe['params']}-parameter model "
                f"({probe['step_seconds'] * 1e3:.1f} ms a step, {probe['local_step_seconds'] * 1e3:.1f} ms on its own)"]
    if testbed_sync is not None and spec.strategy == "multi_worker_mirrored":
        run["testbed_sync_seconds"] = testbed_sync
    if small_allreduce is not None and spec.strategy == "multi_worker_mirrored":
        run.setdefault("small_allreduce_seconds", small_allreduce)
    if logged_value is not None and spec.strategy == "multi_worker_mirrored":
        run.setdefault("logged_value_seconds", logged_value)
    if basis is not None:
        _attach_prediction(run, predict.with_fixed_cost(basis, run.get("testbed_sync_seconds"), shares_cores,
                                                        run.get("small_allreduce_seconds"),
                                                        run.get("logged_value_seconds")),
                           straggler)
    return run


def _testbed_sync(probe: dict, basis: predict.Basis, replicas: int, shares_cores: bool = True) -> Optional[float]:
    """The fixed cost of a multi-worker step between the run's hosts (`Testbed.sync_seconds`
    on the test bed; on machines of their own, the model's `Links.sync_step_seconds`) from
    a run's probe (`task._probe`): the probe model's multi-worker step less what the model
    predicts for it without a fixed cost, from its own step on one worker (its compute, N
    times over when the replicas share the cores, the co-location overhead, the link's hops
    and its 20 bytes); 0 or more. None without the probe's two steps."""
    one, step = probe.get("local_step_seconds"), probe.get("step_seconds")
    if not one or not step:
        return None
    # it logs its loss alone, whose all-reduce the model predicts (at what the probe measured a
    # logged value to cost, when it did): the fixed cost is the rest
    tiny = replace(basis, one_device_step_seconds=one, dense_gradient_bytes=float(probe["dense_gradient_bytes"]),
                   sparse_gradient_bytes=0.0, step_time_cv=0.0, sync_seconds=0.0, variables=2, optimizer="sgd",
                   logged_values=1, logged_value_seconds=probe.get("logged_value_seconds"),
                   sync_batch_norm_layers=0, sparse_gradient_tensors=None, strategy_step_extra_seconds=0.0,
                   non_trainable_params=0.0, step_cpu_cores=None)  # its cores are not the model's: N times
    without = predict.predict_step_seconds(tiny, "multi_worker_mirrored", replicas, shares_cores=shares_cores)["step"]
    return max(0.0, step - without)


def _builds_on_keras_3_only(error: str, keras: str, done: list[dict]) -> str:
    """What to add to a failed run's error when build_model() raised on tf-keras after
    building on Keras 3 in an earlier run of this bench: a model written for Keras 3 alone
    (an argument tf-keras does not know, say), which train.py cannot run either; or ''."""
    if keras != "tf_keras" or "build_model() raised" not in error or \
            not any(r.get("keras") == "keras3" for r in done) or \
            any(r.get("keras") == "tf_keras" for r in done) or hint(error) is not None:
        return ""  # (it built on tf-keras in another run, or the failure is one rung knows and says)
    return ("; the model built on Keras 3 in this bench's one-device run and not on tf-keras, where this run is "
            "(rung init's train.py runs multi-worker and parameter servers there): it must build on tf-keras too "
            f"({TF_KERAS_DEFINES})")


def _whole_run(attempts: list[dict], warmup: int, total_steps: int, global_batch: int,
               save_freq: int = SAVE_FREQ_STEPS) -> Optional[dict]:
    """A killed and restarted run timed whole, kill and restart included: from the end of
    the first attempt's warm-up to the end of the last step of the last attempt (the
    steps after the restart are the rest of the run, from its restored checkpoint on)."""
    first, last = attempts[0].get("ends") or [], attempts[-1].get("ends") or []
    if len(first) < max(1, warmup) or not last or "killed_at" not in attempts[0]:
        return None
    timed = first[max(warmup, 1) - 1:]  # from the warm-up's last step on
    start = timed[0] if warmup >= 1 else attempts[0]["launched_at"] - attempts[0].get("import_seconds", 0.0)
    window = last[-1] - start
    steps = total_steps - warmup
    return {"window_seconds": window, "steps": steps,
            "examples_per_second": steps * global_batch / window if window > 0 else None,
            "steps_before_kill": len(first),
            # the bench's own handling: its poll for the kill step, the wait for the run to
            # stall, ending every task; then the restarted cluster's start to its first step
            "detection_seconds": attempts[1]["launched_at"] - first[-1],
            "restart_first_step_seconds": last[0] - attempts[1]["launched_at"],
            "steps_after_restart": len(last),
            # the mean step on either side of the kill, checkpoints (BackupAndRestore) included
            "step_seconds_before_kill": _mean_interval(timed),
            "step_seconds_after_restart": _mean_interval(last),
            "checkpoint_seconds": _checkpoint_seconds(first, last, warmup, total_steps - len(last), save_freq)}


def _mean_interval(ends: list[float]) -> Optional[float]:
    return (ends[-1] - ends[0]) / (len(ends) - 1) if len(ends) >= 2 else None


def _checkpoint_seconds(first: list[float], last: list[float], warmup: int, resumed: int,
                        every: int) -> Optional[float]:
    """What one checkpoint adds to the step that takes it, read off a killed run's own step
    times (part of its measured step-time distribution): the steps are grouped by their
    number modulo the checkpoint interval, and the slowest group's mean is set against the
    mean of the others. Steps of the warm-up and the first after the restart (a traced
    step) are left out. None with fewer than two steps in every group."""
    import numpy as np

    steps = [(i + 1, b - a) for i, (a, b) in enumerate(zip(first, first[1:]), start=1) if i + 1 > warmup]
    steps += [(resumed + j + 1, b - a) for j, (a, b) in enumerate(zip(last, last[1:]), start=1)]
    groups = [[d for n, d in steps if n % every == phase] for phase in range(every)]
    if every < 2 or any(len(g) < 2 for g in groups):
        return None
    means = np.array([np.mean(g) for g in groups])
    top = int(means.argmax())
    return float(max(0.0, means[top] - np.delete(means, top).mean()))


def _completed(result: dict) -> bool:
    if result.get("async"):
        return True  # fit returned: the coordinator joined every scheduled step
    return bool(result.get("ends"))


def _attach_prediction(run: dict, basis: predict.Basis, straggler, efficiency: float = 1.0) -> None:
    factor = run.get("straggler", {}).get("factor", 1.0)
    p = predict.predict_step_seconds(basis, run["strategy"], run["replicas"], factor, efficiency, run.get("option"),
                                     shares_cores=run.get("shares_cores", True))
    measured = run["step_seconds_mean"]
    run["gradient_bytes_per_step"] = _gradient_bytes(run["strategy"], run["replicas"], basis.dense_gradient_bytes,
                                                     basis.sparse_gradient_bytes)
    run["predicted_step_seconds"] = p["step"]
    run["predicted_terms"] = {k: p[k] for k in ("compute", "mirrored_variables", "comm", "sync", "sync_batch_norm",
                                                "logged_values", "straggler")}
    run["prediction_error"] = predict.relative_error(p["step"], measured)
    one = basis.one_device_step_seconds
    n = run["replicas"]
    per_step_examples = 1 if run["strategy"] == "parameter_server" else n
    run["scaling_efficiency"] = (per_step_examples / measured) / (n / one) if measured else None


# the least share of the measured goodput an all-reduce is taken to reach when fewer than
# three points cannot fit a fixed cost (the calibrations here fitted 0.90-0.94)
SHARE_FLOOR = 0.25


def fit_testbed(wire, comm, load) -> Optional[tuple[float, float, float]]:
    """(share, c, f) of comm = f + wire / (share x (1 - c x load)) on these points (see
    `_calibrate`); None when a point's comm is not positive."""
    import numpy as np

    wire, comm, load = (np.asarray(x, dtype=float) for x in (wire, comm, load))
    if np.any(comm <= 0):
        return None
    two_loads = len({f"{x:.6e}" for x in load}) >= 2

    def line(f: float) -> tuple[float, float]:
        y = wire / (comm - f)
        c = 0.0
        if two_loads:
            slope, share = np.polyfit(load, y, 1)
            c = -slope / share if share > 0 else 0.0
        if c <= 0.0:  # no CPU term: least squares of comm - f = wire / share
            c, share = 0.0, float(np.dot(wire, wire) / np.dot(wire, comm - f))
        return float(min(max(share, 1e-3), 1.5)), float(c)

    def error(f: float) -> float:
        share, c = line(f)
        u = np.minimum(c * load, MAX_CPU_SHARE)
        return float(np.sum(((f + wire / (share * (1 - u))) / comm - 1) ** 2))

    f = 0.0
    if len(comm) >= 3:
        top = 0.95 * float(comm.min())
        grid = np.linspace(0.0, top, 201)
        f = float(grid[int(np.argmin([error(x) for x in grid]))])
        lo, hi = max(0.0, f - top / 200), min(top, f + top / 200)
        for _ in range(60):  # golden-section refinement between the grid's neighbours
            a, b = hi - 0.618 * (hi - lo), lo + 0.618 * (hi - lo)
            lo, hi = (lo, b) if error(a) <= error(b) else (a, hi)
        f = (lo + hi) / 2 if error((lo + hi) / 2) < error(f) else f
    share, c = line(f)
    return share, c, f


def ps_calibration(ps_costs: Optional[dict]) -> dict:
    """The parameter-server costs a calibration carries to `rung advise` (empty when no
    parameter-server run measured them): Keras fit's whole per-step cost at the coordinator
    (`keras_dispatch_seconds`: the fleet's dispatch cap, as `Links.ps_dispatch_seconds`
    was measured), its share left at 8 steps a dispatch, one variable's read and update
    over loopback, and one metric variable's cost a fit step, each the median over the
    worker counts measured."""
    import statistics

    measured = [m for m in (ps_costs or {}).values() if m is not None]
    if not measured:
        return {}
    loopback = [m.variable_seconds if m.variable_seconds_loopback is None else m.variable_seconds_loopback
                for m in measured]
    cores = {m.cores for m in measured if m.cores}
    dispatch = float(statistics.median(m.keras_dispatch_seconds for m in measured))
    if dispatch <= 0:
        return {}
    # the looped fit's cost per step against one step a dispatch, where it ran 8 steps a
    # dispatch (the point `Links.dispatch_seconds`'s curve passes through)
    looped = [m.keras_looped_dispatch_seconds / m.keras_dispatch_seconds for m in measured
              if m.keras_looped_dispatch_seconds and m.looped_steps == 8 and m.keras_dispatch_seconds > 0]
    metric = [m.keras_metric_variable_seconds for m in measured if m.keras_metric_variable_seconds is not None]
    return {"ps_dispatch_seconds": dispatch, "ps_variable_seconds": float(statistics.median(loopback)),
            "ps_workers": max(m.workers for m in measured),
            **({"ps_metric_variable_seconds": float(statistics.median(metric))} if metric else {}),
            **({"ps_looped_dispatch_share": float(statistics.median(looped))} if looped else {}),
            **({"ps_cores": cores.pop()} if len(cores) == 1 else {})}


def _calibrate(runs, basis, link, link_mbit, straggler, previous_points=None) -> Optional[dict]:
    """Fit the test bed's constants on the multi-worker runs. Each run's exchange (its
    measured step less the model's compute, co-location, straggler and hop latency) is
    comm = f + wire / (share x (1 - c x s)):
    - wire: the bytes each worker sends over the measured goodput;
    - share: the share of that goodput the all-reduce reaches on idle cores (the link's
      own efficiency, what `rung advise` uses);
    - c: the test bed's CPU seconds per byte streamed, with s = N x R / cores the bytes
      per second per shared core that N links streaming at the goodput R need;
    - f: a fixed cost of every multi-worker step on the test bed (`Testbed.sync_seconds`).
    For a given f, y = wire / (comm - f) = share x (1 - c x s) is a straight line in s;
    f is the one (0 or more) whose line leaves the smallest relative error in comm.
    Points from earlier benches (`previous_points`) join the fit, so runs at several link
    rates, and of models with smaller and larger gradients, calibrate together. Points at
    two or more distinct s fit share and c; one fits the share alone; f needs three
    points or more (it is best told apart from the share by models whose gradients
    differ in size: the corners of one model alone fitted f = 0 here, docs/results.md)."""
    points = list(previous_points or [])
    for r in runs:
        if r["strategy"] != "multi_worker_mirrored" or r["replicas"] < 2 or not basis or r.get("straggler"):
            continue
        n = r["replicas"]
        p = predict.predict_step_seconds(replace(basis, sync_seconds=0.0), "multi_worker_mirrored", n)
        measured_comm = (r["step_seconds_mean"] - p["compute"] - p["mirrored_variables"] - p["sync"] - p["straggler"]
                         - p["logged_values"] - predict.latency_seconds(basis, n))
        points.append({"run": f"multi_worker_mirrored:{n}", "link_mbit": link_mbit, "workers": n,
                       "link_bytes_per_second": basis.link_bytes_per_second, "cores": basis.cores,
                       "wire_seconds": predict.wire_seconds(basis, n), "comm_seconds": measured_comm,
                       "streaming_bytes_per_core": predict.streaming_bytes_per_core(basis, n)})
    if not points:
        return {"fitted": False, "why": "no multi_worker_mirrored run with 2 or more workers to fit on"}
    wire, comm = [q["wire_seconds"] for q in points], [q["comm_seconds"] for q in points]
    fit = fit_testbed(wire, comm, [q["streaming_bytes_per_core"] for q in points])
    if fit is None:
        return {"fitted": False, "why": "a run's step was no longer than its compute: nothing to fit the link on"}
    share, c, f = fit
    share = float(min(max(share, 1e-3), 1.5))
    share_fitted = True
    if len(points) < 3 and share < SHARE_FLOOR:
        # too few points to fit f, and with f = 0 the all-reduce would reach under a quarter
        # of the measured goodput (a small model on loopback: 10 ms of exchange for 0.5 us
        # of bytes read as a share of 0.001): the step pays a fixed cost, not a slow wire.
        # The share is not measured then (taken as 1, the wire at the goodput); f is the rest
        share, c, share_fitted = 1.0, 0.0, False
        f = max(0.0, sum(x - w for x, w in zip(comm, wire)) / len(points))
    fitted = replace(basis, cpu_seconds_per_byte=float(c), sync_seconds=float(f)) if basis else None
    for r in runs:
        if r["strategy"] != "single_device" and fitted is not None:
            pred = predict.predict_step_seconds(fitted, r["strategy"], r["replicas"],
                                                r.get("straggler", {}).get("factor", 1.0), share)["step"]
            r["calibrated_predicted_step_seconds"] = pred
            r["calibrated_prediction_error"] = predict.relative_error(pred, r["step_seconds_mean"])
    nominal = link_mbit * 1e6 / 8 if link_mbit else None
    return {"schema": CALIBRATION_SCHEMA, "fitted": True, "allreduce_share_of_goodput": share, "testbed_cpu_seconds_per_byte": float(c),
            "testbed_sync_seconds": float(f), "share_fitted": share_fitted,
            "inter_host_efficiency": (link["bytes_per_second"] * share / nominal) if nominal and share_fitted else None,
            "inter_host_hop_seconds": link["rtt_seconds"] / 2, "link_mbit": link_mbit,
            "fitted_on": [q["run"] + (f" at {q['link_mbit']:g} Mbit/s" if q["link_mbit"] else " unshaped")
                          for q in points], "points": points,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "note": "fitted on these runs: their calibrated errors are in-sample"}
