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


TERA = 1e12


@dataclass(frozen=True)
class Throughput:
    """Peak dense (no structured sparsity) arithmetic per device, FLOP/s, by the precision
    the math runs in, and memory bandwidth in bytes/s, from the vendor's datasheet.
    `tf32` is None where the device has no TF32 tensor cores (TensorFlow then runs
    float32 math on the FP32 units); TPUs run float32 matmuls in bfloat16 passes, so
    every precision is their bfloat16 peak."""

    fp32: float
    tf32: float | None
    half: float  # float16 / bfloat16 tensor cores (or the MXU)
    memory_bytes_per_second: float
    source: str


@dataclass(frozen=True)
class Device:
    name: str
    memory_gib: float
    links_gbps: dict[str, float]  # link kind -> Gb/s per device, one direction
    default_link: str
    source: str
    is_tpu: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    throughput: Throughput | None = None
    # TPUs: the host counts of the slices Cloud TPU offers of this generation (a slice's
    # hosts share one ICI domain; `slice_name` names one)
    slice_hosts: tuple[int, ...] = ()
    # TPUs: the devices one host of the catalog's slice exposes to TensorFlow (v3: 8 cores;
    # v4 and v5p: 4 chips; v5e: 8 chips), what `devices_per_host` is unless given
    host_devices: int = 0


def _gpu(name, memory_gib, default_link, source, nvlink=None, pcie=PCIE_GEN4_GBPS, peak=None):
    links = {"pcie": pcie}
    if nvlink is not None:
        links["nvlink"] = nvlink
    return Device(name, memory_gib, links, default_link, source, throughput=peak)


def _tpu(name, memory_gib, ici_gbps, source, slice_hosts, host_devices, peak=None):
    return Device(name, memory_gib, {"ici": ici_gbps}, "ici", source, is_tpu=True, throughput=peak,
                  slice_hosts=tuple(slice_hosts), host_devices=host_devices)


def _powers_of_two(top: int) -> tuple[int, ...]:
    return tuple(2 ** i for i in range(top.bit_length()) if 2 ** i <= top)


def slice_name(device: Device, hosts: int, devices_per_host: int | None = None) -> str:
    """The Cloud TPU accelerator type of `hosts` hosts of a one-host slice (TPU-v4-8 x 2 hosts:
    TPU-v4-16): the catalog's one-host name with its count times the hosts, counted by the
    devices when a host holds fewer than the catalog's (`devices_per_host`; 8 hosts of one
    v4 chip are 8 chips, a TPU-v4-16's count, not a TPU-v4-64's)."""
    stem, _, count = device.name.rpartition("-")
    if not count.isdigit():
        return f"{hosts} x {device.name}"
    total = int(count) * hosts
    if devices_per_host and device.host_devices and devices_per_host != device.host_devices:
        scaled = int(count) * hosts * devices_per_host
        if scaled % device.host_devices:
            return f"{hosts} x {devices_per_host} device(s) of a {device.name}"
        total = scaled // device.host_devices
    return f"{stem}-{total}"


def _peak(fp32, tf32, half, memory_gb_per_s, source):
    """TFLOP/s and GB/s as datasheets print them, stored in base units."""
    return Throughput(fp32 * TERA, tf32 * TERA if tf32 else None, half * TERA, memory_gb_per_s * 1e9, source)


def _tpu_peak(bf16, memory_gb_per_s, source):
    return _peak(bf16, bf16, bf16, memory_gb_per_s, source)


_V100 = _peak(15.7, None, 125, 900, "V100 SXM2 datasheet: FP32 15.7, tensor FP16 125 TFLOPS; HBM2 900 GB/s")
_A100_40 = _peak(19.5, 156, 312, 1555, "A100 datasheet: FP32 19.5, TF32 156, FP16/BF16 312 TFLOPS dense; 1,555 GB/s")
_A100_80 = _peak(19.5, 156, 312, 2039, "A100 datasheet: FP32 19.5, TF32 156, FP16/BF16 312 TFLOPS dense; 2,039 GB/s")
_H100_SXM = _peak(67, 494.7, 989.4, 3350,
                  "H100 SXM datasheet: FP32 67, TF32 495, BF16 989 TFLOPS dense (half the sparse figures); 3.35 TB/s")


_DEVICES = [
    _gpu("V100-16GB", 16, "nvlink", "NVIDIA V100 datasheet: 16 GB HBM2; SXM2 NVLink 300 GB/s total",
         nvlink=1200.0, pcie=PCIE_GEN3_GBPS, peak=_V100),
    _gpu("V100-32GB", 32, "nvlink", "NVIDIA V100 datasheet: 32 GB HBM2; SXM2 NVLink 300 GB/s total",
         nvlink=1200.0, pcie=PCIE_GEN3_GBPS, peak=_V100),
    _gpu("T4", 16, "pcie", "NVIDIA T4 datasheet: 16 GB GDDR6; PCIe gen3 x16, no NVLink",
         pcie=PCIE_GEN3_GBPS,
         peak=_peak(8.1, None, 65, 320, "T4 datasheet: FP32 8.1, mixed FP16 65 TFLOPS; 320 GB/s")),
    _gpu("L4", 24, "pcie", "NVIDIA L4 datasheet: 24 GB GDDR6; PCIe gen4 x16, no NVLink",
         peak=_peak(30.3, 60, 121, 300, "L4 datasheet: FP32 30.3, TF32 60, FP16 121 TFLOPS dense "
                                         "(half the sparse 120/242); 300 GB/s")),
    _gpu("A10G", 24, "pcie", "AWS G5 / NVIDIA A10G: 24 GB GDDR6; PCIe gen4 x16, no NVLink",
         peak=_peak(31.2, 62.5, 125, 600, "NVIDIA A10 datasheet (A10G is AWS's variant, assumed equal): "
                                          "FP32 31.2, TF32 62.5, FP16 125 TFLOPS dense; 600 GB/s")),
    _gpu("A100-40GB", 40, "nvlink", "NVIDIA A100 datasheet: 40 GB HBM2; SXM4 NVLink 600 GB/s total",
         nvlink=2400.0, peak=_A100_40),
    _gpu("A100-80GB", 80, "nvlink", "NVIDIA A100 datasheet: 80 GB HBM2e; SXM4 NVLink 600 GB/s total",
         nvlink=2400.0, peak=_A100_80),
    _gpu("H100-80GB", 80, "nvlink", "NVIDIA H100 SXM5 datasheet: 80 GB HBM3; NVLink 900 GB/s total",
         nvlink=3600.0, pcie=PCIE_GEN5_GBPS, peak=_H100_SXM),
    _gpu("H100-PCIe", 80, "pcie", "NVIDIA H100 PCIe datasheet: 80 GB HBM2e; PCIe gen5 x16",
         pcie=PCIE_GEN5_GBPS,
         peak=_peak(51, 378, 756, 2000, "H100 PCIe datasheet: FP32 51, TF32 378, BF16 756 TFLOPS dense; 2 TB/s")),
    _gpu("H200", 141, "nvlink", "NVIDIA H200 SXM datasheet: 141 GB HBM3e; NVLink 900 GB/s total",
         nvlink=3600.0, pcie=PCIE_GEN5_GBPS,
         peak=_peak(67, 494.7, 989.4, 4800, "H200 SXM datasheet: H100 SXM compute; 4.8 TB/s")),
    _gpu("B200", 180, "nvlink", "NVIDIA HGX B200: 180 GB HBM3e per GPU; NVLink 5 1.8 TB/s total",
         nvlink=7200.0, pcie=PCIE_GEN5_GBPS,
         peak=_peak(75, 1100, 2250, 8000, "HGX B200 datasheet, per GPU: FP32 75, TF32 1.1 P, FP16/BF16 "
                                          "2.25 PFLOPS dense (half the sparse figures); 8 TB/s")),
    # TPU slices: memory per device (core for v3, chip otherwise); ICI per chip, one
    # direction, from the Cloud TPU system-architecture pages.
    # Slices (cloud.google.com/tpu/docs: v3, v4, v5e, v5p "configurations"): v3-8 is one host
    # and its pod slices start at v3-32 (4 hosts) up to v3-2048; v4 and v5p slices of 1, 2, 4, ...
    # hosts (4 chips each; the largest are not all powers of two: v5p up to 1,536 hosts); v5e
    # trains on up to 256 chips, 8 to a host: 1 to 32 hosts.
    _tpu("TPU-v3-8", 16, 656.0,
         "Cloud TPU v3: 8 cores, 16 GiB HBM per core; ICI figure is an estimate (not published per chip)",
         (1,) + tuple(h for h in _powers_of_two(256) if h >= 4), 8,
         peak=_tpu_peak(61.5, 450, "Cloud TPU v3: 123 TFLOPS BF16 and 900 GB/s per chip of 2 cores; per core")),
    _tpu("TPU-v4-8", 32, 2400.0, "Cloud TPU v4: 4 chips, 32 GiB HBM each; ICI 2400 Gb/s per chip",
         _powers_of_two(1024), 4,
         peak=_tpu_peak(275, 1228, "Cloud TPU v4: 275 TFLOPS BF16, 1,228 GB/s per chip")),
    _tpu("TPU-v5e-8", 16, 1600.0, "Cloud TPU v5e: 8 chips, 16 GB HBM2 each; ICI 1600 Gb/s per chip",
         _powers_of_two(32), 8,
         peak=_tpu_peak(197, 819, "Cloud TPU v5e: 197 TFLOPS BF16, 819 GB/s per chip")),
    _tpu("TPU-v5p-8", 95, 4800.0, "Cloud TPU v5p: 4 chips, 95 GB HBM2e each; ICI 4800 Gb/s per chip",
         _powers_of_two(1024), 4,
         peak=_tpu_peak(459, 2765, "Cloud TPU v5p: 459 TFLOPS BF16, 2,765 GB/s per chip")),
]

CATALOG: dict[str, Device] = {d.name: d for d in _DEVICES}

# `device: custom` needs device_memory_gib; its links default to these.
CUSTOM_LINKS_GBPS = {"pcie": PCIE_GEN4_GBPS, "nvlink": 2400.0}
CUSTOM_DEFAULT_LINK = "pcie"
CUSTOM_SOURCE = "custom device: memory from the scenario; link from PCIe gen4 / A100 NVLink defaults"


def match_device_name(device_name: str) -> Device | None:
    """The catalog device a framework's device name describes ('NVIDIA A100-SXM4-80GB' is
    A100-80GB): every part of the catalog name appears in it. Written for GPU machines,
    not measured on the CPU-only machine rung is developed on."""
    text = device_name.upper()
    found = [d for d in _DEVICES if not d.is_tpu
             and all(part.upper() in text for part in d.name.split("-"))]
    return max(found, key=lambda d: len(d.name)) if found else None


def lookup(name: str) -> Device | None:
    """The catalog entry for `name`, matched case-insensitively; None if unknown."""
    if name in CATALOG:
        return CATALOG[name]
    folded = {k.lower(): v for k, v in CATALOG.items()}
    return folded.get(name.lower())
