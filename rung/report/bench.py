"""The readable report of a bench: measured beside predicted, run by run."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rung import units as u
from rung.spec.benchresult import BenchResult


def failed_groups(failed) -> list[tuple[list[str], str]]:
    """The failed runs as (their names, the error), runs that failed for the same reason in
    one group, in the order they ran: a model that does not build on tf-keras fails every
    run there with the same long line, which was printed once per run. Grouped, each run's
    own task ("worker:0 failed: ", "single failed: ") is left out of the shared line."""
    import re

    def reason(error: str) -> str:
        return re.sub(r"^[\w:.-]+ failed: ", "", error, count=1)

    groups: dict[str, list] = {}
    for f in failed:
        groups.setdefault(reason(f.error), []).append(f)
    return [([f.name for f in fs], reason(fs[0].error) if len(fs) > 1 else fs[0].error) for fs in groups.values()]


def render(b: BenchResult, console: Console | None = None) -> None:
    console = console or Console()
    link = b.link
    console.print(Text.assemble(("rung bench", "bold"), f" · {b.workload}"))
    console.print(Text(f"per-replica batch {b.per_replica_batch} (weak scaling: the global batch grows with "
                       f"replicas) · {b.steps} steps timed after {b.warmup} · {b.cores} cores shared by "
                       f"every process · link: {link.where}, measured {link.bytes_per_second * 8 / 1e6:,.0f} "
                       f"Mbit/s, RTT {u.seconds(link.rtt_seconds)}"
                       + (f" · test hosts: {b.hosts}, shaped to {b.link_mbit:g} Mbit/s" if b.link_mbit else ""),
                       style="dim"))
    t = Table(box=None, pad_edge=False, collapse_padding=True, header_style="bold")
    # the figures and their headings are never cut: where the width is short, a run's label
    # folds onto a second line instead
    for col in ("run", "keras", "ex/s", "p50", "p95", "eff.", "grad B/step", "predicted", "error"):
        t.add_column(col, justify="left" if col in ("run", "keras") else "right",
                     **({"overflow": "fold", "min_width": len("single_device")} if col == "run" else {"no_wrap": True}))
    for r in b.runs:
        # a narrow console (a pipe, a CI log: 80 columns) breaks a one-device basis's label
        # before its "@", not mid-word
        label = r.name if console.width >= 100 else r.name.replace("@", "\n@", 1)
        err = r.prediction_error
        err_cell = Text("basis" if r.strategy == "single_device" else (f"{err:+.0%}" if err is not None else "-"),
                        style="" if err is None or abs(err) <= 0.1 else "yellow")
        t.add_row(label, r.keras or "-", f"{r.examples_per_second:,.0f}" if r.examples_per_second else "-",
                  u.seconds(r.step_seconds_p50), u.seconds(r.step_seconds_p95),
                  u.percent(r.scaling_efficiency), u.gib(r.gradient_bytes_per_step),
                  u.seconds(r.predicted_step_seconds), err_cell)
    for f in b.failed:
        label = f.name if console.width >= 100 else f.name.replace("@", "\n@", 1)
        t.add_row(Text(label, style="red"), "-", Text("failed", style="red"), *["-"] * 6)
    console.print(t)
    for names, error in failed_groups(b.failed):
        console.print(Text(f"{', '.join(names)} failed: {error}", style="red"))
    console.print(Text("predicted: rung advise's own model (rung.model.throughput) on this machine's measurements, "
                       "plus the test bed's terms (replicas sharing the cores, CPU spent streaming between test "
                       "hosts), which are zero for real hosts", style="dim"))
    for n, m in sorted((b.ps_costs or {}).items()):
        if m:
            how = f"reused from {m.reused_from}" if m.reused_from else "measured here"
            console.print(Text(f"parameter-server costs {how} with {n} worker(s): Keras dispatch "
                               f"{u.seconds(m.keras_dispatch_seconds)} per step"
                               + (f" ({u.seconds(m.keras_looped_dispatch_seconds)} at {m.looped_steps} steps a call)"
                                  if m.keras_looped_dispatch_seconds and m.looped_steps else "")
                               + f", {u.seconds(m.variable_seconds)} per variable read and update"
                               + (f", remote transfers {m.remote_bytes_per_second / 1e9:.2f} GB/s"
                                  if m.remote_bytes_per_second else ""), style="dim"))
    for r in b.runs:
        for n in r.notes:
            console.print(Text(f"  {r.strategy}:{r.replicas}: {n}", style="dim"))
        s = r.straggler
        if s and s.slowdown is not None:
            console.print(Text(f"  straggler: {r.strategy}:{r.replicas} with worker {s.worker} slowed "
                               f"{s.factor:g}x steps {s.slowdown:.2f}x slower and keeps "
                               f"{s.throughput_kept:.0%} of its throughput", style="cyan"))
        k = r.kill
        if k and not k.happened:
            console.print(Text(f"  kill: {r.strategy}:{r.replicas}: the run finished before step {k.step}; "
                               f"worker {k.worker} was never killed (give it more --steps)", style="yellow"))
        elif k:
            console.print(Text(f"  kill: {r.strategy}:{r.replicas}: worker {k.worker} killed at step "
                               f"{k.killed_at_step if k.killed_at_step is not None else k.step}; steps lost "
                               f"{k.steps_lost}; restarts {k.restarts}; completed "
                               f"{'every' if k.completed_all_steps else 'not every'} step"
                               + (f"; recovered in {u.seconds(k.recovery_seconds)}" if k.recovery_seconds else ""),
                               style="cyan"))
            w = r.whole
            if w is not None:
                console.print(Text(f"    timed whole (kill and restart included): {w.examples_per_second:,.0f} ex/s"
                                   + (f", {w.throughput_kept:.0%} of the run without the kill"
                                      if w.throughput_kept else "")
                                   + f"; {u.seconds(w.detection_seconds)} from the last step to the relaunch, "
                                   f"{u.seconds(w.restart_first_step_seconds)} from the relaunch to the first step",
                                   style="cyan"))
    c = b.calibration
    if c is not None and not c.fitted:
        console.print(Text(f"calibration: not fitted: {c.why}", style="cyan"))
    elif c is not None and not c.share_fitted:
        console.print(Text(f"calibration: every multi-worker step here pays a fixed {u.seconds(c.testbed_sync_seconds)} "
                           "beyond its compute and what its bytes take on the measured goodput: a fixed cost, not a "
                           "slow link (the all-reduce's share of the link is not fitted: taken as 1.00; runs at more "
                           f"worker counts or link rates fit both); fitted on {', '.join(c.fitted_on)}"
                           + (f"; written to {c.written_to}" if c.written_to else ""), style="cyan"))
    elif c is not None:
        console.print(Text(f"calibration: {'on idle cores ' if c.testbed_cpu_seconds_per_byte else ''}the all-reduce "
                           f"achieves {c.allreduce_share_of_goodput:.2f} "
                           f"of the measured link goodput" + (f" ({c.inter_host_efficiency:.2f} of the nominal rate)"
                                                              if c.inter_host_efficiency else "")
                           + (f"; streaming between test hosts costs {c.testbed_cpu_seconds_per_byte * 1e9:.1f} ns "
                              "of CPU per byte on the shared cores" if c.testbed_cpu_seconds_per_byte else "")
                           + (f"; every multi-worker step between test hosts a fixed "
                              f"{u.seconds(c.testbed_sync_seconds)}" if c.testbed_sync_seconds else "")
                           + f"; fitted on {', '.join(c.fitted_on)}"
                           + (f"; written to {c.written_to}" if c.written_to else ""), style="cyan"))
    if c is not None and c.fitted and c.ps_dispatch_seconds:
        console.print(Text(f"calibration: parameter servers: rung advise takes one coordinator's dispatch as "
                           f"{u.seconds(c.ps_dispatch_seconds)} a step (at most {1 / c.ps_dispatch_seconds:,.0f} "
                           "steps a second for any fleet"
                           + (f"; {c.ps_looped_dispatch_share:.2f} of it a step at steps_per_execution=8"
                              if c.ps_looped_dispatch_share is not None else "") + ")"
                           + (f" and a variable's remote read and update as {u.seconds(c.ps_variable_seconds)}"
                              if c.ps_variable_seconds is not None else "")
                           + f", measured here with {c.ps_workers} local worker(s)"
                           + (f" on {c.ps_cores} cores" if c.ps_cores else "")
                           + ": bench on the machine your coordinator will run on for its own", style="cyan"))
    for n in b.notes:
        console.print(Text(f"note: {n}", style="dim"))
