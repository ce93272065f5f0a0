"""Ring and hierarchical all-reduce, sparse all-gather (Patarasuk & Yuan 2009)."""

import numpy as np
import pytest

from rung.model import comm


def test_ring_allreduce_hand_numbers():
    assert comm.ring_allreduce_seconds(1e9, 1, 1e9, 1e-5) == 0
    # N=2: 2 x 1/2 x 1 GB / 1 GB/s = 1 s, plus 2 hops
    assert comm.ring_allreduce_seconds(1e9, 2, 1e9, 1e-5) == pytest.approx(1.0 + 2e-5)
    # N=8: 2 x 7/8 = 1.75 s, 14 hops
    assert comm.ring_allreduce_seconds(1e9, 8, 1e9, 0.0) == pytest.approx(1.75)
    # bandwidth term approaches 2 M / B for large N
    assert comm.ring_allreduce_seconds(1e9, 10_000, 1e9, 0.0) == pytest.approx(2.0, rel=1e-3)


def test_inter_host_stage_uses_host_network_and_efficiency():
    # 102.4 MB of fp32 gradients (ResNet-50) across 4 hosts on 200 Gb/s at 90%:
    # 2 x 3/4 x 102.4e6 / (25e9 x 0.9) = 6.827 ms, + 6 hops x 25 us
    links = comm.DEFAULT_LINKS
    t = comm.inter_host_allreduce_seconds(102.4e6, 4, 25e9, links.inter_host_efficiency, links.inter_host_hop_seconds)
    assert t == pytest.approx(2 * 0.75 * 102.4e6 / (25e9 * 0.9) + 6 * 25e-6)


def test_intra_host_stage():
    t = comm.intra_host_allreduce_seconds(102.4e6, 8, 300e9, 0.77, 5e-6)
    assert t == pytest.approx(2 * 7 / 8 * 102.4e6 / (300e9 * 0.77) + 14 * 5e-6)


def test_bus_bandwidth_share_per_link_kind():
    links = comm.Links()
    # nccl-tests: ~230 of 300 GB/s on NVLink, ~12 of 16 GB/s on PCIe gen3 peer-to-peer
    assert links.efficiency("nvlink") == pytest.approx(230 / 300, abs=0.01)
    assert links.efficiency("pcie") == pytest.approx(12 / 16, abs=0.01)


def test_overlap_hides_all_but_the_last_bucket_behind_the_backward_pass():
    # 400 MB in 100 MB buckets (b/M = 1/4), exchange 80 ms:
    # backward 300 ms: the pipeline keeps up, only the last bucket shows: 80/4 = 20 ms
    assert comm.exposed_exchange_seconds(0.08, 400e6, 100e6, 0.3) == pytest.approx(0.02)
    # backward 40 ms: 80 - (1 - 1/4) x 40 = 50 ms exposed
    assert comm.exposed_exchange_seconds(0.08, 400e6, 100e6, 0.04) == pytest.approx(0.05)
    # no buckets, or one bucket bigger than the message: nothing is hidden
    assert comm.exposed_exchange_seconds(0.08, 400e6, 0, 0.3) == pytest.approx(0.08)
    assert comm.exposed_exchange_seconds(0.08, 400e6, 1e9, 0.3) == pytest.approx(0.08)


def test_vectorised_matches_scalar():
    n = np.arange(1, 17)
    v = comm.ring_allreduce_seconds(5e8, n, 1e10, 1e-5)
    assert [float(x) for x in v] == pytest.approx([2 * (k - 1) / k * 5e8 / 1e10 + 2 * (k - 1) * 1e-5 for k in range(1, 17)])


def test_sparse_allgather_grows_with_workers_and_batch():
    intra2, inter2 = comm.sparse_allgather_seconds(1e6, 2, 1, 1e11, 1e9)
    assert intra2 == pytest.approx(1e6 / (1e11 * 0.77) + 5e-6)
    intra8, inter8 = comm.sparse_allgather_seconds(1e6, 8, 1, 1e11, 1e9)
    # one host network receives the rows of the (H-1) remote replicas
    assert inter2 == pytest.approx(1e6 / 0.9e9 + 25e-6)
    assert inter8 == pytest.approx(7e6 / 0.9e9 + 7 * 25e-6)
    _, inter8_big = comm.sparse_allgather_seconds(2e6, 8, 1, 1e11, 1e9)
    assert inter8_big > 1.9 * inter8      # and linear in the rows per replica
    # host network receives (H-1) x D x rows: 3 x 4 x 1 MB over 1 GB/s at 90%
    _, inter = comm.sparse_allgather_seconds(1e6, 4, 4, 1e11, 1e9)
    assert inter == pytest.approx(12e6 / 0.9e9 + 3 * 25e-6)
