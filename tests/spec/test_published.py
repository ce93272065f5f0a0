"""Published 1-GPU vs N-GPU results as scenarios (rung.spec.published), for both files:
the shared one the model was fitted on and the holdout it was not. Oracles are the
published numbers themselves; no TensorFlow."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from rung.model import comm
from rung.spec import catalog, published

FILES = [published.PUBLISHED, published.HOLDOUT]


def raw(path):
    return json.loads(Path(path).read_text())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_efficiency_is_the_ratio_of_its_published_throughputs(path):
    for r in raw(path):
        ratio = r["throughput_ngpu"] / (r["n_gpus"] * r["throughput_1gpu"])
        assert r["efficiency"] == pytest.approx(ratio, abs=6e-4), r["id"]


def test_a_holdout_scenario_asks_for_the_published_n_gpu_throughput():
    """The scenario's target is the N-GPU throughput the source printed, in examples
    (Transformer-XL's tokens over its 192 tokens a sequence), and its step the 1-GPU batch
    over the 1-GPU rate."""
    rows = {r.id: r for r in published.load(published.HOLDOUT)}
    for r in raw(published.HOLDOUT):
        s = rows[r["id"]].scenario
        assert s is not None, r["id"]
        per_example = 192 if r["throughput_unit"] == "tokens/s" else 1
        batch = int(str(r["per_gpu_batch"]).split()[0])
        assert s.goal.target_examples_per_second == pytest.approx(r["throughput_ngpu"] / per_example, rel=2e-3)
        assert s.workload.step_seconds == pytest.approx(batch * per_example / r["throughput_1gpu"], rel=2e-3)
        assert s.proposal.hosts == r["hosts"]


def test_accumulation_is_read_at_the_published_gpu_count():
    shared = {r.id: r for r in published.load()}
    held = {r.id: r for r in published.load(published.HOLDOUT)}
    # BERT pre-training on 4 DGX A100: "Gradient Accumulation 32" in the multi-node table
    assert shared["V01"].scenario.workload.gradient_accumulation_steps == 32
    # the same README's single-node DGX-1 16GB table: 512 at 8 GPUs (4096 at one)
    assert held["H18"].scenario.workload.gradient_accumulation_steps == 512
    assert held["H01"].scenario.workload.gradient_accumulation_steps == 1


def test_rows_whose_code_sends_float16_gradients_exchange_them_so():
    """What each source's training code does at the rows' commit: tf_cnn_benchmarks casts
    gradients to float16 under --use_fp16 (compact_gradient_transfer), DeepLearningExamples'
    BERT compresses under AMP, its TF2 ConvNets always, ELECTRA only when fine-tuning; its
    TF1 ConvNets (ResNet-50 v1.5) never. A TF32 row whose note says "Ampere" is not 16-bit."""
    rows = {r.id: r for path in FILES for r in published.load(path)}

    def dtype(rid):
        return rows[rid].scenario.workload.gradient_dtype

    assert dtype("X11") == "float16"                       # tf_cnn_benchmarks --use_fp16
    assert dtype("V25") is None                            # its FP32 run
    assert dtype("V29") is None and not rows["V29"].scenario.workload.mixed_precision
    assert dtype("V01") == "float16" and dtype("X01") is None      # BERT TF1 AMP, TF32
    assert dtype("V05") == "float16" and dtype("V06") == "float16"  # EfficientNet AMP and FP32
    assert dtype("H56") is None and dtype("H68") == "float16"       # ELECTRA pre-training, fine-tuning
    resnet = [r for r in rows.values() if r.scenario is not None and "resnet50v1.5" in r.raw["source"]["path"]]
    assert resnet and all(r.scenario.workload.gradient_dtype is None for r in resnet)
    assert any(published.sixteen_bit(r.raw) for r in resnet)


def test_rows_that_cannot_be_scenarios_say_why():
    why = {r.id: r.left_out for r in published.load() if r.scenario is None}
    assert set(why) == {"V18", "V22", "X05", "X08"}
    assert "strong scaling" in why["V22"]
    assert "per-GPU batch" in why["X05"]
    assert "1-GPU step" in why["V18"] and "1-GPU step" in why["X08"]


def test_devices_outside_the_catalog_carry_their_vendor_memory_and_pcie():
    held = {r.id: r for r in published.load(published.HOLDOUT)}
    by_device = {}
    for r in raw(published.HOLDOUT):
        by_device.setdefault(r["device"], r["id"])
    a6000 = held[by_device["RTX A6000 (48GB)"]].scenario.hardware
    rtx8000 = held[by_device["Quadro RTX 8000 (48GB)"]].scenario.hardware
    assert (a6000.device_memory_gib, a6000.intra_host_gbps) == (48.0, catalog.PCIE_GEN4_GBPS)
    assert (rtx8000.device_memory_gib, rtx8000.intra_host_gbps) == (48.0, catalog.PCIE_GEN3_GBPS)


def test_the_holdout_repeats_no_configuration_the_model_was_fitted_on():
    def key(r):
        return r["model"], r["device"], r["precision"].split(" ")[0], r["n_gpus"], str(r["per_gpu_batch"])
    fitted = {key(r) for r in raw(published.PUBLISHED)}
    held = [key(r) for r in raw(published.HOLDOUT)]
    assert not fitted & set(held)
    assert len(set(held)) == len(held)
    for r in raw(published.HOLDOUT):
        assert len(r["source"]["commit"]) == 40 and r["source"]["path"], r["id"]


def test_the_model_beats_perfect_scaling_on_results_it_was_not_fitted_on():
    """The fitted constants come from the shared rows; on the holdout the model must still
    do better than the naive answer (every GPU adds a full GPU)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import bench_published
    rows = [r for r in published.load(published.HOLDOUT) if r.scenario is not None]
    assert len(rows) == 150
    e = bench_published.errors(rows, comm.DEFAULT_LINKS)
    naive = np.array([1.0 - r.published_efficiency for r in rows])
    assert np.mean(np.abs(e)) < np.mean(np.abs(naive))


def test_alike_pairs_are_rows_the_model_reads_the_same_but_for_a_close_step():
    """Hand-made rows from one published row: a copy with a 5% longer step is alike; a
    copy with a 20% longer step, or with another per-GPU batch or GPU count, is not. In
    the holdout, the pairs found are one model on one system run under two framework
    versions (U-Net on a DGX-1 under TF1 and TF2 Horovod): inputs the model does not read."""
    base = next(r for r in raw(published.PUBLISHED) if r["id"] == "V20")

    def row(rid, **change):
        r = dict(base, id=rid, **change)
        s, why = published.to_scenario(r)
        return published.Row(rid, published.group(r), r["efficiency"], s, why, r)

    step = base["step_time_1gpu_s_computed"]
    rows = [row("A"), row("B", step_time_1gpu_s_computed=step * 1.05, efficiency=0.70),
            row("C", step_time_1gpu_s_computed=step * 1.20),
            row("D", per_gpu_batch=base["per_gpu_batch"] * 2), row("E", n_gpus=4, gpus_per_host=4)]
    assert [(a.id, b.id) for a, b in published.alike_pairs(rows)] == [("A", "B")]
    wider = published.alike_pairs(rows, step_tolerance=0.25)
    assert [(a.id, b.id) for a, b in wider] == [("A", "B"), ("A", "C"), ("B", "C")]
    held = published.load(published.HOLDOUT)
    pairs = published.alike_pairs(held)
    assert pairs
    for a, b in pairs:
        assert a.raw["system"] == b.raw["system"] and a.raw["n_gpus"] == b.raw["n_gpus"]
        assert a.raw["framework"] != b.raw["framework"], (a.id, b.id)
