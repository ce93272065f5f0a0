"""Formatting base units for people (reports and decision messages only)."""

from __future__ import annotations


def rate(examples_per_second) -> str:
    if examples_per_second is None:
        return "n/a"
    v = float(examples_per_second)
    if v >= 100:
        return f"{v:,.0f} ex/s"
    return f"{v:.3g} ex/s"


def sig3(x: float) -> str:
    """Three significant digits, never in exponent form: 1,010 stays 1,010 (`.3g` gives
    1.01e+03, which a unit's 1000-1023 can reach), 999.7 becomes 1,000."""
    return f"{x:.3g}" if x < 999.5 else f"{x:,.0f}"


def gib(nbytes) -> str:
    """Bytes in binary units with three significant digits (B, KiB, MiB, GiB, TiB)."""
    if nbytes is None:
        return "n/a"
    v = float(nbytes)
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if v >= scale:
            return f"{sig3(v / scale)} {unit}"
    return f"{v:.0f} B"


def flop(n) -> str:
    """Floating-point operations in decimal units with three significant digits (FLOP,
    kFLOP, MFLOP, GFLOP; GFLOP above that, whole: a tiny model's 6e-07 GFLOP reads 602 FLOP)."""
    v = float(n)
    for unit, scale in (("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if v >= scale * 0.9995:
            return f"{sig3(v / scale)} {unit}"
    return f"{v:.0f} FLOP"


def seconds(s) -> str:
    if s is None:
        return "n/a"
    v = float(s)
    if v >= 99.995:
        return f"{v:.0f} s"
    if v >= 0.9995:  # 999.5 ms and up reads as seconds, not "1e+03 ms"
        return f"{v:.2f} s"
    if v >= 0.9995e-3:
        return f"{v * 1e3:.3g} ms"
    return f"{v * 1e6:.3g} µs"


def percent(fraction) -> str:
    if fraction is None:
        return "n/a"
    text = f"{100 * float(fraction):.0f}"
    return "<1%" if text == "0" and float(fraction) > 0 else f"{text}%"  # not "0%" for a share that is there


def gbps(bytes_per_second) -> str:
    return f"{float(bytes_per_second) * 8 / 1e9:g} Gb/s"


def plan(hosts, devices_per_host) -> str:
    if hosts is None:
        return "-"
    h = "host" if hosts == 1 else "hosts"
    d = "device" if devices_per_host == 1 else "devices"
    return f"{hosts} {h} × {devices_per_host} {d}"


def against_target(examples_per_second, target) -> str:
    """", meeting the target" / ", under the target of 30,000 ex/s (58% of it)" for a predicted
    rate; nothing when there is none."""
    if examples_per_second is None or not target:
        return ""
    if examples_per_second >= target:
        return ", meeting the target"
    return f", under the target of {rate(target)} ({percent(examples_per_second / target)} of it)"
