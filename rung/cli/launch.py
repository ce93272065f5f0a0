"""`rung launch`: write the job's files, then run them on this machine's processes or on a
Ray cluster (launch v1). TensorFlow and Ray run only in the processes launched."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rung.cli import _job
from rung.errors import InputError, RunError

# --engine local: every task is a TensorFlow process on this machine (each a few hundred MB)
MAX_LOCAL_TASKS = 32
# Ray driver output: the launcher prints one JSON object as its last line.
SIGTERM_GRACE_SECONDS = 15.0
# launch_ray.py's line when its workers do not see one another's files in --checkpoint-dir
UNSHARED = "launch_ray.py: --checkpoint-dir"


def register(sub) -> None:
    p = sub.add_parser("launch", help="run the job on local processes or a Ray cluster",
                       description="Write train.py for the plan (as `rung init`), then run it: --engine local "
                                   "(processes with TF_CONFIG on this machine) or --engine ray (Ray Train for "
                                   "multi-worker, actors for parameter servers).")
    _job.add_arguments(p)
    r = p.add_argument_group("the run")
    r.add_argument("--engine", required=True, choices=("local", "ray"),
                   help="where the tasks run (required): local, processes with TF_CONFIG on this machine; ray, "
                        "a Ray cluster (--address) or a local Ray instance rung starts and stops")
    r.add_argument("--address", metavar="HOST:PORT", help="a running Ray cluster (default: a local Ray instance)")
    r.add_argument("--steps", type=int, default=20, metavar="N", help="steps per epoch (default 20)")
    r.add_argument("--epochs", type=int, default=1, metavar="N", help="epochs (default 1)")
    r.add_argument("--kill", metavar="K@STEP", help="kill worker K when the job reaches STEP (see recovery)")
    r.add_argument("--out", metavar="DIR", help="keep the generated files and the run's logs here "
                                                "(default: a temporary folder, removed at the end)")
    r.add_argument("--checkpoint-dir", metavar="DIR",
                   help="--engine ray: the backups every worker resumes from, a folder every node of the "
                        "cluster mounts (NFS, a cloud bucket) (default: DIR/checkpoints under --out)")
    r.add_argument("--startup-seconds", type=float, default=120.0, metavar="S",
                   help="a task that has not joined by then is reported and the rest ended (default 120)")
    r.add_argument("--deadline", type=float, default=900.0, metavar="S", help="seconds the job may take")
    r.add_argument("--json", action="store_true", help="print rung/launch/v1 JSON on stdout")
    r.add_argument("--no-replica-check", action="store_true",
                   help="do not check, before a synchronous job of several replicas, that a model with its own "
                        "train_step, or on Keras 3 a compiled loss of its own, divides its loss by the global batch "
                        "(LOSS_NOT_SCALED; a few seconds)")
    p.set_defaults(run=run)


def parse_kill(text: str, job) -> tuple[int, int]:
    k, sep, step = text.partition("@")
    if not sep or not k.isdigit() or not step.isdigit() or int(step) < 1:
        raise InputError("--kill", None, f"expected K@STEP (worker K at step STEP >= 1), received {text!r}")
    if job.script_verdict not in ("multi_worker_mirrored", "parameter_server"):
        raise InputError("--kill", None, f"{job.script_verdict} has no workers to kill; --kill goes with "
                                         "multi_worker_mirrored or parameter_server")
    if int(k) >= job.workers:
        raise InputError("--kill", None, f"worker {k} does not exist ({job.workers} workers: 0-{job.workers - 1})")
    return int(k), int(step)


def check_address(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InputError("--address", None, f"expected HOST:PORT of a Ray cluster's head, received {text!r}")
    return text


def run(args) -> int:
    from rung.cli.init import write_files

    workload = _job.workload_path(args.workload)
    job = _job.job_from(args)
    kill = parse_kill(args.kill, job) if args.kill else None
    if args.address:
        if args.engine != "ray":
            raise InputError("--address", None, "goes with --engine ray")
        check_address(args.address)
    if args.checkpoint_dir and args.engine != "ray":
        raise InputError("--checkpoint-dir", None, "goes with --engine ray (local tasks keep theirs under --out)")
    for flag, value in (("--steps", args.steps), ("--epochs", args.epochs)):
        if value < 1:
            raise InputError(flag, None, f"expected at least 1, received {value}")
    for flag, value in (("--startup-seconds", args.startup_seconds), ("--deadline", args.deadline)):
        if not value > 0:  # (NaN too)
            raise InputError(flag, None, f"expected a number of seconds greater than 0, received {value:g}")
    if kill and kill[1] >= args.steps * args.epochs:  # it would never land: the job ends first
        raise InputError("--kill", None, f"step {kill[1]} is at or past the job's last step "
                                         f"({args.steps} steps x {args.epochs} epoch(s) = {args.steps * args.epochs})")
    tasks = job.workers + (job.ps_tasks or 0)
    if args.engine == "local" and tasks > MAX_LOCAL_TASKS:  # 100,000 ran out of file handles, exit 1
        raise InputError("--workers", None, f"{tasks} tasks on this machine; --engine local runs each as a "
                                            f"TensorFlow process here: expected at most {MAX_LOCAL_TASKS} "
                                            "(--engine ray spreads them over a cluster)")
    if job.script_verdict == "tpu":
        raise InputError("--strategy", None, "tpu: this machine has no TPU; run train.py where the TPU is "
                                             "(rung init writes it)")
    if args.engine == "ray":
        if job.script_verdict not in ("multi_worker_mirrored", "parameter_server"):
            raise InputError("--engine", None, f"{job.script_verdict} runs in one process: use --engine local "
                                               "(Ray is for multi-worker and parameter-server jobs)")
        if importlib.util.find_spec("ray") is None:
            raise RunError("Ray is not installed; install it with: pip install 'rung[ray]'")
    if args.out and Path(args.out).is_dir() and any(Path(args.out).iterdir()):
        raise InputError(args.out, None, "is not empty; choose another --out")
    check_loss_scale(job, workload, skip=args.no_replica_check)
    from rung.launch.emit import logged_loss_note, loss_not_scaled_note

    # what the check found, said before training (the rest of init's notes train.py says,
    # or stops on, itself)
    warned = [n for n in (loss_not_scaled_note(job), logged_loss_note(job)) if n]
    for note in warned:
        print(f"rung launch: warning: {note}", file=sys.stderr, flush=True)
    from rung.kerasfit import batch_hint, default_batch_note, file_kept_batch, with_batch_hint

    # keras.io's files keep a batch_size of their own, which their steps use: a step at rung's
    # default batch then fails on its shapes, and the failure says what to give; a run that
    # goes through says the batch it trained at
    kept = None if args.batch or args.scenario else file_kept_batch(workload, job.batch)
    hint = batch_hint(kept, job.batch) if kept else None
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="rung-launch-"))
    try:
        write_files(job, workload, out)
        if args.engine == "local":
            from rung.launch.local import launch_local

            result = launch_local(job, out, args.steps, args.epochs, out / "run", kill,
                                  args.startup_seconds, args.deadline)
        else:
            result = run_ray_launcher(out, args, kill)
    except RunError as e:
        raise with_batch_hint(e, hint) from None
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)  # the files and logs were kept only with --out
    if kept:
        result["notes"] = [*(result.get("notes") or []), default_batch_note(kept, job.batch, "trained",
                                                                            "the examples a step and its memory "
                                                                            "follow the batch")]
    if args.json:
        print(json.dumps(result))
    else:
        print(summary(result, said=warned))
    return 0


def check_loss_scale(job, workload: Path, skip: bool = False) -> None:
    """For a job that sums several replicas' gradients, of a model whose file defines its own
    train_step or compute_loss, and that no scenario has spoken for: rung profile's replica
    check (one step under 2 logical CPU devices against one device, a fresh process), so
    train.py and this run say LOSS_NOT_SCALED before training on updates N times too large."""
    from rung.launch.emit import synchronous_replicas
    from rung.measure import replicas

    # a compiled loss of the file's own is left undivided by Keras 3 alone (tf-keras divides it)
    own_loss = bool(job.compiled_loss_calls) and not job.legacy_keras
    # a loss made to sum over the batch (reduction="sum"), compiled, sums on either Keras
    own_loss = own_loss or bool(job.summed_loss_calls)
    if job.loss_scaled_for_replicas is not None or not (job.own_step_defs or own_loss) \
            or synchronous_replicas(job) is None:
        return
    if skip or (job.keras3_imports and job.legacy_keras):  # KERAS3_IMPORT: train.py stops before fit
        job.loss_check_quiet = True
        return
    keras = "tf_keras" if job.legacy_keras else "keras3"
    what = "the model's own step divides its loss" if job.own_step_defs else \
        f"Keras 3 divides the model's own compiled loss ({', '.join(job.compiled_loss_calls[:2])})" \
        if job.compiled_loss_calls and keras == "keras3" else \
        f"the model's compiled loss averages over the batch ({', '.join(job.summed_loss_calls[:2])})"
    print(f"rung launch: checking that {what} across replicas: one step under "
          f"{replicas.REPLICAS} logical CPU devices against one device, on {keras.replace('_', '-')} "
          "(--no-replica-check skips it)", file=sys.stderr, flush=True)
    found = replicas.check(workload, job.batch, keras)
    v = found.get("verdict") if found.get("checked") else None
    if found.get("logged_loss_divided") is not None:
        job.logged_loss_divided, job.logged_loss_keras = found["logged_loss_divided"], keras
    if v == "not_scaled" and found.get("compiled_losses") and keras == "keras3":
        job.compiled_loss_not_scaled = ", ".join(found["compiled_losses"])
    elif v == "not_scaled" and found.get("summed_losses"):  # on either Keras
        job.compiled_loss_sums = ", ".join(found["summed_losses"])
    if v in ("scaled", "not_scaled"):
        job.loss_scaled_for_replicas = v == "scaled"
        job.loss_checked_by = (f"rung launch's check: the gradients summed under {found['replicas']} replicas were "
                               f"{found['gradient_ratio']:.2f}x one device's")
    elif v:
        job.loss_checked_by = (f"rung launch's check saw a gradient ratio of {found['gradient_ratio']:.2f}, neither 1 "
                               f"nor {found['replicas']}")
    else:  # a step that fails under the strategy stops train.py, which says what to change
        job.loss_check_quiet = "fails" in found
        job.loss_checked_by = f"rung launch's check did not run: {found.get('why')}"


def run_ray_launcher(out: Path, args, kill) -> dict:
    """The generated launch_ray.py as a child process (its own process group): on Ctrl-C or
    a deadline it gets SIGTERM (so it shuts its Ray instance down), then SIGKILL; and when
    this launcher dies by any death, SIGKILL included, the kernel sends it SIGTERM
    (PR_SET_PDEATHSIG), which Ray's driver turns into an exit that shuts Ray down."""
    from rung.bench.orphans import killed_with_parent

    cmd = [sys.executable, str(out / "launch_ray.py"), "--steps", str(args.steps), "--epochs", str(args.epochs),
           "--checkpoint-dir", args.checkpoint_dir or str(out / "checkpoints")]
    if args.address:
        cmd += ["--address", args.address]
    else:
        # the Ray instance launch_ray.py starts here tries the job on this machine, on its
        # CPUs as --engine local does; on a cluster (--address) each worker asks for the
        # plan's GPUs
        cmd += ["--gpus-per-worker", "0"]
    if kill:
        cmd += ["--kill", f"{kill[0]}@{kill[1]}", "--save-every", "5"]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    log = out / "launch_ray.log"
    with open(log, "wb") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
                             preexec_fn=killed_with_parent(signal.SIGTERM))
    t0 = time.perf_counter()
    try:
        while p.poll() is None:
            if time.perf_counter() - t0 > args.deadline:
                raise RunError(f"the Ray job gave no result within {args.deadline:.0f} s; it was ended")
            time.sleep(0.2)
    finally:
        _end(p)
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    if p.returncode != 0:
        from rung.launch.local import workload_error

        bad = workload_error("\n".join(lines), anywhere=True)  # train.py's stop, in a Ray worker's error
        if bad is not None:
            raise bad
        unshared = next((ln for ln in lines if ln.startswith(UNSHARED)), None)
        if p.returncode == 2 and unshared is not None:  # the workers' nodes do not share the folder
            raise InputError("--checkpoint-dir", None, unshared[len(UNSHARED):].strip())
        why = next((ln for ln in reversed(lines) if "launch_ray.py:" in ln or "Error" in ln), lines[-1] if lines else "")
        raise RunError(f"the Ray job failed (exit code {p.returncode}): {why.strip()[:400]}")
    result = json.loads(next(ln for ln in reversed(lines) if ln.startswith('{"schema"')))
    # what train.py said on its way, where its output reaches this log: the parameter-server
    # chief runs in launch_ray.py itself (Ray Train's workers log on their nodes)
    from rung.launch.local import notices

    return {**result, "notes": result.get("notes") or notices(lines)}


def _end(p: subprocess.Popen) -> None:
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=SIGTERM_GRACE_SECONDS)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=10)


def summary(r: dict, said: list[str] = ()) -> str:
    """The run in a few lines, with what train.py said on its way that rung launch has not
    already said before it started (`said`)."""
    lines = [f"rung launch · {r['strategy']} on {r['engine']}: {r['workers']} worker(s)"
             + (f", {r['ps_tasks']} ps" if r["ps_tasks"] else "") + f", {r['keras']}",
             f"  {r['steps_completed']} steps, {r['examples_per_second'] or 0:,.0f} examples/s in the last epoch, "
             f"{r['wall_seconds']:.1f} s in all"]
    if r.get("killed_at_step") is not None:
        lines.append(f"  worker killed at step {r['killed_at_step']}; restarts {r['restarts']}"
                     + (f", resumed from step {r['resumed_from_step']}" if r.get("resumed_from_step") is not None
                        else ""))
    lines.extend(f"  note: {n}" for n in r.get("notes") or [] if n not in said)
    return "\n".join(lines)
