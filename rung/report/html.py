"""One self-contained HTML file: the decision, the ladder, and the plots behind them.

Plotly draws the plots; its JavaScript is inlined once in the page, so the file opens
with no network. The decision's JSON (decision v1) rides along in a
`<script type="application/json" id="rung-decision">` block for tools that read the page.
Sections appear for what was given: a scenario (decision, ladder, scaling, step,
memory, goodput, options), a profile, a bench file, a simulation file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from typing import Callable, Optional

from rung import __version__
from rung import units as u
from rung.ladder.decision import Decision
from rung.model import comm
from rung.spec.benchresult import BenchResult
from rung.spec.scenario import Scenario

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:24px;
color:#222;line-height:1.45}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
.sub{color:#666}.verdict{font-size:1.3em;font-weight:600}.met{color:#1a7f37}.unmet{color:#b35900}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em;width:100%}th,td{padding:4px 10px;text-align:right;
border-bottom:1px solid #eee}th{background:#f6f6f6}td.l,th.l{text-align:left}tr.chosen{font-weight:600;
background:#eef8ee}code.c{font-weight:600}ul.f li{margin:.25em 0}pre{background:#f6f8fa;padding:12px;
overflow:auto;font-size:.85em}.plot{margin:1em 0;min-height:200px}.warn{color:#8a5300}
td:not(.l){white-space:nowrap}.ladder td:nth-child(9){min-width:180px}.ladder td:nth-child(8){font-size:.85em}
"""


@dataclass
class ReportInputs:
    scenario: Optional[Scenario] = None
    decision: Optional[Decision] = None
    links: comm.Links = comm.DEFAULT_LINKS
    profile: Optional[object] = None       # rung.spec.profile.Profile
    bench: Optional[BenchResult] = None
    simulation: Optional[dict] = None       # rung/simulation/v1
    command: str = ""


def _table(headers: list[str], rows: list[list], left=(0,), chosen: Optional[int] = None, cls: str = "") -> str:
    """An HTML table; columns in `left` align left (text), the rest right (numbers)."""
    head = "".join(f'<th class="{"l" if i in left else ""}">{escape(h)}</th>' for i, h in enumerate(headers))
    body = []
    for j, row in enumerate(rows):
        cells = "".join(f'<td class="{"l" if i in left else ""}">{escape(str(c))}</td>' for i, c in enumerate(row))
        body.append(f'<tr{" class=chosen" if j == chosen else ""}>{cells}</tr>')
    return f'<table class="{cls}"><tr>{head}</tr>{"".join(body)}</table>'


def _findings(findings, css: str = "") -> str:
    if not findings:
        return "<p class=sub>none</p>"
    items = "".join(f'<li class="{css}"><code class=c>{escape(f.code)}</code>: {escape(f.message)}</li>'
                    for f in findings)
    return f'<ul class="f">{items}</ul>'


def _plot(name: str, fig) -> str:
    if fig is None:
        return ""
    div = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"plot-{name}",
                      config={"displaylogo": False, "responsive": True})
    return f'<div class="plot" data-plot="{escape(name)}">{div}</div>'


def _decision_section(s: Scenario, d: Decision) -> str:
    j = d.to_json()
    p = j["predicted"]
    cls = "met" if d.meets_goal else "unmet"
    parts = [f'<p class="verdict {cls}" id="verdict">Verdict: {escape(d.verdict)}'
             + (f" <span class=sub>({escape(d.strategy)})</span>" if d.strategy else "") + "</p>"]
    if d.hosts is not None:
        plan = u.plan(d.hosts, d.devices // d.hosts) + (f" + {d.ps_tasks} parameter-server task(s)" if d.ps_tasks else "")
        parts.append(f"<p id=plan>Plan: <b>{escape(plan)}</b>"
                     + (f" on <b>{escape(d.option)}</b>" if d.option != "hardware" else "")
                     + f"; predicted <b>{escape(u.rate(p['examples_per_second']))}</b> against the target of "
                     f"<b>{escape(u.rate(d.target_examples_per_second))}</b>: "
                     f'<span class="{cls}">{"meets the goal" if d.meets_goal else "does not meet the goal"}</span>'
                     f"; scaling efficiency {escape(u.percent(p['scaling_efficiency']))}, step "
                     f"{escape(u.seconds(p['step_seconds']))}, memory per device "
                     f"{escape(u.gib(p['memory_bytes_per_device']))}.</p>")
    else:
        parts.append(f"<p id=plan>No plan: memory per device {escape(u.gib(d.memory_bytes_per_device))}.</p>")
    c = d.confidence
    if c:
        from rung.report.terminal import sizes_sentence

        lo, hi = c["noise_band"]
        parts.append(f"<p class=sub>Step-time noise: {1 - lo:.0%} faster to {hi - 1:.0%} slower "
                     f"({escape(str(c['step_seconds']['source']))})"
                     + ("; <b>a close call</b>" if c.get("close_call") else "") + escape(sizes_sentence(d)) + "</p>")
    parts.append("<h3>Why</h3>" + _findings(d.reasons))
    # warnings about the proposal are shown with its review
    about_proposal = [f for f in d.warnings if f.code.startswith("PROPOSAL_")] if d.review is not None else []
    parts.append("<h3>Warnings</h3>" + _findings([f for f in d.warnings if f not in about_proposal], "warn"))
    if d.after_fix:
        a = d.after_fix
        parts.append(f"<p>Once the pipeline keeps up: {escape(a['verdict'])} at about "
                     f"{escape(u.rate(a['predicted']['examples_per_second']))}"
                     + (" would meet the goal" if a["meets_goal"] else ", still short of the goal") + ".</p>")
    if d.review is not None:
        pp = j["proposal_predicted"]
        prop = s.proposal
        parts.append(f"<h3>Review of the proposal ({escape(prop.strategy)} on {prop.hosts} host(s), predicted "
                     f"{escape(u.rate(pp['examples_per_second']))}"
                     f"{escape(u.against_target(pp['examples_per_second'], d.target_examples_per_second))})</h3>"
                     + _findings(d.review) + (_findings(about_proposal, "warn") if about_proposal else ""))
    return "<h2>Decision</h2>" + "".join(parts)


def _code_section(d: Decision) -> str:
    parts = []
    if d.strategy_options:
        parts.append("<h3>Strategy options</h3><pre>" + escape(json.dumps(d.strategy_options, indent=2)) + "</pre>")
    if d.code:
        parts.append("<h3>Code</h3><pre>" + escape(d.code) + "</pre>")
    if d.takes_on:
        parts.append("<h3>What you take on</h3><ul>" + "".join(f"<li>{escape(t)}</li>" for t in d.takes_on) + "</ul>")
    return "<h2>How to run it</h2>" + "".join(parts) if parts else ""


def _ladder_section(d: Decision) -> str:
    from rung.report.terminal import ROWS  # the ladder's rows, bottom up, as the terminal shows them

    rejected = {r.verdict: r for r in d.rejected}
    rows, chosen = [], None
    for verdict, label, kind in ROWS:
        label = " ".join(label.split())
        if verdict == d.verdict:
            p, mark, codes, why = d.prediction, "★ verdict", ", ".join(f.code for f in d.reasons), ""
            chosen = len(rows)
        elif verdict in rejected:
            r = rejected[verdict]
            p, mark, codes, why = r.prediction, "✗" if kind == "rung" else "✓", ", ".join(r.codes), r.message
        else:
            continue
        runs = p is not None and p.examples_per_second is not None
        rows.append([label, f"{p.hosts}×{p.devices_per_host}" if p else "-",
                     f"{p.examples_per_second:,.0f}" if runs else "-",
                     u.percent(p.scaling_efficiency) if runs else "-", u.seconds(p.step_seconds) if runs else "-",
                     u.gib(p.memory_bytes_per_device) if p else "-", mark, codes, why])
    return ("<h2>The ladder, bottom up</h2>"
            + _table(["rung", "hosts×devices", "ex/s", "efficiency", "step", "memory/device", "", "codes", "why"],
                     rows, left=(0, 6, 7, 8), chosen=chosen, cls="ladder"))


def _options_section(d: Decision) -> str:
    if len(d.options) < 2:
        return ""
    rows, chosen = [], None
    for i, o in enumerate(d.options):
        if o["name"] == d.option:
            chosen = i
        rows.append([o["name"] + (" (step estimated)" if o.get("step_seconds_estimated") else ""), o["verdict"],
                     f"{o['hosts']}×{o['devices'] // o['hosts']}" if o["hosts"] else "-",
                     f"{o['examples_per_second']:,.0f}" if o["examples_per_second"] else "-",
                     f"{o['usd_per_hour']:,.2f}" if o["usd_per_hour"] is not None else "-",
                     f"{o['usd_per_million_examples']:,.2f}" if o["usd_per_million_examples"] is not None else "-",
                     "yes" if o["meets_goal"] else "no"])
    return "<h2>Options</h2>" + _table(["option", "rung", "plan", "ex/s", "$/hour", "$/M examples", "meets target"],
                                       rows, left=(0, 1), chosen=chosen)


def _profile_section(profile) -> str:
    p = profile
    rows = [["workload", p.workload], ["device", f"{p.device} ({p.device_name})"],
            ["parameters", f"{p.params:,.0f}" + (f" ({p.embedding_params:,.0f} in embeddings)" if p.embedding_params else "")],
            ["optimizer", p.optimizer], ["per-device batch", p.per_device_batch],
            ["step", u.seconds(p.step_seconds)], ["input wait", u.seconds(p.input_wait_seconds)],
            ["activations per example", u.gib(p.activation_bytes_per_example)]]
    if p.trainable_variables is not None:
        rows.append(["trainable variables", p.trainable_variables])
    if p.replica_check:
        from rung.report.profile import replica_line

        rows.append(["loss under replicas", replica_line(p.replica_check)])
    if p.worker_input:
        from rung.report.profile import worker_input_line

        rows.append(["across workers", worker_input_line(p.worker_input, None)])
    if p.ps_worker_input:
        from rung.report.profile import PS_WORKER_INPUT

        rows.append(["across PS workers", PS_WORKER_INPUT[p.ps_worker_input]])
    return "<h2>Profile (measured on one device)</h2>" + _table(["", ""], rows, left=(0, 1))


def _bench_section(b: BenchResult) -> str:
    from rung.report import figures

    simulated = {}
    if b.basis:  # the synchronous runs reproduced by the fleet simulation from their inputs
        from rung.bench.reproduce import reproduce

        simulated = {x["run"]: x["simulated_examples_per_second"] for x in reproduce(b, steps=4000)["runs"]}
    rows = []
    for r in b.runs:
        err = r.prediction_error
        rows.append([r.name,
                     r.keras or "-", f"{r.examples_per_second:,.0f}" if r.examples_per_second else "-",
                     u.seconds(r.step_seconds_p50), u.seconds(r.step_seconds_p95), u.percent(r.scaling_efficiency),
                     u.seconds(r.predicted_step_seconds),
                     "basis" if r.strategy == "single_device" else (f"{err:+.0%}" if err is not None else "-"),
                     f"{simulated[r.name]:,.0f}" if r.name in simulated else "-"])
        if r.whole is not None:
            name = r.whole_name
            rows.append([name, r.keras or "-", f"{r.whole.examples_per_second:,.0f}", "-", "-", "-", "-", "-",
                         f"{simulated[name]:,.0f}" if name in simulated else "-"])
    for f in b.failed:
        rows.append([f.name, "-", "failed: " + f.error, "-", "-", "-", "-", "-", "-"])
    head = (f"<p class=sub>{escape(b.workload)} · per-replica batch {b.per_replica_batch} · {b.steps} steps timed "
            f"after {b.warmup} · {b.cores} cores shared · link {escape(b.link.where)}"
            + (" · a killed run's own row is its rate after the restart; its whole-run row times it from the "
               "warm-up's end to the last step, kill and restart included" if any(
                   r.whole is not None for r in b.runs) else "") + "</p>")
    notes = "".join(f"<li>{escape(r.name)}: {escape(n)}</li>" for r in b.runs for n in r.notes) \
        + "".join(f"<li>{escape(n)}</li>" for n in b.notes)
    return ("<h2>Bench: real runs on this machine</h2>" + head
            + _table(["run", "keras", "ex/s", "p50", "p95", "efficiency", "predicted step", "error",
                      "simulated ex/s"], rows, left=(0, 1))
            + (f'<ul class="f">{notes}</ul>' if notes else "")
            + _plot("bench-throughput", figures.bench_measured(b, simulated))
            + _plot("bench-steps", figures.bench_steps(b)))


def _simulation_section(sim: dict) -> str:
    from rung.report import figures

    cf = sim["closed_form"]
    rows = []
    for block, key in (("sync", "examples_per_second"), ("sync", "step_seconds_mean"), ("sync", "straggler_seconds_mean"),
                       ("sync", "goodput"), ("async", "examples_per_second"), ("async", "staleness_mean"),
                       ("async", "staleness_p95")):
        a, b = sim[block].get(key), cf[block].get(key)
        rows.append([f"{block} {key.replace('_', ' ')}", "-" if a is None else f"{a:,.4g}", "-" if b is None else f"{b:,.4g}"])
    dist = sim.get("step_distribution", {})
    head = (f"<p class=sub>{sim['workers']:,} workers × {sim['steps']:,} steps, {escape(str(dist.get('kind')))} step "
            f"times (cv {dist.get('cv', 0):.3g}), seed {sim['seed']}</p>")
    return ("<h2>Simulated fleet</h2>" + head + _table(["", "simulated", "closed form"], rows)
            + _plot("simulation", figures.simulation_bars(sim)))


def render(inputs: ReportInputs, on_phase: Optional[Callable[[str], None]] = None) -> str:
    """The whole page as one string."""
    import plotly.offline

    from rung.report import figures

    def phase(text: str) -> None:
        if on_phase:
            on_phase(text)

    s, d = inputs.scenario, inputs.decision
    body: list[str] = []
    title = (s.name if s is not None and s.name else None) or (inputs.bench.workload if inputs.bench else "report")
    body.append(f"<h1>rung report · {escape(title)}</h1>")
    if inputs.command:
        body.append(f"<p class=sub>{escape(inputs.command)} · rung {escape(__version__)}</p>")
    if s is not None and d is not None:
        from rung.ladder.options import ladder_scenario
        from rung.report.terminal import hardware_line

        ls = ladder_scenario(s, d)
        body.append(f"<p class=sub>target {escape(u.rate(s.goal.target_examples_per_second))}"
                    + (", reproducible runs" if s.goal.reproducible else "") + f" · {escape(hardware_line(ls))}</p>")
        body.append(_decision_section(s, d))
        body.append(_options_section(d))
        body.append(_plot("options", figures.options_bars(d)))
        phase("report: scaling curves")
        body.append("<h2>Scaling</h2>" + _plot("scaling", figures.scaling_curves(ls, d, inputs.links)))
        phase("report: step time, memory, goodput")
        body.append("<h2>Where the step time goes</h2>" + _plot("step", figures.step_breakdown(d)))
        body.append(_ladder_section(d))
        body.append("<h2>Memory</h2>" + _plot("memory", figures.memory_bars(ls)))
        body.append("<h2>Preemption</h2>" + _plot("goodput", figures.goodput_curves(ls, d)))
        body.append(_code_section(d))
    if inputs.profile is not None:
        body.append(_profile_section(inputs.profile))
    if inputs.bench is not None:
        phase("report: bench runs")
        body.append(_bench_section(inputs.bench))
    if inputs.simulation is not None:
        body.append(_simulation_section(inputs.simulation))
    data = ""
    if d is not None:
        payload = json.dumps(d.to_json()).replace("</", "<\\/")
        data = f'<script type="application/json" id="rung-decision">{payload}</script>'
    phase("report: writing")
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>rung report · {escape(title)}</title><style>{CSS}</style>"
            f"<script>{plotly.offline.get_plotlyjs()}</script></head><body>"
            + "".join(body) + data + "</body></html>\n")
