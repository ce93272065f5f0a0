"""The straggler penalty of a synchronous step.

Every synchronous step ends in a collective, so it lasts as long as the slowest
worker's. With worker step times ~ Normal(mu, (cv x mu)^2), independent, the expected
slowest of N is mu + cv x mu x E[max of N standard normals], where
E[max] = integral of x . N phi(x) Phi(x)^(N-1) dx (the density of the largest order
statistic; David & Nagaraja, "Order Statistics", 3rd ed., section 2.1), integrated
numerically on a fine grid: it matches the tabulated values (Harter 1961) to 1e-5.

Heavy tails (lognormal step times) have no such closed form in rung's model: the slowest
of N is simulated, step by step, as `rung simulate` does (`simulated_slowest_excess`):
`SIMULATED_CELLS` draws of the largest fleet asked, each worker's time drawn from the
distribution, the running maximum across workers giving every smaller fleet at once.
One fixed seed: the same inputs give the same answer, so a decision does not move
between runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_GRID = np.linspace(-9.0, 9.0, 3601)
_PDF = np.exp(-0.5 * _GRID**2) / math.sqrt(2.0 * math.pi)
_CDF = 0.5 * (1.0 + np.array([math.erf(x / math.sqrt(2.0)) for x in _GRID]))
_LOG_CDF = np.log(np.maximum(_CDF, 1e-300))


_ROWS = 1024  # fleet sizes integrated at once (1024 x 3601 floats, 30 MB)


def _integrate(n: np.ndarray) -> np.ndarray:
    """E[max of n] for each n >= 2 of an integer array, on the grid, a block of rows at a time."""
    out = np.empty(len(n))
    for start in range(0, len(n), _ROWS):
        k = n[start:start + _ROWS, None].astype(float)
        density = k * _PDF * np.exp((k - 1.0) * _LOG_CDF)
        out[start:start + _ROWS] = np.trapezoid(_GRID * density, _GRID, axis=1)
    return out


# E[max of n] for n = 1, 2, ... (index n - 1), grown as larger fleets are asked: a ladder
# walk asks every fleet size up to max_hosts, dozens of times, so each is integrated once
_TABLE = np.zeros(1)
# Up to this fleet every size is integrated; beyond it, sizes on a geometric grid
# (`_PER_DOUBLING` a doubling) are, and the rest interpolated in log n, where E[max] is
# smooth and slowly growing (about sqrt(2 ln n)): 800,000 replicas (100,000 hosts of 8)
# integrated one by one took 22 s a walk. Interpolated against integrated, the largest
# difference from 4,097 to 70,000 was 2.5e-7 (of values near 4); the tests check sizes up
# to 3 million against Simpson's rule (tests/model/test_straggler_preemption_ps.py).
EXACT_UP_TO = 4096
_PER_DOUBLING = 64
_BIG_N = np.zeros(0)
_BIG_VALUES = np.zeros(0)


def _table(top: int) -> np.ndarray:
    global _TABLE
    if len(_TABLE) < top:
        grown = np.arange(len(_TABLE) + 1, top + 1)
        _TABLE = np.concatenate([_TABLE, _integrate(grown)])
    return _TABLE


def _big(n: np.ndarray) -> np.ndarray:
    """E[max of n] for n > EXACT_UP_TO, interpolated in log n between integrated sizes."""
    global _BIG_N, _BIG_VALUES
    top = int(n.max())
    if not len(_BIG_N) or _BIG_N[-1] < top:
        doublings = math.log2(top / EXACT_UP_TO) + 1.0 / _PER_DOUBLING
        steps = int(math.ceil(doublings * _PER_DOUBLING)) + 1
        grid = np.unique(np.round(EXACT_UP_TO * 2.0 ** (np.arange(steps + 1) / _PER_DOUBLING)).astype(np.int64))
        _BIG_N, _BIG_VALUES = grid, _integrate(grid)
    return np.interp(np.log(n), np.log(_BIG_N), _BIG_VALUES)


def _expected_max_one(n: int) -> float:
    if n <= 1:
        return 0.0
    if n > EXACT_UP_TO:
        return float(_big(np.array([n]))[0])
    return float(_table(n)[n - 1])


def expected_max_standard_normal(n):
    """E[max of n iid standard normals]; accepts an int or an integer array."""
    if np.ndim(n) == 0:
        return _expected_max_one(int(n))
    arr = np.asarray(n, dtype=np.int64)
    if arr.size == 0:
        return np.zeros(arr.shape)
    table = _table(int(min(max(1, arr.max()), EXACT_UP_TO)))
    out = np.where(arr > 1, table[np.clip(arr, 1, len(table)) - 1], 0.0)
    big = arr > EXACT_UP_TO
    if big.any():
        out = np.where(big, 0.0, out)
        out[big] = _big(arr[big])
    return out


SIMULATED_CELLS = 8_000_000   # workers x steps simulated: 125,000 steps of up to 64 workers, 3,900 of 2,048
MIN_STEPS = 256                # huge fleets: at least this many steps (memory stays SIMULATED_CELLS per chunk)
SEED = 20261130


@dataclass(frozen=True)
class Distribution:
    """Per-worker compute time of one step: mean `mean`, coefficient of variation `cv`."""
    kind: str   # normal | lognormal
    cv: float

    def draw(self, rng: np.random.Generator, mean: float, shape) -> np.ndarray:
        if self.cv <= 0:
            return np.full(shape, mean)
        if self.kind == "lognormal":
            sigma2 = np.log1p(self.cv ** 2)
            return rng.lognormal(np.log(mean) - sigma2 / 2, np.sqrt(sigma2), size=shape)
        x = rng.normal(mean, self.cv * mean, size=shape)
        return np.maximum(x, 0.0)


@lru_cache(maxsize=256)
def _simulated_excess(kind: str, cv: float, top: int) -> np.ndarray:
    """E[slowest of n] / mean - 1 for n = 1..top, simulated (index n - 1)."""
    steps = int(max(MIN_STEPS, SIMULATED_CELLS // top))
    rng = np.random.default_rng(SEED)
    dist = Distribution(kind, cv)
    total = np.zeros(top)
    chunk = max(1, SIMULATED_CELLS // top)
    for start in range(0, steps, chunk):
        x = dist.draw(rng, 1.0, (min(chunk, steps - start), top))
        total += np.maximum.accumulate(x, axis=1).sum(axis=0)
    return total / steps - 1.0


def simulated_slowest_excess(kind: str, cv: float, workers):
    """Expected wait for the slowest of `workers` over the mean step, as a fraction of the
    mean, from a simulated fleet; accepts an int or an integer array."""
    n = np.asarray(workers, dtype=int)
    # one simulation serves every fleet up to the next power of two (at least 64)
    top = max(64, 1 << int(max(1, n.max()) - 1).bit_length())
    excess = _simulated_excess(kind, float(cv), top)
    out = np.where(n > 1, excess[np.clip(n, 1, top) - 1], 0.0)
    return float(out) if out.ndim == 0 else out


def straggler_seconds(compute_seconds, step_time_cv, workers, distribution: str = "normal"):
    """Expected extra time a synchronous step waits for its slowest of `workers`: the
    closed form for normal step times, a simulated fleet for heavy-tailed ones."""
    if distribution == "normal" or np.all(np.asarray(step_time_cv) == 0):
        return compute_seconds * step_time_cv * expected_max_standard_normal(workers)
    return compute_seconds * simulated_slowest_excess(distribution, step_time_cv, workers)
