import os
import resource
import subprocess
import sys
import time

import pytest

from rung.bench import cpuload

STAT = """cpu  163873 5 6712 48868 179 0 265 188 0 0
cpu0 78843 0 2527 28378 63 0 109 92 0 0
cpu1 85030 5 4185 20489 116 0 156 95 0 0
intr 1 2 3
"""


def test_the_machine_line_counts_steal_as_busy_and_iowait_as_idle():
    busy, total, steal = cpuload.machine_ticks(STAT)
    assert steal == 188
    assert busy == 163873 + 5 + 6712 + 0 + 265 + 188
    assert total == busy + 48868 + 179
    assert cpuload.machine_ticks("intr 1 2\n") is None


def test_a_process_line_is_read_after_its_name_whatever_the_name_holds():
    fields = ["S"] + ["0"] * 10 + ["700", "55"] + ["0"] * 30  # state is field 3; utime 14, stime 15
    assert cpuload.process_ticks("42 (python) " + " ".join(fields)) == 755
    assert cpuload.process_ticks("42 (a) b (c)) " + " ".join(fields)) == 755
    assert cpuload.process_ticks("not a stat line") is None


def _spin(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {seconds}\n"
                             "while time.time() < end: pass"])


def _sample_while(p: subprocess.Popen, *owns: list[int]) -> list[dict]:
    samplers = [cpuload.Sampler() for _ in owns]
    while p.poll() is None:
        for s, own in zip(samplers, owns):
            s.sample(own)
        time.sleep(0.02)
    return [s.share() for s in samplers]


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads Linux's /proc")
def test_a_busy_loop_that_is_not_the_runs_is_counted_and_one_that_is_is_not():
    # one busy loop on this machine's CPUs: outside the run, at least most of one CPU's share
    # (other tests beside it add to it, never take from it)
    cpus = os.cpu_count() or 1
    [outside] = _sample_while(_spin(1.5), [os.getpid()])
    assert outside is not None and outside["outside_cpu_share"] >= 0.6 / cpus, outside
    # the same loop counted as one of the run's processes, in the same window as a sampler
    # that does not count it: the difference is its CPU time as the kernel gave it to its
    # parent when it ended (getrusage), within what the last sample can miss
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = _spin(1.5)
    none, mine = _sample_while(p, [], [p.pid])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    attributed = (none["outside_cpu_share"] - mine["outside_cpu_share"]) * mine["window_ticks"] \
        / os.sysconf("SC_CLK_TCK")
    assert used - 0.15 <= attributed <= used + 0.05, (attributed, used, none, mine)
    # and the sampler that counts it says how much of the machine its run kept busy: the same
    # CPU time, read from the run's side (getrusage again the oracle)
    own = mine["own_cpu_share"] * mine["window_ticks"] / os.sysconf("SC_CLK_TCK")
    assert used - 0.15 <= own <= used + 0.05, (own, used, mine)
    assert none["own_cpu_share"] == 0.0
    assert attributed >= 0.2  # it did spin (1.5 s of wall time; beside other tests' work, a share of a CPU)


def test_too_short_a_window_says_nothing():
    s = cpuload.Sampler()
    s.sample([os.getpid()])
    s.sample([os.getpid()])
    assert s.share() is None


def test_the_busy_note_gives_the_share_and_steal_when_there_is_any():
    line = cpuload.busy_line({"outside_cpu_share": 0.44, "steal_share": 0.2})
    assert "44% of this machine's CPU time, 20% of it the hypervisor's (steal)" in line
    assert "steal" not in cpuload.busy_line({"outside_cpu_share": 0.44, "steal_share": 0.0})
