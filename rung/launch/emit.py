"""A decision turned into files a team runs: train.py for the verdict, wired to the
team's unchanged workload file, its Ray launcher, Kubernetes manifests and a README.
Pure: templates filled in, nothing imported or run (contract: launch-v1.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Optional

from rung.errors import InputError
from rung.kerasfit import TF_KERAS_STRATEGIES, keras3_import_problem, keras3_mirrored_failures, tf_keras_reason
from rung.ladder.codes import STRATEGY

TEMPLATES = Path(__file__).parent / "templates"
# Keras 3 cannot run multi-worker or parameter-server fit (tensorflow#72388,
# keras-team/keras#18624): those verdicts run on tf-keras (DESIGN.md).
LEGACY_KERAS = ("multi_worker_mirrored", "parameter_server")
RUNNABLE = ("single_device", "mirrored", "multi_worker_mirrored", "parameter_server", "tpu")


@dataclass
class Job:
    """What init needs of a decision: the verdict, the plan's size, the per-device batch."""

    verdict: str
    workers: int = 1
    # a TPU plan's slice (rung.spec.catalog.slice_name), from a scenario: "TPU-v4-32"
    tpu_slice: str = ""
    ps_tasks: int = 0
    batch: int = 32
    devices_per_host: int = 1
    # the plan's GPUs a worker host (its devices_per_host when the scenario's hardware is
    # GPUs; 0 for CPUs, TPUs, or a plan given by --strategy alone): what launch_ray.py asks
    # Ray for each worker and the k8s manifests' worker pods ask the cluster for
    gpus_per_host: int = 0
    strategy_options: dict = field(default_factory=dict)
    takes_on: list[str] = field(default_factory=list)
    source: str = "rung init"
    # what Keras 3's mirrored fit cannot run (rung.kerasfit), from the profile: tf-keras can
    string_inputs: bool = False
    steps_per_execution: int = 1
    ragged_or_sparse_inputs: bool = False
    # the workload file's own `import tf_keras` (rung.kerasfit.tf_keras_imports): its model
    # is a tf-keras model, so every strategy's train.py runs on tf-keras
    tf_keras_imports: list[str] = field(default_factory=list)
    # its own imports of Keras 3 (rung.kerasfit.keras3_imports): KERAS3_IMPORT
    keras3_imports: list[str] = field(default_factory=list)
    # its calls with jit_compile=True (rung.kerasfit.jit_compile_calls), or the scenario's
    # measured jit_compile: JIT_COMPILE under parameter servers
    jit_compile_calls: list[str] = field(default_factory=list)
    jit_compile: bool = False
    # its calls with run_eagerly=True (rung.kerasfit.run_eagerly_calls), or the scenario's
    # measured run_eagerly: RUN_EAGERLY
    run_eagerly_calls: list[str] = field(default_factory=list)
    run_eagerly: bool = False
    # its calls that put Python into the pipeline (rung.kerasfit.python_input_calls), or the
    # scenario's measured python_in_pipeline: PYTHON_PIPELINE under parameter servers
    python_input_calls: list[str] = field(default_factory=list)
    python_in_pipeline: bool = False
    # the scenario's measured captured_dataset: CAPTURED_DATASET under parameter servers
    captured_dataset: bool = False
    # its calls that name the mixed_float16 policy (rung.kerasfit.mixed_float16_calls), or the
    # scenario's workload.mixed_precision_policy: STRATEGY_FAILS under parameter servers
    mixed_float16_calls: list[str] = field(default_factory=list)
    mixed_float16: bool = False
    # its calls of get_per_replica_batch_size (rung.kerasfit.per_replica_batch_calls), or
    # the scenario's measured divides_batch: BATCH_DIVIDED where the context has replicas
    per_replica_batch_calls: list[str] = field(default_factory=list)
    divides_batch: bool = False
    # its calls with stateful=True (rung.kerasfit.stateful_calls), or the scenario's counted
    # stateful_rnn_layers: STATEFUL_RNN where train.py runs on tf-keras
    stateful_calls: list[str] = field(default_factory=list)
    stateful_rnn: bool = False
    # its optimizers built with gradient_accumulation_steps (rung.kerasfit.accumulation_calls),
    # or the scenario's measured optimizer_accumulation_steps: GRADIENT_ACCUMULATION
    accumulation_calls: list[str] = field(default_factory=list)
    accumulates: bool = False
    # its optimizers built with clipping (rung.kerasfit.clipping_calls), or the scenario's
    # measured gradient_clipping: Keras 3 clips each replica's share (CLIPPING_PER_REPLICA),
    # so a mirrored train.py runs on tf-keras, which clips the sum
    clipping_calls: list[str] = field(default_factory=list)
    gradient_clipping: Optional[str] = None
    # clipping calls in its own train_step (rung.kerasfit.step_clipping_calls), or the
    # scenario's step_clipping: each replica's gradients clipped alone (CLIPPING_PER_REPLICA)
    step_clipping_calls: list[str] = field(default_factory=list)
    step_clipping: Optional[str] = None
    # assign calls in its own metrics' update_state (rung.kerasfit.assigning_metric_calls), or
    # the scenario's assigning_metrics: shown as N replicas' values summed (METRIC_SUMMED)
    assigning_metric_calls: list[str] = field(default_factory=list)
    assigning_metrics: Optional[str] = None
    # the scenario's logged_loss_divided, or rung launch's replica check, and the Keras it was
    # read on (what fit shows differs between them): LOGGED_LOSS_DIVIDED
    logged_loss_divided: Optional[bool] = None
    logged_loss_keras: Optional[str] = None
    # the scenario's strategy_failure and the Keras it was seen on (step_keras): STRATEGY_FAILS
    strategy_failure: Optional[str] = None
    strategy_fails_on_one_device: bool = False
    step_keras: Optional[str] = None
    # `--keras`: the Keras asked for (tf_keras for a one-host plan whose step is faster there;
    # keras3 where the plan needs tf-keras is refused)
    keras_asked: Optional[str] = None
    # the model's own train_step / compute_loss methods (rung.kerasfit.own_step_defs), and
    # whether its loss is divided across replicas: the scenario's loss_scaled_for_replicas or
    # rung launch's replica check (None: not checked), with where that came from
    own_step_defs: list[str] = field(default_factory=list)
    loss_scaled_for_replicas: Optional[bool] = None
    # the file's compile(loss=...) of a loss it defines (rung.kerasfit.compiled_loss_calls),
    # and the losses the scenario's or rung launch's check found Keras 3 leaves undivided
    compiled_loss_calls: list[str] = field(default_factory=list)
    compiled_loss_not_scaled: Optional[str] = None
    # the file's losses made with reduction="sum" or "none" (rung.kerasfit.summed_loss_calls),
    # and those the scenario's or rung launch's check found compiled (summing on either Keras)
    summed_loss_calls: list[str] = field(default_factory=list)
    compiled_loss_sums: Optional[str] = None
    loss_checked_by: str = ""
    # nothing to say of a loss nobody checked: the check was skipped by --no-replica-check, or
    # the step cannot run under the strategy at all (train.py stops on that, in its words)
    loss_check_quiet: bool = False

    @property
    def strategy_class(self) -> str:
        return STRATEGY["single_device" if self.verdict == "fix_input_pipeline" else self.verdict]

    @property
    def legacy_keras(self) -> bool:
        """train.py runs on tf-keras: the strategy needs it, a mirrored model Keras 3 cannot fit,
        the workload builds its model with tf_keras itself, --keras tf_keras asked for it, or a
        one-host plan's step was measured there (the scenario's step_keras)."""
        return bool(self.legacy_keras_why)

    @property
    def legacy_keras_why(self) -> str:
        """Why train.py runs on tf-keras ("" when it does not)."""
        needed = self.tf_keras_needed()
        if needed:
            return needed
        if self.keras_asked == "tf_keras":
            return "--keras tf_keras asked for it"
        if self.keras_asked is None and self.step_keras == "tf_keras" and self.script_verdict in ("single_device",
                                                                                                 "mirrored"):
            return "the plan's step was measured on tf-keras (the scenario's workload.step_keras), so it runs there"
        return ""

    def tf_keras_needed(self) -> str:
        """Why train.py must run on tf-keras, whatever was asked ("" when it need not)."""
        if self.tf_keras_imports:
            return f"{tf_keras_reason(self.tf_keras_imports)}, so its model is a tf-keras model"
        if self.script_verdict in LEGACY_KERAS:
            return "Keras 3 cannot run this strategy's model.fit (tensorflow#72388, keras-team/keras#18624)"
        if self.script_verdict == "mirrored" and self.keras3_failures:
            return "; ".join(w for _, w in self.keras3_failures)
        return ""

    @property
    def keras3_failures(self) -> list[tuple[str, str]]:
        return keras3_mirrored_failures(self.string_inputs, self.steps_per_execution, self.ragged_or_sparse_inputs,
                                        None if self.keras3_imports or self.keras_asked == "keras3" else self.clipping)

    @property
    def clipping(self) -> Optional[str]:
        """The model's clipping: the scenario's measured one, else the file's calls."""
        return self.gradient_clipping or (", ".join(c.rsplit(" (line", 1)[0] for c in self.clipping_calls) or None)

    @property
    def script_verdict(self) -> str:
        """The strategy train.py runs (an input-bound job is trained on one device, as it is)."""
        return "single_device" if self.verdict == "fix_input_pipeline" else self.verdict


def check_job(job: Job) -> None:
    if job.verdict == "needs_sharding":
        raise InputError("--strategy", None, "needs_sharding: the model does not fit one device, and every "
                                             "tf.distribute strategy replicates it; there is no data-parallel "
                                             "entry point to generate (shard parameters and optimizer state)")
    if job.verdict not in RUNNABLE + ("fix_input_pipeline",):
        raise InputError("--strategy", None, f"unknown verdict {job.verdict!r}; expected one of "
                                             f"{', '.join(RUNNABLE)}")
    if job.keras_asked == "keras3" and job.tf_keras_needed():
        raise InputError("--keras", None, f"keras3 cannot run this plan: {job.tf_keras_needed()}; leave --keras out "
                                          "(train.py then runs on tf-keras)")
    if job.verdict == "multi_worker_mirrored" and job.workers < 2:
        raise InputError("--workers", None, f"{job.verdict} needs 2 or more workers, received {job.workers}")
    if job.verdict == "parameter_server" and (job.workers < 1 or job.ps_tasks < 1):
        raise InputError("--ps-tasks", None, "parameter_server needs at least one worker and one ps task")


def _run_help(job: Job, out: str, workload: Optional[Path] = None) -> str:
    v = job.script_verdict
    if v == "single_device":
        return "  python train.py --steps 100\n"
    if v == "mirrored":
        return ("  python train.py --steps 100            # every GPU of this host\n"
                "  python train.py --cpu-devices 2        # no GPU: two logical CPU devices, to try it\n")
    if v == "tpu":
        return (f"  TPU_NAME=my-tpu python train.py --steps 100   # my-tpu: the "
                f"{job.tpu_slice + ' ' if job.tpu_slice else ''}slice's name\n")
    # the whole command, with the job's own tasks (`rung tf-config --all` alone is refused:
    # --strategy and --workers are required)
    def named(kind: str, n: int) -> str:  # a long list as the shell's seq writes it
        return ",".join(f"{kind}{i}:2222" for i in range(n)) if n <= 4 else \
            f"$(seq -s, -f '{kind}%g:2222' 0 {n - 1})"

    hosts = named("worker", job.workers)
    tasks = f" --chief chief:2222 --ps {named('ps', job.ps_tasks or 0)}" if v == "parameter_server" else ""
    lines = ["  On every task, its own TF_CONFIG (with your hosts' addresses; this prints every task's):",
             f"    rung tf-config --strategy {v} --workers {hosts}{tasks} --all",
             "  then on each:",
             "    python train.py --steps 100 --checkpoint-dir /shared/checkpoints",
             f"  Or all on this machine: rung launch {workload or 'WORKLOAD.py'} --strategy {v} --workers {job.workers}"
             + (f" --ps-tasks {job.ps_tasks}" if v == "parameter_server" else "") + " --engine local",
             f"  On a Ray cluster: python {out}/launch_ray.py --address HEAD:6379"
             + (" --checkpoint-dir /shared/checkpoints  (a folder every node mounts)"
                if v == "multi_worker_mirrored" else "")
             + (f"\n    (each worker asks Ray for the plan's {job.gpus_per_host} GPU(s); --gpus-per-worker 0 runs "
                "them on CPUs)" if job.gpus_per_host else "")]
    return "\n".join(lines) + "\n"


def train_py(job: Job, workload: Path) -> str:
    v = job.script_verdict
    code = (TEMPLATES / f"{v}.py.tmpl").read_text()
    code = Template(code).safe_substitute(sharded_input=(TEMPLATES / "sharded_input.py.tmpl").read_text())
    keras = ""
    if job.legacy_keras:
        why = job.legacy_keras_why
        keras = (f"\n# {why}:\n"
                 "# use tf-keras, chosen before anything imports TensorFlow.\n"
                 "os.environ.setdefault(\"TF_USE_LEGACY_KERAS\", \"1\")\n")
    if v == "parameter_server":
        keras += ("# Let the coordinator, not gRPC, decide what a lost worker means (TensorFlow's PS guide).\n"
                  "os.environ.setdefault(\"GRPC_FAIL_FAST\", \"use_caller\")\n")
    extra = ""
    if v == "mirrored":
        extra = ("    p.add_argument(\"--cpu-devices\", type=int, default=2,\n"
                 "                   help=\"logical CPU devices to mirror over when there is no GPU\")\n")
    if v == "multi_worker_mirrored":
        extra = ("    p.add_argument(\"--save-every\", type=int, default=0,\n"
                 "                   help=\"back up every N steps (default: every epoch)\")\n"
                 "    p.add_argument(\"--collective-timeout\", type=float,\n"
                 "                   default=float(os.environ.get(\"RUNG_COLLECTIVE_TIMEOUT\",\n"
                 "                                                STRATEGY_OPTIONS.get(\"timeout_seconds\", 600))),\n"
                 "                   help=\"seconds before a dead peer fails a collective (0: wait forever)\")\n")
    body = ["    strategy = make_strategy(tf, args)",
            "    workload = load_workload(WORKLOAD)",
            "    with strategy.scope():",
            "        model = build(workload)  # variables and optimizer created under the strategy",
            "    check_model(tf, model)",
            "    global_batch = args.batch * strategy.num_replicas_in_sync",
            "    report = reporting(tf, args, global_batch)",
            "    callbacks = [report] + extra_callbacks(tf, args)  # the report's clock stops before a backup is written",
            "    model.fit(make_input(tf, workload, strategy, args), epochs=args.epochs, steps_per_epoch=args.steps,",
            "              callbacks=callbacks, verbose=0, shuffle=False)  # the pipeline shuffles, if it should",
            "    return report.last  # the last epoch's report"]
    if v == "mirrored":
        body.insert(body.index("    check_model(tf, model)") + 1, "    check_optimizers(tf, model, strategy)")
    if v in ("multi_worker_mirrored", "parameter_server"):
        body.insert(body.index("    check_model(tf, model)") + 1,
                    f"    check_workers_input(tf, workload, args, parameter_servers={v == 'parameter_server'})")
    if v == "parameter_server":
        body.insert(body.index("    check_model(tf, model)") + 1, "    without_xla(model)")
        body.insert(body.index("    without_xla(model)") + 1, "    with_a_graph(model)")
        body.insert(body.index("    with_a_graph(model)") + 1, "    without_python_input(tf, workload, args)")
        fit = next(i for i, line in enumerate(body) if line.startswith("    model.fit("))
        body = ["    if serve(tf):", "        return None"] + body[:fit] + [
            "    watching = watch_progress(model)", "    try:"] + ["    " + line for line in body[fit:]] + [
            "    finally:", "        watching.set()"]
    # a failure rung knows, met only under the strategy: one line with what to change
    fit = next(i for i, line in enumerate(body) if line.lstrip().startswith("model.fit("))
    pad = body[fit][:len(body[fit]) - len(body[fit].lstrip())]
    body = body[:fit] + [pad + "try:"] + ["    " + line for line in body[fit:fit + 2]] + [
        pad + "except Exception as e:  # noqa: BLE001 - re-raised unless rung knows it",
        pad + "    stop_on_known_failure(model, e)", pad + "    raise"] + body[fit + 2:]
    about = "\n".join(f"- {t}" for t in job.takes_on) + ("\n" if job.takes_on else "")
    if job.verdict == "fix_input_pipeline":
        about = ("The decision was fix_input_pipeline: the device waits on its input. This trains on\n"
                 "one device as it is; fix the pipeline (rung profile --try-fixes), then ask again.\n")
    return Template((TEMPLATES / "train.py.tmpl").read_text()).substitute(
        workload_name=workload.name, strategy_class=job.strategy_class, source=job.source,
        about=about, run_help=_run_help(job, "."), keras_block=keras, workload_path=json.dumps(str(workload)),
        batch=job.batch, verdict=v, options=repr(dict(job.strategy_options)), extra_args=extra,
        strategy_code=code, main_body="\n".join(body), warnings=_string_list(train_time_warnings(job)))


def _string_list(texts: list[str], width: int = 88) -> str:
    """A list of strings as Python source a person reads: each string cut at words into
    adjacent literals of about `width` characters."""
    import textwrap

    if not texts:
        return "[]"
    items = []
    for text in texts:
        parts = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False, drop_whitespace=False)
        items.append("    (" + "\n     ".join(json.dumps(p) for p in parts) + "),")
    return "[\n" + "\n".join(items) + "\n]"


def train_time_warnings(job: Job) -> list[str]:
    """What train.py says before every run: what rung knew of the model that training itself
    would not show (an update N times too large trains on, silently)."""
    found = loss_not_scaled_note(job)
    return [found] if found and found.startswith("LOSS_NOT_SCALED") else []


def keras3_import_note(job: Job) -> Optional[str]:
    """KERAS3_IMPORT: train.py runs on tf-keras (for this strategy, or because --keras or the
    scenario's step asked it), and the workload file imports Keras 3 itself (rung.kerasfit),
    so its model may be one tf-keras cannot train (train.py then stops at once, saying so).
    None when that cannot happen."""
    if not job.legacy_keras or not job.keras3_imports:
        return None
    why = (f"Keras 3's fit cannot run {job.script_verdict}" if job.script_verdict in TF_KERAS_STRATEGIES
           else job.legacy_keras_why)
    return f"KERAS3_IMPORT: train.py runs on tf-keras ({why}); {keras3_import_problem(job.keras3_imports)}"


def jit_compile_note(job: Job) -> Optional[str]:
    """JIT_COMPILE: train.py runs parameter servers and the model compiles its step with
    XLA, which a worker cannot run against the ps tasks' variables; train.py turns XLA off
    there (and says so when it does). None when that cannot happen."""
    if job.script_verdict != "parameter_server" or not (job.jit_compile_calls or job.jit_compile):
        return None
    where = f": {job.jit_compile_calls[0]}{', ...' if len(job.jit_compile_calls) > 1 else ''};" \
        if job.jit_compile_calls else " (the profile measured it so), and"
    return (f"JIT_COMPILE: the model compiles its training step with XLA{where} an XLA step on a worker "
            "cannot read the variables the ps tasks hold; train.py turns XLA off under ParameterServerStrategy "
            "and says so, so the workers run the step without it")


def run_eagerly_note(job: Job) -> Optional[str]:
    """RUN_EAGERLY: the model is compiled with run_eagerly=True, so fit runs every step op by
    op, on any strategy; under parameter servers tf-keras refuses it and train.py turns it
    off (and says so when it does). None when the file does not ask for it."""
    if not (job.run_eagerly_calls or job.run_eagerly):
        return None
    where = f": {job.run_eagerly_calls[0]}{', ...' if len(job.run_eagerly_calls) > 1 else ''};" \
        if job.run_eagerly_calls else " (the profile measured it so), and"
    switch = any(c.startswith("run_functions_eagerly") for c in job.run_eagerly_calls)
    compiled = any(not c.startswith("run_functions_eagerly") for c in job.run_eagerly_calls) \
        or not job.run_eagerly_calls
    then = ("tf-keras refuses it under ParameterServerStrategy, so train.py turns it off there and says so"
            if job.script_verdict == "parameter_server" and compiled else
            "train.py keeps it, as the file asks: remove it to train with a graph")
    what = ("the file runs every tf.function eagerly" if switch and not compiled
            else "the model is compiled with run_eagerly=True")
    return f"RUN_EAGERLY: {what}{where} Keras's fit runs every step op by op in Python, without a graph; {then}"


def _where(calls: list[str], otherwise: str) -> str:
    """Where a note's finding comes from: the file's calls, read from its text, else the profile."""
    return f" (the file calls {', '.join(calls)})" if calls else f" ({otherwise})"


def _ps_stop_note(job: Job, code: str, calls: list[str], measured: bool, otherwise: str, problem: str,
                  then: str) -> Optional[str]:
    """A parameter-server job's note of what stops its train.py: the file's `calls` (read
    from its text) or the profile's `measured` finding; None for another strategy or when
    neither says so."""
    if job.script_verdict != "parameter_server" or not (calls or measured):
        return None
    return f"{code}{_where(calls, otherwise)}: {problem}. {then}"


def python_pipeline_note(job: Job) -> Optional[str]:
    """PYTHON_PIPELINE: train.py runs parameter servers and the pipeline runs Python, which
    only the coordinator can run; train.py stops before training (where rung is installed).
    None when that cannot happen."""
    from rung.failures import PS_PYTHON_PROBLEM

    return _ps_stop_note(job, "PYTHON_PIPELINE", job.python_input_calls, job.python_in_pipeline,
                         "the profile found it", PS_PYTHON_PROBLEM,
                         "train.py stops before training on such a pipeline where rung is installed")


def mixed_float16_note(job: Job) -> Optional[str]:
    """STRATEGY_FAILS: train.py runs parameter servers and the model uses the mixed_float16
    policy, which tf-keras refuses there; train.py stops when it does, with what to change.
    None when that cannot happen."""
    from rung.failures import MIXED_FLOAT16_PS_PROBLEM

    return _ps_stop_note(job, "STRATEGY_FAILS", job.mixed_float16_calls, job.mixed_float16,
                         "the profile read the policy", MIXED_FLOAT16_PS_PROBLEM,
                         "train.py stops when tf-keras refuses it, saying what to change")


def captured_dataset_note(job: Job) -> Optional[str]:
    """CAPTURED_DATASET: train.py runs parameter servers and the profile found make_dataset
    building on a dataset made outside it; train.py stops before training (where rung is
    installed). None when that cannot happen."""
    if job.script_verdict != "parameter_server" or not job.captured_dataset:
        return None
    from rung.failures import PS_CAPTURED_DATASET_PROBLEM

    return (f"CAPTURED_DATASET (the profile found it): {PS_CAPTURED_DATASET_PROBLEM}. train.py stops before training "
            "on such a pipeline where rung is installed")


def batch_divided_note(job: Job) -> Optional[str]:
    """BATCH_DIVIDED: train.py passes make_dataset the per-replica batch with an InputContext
    of several replicas (multi-worker; parameter servers with several devices a worker), and
    the file divides it by them (get_per_replica_batch_size). None when that cannot happen."""
    replicas = (job.workers * job.devices_per_host if job.script_verdict == "multi_worker_mirrored" else
                job.devices_per_host if job.script_verdict == "parameter_server" else 1)
    if replicas < 2 or not (job.per_replica_batch_calls or job.divides_batch):
        return None
    where = _where(job.per_replica_batch_calls, "the profile found it")
    return (f"BATCH_DIVIDED{where}: train.py passes make_dataset the per-replica batch ({job.batch}), and dividing "
            f"it by the InputContext's {replicas} replicas, as TensorFlow's tutorial does for a global batch, trains "
            f"each replica on {job.batch // replicas} examples a step while train.py counts {job.batch}: use "
            "batch_size as it is")


def stateful_rnn_note(job: Job) -> Optional[str]:
    """STATEFUL_RNN: train.py runs on tf-keras, which builds no stateful RNN under a
    tf.distribute strategy, and the model has one. None when that cannot happen."""
    if not job.legacy_keras or not (job.stateful_calls or job.stateful_rnn):
        return None
    from rung.kerasfit import STATEFUL_RNN_PROBLEM

    where = _where(job.stateful_calls, "the profile counted them")
    return f"STATEFUL_RNN{where}: train.py runs {job.script_verdict} on tf-keras, and {STATEFUL_RNN_PROBLEM}"


def accumulation_note(job: Job) -> Optional[str]:
    """GRADIENT_ACCUMULATION: train.py runs a replicated strategy, and the model's optimizer
    accumulates its gradients itself. None when that cannot happen."""
    if job.script_verdict == "single_device" or not (job.accumulation_calls or job.accumulates):
        return None
    from rung.kerasfit import ACCUMULATION_PROBLEM

    where = _where(job.accumulation_calls, "the profile read it")
    return f"GRADIENT_ACCUMULATION{where}: train.py runs {job.script_verdict}, and {ACCUMULATION_PROBLEM}"


def clipping_note(job: Job) -> Optional[str]:
    """CLIPPING_PER_REPLICA: train.py runs mirrored or TPUStrategy on Keras 3 (the file builds
    its model from Keras 3, or --keras keras3 asked for it), and the model's optimizer clips:
    Keras 3 clips each replica's share before the all-reduce. None when that cannot happen."""
    from rung.kerasfit import SCALED_THRESHOLD, clipping_problem

    if job.script_verdict not in ("mirrored", "tpu") or not job.clipping or job.legacy_keras:
        return None
    where = _where(job.clipping_calls, "the profile read it")
    return (f"CLIPPING_PER_REPLICA{where}: train.py runs {job.script_verdict} on Keras 3, and "
            f"{clipping_problem(job.clipping)}. Divide the threshold by the number of replicas, {SCALED_THRESHOLD}"
            + (", or build the model from tf.keras: train.py then runs on tf-keras, which clips the sum"
               if job.script_verdict == "mirrored" else ""))


def logged_loss_note(job: Job) -> Optional[str]:
    """LOGGED_LOSS_DIVIDED: train.py sums several replicas' gradients, and the model's own
    train_step logs its replica's share of the loss. None when that cannot happen."""
    from rung.kerasfit import logged_loss_problem

    n = synchronous_replicas(job)
    if n is None or not job.logged_loss_divided or \
            job.logged_loss_keras not in (None, "tf_keras" if job.legacy_keras else "keras3"):
        return None
    return f"LOGGED_LOSS_DIVIDED: train.py runs {job.strategy_class}, and {logged_loss_problem(str(n) if n else 'N')}"


def metric_summed_note(job: Job) -> Optional[str]:
    """METRIC_SUMMED: train.py sums several replicas, and a metric of the file's own sets its
    state with assign, which fit reads as the replicas' sum. None when that cannot happen."""
    from rung.kerasfit import metric_summed_problem

    n = synchronous_replicas(job)
    found = "; ".join(job.assigning_metric_calls) or job.assigning_metrics
    if n is None or not found:
        return None
    return f"METRIC_SUMMED: train.py runs {job.strategy_class}, and {metric_summed_problem(found, str(n) if n else 'N')}"


def step_clipping_note(job: Job) -> Optional[str]:
    """CLIPPING_PER_REPLICA: train.py sums several replicas' gradients, and the model's own
    train_step clips them, once per replica. None when that cannot happen."""
    from rung.kerasfit import STEP_CLIPPING_FIX, step_clipping_problem

    calls = "; ".join(job.step_clipping_calls) or job.step_clipping
    if synchronous_replicas(job) is None or not calls:
        return None
    return (f"CLIPPING_PER_REPLICA: train.py runs {job.strategy_class}, and {step_clipping_problem(calls)}. "
            f"{STEP_CLIPPING_FIX}")


def strategy_fails_note(job: Job) -> Optional[str]:
    """STRATEGY_FAILS: the scenario says the step failed under MirroredStrategy on the Keras
    this train.py runs (rung profile's replica check). None when that cannot happen."""
    keras = "tf_keras" if job.legacy_keras else "keras3"
    one_device_too = job.strategy_fails_on_one_device
    if not job.strategy_failure or (job.script_verdict == "single_device" and not one_device_too) \
            or job.step_keras != keras:
        return None
    if one_device_too:
        return (f"STRATEGY_FAILS: the model's fit fails under every tf.distribute strategy on "
                f"{keras.replace('_', '-')}, which train.py runs {job.script_verdict} on: {job.strategy_failure}")
    return (f"STRATEGY_FAILS: the model's step failed under MirroredStrategy on {keras.replace('_', '-')}, which "
            f"train.py runs {job.script_verdict} on (rung profile's replica check): {job.strategy_failure}")


def synchronous_replicas(job: Job) -> Optional[int]:
    """How many replicas' gradients train.py sums each step: the devices of the host for
    mirrored (0: all of them, which a plan by hand does not count; --cpu-devices 2 where
    there is no GPU), every worker's for multi-worker; None where nothing is summed
    across replicas (one device; parameter-server workers each apply their own)."""
    v = job.script_verdict
    if v == "mirrored":
        return job.devices_per_host if job.devices_per_host > 1 else 0
    if v == "multi_worker_mirrored":
        return job.workers * job.devices_per_host
    if v == "tpu":
        return 0
    return None


def loss_not_scaled_note(job: Job) -> Optional[str]:
    """LOSS_NOT_SCALED: train.py sums several replicas' gradients, and the model's own
    train_step (or compute_loss) does not divide its loss by the global batch (the scenario
    says so, or rung launch's replica check found it). For a model with its own step that
    nobody checked, a line saying what checks it. None otherwise."""
    from rung.kerasfit import LOSS_NOT_SCALED_FIX

    n = synchronous_replicas(job)
    if n is None:
        return None
    summed = (f"the gradients of its {n} replicas, so every update is {n} times" if n else
              "the gradients of its replicas, so under N replicas every update is N times")
    keras3 = not job.legacy_keras
    by = job.loss_checked_by or "the scenario says so"
    if job.compiled_loss_not_scaled:  # Keras's step, the file's loss: undivided on Keras 3 alone
        if not keras3:
            return None  # tf-keras divides it
        from rung.kerasfit import compiled_loss_problem

        return (f"LOSS_NOT_SCALED ({by}): {job.strategy_class} sums the gradients of its replicas on Keras 3, and "
                f"{compiled_loss_problem(job.compiled_loss_not_scaled, str(n) if n else 'N')}")
    if job.compiled_loss_sums:  # Keras's step and loss, made to sum: on either Keras
        from rung.kerasfit import summed_loss_problem

        return (f"LOSS_NOT_SCALED ({by}): {job.strategy_class} sums the gradients of its replicas, and "
                f"{summed_loss_problem(job.compiled_loss_sums, str(n) if n else 'N')}")
    if job.loss_scaled_for_replicas is False:
        if job.step_clipping_calls or job.step_clipping:  # the check compares clipped gradients
            return (f"LOSS_NOT_SCALED ({by}): {job.strategy_class} sums "
                    f"{summed} what one device takes; the train_step's own clipping alone gives that once it "
                    "bites (CLIPPING_PER_REPLICA, below), so the loss may be divided by the global batch after "
                    f"all: clip after the sum and check again. If it stays: {LOSS_NOT_SCALED_FIX}")
        return (f"LOSS_NOT_SCALED ({by}): the model's own train_step (or "
                f"compute_loss) does not divide its loss by the global batch, and {job.strategy_class} sums "
                f"{summed} what one device takes. {LOSS_NOT_SCALED_FIX}")
    if job.loss_scaled_for_replicas is not None or job.loss_check_quiet:
        return None
    # nobody checked it: what would, and why it matters
    said = (f"({job.loss_checked_by})" if job.loss_checked_by else
            "(rung init runs nothing): `rung launch` and `rung profile` check it (LOSS_NOT_SCALED)")
    if job.own_step_defs:
        return (f"the model has its own step ({_first_two(job.own_step_defs)}), and whether it divides its loss by "
                f"the global batch under {job.strategy_class} is not known {said}")
    if job.summed_loss_calls:
        return (f"the model makes a loss that sums over the batch ({_first_two(job.summed_loss_calls)}); compiled, "
                f"it is summed over each replica's batch and {job.strategy_class} sums the replicas' gradients, so "
                f"every update is N times one device's step at the same per-device batch, on either Keras; whether "
                f"it is the compiled loss is not known {said}")
    if job.compiled_loss_calls and keras3:
        return (f"the model compiles a loss of its own ({_first_two(job.compiled_loss_calls)}); Keras 3 divides it "
                f"across the replicas of {job.strategy_class} only if it returns per-example losses (one number, its "
                f"own mean, is left undivided: every update N times one device's), and which it returns is not "
                f"known {said}")
    return None


def _first_two(found: list[str]) -> str:
    return ", ".join(found[:2]) + (", ..." if len(found) > 2 else "")


def notes(job: Job) -> list[str]:
    """What rung init says about the job before anything runs (stderr, and the README)."""
    found = (strategy_fails_note(job), mixed_float16_note(job), loss_not_scaled_note(job), accumulation_note(job), clipping_note(job),
             step_clipping_note(job), logged_loss_note(job), metric_summed_note(job),
             stateful_rnn_note(job),
             keras3_import_note(job), python_pipeline_note(job), captured_dataset_note(job), run_eagerly_note(job),
             jit_compile_note(job), batch_divided_note(job))
    return [n for n in found if n]


def readme(job: Job, workload: Path, files: list[str]) -> str:
    v = job.verdict
    size = {"multi_worker_mirrored": f"{job.workers} workers",
            "parameter_server": f"{job.workers} workers, {job.ps_tasks} parameter-server task(s) and a chief",
            "mirrored": "one host, all its devices",
            "tpu": (f"a {job.tpu_slice} slice ({job.workers} host{'s' if job.workers > 1 else ''} of "
                    f"{job.devices_per_host} devices, one ICI domain)" if job.tpu_slice else "a TPU slice")
            }.get(v, "one device")
    lines = [f"# {v}: training {workload.name}", "",
             f"Generated by `rung init` ({job.source}): `{job.strategy_class or 'no strategy'}` on {size}.",
             f"The workload file `{workload}` is imported unchanged.", "", "## Files", ""]
    lines += [f"- `{f}`" for f in files]
    lines += ["", "## Run it", "", "```sh", _run_help(job, ".", workload).rstrip(), "```", ""]
    if job.takes_on:
        lines += ["## What you take on with this rung", ""] + [f"- {t}" for t in job.takes_on] + [""]
    if job.legacy_keras:
        why = job.legacy_keras_why
        lines += [f"`train.py` sets `TF_USE_LEGACY_KERAS=1` before TensorFlow starts: {why}. "
                  "Install `tf-keras` beside `tensorflow`.", ""]
    for note in notes(job):
        lines += [f"**{note}**", ""]
    return "\n".join(lines)


def launch_ray_py(job: Job) -> str:
    return Template((TEMPLATES / "launch_ray.py.tmpl").read_text()).substitute(
        verdict=job.script_verdict, source=job.source, workers=job.workers, ps_tasks=job.ps_tasks,
        gpus=job.gpus_per_host)
