"""What else the machine did while a run was timed: the share of its CPU time that went
neither to the run's own processes nor to idling: other processes' work, and time the
hypervisor gave to other machines (steal). The bench's runs share this machine's cores by
design (its tasks are processes side by side); work that is not theirs slows some of their
measurements more than others, and the predictions built on them with it (a chain of small
all-reduces, which waits between its hops, read twice its quiet figure beside two busy
loops, while the steps it predicts moved far less: docs/results.md). Read from Linux's
/proc: the machine's `cpu` line in /proc/stat and each task's utime and stime in
/proc/PID/stat. Pure parsing and arithmetic beside the reads; no TensorFlow."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

# A run that saw at least this share of the machine's CPU time go to other work says so
# (a note, and `outside_cpu_share` in the result). A quiet run here reads 0-1%: the bench's
# own runner and its warm processes, which are not the run's tasks. One busy loop beside a
# run on two cores took 44% of them, two 44-58% (docs/results.md).
BUSY_SHARE = 0.10
# Shorter windows are not read (50 ticks: a quarter of a second on two CPUs): a few ticks
# would set the share.
MIN_WINDOW_TICKS = 50


def machine_ticks(stat_text: str) -> Optional[tuple[int, int, int]]:
    """(busy, total, steal) clock ticks of all the machine's CPUs from /proc/stat's
    aggregate `cpu` line: busy is every field but idle and iowait (steal included: the CPU
    was not this machine's), total all eight. guest and guest_nice are already in user and
    nice. None when the line is not there."""
    for line in stat_text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            f = [int(x) for x in parts[1:9]] + [0] * max(0, 9 - len(parts))
            user, nice, system, idle, iowait, irq, softirq, steal = f[:8]
            busy = user + nice + system + irq + softirq + steal
            return busy, busy + idle + iowait, steal
    return None


def process_ticks(stat_text: str) -> Optional[int]:
    """utime + stime, in clock ticks, of every thread of a process from its /proc/PID/stat
    (fields 14 and 15; the name in field 2 may hold spaces and parentheses, so fields are
    counted after its last ')'). None when the text is not such a line."""
    _, sep, rest = stat_text.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 13:
        return None
    try:
        return int(fields[11]) + int(fields[12])
    except ValueError:
        return None


def _read(path: str) -> Optional[str]:
    try:
        return Path(path).read_text()
    except OSError:
        return None


class Sampler:
    """Samples the machine's ticks and its run's processes' ticks, first and latest, while a
    run is timed; `share()` is what went elsewhere between the two. A process that has
    exited keeps the ticks last read of it (the runner samples every tenth of a second)."""

    def __init__(self) -> None:
        self._first: Optional[tuple[int, int, int]] = None
        self._last: Optional[tuple[int, int, int]] = None
        self._own: dict[int, list[int]] = {}

    def sample(self, pids: Iterable[int]) -> None:
        text = _read("/proc/stat")
        m = machine_ticks(text) if text else None
        if m is None:
            return
        for pid in pids:
            t = _read(f"/proc/{pid}/stat")
            ticks = process_ticks(t) if t else None
            if ticks is None:
                continue
            if self._first is None or pid not in self._own:
                if self._first is not None:
                    continue  # first seen mid-window: its earlier ticks are not known
                self._own[pid] = [ticks, ticks]
            else:
                self._own[pid][1] = ticks
        if self._first is None:
            self._first = m
        self._last = m

    def share(self) -> Optional[dict]:
        """{"outside_cpu_share", "steal_share", "own_cpu_share", "window_ticks"}: the shares of
        the machine's CPU time in the window that went to other work (steal included), to steal
        alone, and to the run's own processes (times the machine's CPUs: how many of them the
        run kept busy); None when the window is too short to say or /proc could not be read."""
        if self._first is None or self._last is None:
            return None
        busy = self._last[0] - self._first[0]
        total = self._last[1] - self._first[1]
        steal = self._last[2] - self._first[2]
        if total < MIN_WINDOW_TICKS:
            return None
        own = sum(last - first for first, last in self._own.values())
        return {"outside_cpu_share": round(min(1.0, max(0.0, (busy - own) / total)), 3),
                "steal_share": round(max(0.0, steal / total), 3),
                "own_cpu_share": round(min(1.0, max(0.0, own / total)), 3), "window_ticks": total}


def busy_line(share: dict) -> str:
    """The note of a run timed while other work took a share of the machine at or past
    BUSY_SHARE."""
    steal = share.get("steal_share") or 0.0
    of_it = f", {steal:.0%} of it the hypervisor's (steal)" if steal >= 0.01 else ""
    return (f"while this run was timed, work other than its own took {share['outside_cpu_share']:.0%} of this "
            f"machine's CPU time{of_it}; its times, and the predictions made from them, are not the test bed's "
            "alone (bench on a quiet machine to compare)")
