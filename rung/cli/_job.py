"""The job `init` and `launch` work from: a scenario's decision, or a strategy given by
hand. Pure: advise never imports TensorFlow."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

from rung.errors import InputError
from rung.failures import build_model_requires_problem
from rung.launch.emit import RUNNABLE, Job, check_job

VERDICTS = RUNNABLE + ("fix_input_pipeline", "needs_sharding")


def add_arguments(p) -> None:
    p.add_argument("workload", metavar="WORKLOAD.py", help="the team's workload file (imported unchanged)")
    src = p.add_argument_group("the plan (one of)")
    src.add_argument("--scenario", metavar="FILE", help="decide with rung advise, then use its verdict")
    src.add_argument("--strategy", choices=VERDICTS, metavar="VERDICT",
                     help=f"a verdict by hand: {', '.join(VERDICTS)}")
    src.add_argument("--workers", type=int, metavar="N", help="workers (multi_worker_mirrored, parameter_server)")
    src.add_argument("--ps-tasks", type=int, metavar="P", help="parameter-server tasks (parameter_server)")
    src.add_argument("--gpus-per-host", type=int, metavar="N",
                     help="GPUs of each worker host, which its worker asks the cluster for (Ray, k8s) and mirrors "
                          "over (default: a --scenario plan's hosts' GPUs, else 0)")
    src.add_argument("--batch", type=int, metavar="N", help="per-replica batch (default: the scenario's, else the file's BATCH_SIZE, else 32)")
    src.add_argument("--keras", choices=("keras3", "tf_keras"),
                     help="run train.py on this Keras (default: the one the plan needs; tf_keras for a one-device or "
                          "one-host plan whose step is faster there, as rung advise may say)")


def workload_path(text: str) -> Path:
    p = Path(text)
    if not p.exists():
        raise InputError(text, None, "no such workload file")
    if p.is_dir() or p.suffix != ".py":
        trains = _workload_of_job(p)
        raise InputError(text, None, "expected a Python file (.py) defining build_model() and make_dataset()"
                         + (f"; this is a job `rung init` wrote, for {trains}: give that file (its "
                            "README.md says how to run the job)" if trains else ""))
    missing, calls = _workload_functions(p)
    if calls:
        raise InputError(text, None, calls[0])
    if missing:
        trains = _JOB_WORKLOAD.search(p.read_text(errors="replace"))
        raise InputError(text, None, f"defines no {' and no '.join(f'{n}()' for n in missing)}: expected a workload "
                         "file defining build_model() and make_dataset() (contract: workload v1)"
                         + (f"; this is the train.py `rung init` wrote, for {json.loads(trains.group(1))}: give "
                            "that file" if trains else ""))
    return p.resolve()


def _workload_functions(p: Path) -> tuple[list[str], list[str]]:
    """Which of build_model and make_dataset the file binds nowhere at its top level (a
    def, an assignment or an import, also under if/try/with), read without importing it;
    and, for those it defines with `def`, how their parameters cannot take rung's calls
    (build_model(), make_dataset(batch_size[, input_context])). A file that cannot be
    parsed, or that imports *, is left to its import."""
    import ast

    try:
        tree = ast.parse(p.read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return [], []
    bound: set[str] = set()
    defs: dict = {}  # the last `def` of each name: a later one replaces an earlier one
    calls: list[str] = []

    def check_call(fn) -> None:
        a = fn.args
        positional = a.posonlyargs + a.args
        required = [x.arg for x in positional[:len(positional) - len(a.defaults)]]
        required += [x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
        if fn.name == "build_model" and required:
            calls.append(build_model_requires_problem(required, fn.lineno))
        elif fn.name == "make_dataset":
            if not positional and a.vararg is None:
                calls.append(f"make_dataset() takes no batch size (line {fn.lineno}), and rung calls "
                             "make_dataset(batch_size, input_context) (contract: workload v1)")
            elif len(required) > 2:
                calls.append(f"make_dataset() requires {', '.join(required)} (line {fn.lineno}), and rung calls "
                             "make_dataset(batch_size, input_context) (contract: workload v1): give the ones "
                             "after the second defaults")

    def visit(body) -> bool:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
                if isinstance(node, ast.FunctionDef) and node.name in ("build_model", "make_dataset"):
                    defs[node.name] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if a.name == "*":
                        return False
                    bound.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.TryStar, ast.With, ast.For, ast.While, ast.Match)):
                parts = [getattr(node, "body", []), getattr(node, "orelse", []), getattr(node, "finalbody", [])]
                parts += [h.body for h in getattr(node, "handlers", [])]
                parts += [c.body for c in getattr(node, "cases", [])]
                if not all(visit(part) for part in parts):
                    return False
        return True

    if not visit(tree.body):
        return [], []
    for fn in defs.values():
        check_call(fn)
    return [n for n in ("build_model", "make_dataset") if n not in bound], calls


_JOB_WORKLOAD = re.compile(r'^WORKLOAD = os\.environ\.get\("RUNG_WORKLOAD", (".*")\)$', re.M)


def _workload_of_job(p: Path) -> Optional[str]:
    """The workload file a folder `rung init` wrote trains (its train.py's WORKLOAD), or
    None for any other path."""
    try:
        found = _JOB_WORKLOAD.search((p / "train.py").read_text(errors="replace")) if p.is_dir() else None
        return json.loads(found.group(1)) if found else None
    except (OSError, ValueError):
        return None


def job_from(args) -> Job:
    if bool(args.scenario) == bool(args.strategy):
        raise InputError("--scenario", None, "give either --scenario FILE or --strategy VERDICT")
    if args.gpus_per_host is not None and args.gpus_per_host < 0:  # before the scenario is read and decided
        raise InputError("--gpus-per-host", None, f"expected 0 or more GPUs, received {args.gpus_per_host}")
    if args.scenario:
        from rung.ladder import advise
        from rung.spec import load_scenario

        s = load_scenario(args.scenario)
        d = advise(s)
        from rung.ladder.options import ladder_scenario
        from rung.ladder.strategy_options import on_gpus
        from rung.spec.catalog import slice_name

        # the hardware the verdict is for: an offer's when the decision chose one (its
        # devices a host, its TPU slice), where the team's was taken (a TPU offer's slice
        # read as "a TPU slice", a box of 8 as the team's host of 1)
        on = ladder_scenario(s, d)
        tpu_slice = slice_name(on.device, d.hosts or 1, on.hardware.devices_per_host) \
            if d.verdict == "tpu" and on.device.slice_hosts else ""
        offer = f" on its offer {d.option} ({on.hardware.devices_per_host} x {on.hardware.device} a host)" \
            if d.option != "hardware" else ""
        job = Job(d.verdict, workers=d.hosts or 1, ps_tasks=d.ps_tasks, batch=s.workload.per_device_batch,
                  tpu_slice=tpu_slice,
                  devices_per_host=on.hardware.devices_per_host, takes_on=list(d.takes_on),
                  gpus_per_host=on.hardware.devices_per_host if on_gpus(on) else 0,
                  source=f"from {args.scenario}: {d.verdict}{offer}", string_inputs=s.workload.string_inputs,
                  steps_per_execution=s.workload.steps_per_execution, jit_compile=bool(s.workload.jit_compile),
                  ragged_or_sparse_inputs=bool(s.workload.ragged_or_sparse_inputs),
                  divides_batch=bool(s.workload.divides_batch), stateful_rnn=bool(s.workload.stateful_rnn_layers),
                  accumulates=s.workload.optimizer_accumulation_steps > 1,
                  gradient_clipping=s.workload.gradient_clipping, step_clipping=s.workload.step_clipping,
                  assigning_metrics=s.workload.assigning_metrics,
                  logged_loss_divided=s.workload.logged_loss_divided, logged_loss_keras=s.workload.step_keras,
                  strategy_failure=s.workload.strategy_failure, step_keras=s.workload.step_keras,
                  strategy_fails_on_one_device=s.workload.strategy_fails_on_one_device,
                  run_eagerly=bool(s.workload.run_eagerly), python_in_pipeline=bool(s.workload.python_in_pipeline),
                  captured_dataset=bool(s.workload.captured_dataset),
                  mixed_float16=s.workload.mixed_precision_policy == "mixed_float16",
                  loss_scaled_for_replicas=s.workload.loss_scaled_for_replicas,
                  compiled_loss_not_scaled=s.workload.compiled_loss_not_scaled,
                  compiled_loss_sums=s.workload.compiled_loss_sums,
                  loss_checked_by="the scenario's workload.loss_scaled_for_replicas: false"
                  if s.workload.loss_scaled_for_replicas is not None else "")
        if args.workers:
            job.workers = args.workers
        if args.ps_tasks:
            job.ps_tasks = args.ps_tasks
    else:
        v = args.strategy
        workers = args.workers or (2 if v in ("multi_worker_mirrored", "parameter_server") else 1)
        ps = args.ps_tasks if args.ps_tasks is not None else (1 if v == "parameter_server" else 0)
        job = Job(v, workers=workers, ps_tasks=ps, source=f"--strategy {v}")
    if args.gpus_per_host is not None:
        job.gpus_per_host = args.gpus_per_host
        if args.gpus_per_host:
            job.devices_per_host = args.gpus_per_host
    # the file's own imports of tf_keras (it runs on tf-keras everywhere) and of Keras 3
    # (tf-keras cannot train it), its literal run_eagerly=True (fit runs without a graph;
    # train.py turns it off under parameter servers), its literal jit_compile=True (parameter servers run it
    # without XLA) and its literal mixed_float16 (parameter servers refuse it): read once, here
    from rung.kerasfit import (accumulation_calls, assigning_metric_calls, clipping_calls, compiled_loss_calls,
                               jit_compile_calls, keras3_imports, mixed_float16_calls, own_step_defs, per_replica_batch_calls, python_input_calls, run_eagerly_calls,
                               stateful_calls, step_clipping_calls, summed_loss_calls, tf_keras_imports,
                               workload_text)

    # (and in the modules it imports from its own folder, where a team keeps its model)
    source, folder = workload_text(args.workload)
    from rung.kerasfit import file_problem

    found = file_problem(source, folder)
    if found:  # every run of the job would fail on it (a multi-worker worker crashed), or train twice: said before writing
        raise InputError(str(args.workload), None, found)
    job.tf_keras_imports, job.keras3_imports = tf_keras_imports(source, folder), keras3_imports(source, folder)
    job.jit_compile_calls = jit_compile_calls(source, folder)
    job.run_eagerly_calls = run_eagerly_calls(source, folder)
    job.python_input_calls = python_input_calls(source, folder)
    job.mixed_float16_calls = mixed_float16_calls(source, folder)
    job.per_replica_batch_calls = per_replica_batch_calls(source, folder)
    job.stateful_calls = stateful_calls(source, folder)
    job.accumulation_calls = accumulation_calls(source, folder)
    job.clipping_calls = clipping_calls(source, folder)
    job.step_clipping_calls = step_clipping_calls(source, folder)
    job.assigning_metric_calls = assigning_metric_calls(source, folder)
    job.own_step_defs = own_step_defs(source, folder)
    job.compiled_loss_calls = compiled_loss_calls(source, folder)
    job.summed_loss_calls = summed_loss_calls(source, folder)
    if args.batch:
        job.batch = args.batch
    elif not args.scenario:  # the file's BATCH_SIZE, as rung profile and rung bench take it (it took 32)
        from rung.kerasfit import file_batch_size

        n, why = file_batch_size(source)
        if why:
            raise InputError(str(args.workload), None, f"{why}: give --batch N (the per-replica batch)")
        if n:
            job.batch = n
    job.keras_asked = getattr(args, "keras", None)
    for flag, value in (("--workers", args.workers), ("--ps-tasks", args.ps_tasks), ("--batch", args.batch)):
        if value is not None and value < (0 if flag == "--ps-tasks" else 1):
            raise InputError(flag, None, f"expected a positive whole number, received {value}")
    check_job(job)
    return job
