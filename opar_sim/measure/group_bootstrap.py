"""The bootstrap over groups (tasks): draw counts per resample, and ratios of sums with intervals.

A task's trials stay together in every resample, so the intervals hold when a
task's runs are not independent.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from opar_sim.measure.stats import BOOTSTRAP_RESAMPLES, Estimate


def group_resample_counts(
    groups: int, rng: np.random.Generator, resamples: int = BOOTSTRAP_RESAMPLES
) -> npt.NDArray[np.float64]:
    """How often each group is drawn in each bootstrap resample of the groups.

    A bootstrap over tasks resamples task ids with replacement and keeps each task's
    trials together; the sum of a quantity over a resample is then ``counts @ per_group``.

    Args:
        groups: The number of groups (tasks).
        rng: The generator of the resamples (seeded for reproducibility).
        resamples: How many resamples.

    Returns:
        A (resamples × groups) array of draw counts; each row sums to ``groups``.
    """
    idx = rng.integers(0, groups, size=(resamples, groups))
    counts = np.zeros((resamples, groups))
    np.add.at(counts, (np.arange(resamples)[:, None], idx), 1.0)
    return counts


def ratio_estimates(
    numerator: npt.NDArray[np.float64],
    denominator: npt.NDArray[np.float64],
    counts: npt.NDArray[np.float64],
    confidence: float = 0.95,
) -> list[Estimate]:
    """Ratios of sums over groups, each with its percentile interval from a group bootstrap.

    Args:
        numerator: Per-group sums, shape (groups, ratios): column j is ratio j's numerator.
        denominator: Per-group sums of the denominators, the same shape.
        counts: The resamples' draw counts (``group_resample_counts``).
        confidence: The intervals' confidence level.

    Returns:
        One estimate per column: sum(numerator) / sum(denominator) and its interval (NaN
        where the denominator sums to 0; resamples with a zero denominator are left out).
        ``n`` is the number of groups.
    """
    num = np.asarray(numerator, float).reshape(len(numerator), -1)
    den = np.asarray(denominator, float).reshape(len(denominator), -1)
    total_num, total_den = num.sum(axis=0), den.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = (counts @ num) / (counts @ den)
    alpha = (1 - confidence) / 2
    out = []
    for j in range(num.shape[1]):
        if total_den[j] == 0:
            out.append(Estimate(math.nan, math.nan, math.nan, len(num)))
            continue
        low, high = np.nanquantile(ratios[:, j], [alpha, 1 - alpha])
        out.append(Estimate(float(total_num[j] / total_den[j]), float(low), float(high), len(num)))
    return out
