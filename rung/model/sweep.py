"""Many configurations at once: the same terms as `throughput`, broadcast over
numpy arrays of hosts x devices per host x inter-host bandwidth x per-device batch.

Use it to see where a workload stops scaling, or to plan capacity:

    >>> grid = sweep_sync(scenario, hosts=range(1, 65), devices_per_host=[1, 2, 4, 8],
    ...                   inter_host_gbps=[10, 25, 100, 200], per_device_batch=[32, 64, 128])
    >>> grid["examples_per_second"].shape
    (64, 4, 4, 3)

Compute time at a batch other than the measured one scales linearly with the batch
(an assumption, stated in `throughput._scaled_step`).
"""

from __future__ import annotations

import numpy as np

from rung.model import throughput
from rung.spec.scenario import Scenario


def sweep_sync(s: Scenario, hosts, devices_per_host, inter_host_gbps, per_device_batch) -> dict:
    """Synchronous data parallelism over the outer product of the four axes.

    Returns arrays shaped (len(hosts), len(devices_per_host), len(inter_host_gbps),
    len(per_device_batch)): `examples_per_second` (0 where a replica does not fit),
    `step_seconds`, `scaling_efficiency` and `fits`.
    """
    h = np.asarray(list(hosts), dtype=float)[:, None, None, None]
    d = np.asarray(list(devices_per_host), dtype=float)[None, :, None, None]
    bw = np.asarray(list(inter_host_gbps), dtype=float)[None, None, :, None] * 1e9 / 8
    b = np.asarray(list(per_device_batch), dtype=float)[None, None, None, :]
    t = throughput.sync_terms(s, h, d, inter_host_bytes_per_second=bw, batch=b)
    shape = np.broadcast_shapes(h.shape, d.shape, bw.shape, b.shape)
    fits = np.broadcast_to(t["fits"], shape)
    eps = np.where(fits, np.broadcast_to(t["examples_per_second"], shape), 0.0)
    one = b / (s.workload.step_seconds * b / s.workload.per_device_batch)
    return {
        "examples_per_second": eps,
        "step_seconds": np.broadcast_to(t["step"], shape),
        "scaling_efficiency": eps / (h * d * one),
        "fits": fits,
    }
