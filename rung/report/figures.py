"""The report's plots, drawn with Plotly from the numbers of rung's one model.

Every curve comes from the functions `rung advise` decides with
(`rung.model.throughput`, `memory`, `preemption`), evaluated over arrays; nothing here
predicts on its own. Each function returns a `plotly.graph_objects.Figure`, or None when
the inputs give it nothing to show (no offers, no bench file).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import plotly.graph_objects as go

from rung.ladder.context import tpu_slice_counts
from rung.ladder.decision import Decision
from rung.model import comm, memory, preemption, throughput
from rung.spec.benchresult import BenchResult
from rung.spec.scenario import Scenario

LABELS = {"single_device": "one device", "mirrored": "mirrored", "multi_worker_mirrored": "multi-worker mirrored",
          "parameter_server": "parameter servers", "tpu": "TPU"}
COLORS = {"single_device": "#7f7f7f", "mirrored": "#1f77b4", "multi_worker_mirrored": "#2ca02c",
          "parameter_server": "#d62728", "tpu": "#9467bd"}
# Parts of a step, in the order they stack (the terms of `throughput.sync_terms` / `ps_terms`).
PARTS = (("compute_seconds", "compute", "#4c78a8"),
         ("mirrored_variables_seconds", "mirrored variables (the step's extra)", "#72b7b2"),
         ("input_wait_seconds", "input wait", "#f58518"),
         ("intra_host_seconds", "exchange in a host", "#54a24b"),
         ("inter_host_seconds", "exchange between hosts", "#e45756"),
         ("sparse_exchange_seconds", "embedding rows (all-gather)", "#b279a2"),
         ("ps_exchange_seconds", "parameter-server pull/push", "#ff9da6"),
         ("sync_seconds", "fixed cost per step, co-location", "#9d755d"),
         ("sync_batch_norm_seconds", "synchronized BatchNorm", "#eeca3b"),
         ("logged_values_seconds", "logged values (loss, metrics)", "#d4a6c8"),
         ("straggler_seconds", "waiting on the slowest", "#bab0ac"),
         ("load_imbalance_seconds", "waiting on the slowest batch", "#79706e"),
         ("input_floor_wait_seconds", "waiting on the host's input pipeline", "#ffbf79"))
MAX_POINTS = 64
# the title at the top, the legend in a row between it and the plot
LAYOUT = dict(template="plotly_white", height=460, margin=dict(l=70, r=20, t=110, b=60),
              legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0))


def _layout(fig: go.Figure, title: str, **extra) -> None:
    fig.update_layout(**{**LAYOUT, **extra, "title": dict(text=title, y=0.98, yanchor="top", x=0.01, xanchor="left")})


def counts(top: int) -> np.ndarray:
    """1..top, every count when few, else about MAX_POINTS spread evenly on a log scale."""
    if top <= MAX_POINTS:
        return np.arange(1, top + 1)
    return np.unique(np.round(np.geomspace(1, top, MAX_POINTS)).astype(int))


def _fit(terms: dict, n: np.ndarray) -> np.ndarray:
    eps = np.broadcast_to(np.asarray(terms["examples_per_second"], dtype=float), n.shape)
    return np.where(np.broadcast_to(terms["fits"], n.shape), eps, np.nan)


def scaling_curves(s: Scenario, d: Decision, links: comm.Links) -> go.Figure:
    """Predicted examples/s against devices for each rung, the target, linear scaling."""
    dph, top = s.hardware.devices_per_host, s.hardware.max_hosts
    one = throughput.one_device_examples_per_second(s)
    fig = go.Figure()
    hosts = counts(top)
    curves = []
    if s.is_tpu:  # the slices the generation offers (`context.tpu_slice_counts`), as the ladder takes them
        slices = tpu_slice_counts(s, top)
        curves.append(("tpu", slices * dph, _fit(throughput.sync_terms(s, slices, dph, links=links), slices)))
    else:
        curves.append(("single_device", np.array([1]), _fit(throughput.sync_terms(s, 1, 1, links=links), np.array([1]))))
        if dph > 1:
            per_host = np.arange(1, dph + 1)
            curves.append(("mirrored", per_host, _fit(throughput.sync_terms(s, 1, per_host, links=links), per_host)))
        if top > 1:
            curves.append(("multi_worker_mirrored", hosts * dph,
                           _fit(throughput.sync_terms(s, hosts, dph, links=links), hosts)))
        curves.append(("parameter_server", hosts * dph, _fit(throughput.ps_terms(s, hosts, dph, links), hosts)))
    devices_max = max(int(x.max()) for _, x, _ in curves)
    line_x = np.array([1, devices_max])
    fig.add_trace(go.Scatter(x=line_x, y=line_x * one, mode="lines", name="linear scaling of one device",
                             line=dict(color="#cccccc", dash="dot")))
    for verdict, x, y in curves:
        mode = "markers" if len(x) == 1 else "lines+markers"
        fig.add_trace(go.Scatter(x=x, y=y, mode=mode, name=LABELS[verdict], line=dict(color=COLORS[verdict]),
                                 marker=dict(size=6), hovertemplate="%{x} devices: %{y:,.0f} ex/s<extra>"
                                 + LABELS[verdict] + "</extra>"))
    p = d.prediction
    if p is not None and p.examples_per_second:
        fig.add_trace(go.Scatter(x=[p.devices], y=[p.examples_per_second], mode="markers", name="the plan",
                                 marker=dict(symbol="star", size=16, color="#000000")))
    target = s.goal.target_examples_per_second
    fig.add_hline(y=target, line=dict(color="#e45756", dash="dash"),
                  annotation_text=f"target {target:,.0f} ex/s", annotation_position="top left")
    _layout(fig, "Predicted throughput against devices")
    fig.update_xaxes(title="devices (hosts × devices per host)", type="log" if devices_max > 64 else "linear")
    fig.update_yaxes(title="examples per second", rangemode="tozero")
    return fig


def _rung_predictions(d: Decision) -> list:
    """The configuration each strategy rung was judged on, bottom up, with its verdict."""
    by = {r.verdict: r.prediction for r in d.rejected}
    if d.prediction is not None:
        by[d.verdict] = d.prediction
    order = ("single_device", "mirrored", "multi_worker_mirrored", "parameter_server", "tpu")
    return [(v, by[v]) for v in order if by.get(v) is not None and by[v].fits]


def step_breakdown(d: Decision) -> Optional[go.Figure]:
    """Where each rung's step goes (stacked), restarts as the step's share lost to them."""
    rows = _rung_predictions(d)
    if not rows:
        return None
    names = [f"{LABELS[v]} {p.hosts}×{p.devices_per_host}" + (" ★" if v == d.verdict else "") for v, p in rows]
    fig = go.Figure()
    for key, label, color in PARTS:
        vals = [getattr(p, key) * 1e3 for _, p in rows]
        if any(v > 0 for v in vals):
            fig.add_trace(go.Bar(y=names, x=vals, name=label, orientation="h", marker_color=color,
                                 hovertemplate="%{x:.3g} ms<extra>" + label + "</extra>"))
    restarts = [p.step_seconds * (1.0 / p.goodput - 1.0) * 1e3 if p.goodput > 0 else 0.0 for _, p in rows]
    if any(v > 0 for v in restarts):
        fig.add_trace(go.Bar(y=names, x=restarts, name="restarts (lost to preemption)", orientation="h",
                             marker_color="#72b7b2", hovertemplate="%{x:.3g} ms<extra>restarts</extra>"))
    _layout(fig, "Where the step time goes (per rung, its best configuration)", barmode="stack",
            height=200 + 60 * len(rows))
    fig.update_xaxes(title="milliseconds per step (parameter servers: one worker's step)")
    fig.update_yaxes(autorange="reversed")
    return fig


def memory_bars(s: Scenario) -> go.Figure:
    """Memory per device of a synchronous replica and of a parameter-server worker,
    against the device's usable memory."""
    rep = throughput.replica(s)
    w = s.workload
    dense = throughput.dense_params(s) * memory.BYTES_PER_DTYPE[w.param_dtype]
    rows = throughput.sparse_bytes_per_example(s) * w.per_device_batch
    act = w.activation_bytes_per_example * w.per_device_batch
    kinds = ["synchronous replica", "parameter-server worker"]
    parts = (("weights", [rep.weights_bytes + rep.compute_copy_bytes, dense + rows], "#4c78a8"),
             ("gradients", [rep.gradient_bytes, dense + rows], "#54a24b"),
             ("optimizer slots (and float32 master copy)", [rep.optimizer_bytes + rep.master_copy_bytes, 0.0],
              "#f58518"),
             ("activations", [rep.activation_bytes, act], "#e45756"))
    fig = go.Figure()
    for label, vals, color in parts:
        fig.add_trace(go.Bar(x=kinds, y=[v / 2**30 for v in vals], name=label, marker_color=color,
                             hovertemplate="%{y:.3g} GiB<extra>" + label + "</extra>"))
    usable = memory.usable_device_bytes(s.device_memory_bytes) / 2**30
    fig.add_hline(y=usable, line=dict(color="#000000", dash="dash"),
                  annotation_text=f"usable {usable:.3g} GiB of {s.device_memory_bytes / 2**30:.3g} GiB",
                  annotation_position="top left")
    _layout(fig, "Memory per device", barmode="stack")
    fig.update_yaxes(title="GiB", rangemode="tozero")
    return fig


def goodput_curves(s: Scenario, d: Decision) -> go.Figure:
    """Share of time doing useful work against the hourly preemption rate per host:
    synchronous (the whole job restarts from its checkpoint) against asynchronous (one
    worker at a time is down)."""
    per_hour = np.geomspace(1e-3, 1.0, 80)
    lam = per_hour / 3600.0
    hosts = d.hosts if d.hosts and d.hosts > 1 else max(2, s.hardware.max_hosts)
    delta = preemption.checkpoint_seconds(throughput.replica(s).state_bytes, s.fleet.checkpoint_seconds)
    sync = preemption.sync_goodput(hosts, lam[:, None], s.fleet.restart_seconds, delta)[:, 0]
    asyn = np.array([preemption.async_goodput(x, s.fleet.restart_seconds) for x in lam])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=per_hour, y=sync, mode="lines", name=f"synchronous, {hosts} hosts",
                             line=dict(color=COLORS["multi_worker_mirrored"])))
    fig.add_trace(go.Scatter(x=per_hour, y=asyn, mode="lines", name="asynchronous (parameter servers)",
                             line=dict(color=COLORS["parameter_server"])))
    if s.preemptible:
        fig.add_vline(x=s.preemptions_per_host_second * 3600, line=dict(color="#000000", dash="dash"),
                      annotation_text="this fleet", annotation_position="bottom right")
    _layout(fig, f"Goodput under preemption (restart {s.fleet.restart_seconds:g} s, checkpoint {delta:.3g} s)")
    fig.update_xaxes(title="preemptions per host per hour", type="log")
    fig.update_yaxes(title="goodput (useful share of wall time)", range=[0, 1.02])
    return fig


def options_bars(d: Decision) -> Optional[go.Figure]:
    """Each option's cost per hour and per million examples, side by side."""
    opts = [o for o in d.options if o.get("usd_per_hour") is not None]
    if len(d.options) < 2 or not opts:
        return None
    names = [o["name"] + (" ★" if o["name"] == d.option else "") for o in opts]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=[o["usd_per_hour"] for o in opts], name="$ per hour", marker_color="#4c78a8",
                         offsetgroup="hour", hovertemplate="$%{y:,.2f} per hour<extra></extra>"))
    fig.add_trace(go.Bar(x=names, y=[o["usd_per_million_examples"] for o in opts], name="$ per million examples",
                         marker_color="#f58518", yaxis="y2", offsetgroup="million",
                         hovertemplate="$%{y:,.2f} per million examples<extra></extra>"))
    _layout(fig, "Options: what each costs", barmode="group", margin=dict(l=70, r=70, t=110, b=60),
            yaxis=dict(title="$ per hour", rangemode="tozero"),
            yaxis2=dict(title="$ per million examples", overlaying="y", side="right", rangemode="tozero",
                        showgrid=False))
    return fig


def bench_measured(b: BenchResult, simulated: Optional[dict] = None) -> Optional[go.Figure]:
    """Each bench run: measured examples/s beside the model's prediction for it, and
    beside the fleet simulation's reproduction (`simulated`: run name to examples/s)."""
    runs = [r for r in b.runs if r.examples_per_second]
    if not runs:
        return None
    names, measured, predicted = [], [], []
    for r in runs:
        names.append(r.name)
        measured.append(r.examples_per_second)
        predicted.append(r.replicas * b.per_replica_batch / r.predicted_step_seconds if r.predicted_step_seconds
                         else None)
        if r.whole is not None:  # kill and restart included
            names.append(r.whole_name)
            measured.append(r.whole.examples_per_second)
            predicted.append(None)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=measured, name="measured", marker_color="#4c78a8",
                         hovertemplate="%{y:,.0f} ex/s<extra>measured</extra>"))
    fig.add_trace(go.Bar(x=names, y=predicted, name="predicted (rung's model + test-bed terms)",
                         marker_color="#bab0ac", hovertemplate="%{y:,.0f} ex/s<extra>predicted</extra>"))
    if simulated:
        fig.add_trace(go.Bar(x=names, y=[simulated.get(n) for n in names],
                             name="simulated from the bench's inputs", marker_color="#72b7b2",
                             hovertemplate="%{y:,.0f} ex/s<extra>simulated</extra>"))
    _layout(fig, "Measured on this machine, predicted beside", barmode="group")
    fig.update_yaxes(title="examples per second", rangemode="tozero")
    return fig


def bench_steps(b: BenchResult) -> Optional[go.Figure]:
    """Each bench run's step time: median and 95th percentile measured, the prediction."""
    runs = [r for r in b.runs if r.step_seconds_p50]
    if not runs:
        return None
    names = [r.name for r in runs]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=names, y=[r.step_seconds_p50 * 1e3 for r in runs], mode="markers",
                             name="measured median (bar: to the 95th percentile)", marker=dict(size=11, color="#4c78a8"),
                             error_y=dict(type="data", symmetric=False, array=[
                                 ((r.step_seconds_p95 or r.step_seconds_p50) - r.step_seconds_p50) * 1e3 for r in runs],
                                 arrayminus=[0] * len(runs))))
    fig.add_trace(go.Scatter(x=names, y=[(r.predicted_step_seconds or np.nan) * 1e3 for r in runs], mode="markers",
                             name="predicted", marker=dict(size=11, symbol="diamond-open", color="#000000")))
    _layout(fig, "Step time per run")
    fig.update_yaxes(title="milliseconds", rangemode="tozero")
    return fig


def simulation_bars(sim: dict) -> go.Figure:
    """The simulated fleet beside the closed forms: throughput and goodput."""
    cf = sim["closed_form"]
    names = ["synchronous", "asynchronous"]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=[sim["sync"]["examples_per_second"], sim["async"]["examples_per_second"]],
                         name="simulated", marker_color="#4c78a8", hovertemplate="%{y:,.0f} ex/s<extra>simulated</extra>"))
    fig.add_trace(go.Bar(x=names, y=[cf["sync"]["examples_per_second"], cf["async"]["examples_per_second"]],
                         name="closed form (rung's model)", marker_color="#bab0ac",
                         hovertemplate="%{y:,.0f} ex/s<extra>closed form</extra>"))
    _layout(fig, f"Simulated fleet of {sim['workers']:,} workers × {sim['steps']:,} steps", barmode="group")
    fig.update_yaxes(title="examples per second", rangemode="tozero")
    return fig
