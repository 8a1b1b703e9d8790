"""Exact and distribution-free intervals (scipy, the ``analysis`` extra): a share, a median."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from opar_sim.measure.stats import require_scipy


def _scipy_stats() -> Any:
    """scipy.stats, or the one-line error of ``require_scipy``."""
    require_scipy()
    from scipy import stats

    return stats


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of a binomial share ``k / n`` (scipy's beta).

    Args:
        k: Events.
        n: Trials (> 0).
        confidence: Two-sided coverage.

    Returns:
        (low, high); 0 and 1 at the edges.
    """
    beta = _scipy_stats().beta
    a = 1.0 - confidence
    low = 0.0 if k == 0 else float(beta.ppf(a / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - a / 2, k + 1, n - k))
    return low, high


def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval of the median from order statistics (binomial ranks).

    The interval [x_(l), x_(u)] with l and u the binomial(n, ½) quantiles at
    (1 − confidence)/2 and (1 + confidence)/2 (1-based ranks, clipped to 1..n).

    Args:
        values: The sample.
        confidence: The coverage.

    Returns:
        (low, high); (nan, nan) for an empty sample.
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        return math.nan, math.nan
    binom = _scipy_stats().binom
    lo = int(binom.ppf((1 - confidence) / 2, n, 0.5))
    hi = int(binom.ppf((1 + confidence) / 2, n, 0.5))
    return float(x[max(lo - 1, 0)]), float(x[min(hi, n - 1)])
