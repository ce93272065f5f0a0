"""The job `init` and `launch` work from: a scenario's decision, or a strategy given by
hand. Pure: advise never imports TensorFlow."""

from __future__ import annotations

from pathlib import Path

from rung.errors import InputError
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
    src.add_argument("--batch", type=int, metavar="N", help="per-replica batch (default: the scenario's, else 32)")


def workload_path(text: str) -> Path:
    p = Path(text)
    if not p.exists():
        raise InputError(text, None, "no such workload file")
    if p.is_dir() or p.suffix != ".py":
        raise InputError(text, None, "expected a Python file (.py) defining build_model() and make_dataset()")
    return p.resolve()


def job_from(args) -> Job:
    if bool(args.scenario) == bool(args.strategy):
        raise InputError("--scenario", None, "give either --scenario FILE or --strategy VERDICT")
    if args.scenario:
        from rung.ladder import advise
        from rung.spec import load_scenario

        s = load_scenario(args.scenario)
        d = advise(s)
        job = Job(d.verdict, workers=d.hosts or 1, ps_tasks=d.ps_tasks, batch=s.workload.per_device_batch,
                  devices_per_host=s.hardware.devices_per_host, takes_on=list(d.takes_on),
                  source=f"from {args.scenario}: {d.verdict}", string_inputs=s.workload.string_inputs,
                  steps_per_execution=s.workload.steps_per_execution, jit_compile=bool(s.workload.jit_compile),
                  ragged_or_sparse_inputs=bool(s.workload.ragged_or_sparse_inputs),
                  divides_batch=bool(s.workload.divides_batch), stateful_rnn=bool(s.workload.stateful_rnn_layers),
                  accumulates=s.workload.optimizer_accumulation_steps > 1,
                  strategy_failure=s.workload.strategy_failure, step_keras=s.workload.step_keras,
                  strategy_fails_on_one_device=s.workload.strategy_fails_on_one_device,
                  run_eagerly=bool(s.workload.run_eagerly), python_in_pipeline=bool(s.workload.python_in_pipeline))
        if args.workers:
            job.workers = args.workers
        if args.ps_tasks:
            job.ps_tasks = args.ps_tasks
    else:
        v = args.strategy
        workers = args.workers or (2 if v in ("multi_worker_mirrored", "parameter_server") else 1)
        ps = args.ps_tasks if args.ps_tasks is not None else (1 if v == "parameter_server" else 0)
        job = Job(v, workers=workers, ps_tasks=ps, source=f"--strategy {v}")
    # the file's own imports of tf_keras (it runs on tf-keras everywhere) and of Keras 3
    # (tf-keras cannot train it), its literal run_eagerly=True (fit runs without a graph;
    # train.py turns it off under parameter servers), and its literal jit_compile=True (parameter servers run it
    # without XLA): read once, here
    from rung.kerasfit import (accumulation_calls, jit_compile_calls, keras3_imports, per_replica_batch_calls, python_input_calls,
                               run_eagerly_calls, source_of, stateful_calls, tf_keras_imports)

    source = source_of(args.workload)
    job.tf_keras_imports, job.keras3_imports = tf_keras_imports(source), keras3_imports(source)
    job.jit_compile_calls = jit_compile_calls(source)
    job.run_eagerly_calls = run_eagerly_calls(source)
    job.python_input_calls = python_input_calls(source)
    job.per_replica_batch_calls = per_replica_batch_calls(source)
    job.stateful_calls = stateful_calls(source)
    job.accumulation_calls = accumulation_calls(source)
    if args.batch:
        job.batch = args.batch
    for flag, value in (("--workers", args.workers), ("--ps-tasks", args.ps_tasks), ("--batch", args.batch)):
        if value is not None and value < (0 if flag == "--ps-tasks" else 1):
            raise InputError(flag, None, f"expected a positive whole number, received {value}")
    check_job(job)
    return job
