"""Published 1-GPU vs N-GPU throughputs (benchmarks/published/scaling-results.json, a
copy of the team's shared file; holdout.json beside it, results not used to build or fit
the model) turned into scenarios: the published configuration is
the `proposal`, the published 1-GPU step is the measured step. Pure: no TensorFlow.

A row becomes a scenario only when the source gives what the model needs: a 1-GPU
step time (or a per-GPU batch with a throughput in examples), weak scaling (the
per-GPU batch stays the same), and a synchronous exchange of every gradient. The rest
are returned with the reason they were left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rung.spec import catalog
from rung.spec.scenario import SCHEMA, Scenario, parse_scenario

PUBLISHED = Path(__file__).resolve().parents[2] / "benchmarks" / "published" / "scaling-results.json"
# results not used to build or fit the model (rung's own collection, same format)
HOLDOUT = PUBLISHED.with_name("holdout.json")

# Devices outside rung's catalog: memory (GiB) and PCIe generation from the vendors' sheets.
_CUSTOM = {
    "K80": (12.0, catalog.PCIE_GEN3_GBPS),          # one GK210 die of a Tesla K80 board
    "P100": (16.0, catalog.PCIE_GEN3_GBPS),
    "2080 Ti": (11.0, catalog.PCIE_GEN3_GBPS),
    "3090": (24.0, catalog.PCIE_GEN4_GBPS),
    "A6000": (48.0, catalog.PCIE_GEN4_GBPS),
    "RTX 8000": (48.0, catalog.PCIE_GEN3_GBPS),
}
# NVLink per GPU, one direction, Gb/s: P100 NVLink1 4 links x 20 GB/s (cube mesh)
_P100_NVLINK_GBPS = 640.0

_OPTIMIZERS = {"lamb": "adam", "adam": "adam", "adamw": "adamw", "rmsprop": "rmsprop",
               "sgd momentum": "momentum", "sgd": "sgd"}


# Training code that all-reduces float16 gradients (read at the rows' commits:
# DeepLearningExamples 729963dd, tf_cnn_benchmarks as the Lambda and NVIDIA logs ran it).
# (how the row's source path or framework starts, whether only its 16-bit runs do, where the
# code says so). Every other row's code all-reduces gradients in the variables' dtype.
_FLOAT16_EXCHANGE = (
    ("tf_cnn_benchmarks", True,
     "benchmark_cnn.py: --compact_gradient_transfer defaults to true; variable_mgr.py, "
     "VariableMgrLocalReplicated.preprocess_device_grads casts to float16 under --use_fp16"),
    ("TensorFlow/LanguageModeling/BERT/", True,
     "optimization.py:97,151 Compression.fp16 if use_fp16, which run_pretraining.py:319 and "
     "run_squad.py:362 pass as --amp"),
    ("TensorFlow2/LanguageModeling/BERT/", True,
     "official/modeling/model_training_utils.py:272,316 Compression.fp16 when the optimizer "
     "is a LossScaleOptimizer"),
    ("TensorFlow2/LanguageModeling/ELECTRA/ fine-tuning", True,
     "run_tf_squad.py:277 Compression.fp16 if --amp (pre-training compresses only with "
     "--fp16_compression, which scripts/run_pretraining.sh does not pass)"),
    ("TensorFlow2/Classification/ConvNets/", False,
     "runtime/runner.py:192 Compression.fp16 if hvd_fp16_compression, a store_true flag "
     "whose default is True (utils/cmdline_helper.py:164), whatever the precision"),
    ("TensorFlow2/Detection/Efficientdet/", True,
     "utils/train_lib.py:382 compresses when the policy computes in float16"),
)


def sixteen_bit(row: dict) -> bool:
    """The row trains in 16-bit floats: "AMP (FP16 mixed)", "FP16 (--use_fp16)" (not the
    "Ampere" of a TF32 row's note)."""
    return re.search(r"\bAMP\b|\bFP16\b", row["precision"].upper()) is not None


def gradient_dtype(row: dict) -> Optional[str]:
    """"float16" when the row's training code all-reduces float16 gradients
    (`_FLOAT16_EXCHANGE`), else None: the variables' dtype."""
    path = str(row.get("source", {}).get("path", ""))
    sixteen = sixteen_bit(row)
    for where, sixteen_only, _ in _FLOAT16_EXCHANGE:
        if sixteen_only and not sixteen:
            continue
        if where == "tf_cnn_benchmarks":
            if "tf_cnn_benchmarks" in row["framework"] and "variable_update=replicated" in row["notes"]:
                return "float16"
        elif where.endswith(" fine-tuning"):
            if path.startswith(where.split()[0]) and "fine-tuning" in row["model"]:
                return "float16"
        elif path.startswith(where):
            return "float16"
    return None


@dataclass(frozen=True)
class Row:
    id: str
    group: str          # "one host, NVLink" | "one host, PCIe" | "several hosts"
    published_efficiency: float
    scenario: Optional[Scenario]
    left_out: Optional[str] = None
    raw: Optional[dict] = None


def group(row: dict) -> str:
    if row["hosts"] > 1:
        return "several hosts"
    return "one host, NVLink" if row["intra_host_link"].startswith("nvlink") else "one host, PCIe"


def _leading_int(value) -> Optional[int]:
    if isinstance(value, (int, float)):
        return int(value)
    m = re.match(r"\s*(\d+)", str(value or ""))
    return int(m.group(1)) if m else None


def accumulation_at_n(row: dict) -> int:
    """Micro-batches per gradient exchange in the N-GPU configuration ('32 @32 GPUs')."""
    text = row.get("grad_accum")
    if not text or text == "not stated":
        return 1
    for part in str(text).split(";"):
        m = re.match(r"\s*(\d+)\s*@\s*(\d+)\s*GPU", part)
        if m and int(m.group(2)) == row["n_gpus"]:
            return int(m.group(1))
    return 1


def _hardware(row: dict) -> dict:
    name = row["device"]
    p2p = "NO P2P" not in row["intra_host_link"].upper()
    link = "nvlink" if row["intra_host_link"].startswith("nvlink") else "pcie"
    hw: dict = {"devices_per_host": row["gpus_per_host"], "max_hosts": max(1, row["hosts"])}
    for key, (gib, pcie) in _CUSTOM.items():
        if key in name:
            hw.update(device="custom", device_memory_gib=gib)
            hw["intra_host_gbps"] = _P100_NVLINK_GBPS if (key == "P100" and link == "nvlink") else pcie
            break
    else:
        if "A100" in name:
            hw["device"] = "A100-80GB" if "80GB" in name else "A100-40GB"
        elif "V100" in name:
            hw["device"] = "V100-16GB" if "16GB" in name else "V100-32GB"
        else:
            raise ValueError(f"{row['id']}: no catalog device for {name!r}")
        hw["intra_host"] = link
    if not p2p:
        hw["peer_to_peer"] = False
    if row["hosts"] > 1:
        hw["inter_host_gbps"] = float(row["inter_host_gbps_per_host"])
    return hw


def to_scenario(row: dict) -> tuple[Optional[Scenario], Optional[str]]:
    """(scenario, None), or (None, why the row cannot be one)."""
    batch = _leading_int(row["per_gpu_batch"])
    if "STRONG" in str(row["per_gpu_batch"]).upper():
        return None, "strong scaling (the per-GPU batch shrinks with N); rung models weak scaling"
    if batch is None:
        return None, "the source does not state the per-GPU batch"
    step = row.get("step_time_1gpu_s_computed")
    if step is None:
        return None, "no 1-GPU step time (throughput in tokens, sentence length not given)"
    opt = row["optimizer"].lower()
    optimizer = next((v for k, v in _OPTIMIZERS.items() if opt.startswith(k)), "adam")
    mixed = sixteen_bit(row)
    strategy = "mirrored" if row["hosts"] == 1 else "multi_worker_mirrored"
    data = {
        "schema": SCHEMA, "name": f"published {row['id']}: {row['model']}",
        "workload": {"params": row["params_M"] * 1e6, "optimizer": optimizer, "per_device_batch": batch,
                     "step_seconds": step, "mixed_precision": mixed,
                     "gradient_accumulation_steps": accumulation_at_n(row),
                     "gradient_dtype": gradient_dtype(row),
                     # Horovod, tf_cnn_benchmarks and one-host MirroredStrategy: no step all-reduces
                     # what it logs (tf-keras's fit under MultiWorkerMirroredStrategy does)
                     "logged_values": 0},
        "hardware": _hardware(row),
        "goal": {"target_examples_per_second": row["throughput_ngpu"] / row["throughput_1gpu"] * batch / step},
        "proposal": {"strategy": strategy, "hosts": row["hosts"]},
    }
    return parse_scenario(data, f"published row {row['id']}"), None


def load(path: Path = PUBLISHED) -> list[Row]:
    out = []
    for row in json.loads(Path(path).read_text()):
        s, why = to_scenario(row)
        out.append(Row(row["id"], group(row), row["efficiency"], s, why, row))
    return out


def inputs_key(s: Scenario) -> tuple:
    """Everything the scaling model reads from a published row except the 1-GPU step."""
    w, h = s.workload, s.hardware
    return (w.params, w.optimizer, w.per_device_batch, w.mixed_precision, w.gradient_accumulation_steps, w.gradient_dtype,
            h.device, h.device_memory_gib, h.intra_host, h.intra_host_gbps, h.peer_to_peer,
            h.devices_per_host, h.inter_host_gbps, s.proposal.strategy, s.proposal.hosts)


def alike_pairs(rows: list[Row], step_tolerance: float = 0.10) -> list[tuple[Row, Row]]:
    """Pairs of rows the model cannot tell apart: the same inputs, 1-GPU steps within
    `step_tolerance` of each other. Where two such results disagree by d, any model of
    these inputs (one that moves little with a step this close) errs by about d/2 on
    each on average: the published data's own floor for the error."""
    usable = [r for r in rows if r.scenario is not None]
    out = []
    for i, a in enumerate(usable):
        for b in usable[i + 1:]:
            if inputs_key(a.scenario) != inputs_key(b.scenario):
                continue
            sa, sb = a.scenario.workload.step_seconds, b.scenario.workload.step_seconds
            if abs(sa - sb) <= step_tolerance * min(sa, sb):
                out.append((a, b))
    return out
