"""The composer: weak scaling, input cap, PS, and the vectorised sweep."""

import numpy as np
import pytest

from rung.model import comm
from rung.model import throughput as t
from rung.model.sweep import sweep_sync
from rung.spec import parse_scenario
from tests.conftest import valid_scenario


def scenario(**kw):
    return parse_scenario(valid_scenario(**kw))


def test_one_device_is_the_measurement():
    s = scenario()
    p = t.predict_sync(s, "single_device", 1, 1)
    assert p.step_seconds == pytest.approx(0.21)
    assert p.examples_per_second == pytest.approx(256 / 0.21)
    assert p.scaling_efficiency == pytest.approx(1.0)
    assert p.communication_seconds == 0


GRAD = 25.6e6 * 4                                        # fp32 gradients of ResNet-50
INTRA = 2 * 7 / 8 * GRAD / (300e9 * 0.77) + 14 * 5e-6    # NVLink 300 GB/s at NCCL's 0.77
FIXED = 0.003                                            # launch and barrier, once per exchange
COLOCATED = 0.065 * 0.205                                # co-location overhead x compute
SYNC = FIXED + COLOCATED
# a multi-worker Keras step all-reduces the loss it logs, one scalar across 2 hosts x 8
# devices: the hierarchical ring's hops, 2 x 7 over NVLink and 2 x 1 over the network
LOGGED_2x8 = 14 * 5e-6 + 2 * 25e-6


def test_mirrored_adds_the_intra_host_allreduce_and_the_colocation_overhead():
    s = scenario()
    p = t.predict_sync(s, "mirrored", 1, 8)
    assert p.intra_host_seconds == pytest.approx(INTRA)
    assert p.sync_seconds == pytest.approx(SYNC)
    assert p.step_seconds == pytest.approx(0.21 + INTRA + SYNC)
    assert p.examples_per_second == pytest.approx(8 * 256 / (0.21 + INTRA + SYNC))


def test_one_hosts_pipeline_makes_every_devices_batch():
    """A pipeline that takes 60 ms a batch never shows on one device (its 205 ms compute
    hides it), and one host's pipeline makes 8 batches a step for mirrored: 480 ms, over the
    step's own 0.21 + INTRA + SYNC. Two hosts have a pipeline each: 2 x 8 x 256 / 0.48.
    At 20 ms a batch, 8 x 20 = 160 ms is under the step, and nothing changes."""
    s = scenario(workload={"pipeline_seconds_per_batch": 0.06})
    one = t.predict_sync(s, "single_device", 1, 1)
    assert one.step_seconds == pytest.approx(0.21) and not one.input_capped
    p = t.predict_sync(s, "mirrored", 1, 8)
    assert p.input_capped and p.step_seconds == pytest.approx(0.48)
    assert p.input_floor_wait_seconds == pytest.approx(0.48 - (0.21 + INTRA + SYNC))
    assert p.examples_per_second == pytest.approx(8 * 256 / 0.48)
    two = t.predict_sync(s, "multi_worker_mirrored", 2, 8)
    assert two.input_capped and two.examples_per_second == pytest.approx(2 * 8 * 256 / 0.48)
    # parameter-server workers of 8 devices wait on their host's pipeline alike
    ps_worker = t.predict_ps(s, 2, 8)
    assert ps_worker.input_capped and ps_worker.step_seconds == pytest.approx(0.48)
    fed = scenario(workload={"pipeline_seconds_per_batch": 0.02})
    q, plain = t.predict_sync(fed, "mirrored", 1, 8), t.predict_sync(scenario(), "mirrored", 1, 8)
    assert not q.input_capped and q.step_seconds == pytest.approx(plain.step_seconds)
    # the pipeline is linear in the batch, as the step is: the floor at twice the batch is 960 ms
    doubled = t.sync_terms(s, 1, 8, batch=512)
    assert float(doubled["step"]) == pytest.approx(0.96)
    # a pipeline timed alone slower than the measured step (which holds its wait) is taken
    # at the step: one device stays as measured, 8 wait for 8 x 0.21 s
    noisy = scenario(workload={"pipeline_seconds_per_batch": 0.3})
    assert t.predict_sync(noisy, "single_device", 1, 1).step_seconds == pytest.approx(0.21)
    assert t.predict_sync(noisy, "mirrored", 1, 8).step_seconds == pytest.approx(8 * 0.21)


def test_gradients_cast_to_float16_for_the_exchange_send_half_the_bytes():
    """A step that all-reduces float16 gradients of float32 variables (Horovod's
    Compression.fp16): the ring carries 2 bytes a parameter; the latency hops stay."""
    s = scenario(workload={"gradient_dtype": "float16", "mixed_precision": True})
    assert t.exchanged_gradient_bytes(s) == 25.6e6 * 2
    p = t.predict_sync(s, "mirrored", 1, 8)
    assert p.intra_host_seconds == pytest.approx(2 * 7 / 8 * GRAD / 2 / (300e9 * 0.77) + 14 * 5e-6)
    # mixed precision alone exchanges the float32 variables' gradients
    plain = t.predict_sync(scenario(workload={"mixed_precision": True}), "mirrored", 1, 8)
    assert plain.intra_host_seconds == pytest.approx(INTRA)


def test_gradient_accumulation_exchanges_once_per_k_micro_batches():
    s = scenario(workload={"gradient_accumulation_steps": 4})
    p = t.predict_sync(s, "multi_worker_mirrored", 2, 8)
    inter = 2 * 1 / 2 * GRAD / (12.5e9 * 0.9) + 2 * 25e-6
    strag = 0.205 * 2 * 0.02 / np.sqrt(np.pi)  # sqrt(4) x cv x E[max of 2 normals] = 1/sqrt(pi)
    step = 4 * 0.21 + INTRA + inter + FIXED + 4 * COLOCATED + LOGGED_2x8 + strag
    assert p.step_seconds == pytest.approx(step)
    assert p.examples_per_second == pytest.approx(16 * 256 * 4 / step)


def test_synchronized_batch_norm_adds_six_small_all_reduces_a_layer_in_every_micro_batch():
    plain = t.predict_sync(scenario(), "multi_worker_mirrored", 2, 8)
    s = scenario(workload={"sync_batch_norm_layers": 53})  # ResNet-50's BatchNorm layers
    p = t.predict_sync(s, "multi_worker_mirrored", 2, 8)
    # one small all-reduce: 2 x 7 hops of 5 us inside a host, 2 x 1 of 25 us between two
    one = 14 * 5e-6 + 2 * 25e-6
    assert p.sync_batch_norm_seconds == pytest.approx(53 * 6 * one)  # 38 ms
    assert p.step_seconds == pytest.approx(plain.step_seconds + 53 * 6 * one)
    k4 = t.predict_sync(scenario(workload={"sync_batch_norm_layers": 53, "gradient_accumulation_steps": 4}),
                        "multi_worker_mirrored", 2, 8)
    assert k4.sync_batch_norm_seconds == pytest.approx(4 * 53 * 6 * one)  # every micro-batch normalises
    assert t.predict_sync(s, "single_device", 1, 1).sync_batch_norm_seconds == 0
    measured = t.predict_sync(s, "multi_worker_mirrored", 2, 8, t.comm.DEFAULT_LINKS.with_(small_allreduce_seconds=1e-3))
    assert measured.sync_batch_norm_seconds == pytest.approx(53 * 6 * 1e-3)


def test_each_sparse_gradient_queues_three_small_collectives_once_a_step():
    """An IndexedSlices gradient under multi-worker: its rows' count, then its rows and
    their indices, all-gathered in sequence (three latencies), beside its bytes."""
    emb = {"embedding_params": 20e6, "sparse_gradient_bytes_per_example": 1000.0}
    links = t.comm.DEFAULT_LINKS.with_(small_allreduce_seconds=2e-3)
    one, two = (t.predict_sync(scenario(workload={**emb, "sparse_gradient_tensors": n}), "multi_worker_mirrored",
                               2, 8, links) for n in (1, 2))
    assert two.sparse_exchange_seconds - one.sparse_exchange_seconds == pytest.approx(3 * 2e-3)
    assert two.step_seconds - one.step_seconds == pytest.approx(3 * 2e-3)
    # not measured: one table, the hierarchical ring's hops as for any small collective
    unknown = t.predict_sync(scenario(workload=emb), "multi_worker_mirrored", 2, 8)
    counted = t.predict_sync(scenario(workload={**emb, "sparse_gradient_tensors": 1}), "multi_worker_mirrored", 2, 8)
    none = t.predict_sync(scenario(workload={**emb, "sparse_gradient_tensors": 0}), "multi_worker_mirrored", 2, 8)
    assert unknown.sparse_exchange_seconds == pytest.approx(counted.sparse_exchange_seconds)
    assert counted.sparse_exchange_seconds - none.sparse_exchange_seconds == pytest.approx(3 * (14 * 5e-6 + 2 * 25e-6))
    k4 = t.predict_sync(scenario(workload={**emb, "sparse_gradient_tensors": 2, "gradient_accumulation_steps": 4}),
                        "multi_worker_mirrored", 2, 8, links)
    k4_none = t.predict_sync(scenario(workload={**emb, "sparse_gradient_tensors": 0, "gradient_accumulation_steps": 4}),
                             "multi_worker_mirrored", 2, 8, links)
    # accumulated micro-batches exchange their rows once (their bytes x 4, their latency x 1)
    assert k4.sparse_exchange_seconds - k4_none.sparse_exchange_seconds == pytest.approx(2 * 3 * 2e-3)
    # no embedding rows to exchange, or one replica: nothing
    dense = scenario(workload={"sparse_gradient_tensors": 3})
    assert t.predict_sync(dense, "multi_worker_mirrored", 2, 8, links).sparse_exchange_seconds == 0
    assert t.predict_sync(scenario(workload={**emb, "sparse_gradient_tensors": 2}), "single_device", 1, 1,
                          links).sparse_exchange_seconds == 0


def test_without_peer_to_peer_the_host_link_runs_at_half_rate():
    s = scenario(hardware={"intra_host": "pcie", "peer_to_peer": False})
    p = t.predict_sync(s, "mirrored", 1, 8)
    # A100 PCIe gen4: 32 GB/s nominal, 0.75 of it with P2P, half of that staged through the host
    assert p.intra_host_seconds == pytest.approx(2 * 7 / 8 * GRAD / (32e9 * 0.75 * 0.5) + 14 * 5e-6)


def test_one_device_has_no_synchronisation_cost():
    p = t.predict_sync(scenario(), "single_device", 1, 1)
    assert p.sync_seconds == 0 and p.step_seconds == pytest.approx(0.21)


def test_multi_host_adds_network_and_stragglers():
    s = scenario()
    p = t.predict_sync(s, "multi_worker_mirrored", 4, 8)
    assert p.inter_host_seconds > 0 and p.straggler_seconds > 0
    assert p.scaling_efficiency < t.predict_sync(s, "mirrored", 1, 8).scaling_efficiency


def test_input_bound_host_does_not_scale():
    s = scenario(workload={"step_seconds": 0.5, "input_wait_seconds": 0.3})
    one = t.predict_sync(s, "single_device", 1, 1)
    eight = t.predict_sync(s, "mirrored", 1, 8)
    assert eight.input_capped
    assert eight.examples_per_second == pytest.approx(one.examples_per_second, rel=1e-9)


def test_ps_worker_holds_no_optimizer_state_and_sizes_tasks():
    s = scenario(workload={"params": 4.05e9, "embedding_params": 4e9, "optimizer": "adagrad",
                           "activation_bytes_per_example": 0},
                 hardware={"device": "V100-16GB", "devices_per_host": 1, "intra_host": None})
    p = t.predict_ps(s, 10, 1)
    # dense weights + grads (50M x 4 B x 2) + rows and their grads (13,312 B x 256 x 2)
    assert p.memory_bytes_per_device == pytest.approx(2 * 50e6 * 4 + 2 * 13312 * 256)
    assert p.ps_tasks >= 1 and p.staleness_steps == 9 and p.straggler_seconds == 0


def test_a_ps_step_pays_one_remote_read_and_update_per_variable_whatever_its_optimizer_slots():
    # Oracle: benchmarks/bench_ps_slots.py, 128 variables fit under a real PS cluster here:
    # momentum (one slot each) took SGD's step and Adam (two) 7-10 ms more; the slots sit
    # beside their variable and the update runs on that PS. Counting slots as remote
    # variables had predicted momentum +19 ms and Adam +38 ms over SGD.
    steps = {}
    for opt in ("sgd", "momentum", "adam"):
        s = scenario(workload={"optimizer": opt, "trainable_variables": 50, "input_wait_seconds": 0.0},
                     hardware={"devices_per_host": 1, "intra_host": None})
        p = t.predict_ps(s, 2, 1)
        # 25.6M float32 weights pulled and their gradients pushed over 100 Gb/s at 0.9, plus
        # 50 remote reads and updates of 0.15 ms
        assert p.ps_exchange_seconds == pytest.approx(2 * 25.6e6 * 4 / (12.5e9 * 0.9) + 50 * 1.5e-4)
        steps[opt] = p.step_seconds
    assert steps["adam"] == pytest.approx(steps["sgd"]) and steps["momentum"] == pytest.approx(steps["sgd"])


def test_sweep_against_hand_derived_points():
    s = scenario()
    hosts, devs, gbps, batch = [1, 2, 4, 8], [1, 4, 8], [10, 100], [128, 256]
    g = sweep_sync(s, hosts, devs, gbps, batch)
    assert g["examples_per_second"].shape == (4, 3, 2, 2)
    # one device at the measured batch is the measurement
    assert g["examples_per_second"][0, 0, 0, 1] == pytest.approx(256 / 0.21)
    # one device at half the batch: compute and wait scale linearly, 128 / 0.105
    assert g["examples_per_second"][0, 0, 0, 0] == pytest.approx(128 / 0.105)
    # 2 hosts x 8 devices on 10 Gb/s at batch 256, every term by hand
    inter = 2 * 1 / 2 * GRAD / (1.25e9 * 0.9) + 2 * 25e-6
    strag = 0.205 * 0.02 / np.sqrt(np.pi)
    step = 0.21 + INTRA + inter + SYNC + LOGGED_2x8 + strag
    assert g["step_seconds"][1, 2, 0, 1] == pytest.approx(step)
    assert g["examples_per_second"][1, 2, 0, 1] == pytest.approx(16 * 256 / step)
    # faster network never hurts
    assert np.all(g["examples_per_second"][:, :, 1, :] >= g["examples_per_second"][:, :, 0, :])


def test_a_multi_worker_keras_step_all_reduces_each_value_it_logs():
    """tf-keras's fit under MultiWorkerMirroredStrategy reduces every leaf of train_step's
    logs across the workers, one scalar all-reduce each (`reduce_per_replica`): the loss,
    each output's loss, each metric. By hand, 2 hosts x 8 devices: each is the ring's hops,
    14 x 5 us in the host and 2 x 25 us between the hosts. One host (MirroredStrategy) and a
    TPU slice reduce none across workers; a test bed's measured cost of one takes the hops' place."""
    def step(logged, hosts=2, links=comm.DEFAULT_LINKS):
        s = scenario(workload={} if logged is None else {"logged_values": logged})
        return t.predict_sync(s, "multi_worker_mirrored", hosts, s.hardware.devices_per_host, links)

    assert step(None).logged_values_seconds == pytest.approx(LOGGED_2x8)  # the loss alone
    assert step(4).logged_values_seconds == pytest.approx(4 * LOGGED_2x8)
    assert step(4).step_seconds - step(0).step_seconds == pytest.approx(4 * LOGGED_2x8)
    assert step(4, hosts=1).logged_values_seconds == 0.0
    measured = comm.DEFAULT_LINKS.with_(logged_value_seconds=0.0036)
    assert step(3, links=measured).logged_values_seconds == pytest.approx(3 * 0.0036)


def test_percentile_interpolates_like_numpy():
    from rung.stats import percentile
    vals = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(vals, 0.5) == np.percentile(vals, 50)
    assert percentile(vals, 0.95) == pytest.approx(np.percentile(vals, 95))
    assert percentile([7.0], 0.95) == 7.0


def test_a_step_interval_never_reaches_below_the_fastest_step():
    from rung.stats import mean_ci95
    # 30 steps of 10 ms and one of 1 s: the block holding the outlier makes the symmetric
    # interval reach below zero; a duration's interval stops at the fastest step seen
    steps = [0.01] * 30 + [1.0]
    lo, hi = mean_ci95(steps)
    assert lo < 0
    lo, hi = mean_ci95(steps, floor_at_min=True)
    assert lo == pytest.approx(0.01) and hi > sum(steps) / len(steps)


def test_one_stalled_next_does_not_make_a_fed_pipeline_input_bound_but_a_steady_wait_does():
    from rung.stats import median_of_means
    # 30 waits of 0.1 ms and one of 20 ms (a stalled next()): the mean is 0.74 ms, 7 times
    # the pipeline's wait; six blocks of 5-6 steps, one holding the stall: the median is 0.1 ms
    stalled = [1e-4] * 30 + [0.02]
    assert sum(stalled) / len(stalled) == pytest.approx(7.4e-4, rel=0.01)
    assert median_of_means(stalled) == pytest.approx(1e-4)
    # a pipeline that stalls every third batch for 3 ms waits 1.07 ms a step on average:
    # every block of 5 holds 1 or 2 stalls (block means 0.68 or 1.26 ms), so the estimate
    # is between those, far above the 0.1 ms of the steps without a stall
    periodic = [1e-4, 1e-4, 3e-3] * 10
    assert 0.68e-3 - 1e-9 <= median_of_means(periodic) <= 1.26e-3 + 1e-9
    # too few steps for blocks: the mean
    assert median_of_means([1e-4, 1e-4, 0.02]) == pytest.approx((0.0202) / 3)


def test_a_measured_checkpoint_time_replaces_the_byte_count_in_goodput_and_youngs_interval():
    # 8 hosts, 0.5 preemptions per host hour: M = 3600 / 4 = 900 s; restart 300 s
    fleet = {"preemptible": True, "preemptions_per_host_hour": 0.5, "restart_seconds": 300}
    measured = t.predict_sync(scenario(fleet={**fleet, "checkpoint_seconds": 30}), "multi_worker_mirrored", 8, 1)
    # by hand, delta = 30 s: tau = sqrt(2 x 30 x 900) = 232.38 s;
    # goodput (Daly) 232.38 / (900 e^(300/900) (e^(262.38/900) - 1)) = 0.5466
    assert measured.checkpoint_interval_seconds == pytest.approx(232.379, rel=1e-4)
    assert measured.goodput == pytest.approx(0.5466, abs=2e-4)
    # without it, the state's bytes at 1 GB/s: a far shorter interval and more goodput
    assumed = t.predict_sync(scenario(fleet=fleet), "multi_worker_mirrored", 8, 1)
    assert assumed.checkpoint_interval_seconds < measured.checkpoint_interval_seconds
    assert assumed.goodput > measured.goodput


def test_weights_no_optimizer_updates_are_held_everywhere_and_read_by_every_ps_worker():
    # a frozen base of 20M float32 weights under a trainable head (25.6M, the default). Oracle
    # on this machine's PS (rung bench, 2 workers, tf-keras): a frozen 4096x4096 Dense (64 MiB)
    # under a 4,097-weight head took 60-62 ms a step against 14 ms on one device, predicted
    # 16.7 ms without the frozen weights' pull and 72.6 ms with it; a frozen ResNet50 base
    # (94 MB, 318 variables) 214-236 ms against 180-187 ms, predicted -18% and +23%
    plain = scenario(workload={"trainable_variables": 50, "input_wait_seconds": 0.0},
                     hardware={"devices_per_host": 1, "intra_host": None})
    frozen = scenario(workload={"trainable_variables": 50, "input_wait_seconds": 0.0, "non_trainable_params": 20e6},
                      hardware={"devices_per_host": 1, "intra_host": None})
    assert t.replica(frozen).weights_bytes - t.replica(plain).weights_bytes == 20e6 * 4  # no gradient, no slot
    assert t.replica(frozen).gradient_bytes == t.replica(plain).gradient_bytes
    assert t.replica(frozen).optimizer_bytes == t.replica(plain).optimizer_bytes
    ps_plain, ps_frozen = t.predict_ps(plain, 2, 1), t.predict_ps(frozen, 2, 1)
    # pulled every step, one way, over 100 Gb/s at 0.9; no push, no per-variable update
    assert ps_frozen.ps_exchange_seconds - ps_plain.ps_exchange_seconds == pytest.approx(20e6 * 4 / (12.5e9 * 0.9))
    assert ps_frozen.memory_bytes_per_device - ps_plain.memory_bytes_per_device == 20e6 * 4
    # synchronous plans move gradients only: the same exchange, more memory
    mw_plain, mw_frozen = t.predict_sync(plain, "multi_worker_mirrored", 4, 1), t.predict_sync(frozen, "multi_worker_mirrored", 4, 1)
    assert mw_frozen.inter_host_seconds == mw_plain.inter_host_seconds
    assert mw_frozen.memory_bytes_per_device - mw_plain.memory_bytes_per_device == 20e6 * 4


def test_preempted_ps_workers_cost_nothing_while_the_others_saturate_the_coordinator():
    """64 workers of 0.21 s steps ask for 305 steps a second, three times what one 10 ms
    coordinator dispatches: workers down 4% of their time (0.5 preemptions an hour, 5-minute
    restarts) leave the fleet at the coordinator's 100 steps of 256 a second; 2 workers,
    far under the cap, lose their share: 2 x e^(-1/24) / 0.21 steps a second."""
    s = scenario(fleet={"preemptible": True, "preemptions_per_host_hour": 0.5, "restart_seconds": 300})
    many = t.predict_ps(s, 64, 1)
    assert many.dispatch_bound and many.examples_per_second == pytest.approx(100 * 256)
    few = t.predict_ps(s, 2, 1)
    assert not few.dispatch_bound
    assert few.goodput == pytest.approx(np.exp(-0.5 * 300 / 3600))
    assert few.examples_per_second == pytest.approx(2 * np.exp(-0.5 * 300 / 3600) / few.step_seconds * 256)
