"""Test hosts: network namespaces joined by a bridge, each host's link shaped with
`tc ... tbf` to a rate in both directions. Needs root. Everything made is removed on
close, also when a run fails or is interrupted."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from rung.errors import InputError

SUBNET = "10.77.{}.{}"
# tbf needs a bucket of at least rate/HZ bytes; 1 ms of traffic (and 32 KiB at least)
# keeps the measured rate within a few percent of the configured one.
TBF_LATENCY = "100ms"


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def _burst_bytes(mbit: float) -> int:
    return max(32 * 1024, int(mbit * 1e6 / 8 / 1000))


def check_can_make_hosts() -> None:
    if os.geteuid() != 0:
        raise InputError("--hosts", None, "test hosts are network namespaces with shaped veth links and "
                                          "need root; run as root or leave out --hosts")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise InputError("--hosts", None, f"needs the `{tool}` command (Debian: iproute2)")


@dataclass
class TestNet:
    hosts: int
    link_mbit: float | None
    tag: str = field(default_factory=lambda: f"r{os.getpid() % 100000}")
    made_namespaces: list[str] = field(default_factory=list)
    made_links: list[str] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    def namespace(self, i: int) -> str:
        return f"{self.tag}h{i}"

    def address(self, i: int) -> str:
        return SUBNET.format(self.subnet_octet, i + 1)

    @property
    def subnet_octet(self) -> int:
        return os.getpid() % 200 + 20

    def __enter__(self) -> "TestNet":
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _shape(self, dev: str, ns: str | None = None) -> None:
        if not self.link_mbit:
            return
        rate = f"{self.link_mbit:g}mbit"
        cmd = ["tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate,
               "burst", str(_burst_bytes(self.link_mbit)), "latency", TBF_LATENCY]
        _run(*(["ip", "netns", "exec", ns] + cmd if ns else cmd))

    def _make(self) -> None:
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        self.made_links.append(self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for i in range(self.hosts):
            ns, outer, inner = self.namespace(i), f"{self.tag}v{i}", f"{self.tag}p{i}"
            _run("ip", "netns", "add", ns)
            self.made_namespaces.append(ns)
            _run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            self.made_links.append(outer)
            _run("ip", "link", "set", inner, "netns", ns)
            _run("ip", "link", "set", outer, "master", self.bridge)
            _run("ip", "link", "set", outer, "up")
            _run("ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", inner)
            _run("ip", "-n", ns, "link", "set", inner, "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            self._shape(outer)          # traffic into host i
            self._shape(inner, ns)      # traffic out of host i

    def wrap(self, i: int, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(i)] + cmd

    def close(self) -> None:
        for ns in reversed(self.made_namespaces):
            out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in out:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for link in reversed(self.made_links):
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        self.made_namespaces.clear()
        self.made_links.clear()


def leftovers(tag_prefix: str = "r") -> list[str]:
    """Namespaces rung made that still exist (for tests: nothing may be left behind)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
    return [ln.split()[0] for ln in out if ln.strip() and ln.split()[0].startswith(tag_prefix)
            and ln.split()[0].rstrip("0123456789").endswith("h")]
