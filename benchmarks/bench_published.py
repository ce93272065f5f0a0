"""rung's scaling model against published 1-GPU vs N-GPU throughputs.

Every usable row of benchmarks/published/scaling-results.json (a copy of the team's
shared file, with sources) becomes a scenario whose `proposal` is the published
configuration (rung.spec.published). The prediction is `throughput.predict_sync`, the
function `rung advise` decides with, with its default link constants. Prints predicted
against published scaling efficiency per row, the mean absolute error (MAE) overall and
per group (one host NVLink, one host PCIe, several hosts), and what each term of the
model buys: the MAE with the term and without it; for the one fitted constant
(`Links.colocation_overhead`) the leave-one-out MAE, refitting it without each row.

    python benchmarks/bench_published.py [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rung.model import comm, throughput  # noqa: E402
from rung.spec import published  # noqa: E402

GAMMAS = np.round(np.linspace(0.0, 0.30, 31), 3)  # the fitted constant's search grid


def efficiency(row: published.Row, links: comm.Links, accumulate: bool = True) -> float:
    s = row.scenario
    if not accumulate and s.workload.gradient_accumulation_steps > 1:
        s = s.model_copy(update={"workload": s.workload.model_copy(update={"gradient_accumulation_steps": 1})})
    p = throughput.predict_sync(s, s.proposal.strategy, s.proposal.hosts, s.hardware.devices_per_host, links)
    return float(p.scaling_efficiency)


def errors(rows, links, accumulate=True) -> np.ndarray:
    return np.array([efficiency(r, links, accumulate) - r.published_efficiency for r in rows])


def mae(e) -> float:
    return float(np.mean(np.abs(e)))


def by_group(rows, e) -> dict:
    groups = {}
    for r, x in zip(rows, e):
        groups.setdefault(r.group, []).append(abs(x))
    return {g: {"rows": len(v), "mae": float(np.mean(v))} for g, v in sorted(groups.items())}


def leave_one_out(rows, base: comm.Links) -> dict:
    """Refit colocation_overhead on all rows but one, predict that one; report the held-out errors."""
    table = np.array([errors(rows, base.with_(colocation_overhead=float(g))) for g in GAMMAS])
    held_out, fitted = [], []
    for i in range(len(rows)):
        keep = np.arange(len(rows)) != i
        best = int(np.argmin(np.abs(table[:, keep]).mean(axis=1)))
        fitted.append(float(GAMMAS[best]))
        held_out.append(float(table[best, i]))
    full = float(GAMMAS[int(np.argmin(np.abs(table).mean(axis=1)))])
    return {"mae": mae(held_out), "by_group": by_group(rows, held_out), "fit_on_all_rows": full,
            "fitted_range": [min(fitted), max(fitted)]}


def split(rows, base: comm.Links) -> dict:
    """Fit colocation_overhead on the file's 'core' rows, test on its 'extra' rows."""
    train = [r for r in rows if r.raw.get("priority") == "core"]
    test = [r for r in rows if r.raw.get("priority") != "core"]
    table = np.array([errors(train, base.with_(colocation_overhead=float(g))) for g in GAMMAS])
    g = float(GAMMAS[int(np.argmin(np.abs(table).mean(axis=1)))])
    e_test = errors(test, base.with_(colocation_overhead=g))
    e_none = errors(test, base.with_(colocation_overhead=0.0))
    return {"fitted_on_core": g, "train_rows": len(train), "test_rows": len(test),
            "test_mae": mae(e_test), "test_mae_without_term": mae(e_none)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=Path, help="write the figures here too")
    a = ap.parse_args()
    loaded = published.load()
    rows = [r for r in loaded if r.scenario is not None]
    left_out = {r.id: r.left_out for r in loaded if r.scenario is None}
    links = comm.DEFAULT_LINKS
    e = errors(rows, links)
    print(f"{'row':<4} {'group':<17} {'GPUs':>9} {'published':>9} {'predicted':>9} {'error':>7}  model")
    for r, x in zip(rows, e):
        cfg = f"{r.raw['hosts']}x{r.raw['gpus_per_host']}"
        print(f"{r.id:<4} {r.group:<17} {cfg:>9} {r.published_efficiency:>9.3f} {r.published_efficiency + x:>9.3f} "
              f"{x:>+7.3f}  {r.raw['model'][:44]}")
    for rid, why in left_out.items():
        print(f"{rid:<4} left out: {why}")
    naive = np.array([1.0 - r.published_efficiency for r in rows])
    print(f"\nMAE in scaling efficiency, {len(rows)} rows: {mae(e):.3f} (median {statistics.median(np.abs(e)):.3f}); "
          f"perfect scaling (efficiency 1.0) would be {mae(naive):.3f}")
    for g, v in by_group(rows, e).items():
        print(f"  {g:<17} {v['rows']:>2} rows  MAE {v['mae']:.3f}")
    # what each term buys: the model with the term, against the model without it
    terms = {
        "gradient accumulation (one exchange per k micro-batches)": errors(rows, links, accumulate=False),
        "NCCL bus bandwidth per link (vs a flat 0.80 of nominal)": errors(
            rows, links.with_(nvlink_efficiency=0.80, pcie_efficiency=0.80, ici_efficiency=0.80)),
        "host-staged transfers without peer-to-peer (vs as with P2P)": errors(rows, links.with_(host_staged_factor=1.0)),
        f"co-location overhead {links.colocation_overhead:g} x compute (vs none)": errors(
            rows, links.with_(colocation_overhead=0.0)),
    }
    print("\nwhat each term buys (MAE without it -> with it; negative change is better):")
    ablation = {}
    for name, without in terms.items():
        ablation[name] = {"without": mae(without), "with": mae(e)}
        print(f"  {name:<62} {mae(without):.3f} -> {mae(e):.3f} ({mae(e) - mae(without):+.3f})")
    # terms left off by default, shown as they would change the error
    tried = {
        "overlap with the backward pass, 64 MiB buckets (Horovod's fusion)": errors(
            rows, links.with_(bucket_bytes=64 * 2**20)),
        "fixed 5 ms per synchronous step (launch and barrier)": errors(rows, links.with_(sync_step_seconds=0.005)),
    }
    tried_out = {}
    for name, with_term in tried.items():
        tried_out[name] = {"without": mae(e), "with": mae(with_term)}
        print(f"  not in the default model: {name:<50} {mae(e):.3f} -> {mae(with_term):.3f} "
              f"({mae(with_term) - mae(e):+.3f})")
    loo = leave_one_out(rows, links)
    print(f"\nleave-one-out (co-location overhead refitted without each row; fitted "
          f"{loo['fitted_range'][0]:g}-{loo['fitted_range'][1]:g}, on all rows {loo['fit_on_all_rows']:g}): "
          f"MAE {loo['mae']:.3f}")
    for g, v in loo["by_group"].items():
        print(f"  {g:<17} {v['rows']:>2} rows  MAE {v['mae']:.3f}")
    sp = split(rows, links)
    print(f"train/test split: co-location overhead fitted on the {sp['train_rows']} 'core' rows "
          f"({sp['fitted_on_core']:g}), tested on the {sp['test_rows']} 'extra' rows: MAE {sp['test_mae']:.3f} "
          f"(without the term {sp['test_mae_without_term']:.3f})")
    within = int(np.sum(np.abs(e) <= 0.05))
    print(f"rows within 0.05 of the published efficiency: {within}/{len(rows)}; within 0.03: "
          f"{int(np.sum(np.abs(e) <= 0.03))}/{len(rows)}")
    if a.json:
        a.json.write_text(json.dumps({
            "rows": [{"id": r.id, "group": r.group, "published": r.published_efficiency,
                      "predicted": r.published_efficiency + float(x)} for r, x in zip(rows, e)],
            "left_out": left_out, "mae": mae(e), "by_group": by_group(rows, e), "perfect_scaling_mae": mae(naive),
            "terms": ablation, "not_in_default": tried_out, "leave_one_out": loo, "split": sp,
            "within_0_05": within}, indent=2))


if __name__ == "__main__":
    main()
