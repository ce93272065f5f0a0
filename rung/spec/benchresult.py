"""Bench v1 as typed models: the seam between `rung bench` (which runs and measures) and
what reads its results (the report, `rung advise`'s calibration, the JSON a team keeps).
The fields readers use are typed; the rest of a run's record rides along as extra fields
and comes back out in JSON."""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from rung.spec.calibration import Calibration


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Link(_Record):
    where: str
    bytes_per_second: float
    rtt_seconds: float


class Straggler(_Record):
    worker: int
    factor: float
    slowdown: Optional[float] = None
    throughput_kept: Optional[float] = None


class WholeRun(_Record):
    """A killed and restarted synchronous run timed whole (`rung.bench.bench._whole_run`)."""
    window_seconds: float
    steps: int
    examples_per_second: Optional[float] = None
    steps_before_kill: int
    detection_seconds: float
    restart_first_step_seconds: float
    steps_after_restart: int
    step_seconds_before_kill: Optional[float] = None
    step_seconds_after_restart: Optional[float] = None
    checkpoint_seconds: Optional[float] = None
    throughput_kept: Optional[float] = None


class Kill(_Record):
    worker: int
    step: int
    happened: bool = True
    steps_lost: int = 0
    completed_all_steps: bool = False
    killed_at_step: Optional[int] = None
    restarts: int = 0
    recovery_seconds: Optional[float] = None
    resumed_from_step: Optional[int] = None
    save_freq_steps: Optional[int] = None
    whole_run: Optional[WholeRun] = None


class PsCosts(_Record):
    """Parameter-server costs `rung.bench.psbench` measured on one machine: a local cluster
    of one PS task and `workers` workers over loopback (`variable_seconds` also pays a test
    link's extra round trip; `variable_seconds_loopback` is loopback's own). What a
    bench's parameter-server runs are predicted with (`rung.bench.predict.links_for`)."""
    workers: int = Field(ge=1)
    dispatch_seconds: float = Field(ge=0)
    keras_dispatch_seconds: float = Field(ge=0)
    variable_seconds: float = Field(ge=0)
    keras_local_step_seconds: Optional[float] = Field(default=None, ge=0)
    # Keras fit's per-step cost on the cluster at compile(steps_per_execution=looped_steps)
    # (absent from psbench lines written before it measured it)
    keras_looped_dispatch_seconds: Optional[float] = Field(default=None, ge=0)
    keras_local_looped_step_seconds: Optional[float] = Field(default=None, ge=0)
    looped_steps: Optional[int] = Field(default=None, ge=2)
    keras_fit_fixed_seconds: Optional[float] = Field(default=None, ge=0)
    # one metric variable's cost a fit step beyond the loss's tracker (absent from psbench
    # lines written before it measured it)
    keras_metric_variable_seconds: Optional[float] = Field(default=None, ge=0)
    variable_seconds_loopback: Optional[float] = Field(default=None, ge=0)
    remote_bytes_per_second: Optional[float] = Field(default=None, gt=0)
    loopback_rtt_seconds: Optional[float] = Field(default=None, ge=0)
    cores: Optional[int] = Field(default=None, ge=1)
    # the file an earlier measurement was taken from (`rung bench --ps-costs`); absent when
    # this bench measured it
    reused_from: Optional[str] = None
    # on Ray: the address of the node psbench ran on, the one each run's coordinator is
    # placed on (absent for a bench on local processes)
    ray_node: Optional[str] = None


class BasisRecord(_Record):
    """The one-device run every prediction of a bench started from, and the link measured
    (`rung.bench.predict.Basis` without the parameter-server costs, which are `ps_costs`)."""
    one_device_step_seconds: float = Field(gt=0)
    dense_gradient_bytes: float = Field(ge=0)
    sparse_gradient_bytes: float = Field(ge=0)
    step_time_cv: float = Field(ge=0)
    link_bytes_per_second: float = Field(gt=0)
    link_rtt_seconds: float = Field(ge=0)
    cores: Optional[int] = Field(default=None, ge=1)
    variables: Optional[int] = None
    optimizer: Optional[str] = None
    non_trainable_params: float = Field(default=0.0, ge=0)
    sync_batch_norm_layers: int = Field(default=0, ge=0)
    logged_values: Optional[int] = Field(default=None, ge=0)
    metric_variables: Optional[int] = Field(default=None, ge=0)
    sparse_gradient_tensors: Optional[int] = Field(default=None, ge=0)
    # the step under mirrored variables against without a strategy (rung.measure.timing.strategy_extra)
    strategy_step_extra_seconds: float = Field(default=0.0, ge=0)
    # the model's compile(steps_per_execution=k): steps a parameter-server dispatch runs
    steps_per_execution: int = Field(default=1, ge=1)
    # the cores its steps kept busy (the test bed's co-location; None: an older file, every core)
    step_cpu_cores: Optional[float] = Field(default=None, ge=0)


def short_label(strategy: str, replicas: int, option: Optional[str] = None, keras: Optional[str] = None) -> str:
    """A run's name in the bench's table: `mwms:2`, `ps:2:partitioned`, `single_device@tf_keras`."""
    short = {"mirrored": "mirrored", "multi_worker_mirrored": "mwms", "parameter_server": "ps"}
    if strategy == "single_device":
        return "single_device" + (f"@{keras}" if keras else "")
    return f"{short[strategy]}:{replicas}" + (f":{option}" if option else "")


class Machine(_Record):
    outside_cpu_share: float
    steal_share: float = 0.0
    # the run's own processes' share (None in results written before it was read)
    own_cpu_share: Optional[float] = None
    window_ticks: int = 0


class BenchRun(_Record):
    strategy: Literal["single_device", "mirrored", "multi_worker_mirrored", "parameter_server"]
    replicas: int
    option: Optional[str] = None
    keras: Optional[str] = None
    examples_per_second: Optional[float] = None
    step_seconds_mean: Optional[float] = None
    step_seconds_p50: Optional[float] = None
    step_seconds_p95: Optional[float] = None
    step_time_cv: Optional[float] = None
    # the cores its lead task's process kept busy over the timed steps: CPU time over wall
    # time (None for parameter servers, or an older file)
    step_cpu_cores: Optional[float] = None
    scaling_efficiency: Optional[float] = None
    gradient_bytes_per_step: Optional[float] = None
    predicted_step_seconds: Optional[float] = None
    prediction_error: Optional[float] = None
    predicted_terms: Optional[dict[str, float]] = None
    straggler: Optional[Straggler] = None
    kill: Optional[Kill] = None
    startup_seconds: Optional[float] = None
    # its tasks were forked from a warm process (`rung.bench.warm`): startup_seconds adds the
    # import that process took (None: an older file, or a parameter-server run)
    warm_start: Optional[bool] = None
    testbed_sync_seconds: Optional[float] = None  # the fixed cost of a step between its hosts, measured in the run
    # one small all-reduce between its workers, measured in the run (a model with synchronized BatchNorm)
    small_allreduce_seconds: Optional[float] = None
    logged_value_seconds: Optional[float] = None
    shares_cores: Optional[bool] = None  # its processes shared one machine's cores (None: an older file, yes)
    # on Ray: the address of the node each worker ran on, read in the task (`hosts` counts them)
    worker_nodes: Optional[list[str]] = None
    # on Ray: the address of the node each parameter-server task ran on
    ps_nodes: Optional[list[str]] = None
    # a second single-device run: the basis of the runs on this Keras (`BenchResult.bases`)
    basis_for_keras: Optional[str] = None
    # what else the machine did while it was timed (`rung.bench.cpuload`): the shares of its CPU
    # time that went to other work and to steal; None on Ray, in a run with a kill, or an older file
    machine: Optional[Machine] = None
    notes: list[str] = []

    @property
    def label(self) -> str:
        return short_label(self.strategy, self.replicas, self.option, self.basis_for_keras)

    @property
    def name(self) -> str:
        """The label, and the injected straggler or kill when there is one (e.g. `mwms:2 w1×3`,
        `mwms:2 kill w1@6`)."""
        return (self.label + (f" w{self.straggler.worker}×{self.straggler.factor:g}" if self.straggler else "")
                + (f" kill w{self.kill.worker}@{self.kill.step}" if self.kill else ""))

    @property
    def whole(self) -> Optional[WholeRun]:
        """The killed run timed whole, kill and restart included, when it was."""
        w = self.kill.whole_run if self.kill else None
        return w if w is not None and w.examples_per_second else None

    @property
    def whole_name(self) -> str:
        """The name of the whole-run figure, shown beside the run's post-restart rate."""
        return f"{self.name} (whole run)"


class FailedRun(_Record):
    """A run that failed while the bench went on (its error line says what to change)."""

    run: str  # as the bench's progress named it: `parameter_server:2 (worker 1 slowed 8x)`
    strategy: str
    replicas: int
    option: Optional[str] = None
    error: str

    @property
    def name(self) -> str:
        """The run as the table names the runs that finished (`ps:2 (worker 1 slowed 8x)`):
        the short label, then whatever the progress line said after its own."""
        head, sep, rest = self.run.partition(" ")
        return short_label(self.strategy, self.replicas, self.option, head.partition("@")[2] or None) + sep + rest


class NotCalibrated(_Record):
    """`--calibrate` found nothing to fit on, and says why."""
    fitted: Literal[False]
    why: str


class BenchResult(_Record):
    schema_: Literal["rung/bench/v1"] = Field(alias="schema")
    workload: str
    per_replica_batch: int
    steps: int
    warmup: int
    hosts: int = 1
    link_mbit: Optional[float] = None
    link: Link
    runs: list[BenchRun]
    failed: list[FailedRun] = []
    # what `--calibrate` fitted (the calibration file's own model), or why it could not
    calibration: Optional[Union[Calibration, NotCalibrated]] = None
    cores: Optional[int] = None
    notes: list[str] = []
    ps_costs: Optional[dict[str, Optional[PsCosts]]] = None
    # what every prediction started from (rung.bench.predict.Basis without the PS costs)
    basis: Optional[BasisRecord] = None
    # the basis on each Keras a single-device run was measured on, when runs used two
    # (multi-worker and parameter-server runs are predicted from the one on theirs)
    bases: Optional[dict[str, BasisRecord]] = None

    def basis_for(self, keras: Optional[str]) -> Optional[BasisRecord]:
        """The basis a run on `keras` was predicted from: the one-device step on its Keras
        when the bench measured it, else the bench's one basis."""
        return (self.bases or {}).get(keras or "") or self.basis

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_unset=True)

    @property
    def fitted_calibration(self) -> Optional[Calibration]:
        """The calibration this bench fitted, if it fitted one."""
        return self.calibration if isinstance(self.calibration, Calibration) else None
