"""The hardware catalog: names a scenario may use for `hardware.device`.

Memory is per device in GiB as the vendor lists it (GB and GiB are mixed in vendor
sheets; we take the listed number as GiB, a difference of 7% that the usable-memory
headroom in `rung.model.memory` covers). Links are gigabits per second per device,
one direction, as published; NVLink figures are the vendor's total bidirectional
bandwidth halved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# PCIe x16, one direction: 16 GB/s (gen3), 32 GB/s (gen4), 64 GB/s (gen5) of raw
# signalling (PCI-SIG base specifications), i.e. 128 / 256 / 512 Gb/s.
PCIE_GEN3_GBPS = 128.0
PCIE_GEN4_GBPS = 256.0
PCIE_GEN5_GBPS = 512.0


@dataclass(frozen=True)
class Device:
    name: str
    memory_gib: float
    links_gbps: dict[str, float]  # link kind -> Gb/s per device, one direction
    default_link: str
    source: str
    is_tpu: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)


def _gpu(name, memory_gib, default_link, source, nvlink=None, pcie=PCIE_GEN4_GBPS):
    links = {"pcie": pcie}
    if nvlink is not None:
        links["nvlink"] = nvlink
    return Device(name, memory_gib, links, default_link, source)


def _tpu(name, memory_gib, ici_gbps, source):
    return Device(name, memory_gib, {"ici": ici_gbps}, "ici", source, is_tpu=True)


_DEVICES = [
    _gpu("V100-16GB", 16, "nvlink", "NVIDIA V100 datasheet: 16 GB HBM2; SXM2 NVLink 300 GB/s total",
         nvlink=1200.0, pcie=PCIE_GEN3_GBPS),
    _gpu("V100-32GB", 32, "nvlink", "NVIDIA V100 datasheet: 32 GB HBM2; SXM2 NVLink 300 GB/s total",
         nvlink=1200.0, pcie=PCIE_GEN3_GBPS),
    _gpu("T4", 16, "pcie", "NVIDIA T4 datasheet: 16 GB GDDR6; PCIe gen3 x16, no NVLink",
         pcie=PCIE_GEN3_GBPS),
    _gpu("L4", 24, "pcie", "NVIDIA L4 datasheet: 24 GB GDDR6; PCIe gen4 x16, no NVLink"),
    _gpu("A10G", 24, "pcie", "AWS G5 / NVIDIA A10G: 24 GB GDDR6; PCIe gen4 x16, no NVLink"),
    _gpu("A100-40GB", 40, "nvlink", "NVIDIA A100 datasheet: 40 GB HBM2; SXM4 NVLink 600 GB/s total",
         nvlink=2400.0),
    _gpu("A100-80GB", 80, "nvlink", "NVIDIA A100 datasheet: 80 GB HBM2e; SXM4 NVLink 600 GB/s total",
         nvlink=2400.0),
    _gpu("H100-80GB", 80, "nvlink", "NVIDIA H100 SXM5 datasheet: 80 GB HBM3; NVLink 900 GB/s total",
         nvlink=3600.0, pcie=PCIE_GEN5_GBPS),
    _gpu("H100-PCIe", 80, "pcie", "NVIDIA H100 PCIe datasheet: 80 GB HBM2e; PCIe gen5 x16",
         pcie=PCIE_GEN5_GBPS),
    _gpu("H200", 141, "nvlink", "NVIDIA H200 SXM datasheet: 141 GB HBM3e; NVLink 900 GB/s total",
         nvlink=3600.0, pcie=PCIE_GEN5_GBPS),
    _gpu("B200", 180, "nvlink", "NVIDIA HGX B200: 180 GB HBM3e per GPU; NVLink 5 1.8 TB/s total",
         nvlink=7200.0, pcie=PCIE_GEN5_GBPS),
    # TPU slices: memory per device (core for v3, chip otherwise); ICI per chip, one
    # direction, from the Cloud TPU system-architecture pages.
    _tpu("TPU-v3-8", 16, 656.0,
         "Cloud TPU v3: 8 cores, 16 GiB HBM per core; ICI figure is an estimate (not published per chip)"),
    _tpu("TPU-v4-8", 32, 2400.0, "Cloud TPU v4: 4 chips, 32 GiB HBM each; ICI 2400 Gb/s per chip"),
    _tpu("TPU-v5e-8", 16, 1600.0, "Cloud TPU v5e: 8 chips, 16 GB HBM2 each; ICI 1600 Gb/s per chip"),
    _tpu("TPU-v5p-8", 95, 4800.0, "Cloud TPU v5p: 4 chips, 95 GB HBM2e each; ICI 4800 Gb/s per chip"),
]

CATALOG: dict[str, Device] = {d.name: d for d in _DEVICES}

# `device: custom` needs device_memory_gib; its links default to these.
CUSTOM_LINKS_GBPS = {"pcie": PCIE_GEN4_GBPS, "nvlink": 2400.0}
CUSTOM_DEFAULT_LINK = "pcie"
CUSTOM_SOURCE = "custom device: memory from the scenario; link from PCIe gen4 / A100 NVLink defaults"


def lookup(name: str) -> Device | None:
    """The catalog entry for `name`, matched case-insensitively; None if unknown."""
    if name in CATALOG:
        return CATALOG[name]
    folded = {k.lower(): v for k, v in CATALOG.items()}
    return folded.get(name.lower())
