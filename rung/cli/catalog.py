"""`rung catalog`: the hardware names a scenario may use, with the source of each number."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("catalog", help="list the hardware names a scenario may use",
                       description="Device memory, intra-host links and the source of each number.")
    p.add_argument("--json", action="store_true", help="print the catalog as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    from rung.spec.catalog import CATALOG

    if args.json:
        rows = [{"name": d.name, "memory_gib": d.memory_gib, "is_tpu": d.is_tpu,
                 "default_link": d.default_link, "links_gbps": d.links_gbps, "source": d.source}
                for d in CATALOG.values()]
        json.dump({"schema": "rung/catalog/v1", "devices": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="Hardware catalog (hardware.device)", title_justify="left")
    for col in ("name", "memory", "intra-host link (default first)", "source"):
        t.add_column(col, overflow="fold")
    for d in CATALOG.values():
        links = sorted(d.links_gbps.items(), key=lambda kv: kv[0] != d.default_link)
        t.add_row(d.name, f"{d.memory_gib:g} GiB", ", ".join(f"{k} {v:g} Gb/s" for k, v in links), d.source)
    Console().print(t)
    print("Also: device: custom, with hardware.device_memory_gib (links default to PCIe gen4 256 Gb/s): a GPU "
          "the catalog lacks, or with hardware.accelerator: cpu, CPU devices (no NCCL).")
    return 0
