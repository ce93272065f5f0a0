"""Summary statistics of measured step times (pure: shared by profile and bench)."""

from __future__ import annotations

import numpy as np

# Two-sided 95% quantiles of Student's t by degrees of freedom (any statistics table,
# e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2); above 10 degrees, 2.2 to 1.96: 2.1 is used.
_T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}
T975_MANY = 2.1
# Batch means: consecutive steps are correlated (the machine's load drifts), so the
# mean's interval comes from the spread of the means of a few blocks of steps, not of
# single steps (Law & Kelton, "Simulation Modeling and Analysis", batch means method).
MAX_BLOCKS = 6
MIN_STEPS_PER_BLOCK = 3


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1), linear between ranks."""
    return float(np.quantile(np.asarray(values, dtype=float), q))


def t975(dof: int) -> float:
    return _T975.get(dof, T975_MANY)


def _blocks(x: np.ndarray) -> list[np.ndarray]:
    return np.array_split(x, max(2, min(MAX_BLOCKS, len(x) // MIN_STEPS_PER_BLOCK)))


def median_of_means(values: list[float]) -> float:
    """The median of the batch means (the same blocks as `mean_ci95`): a mean that one
    stalled step cannot carry. A wait every step shares shows in every block and comes
    through whole; one step held up by the machine (a scheduler stall, a collection)
    moves one block, which the median sets aside (the median-of-means estimator: Nemirovski
    & Yudin 1983; Lugosi & Mendelson, "Mean estimation and regression under heavy-tailed
    distributions", 2019)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 * MIN_STEPS_PER_BLOCK:
        return float(x.mean())
    return float(np.median([b.mean() for b in _blocks(x)]))


def mean_ci95(values: list[float], floor_at_min: bool = False) -> tuple[float, float]:
    """95% interval of the mean of a series of step measurements, by batch means. With
    `floor_at_min` (a duration: positive, skewed by the odd slow step) the low end is no
    lower than the fastest step seen: the symmetric t-interval of a few blocks, one of
    them holding an outlier, can otherwise reach below zero."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    mean = float(x.mean())
    if n < 2:
        return mean, mean
    parts = _blocks(x)
    blocks = len(parts)
    means = np.array([b.mean() for b in parts])
    half = t975(blocks - 1) * float(means.std(ddof=1)) / np.sqrt(blocks)
    low = max(mean - half, float(x.min())) if floor_at_min else mean - half
    return float(low), float(mean + half)


def epoch_step_seconds(start: float, ends: list[float], steps: int) -> tuple[list[float], float, float]:
    """One fit of several epochs of `steps` steps, timed by its epoch ends (a
    parameter-server fit joins every epoch's steps, so the interval between two ends is one
    epoch's steps alone): each later epoch's seconds per step, their median (at least 0),
    and the fit's fixed cost, paid before the first end (the start to it, less one median
    epoch; at least 0). How `rung bench` times a parameter-server run and psbench Keras's
    dispatch, so the two agree. Needs two ends or more."""
    rounds = [(b - a) / steps for a, b in zip(ends, ends[1:])]
    per = max(float(np.median(rounds)), 0.0)
    return rounds, per, max(0.0, ends[0] - start - per * steps)
