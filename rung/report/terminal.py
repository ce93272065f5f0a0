"""The readable report of a decision: the ladder walked bottom up, then the advice."""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from rung import units as u
from rung.ladder.decision import Decision
from rung.spec.scenario import Scenario

# Ladder rows, bottom up: the three questions first, then the strategy rungs.
ROWS = (
    ("needs_sharding", "fits one device?", "check"),
    ("fix_input_pipeline", "input keeps up?", "check"),
    ("tpu", "TPUs?", "check"),
    ("single_device", "0  one device", "rung"),
    ("mirrored", "1  mirrored", "rung"),
    ("multi_worker_mirrored", "2  multi-worker", "rung"),
    ("parameter_server", "3  parameter servers", "rung"),
)


def hardware_line(s: Scenario) -> str:
    h = s.hardware
    link = "ICI" if s.is_tpu else s.intra_host_link
    return (f"{s.device.name} × {h.devices_per_host} per host ({link}, {u.gib(s.device_memory_bytes)} each), "
            f"{h.inter_host_gbps:g} Gb/s between hosts, up to {h.max_hosts} host(s)"
            + (f", preemptible ({s.preemptions_per_host_second * 3600:g}/host/hour)" if s.preemptible else ""))


def _cells(pred, usable: float, memory_bytes=None) -> list[str]:
    """Numbers of one rung, from the unrounded Prediction (None: not predicted)."""
    if pred is None:
        mem = u.gib(memory_bytes) if memory_bytes is not None else "-"
        return ["-", "-", "-", "-", mem]
    runs = pred.examples_per_second is not None
    return [f"{pred.hosts}×{pred.devices_per_host}",
            f"{pred.examples_per_second:,.0f}" if runs else "-",
            u.percent(pred.scaling_efficiency) if runs else "-",
            u.seconds(pred.step_seconds) if runs else "-",
            u.gib(pred.memory_bytes_per_device)]


def ladder_table(s: Scenario, d: Decision, usable: float) -> Table:
    """One row per rung, bottom up: predicted numbers and a mark; the reasons follow below."""
    t = Table(title="The ladder, bottom up", title_justify="left", box=None, pad_edge=False,
              header_style="bold", caption=f"memory: per device, against {u.gib(usable)} usable",
              caption_justify="left")
    for name, kw in (("rung", {"no_wrap": True}), ("hosts×dev", {"justify": "right"}),
                     ("ex/s", {"justify": "right"}), ("eff.", {"justify": "right"}),
                     ("step", {"justify": "right"}),
                     ("memory", {"justify": "right"}), ("", {})):
        t.add_column(name, **kw)
    rejected = {r.verdict: r for r in d.rejected}
    for verdict, label, kind in ROWS:
        if verdict == d.verdict:
            cells = _cells(d.prediction, usable, d.memory_bytes_per_device)
            t.add_row(Text(label, style="bold green"), *cells, Text("★ verdict", style="bold green"))
            continue
        r = rejected[verdict]
        mark, style = ("✓", "dim") if kind == "check" else ("✗", "red")
        t.add_row(Text(label, style="dim" if kind == "check" else ""), *_cells(r.prediction, usable),
                  Text(mark, style=style))
    return t


def passed_over(d: Decision) -> Group:
    labels = {v: label.split("  ")[-1] for v, label, _ in ROWS}
    items = [Text("Passed over", style="bold")]
    for v, _label, kind in ROWS:
        if v == d.verdict:
            continue
        r = next(r for r in d.rejected if r.verdict == v)
        items.append(Text.assemble(("  ✓ " if kind == "check" else "  ✗ ", "dim" if kind == "check" else "red"),
                                   (labels[v], "bold"), (f" [{', '.join(r.codes)}]", "dim"), f" {r.message}"))
    return Group(*items)


def _findings(title: str, findings, style: str) -> Group:
    items = [Text(title, style=f"bold {style}")]
    for f in findings:
        items.append(Text.assemble(("  • ", style), (f.code, f"bold {style}"), (f": {f.message}", "")))
    return Group(*items)


def recommendation(s: Scenario, d: Decision) -> Panel:
    j = d.to_json()
    p = j["predicted"]
    head = Text.assemble(
        ("Verdict: ", "bold"), (d.verdict, "bold green" if d.meets_goal else "bold yellow"),
        (f"  ({d.strategy})" if d.strategy else "", ""),
    )
    lines = [head]
    if d.hosts is not None:
        lines.append(Text(f"Plan: {u.plan(d.hosts, d.devices // d.hosts)}"
                          + (f" + {d.ps_tasks} parameter-server task(s)" if d.ps_tasks else "")
                          + f"; predicted {u.rate(p['examples_per_second'])} against the target of "
                          f"{u.rate(d.target_examples_per_second)}"
                          + (" (meets the goal)" if d.meets_goal else " (does not meet the goal)")))
    margin = margin_line(d)
    if margin is not None:
        lines.append(margin)
    lines.append(_findings("Why", d.reasons, "green"))
    if d.after_fix:
        a = d.after_fix
        lines.append(Text(f"Once the pipeline keeps up: {a['verdict']} on {u.plan(a['hosts'], (a['devices'] or 1) // (a['hosts'] or 1))} "
                          f"at about {u.rate(a['predicted']['examples_per_second'])}"
                          + (" would meet the goal" if a["meets_goal"] else ", still short of the goal"),
                          style="cyan"))
    if d.code:
        lines.append(Text("Code", style="bold"))
        lines.append(Syntax(d.code, "python", theme="ansi_dark", background_color="default", word_wrap=True))
    if d.takes_on:
        lines.append(Text("What you take on", style="bold"))
        lines.extend(Text(f"  • {t}") for t in d.takes_on)
    # warnings about the proposal are shown with its review
    about_proposal = [f for f in d.warnings if f.code.startswith("PROPOSAL_")] if d.review is not None else []
    rest = [f for f in d.warnings if f.code not in UP_FRONT and f not in about_proposal]
    if rest:
        lines.append(_findings("Warnings", rest, "yellow"))
    if d.review is not None:
        pp = j["proposal_predicted"]
        prop = s.proposal
        lines.append(Text(f"Review of the proposal: {prop.strategy} on {prop.hosts} host(s), predicted "
                          f"{u.rate(pp['examples_per_second'])}, efficiency {u.percent(pp['scaling_efficiency'])}"
                          f"{u.against_target(pp['examples_per_second'], d.target_examples_per_second)}",
                          style="bold magenta"))
        if d.review:
            lines.extend(_findings("", d.review, "magenta").renderables[1:])
        else:
            lines.append(Text("  no classic mistake found", style="magenta"))
        if about_proposal:
            lines.extend(_findings("", about_proposal, "yellow").renderables[1:])
    return Panel(Group(*lines), title="Recommendation", title_align="left",
                 border_style="green" if d.meets_goal else "yellow")


# Caveats about the numbers themselves, a plan that would train wrong, and a plan whose job
# would fail before its first step: shown before the ladder and the verdict.
UP_FRONT = ("STEP_TIME_ESTIMATED", "MEASURED_ON_THIS_MACHINE", "EMULATED_PRECISION", "DEFAULT_BATCH", "CLOSE_CALL",
            "LOSS_NOT_SCALED",
            "STRATEGY_FAILS", "STATEFUL_RNN", "GRADIENT_ACCUMULATION", "KERAS3_IMPORT")


def caveats(d: Decision) -> Panel | None:
    found = [f for f in d.warnings if f.code in UP_FRONT]
    if not found:
        return None
    return Panel(_findings("Read this first", found, "yellow"), border_style="yellow")


def margin_line(d: Decision) -> Text | None:
    """How far the measured step time could move before the decision changes."""
    c = d.confidence
    if not c:
        return None
    parts = []
    for key in ("slower", "faster"):
        f = c.get(key)
        if f:
            what = (f"{f['verdict']}" if f["verdict"] != d.verdict
                    else f"{d.verdict} {'misses' if d.meets_goal else 'meets'} the goal")
            parts.append(f"{abs(f['factor'] - 1):.0%} {key} ({what})")
    lo, hi = c["noise_band"]
    text = ("Margin: the decision holds unless the step is " + (" or ".join(parts) if parts else
            "more than 4x slower or faster") + f". Step-time noise: {1 - lo:.0%} faster to {hi - 1:.0%} "
            f"slower ({c['step_seconds']['source']})") + sizes_sentence(d)
    return Text(text, style="bold yellow" if c["close_call"] else "dim")


def sizes_sentence(d: Decision) -> str:
    """The plan's size at the ends of the step's noise band, when it moves there."""
    ends = (d.confidence or {}).get("plan_in_noise_band")
    if not ends or d.hosts is None:
        return ""
    here = u.plan(d.hosts, d.devices // d.hosts)
    said = [f"{u.plan(e['hosts'], e['devices'] // e['hosts'])} at its {end} end"
            + ("" if e["meets_goal"] else " (short of the goal)")
            for end, e in sorted(ends.items(), key=lambda kv: kv[0] != "slow") if e.get("hosts")]
    return (f". The plan's size moves inside that noise: {here} at the measured step, " + " and ".join(said)
            + ("; plan for the slow end" if "slow" in ends else "")) if said else ""


def options_table(d: Decision) -> Table:
    """Every option side by side: the team's hardware and each offer."""
    t = Table(title="Options", title_justify="left", box=None, pad_edge=False, header_style="bold")
    short = {"single_device": "one device", "mirrored": "mirrored", "multi_worker_mirrored": "multi-worker",
             "parameter_server": "param. servers", "tpu": "TPU", "needs_sharding": "needs sharding",
             "fix_input_pipeline": "fix input"}
    for name, kw in (("option", {"no_wrap": True}), ("rung", {"no_wrap": True}), ("plan", {"justify": "right"}),
                     ("ex/s", {"justify": "right"}), ("$/hour", {"justify": "right"}),
                     ("$/M examples", {"justify": "right"}), ("meets target", {})):
        t.add_column(name, **kw)
    for o in d.options:
        plan = f"{o['hosts']}×{o['devices'] // o['hosts']}" if o["hosts"] else "-"
        mark = "✓ chosen" if o["name"] == d.option else ""
        t.add_row(o["name"] + (" (step estimated)" if o.get("step_seconds_estimated") else ""), short[o["verdict"]], plan,
                  f"{o['examples_per_second']:,.0f}" if o["examples_per_second"] else "-",
                  f"{o['usd_per_hour']:,.2f}" if o["usd_per_hour"] is not None else "-",
                  f"{o['usd_per_million_examples']:,.2f}" if o["usd_per_million_examples"] is not None else "-",
                  ("yes" if o["meets_goal"] else "no") + (f"  {mark}" if mark else ""),
                  style="bold" if mark else "")
    return t


def render(s: Scenario, d: Decision, usable_bytes: float, console: Console | None = None) -> None:
    console = console or Console()
    if d.option != "hardware":  # the ladder below is walked on the chosen offer's hardware
        from rung.ladder.options import ladder_scenario
        from rung.model.memory import usable_device_bytes

        s = ladder_scenario(s, d)
        usable_bytes = usable_device_bytes(s.device_memory_bytes)
    title = s.name or "scenario"
    console.print(Text.assemble(("rung advise", "bold"), f" · {title}"))
    console.print(Text(f"target {u.rate(s.goal.target_examples_per_second)}"
                       + (", reproducible runs" if s.goal.reproducible else "")
                       + f" · {hardware_line(s)}", style="dim"))
    first = caveats(d)
    if first is not None:
        console.print(first)
    if len(d.options) > 1:
        console.print(options_table(d))
        console.print(Text(f"The ladder below is {d.option}'s.", style="dim"))
    console.print(ladder_table(s, d, usable_bytes))
    console.print(passed_over(d))
    console.print(recommendation(s, d))
