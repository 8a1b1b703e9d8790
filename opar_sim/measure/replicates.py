"""Comparisons across tuning replicates: paired differences with Student's t, exactly.

Tuning is a random procedure (its training seed and its sampler seed are random
factors), so "law A beats law B" is a statement about replicates: replicate r of A and
replicate r of B share their training and sampler seeds and are scored on the same
held-out episodes, and the R paired differences d_r give the mean, a t interval with
R − 1 degrees of freedom and a two-sided p-value.  Student's t is computed here, exact
for whole degrees of freedom (the closed forms of Abramowitz & Stegun 26.7.3–4, no scipy),
and the quantile by bisection on it.

The replicates share their held-out episodes, so the spread of the d_r does not show the
sampling noise of those episodes (two laws whose every replicate found the same setting
differ by the same d_r in every replicate).  ``replicate_diff`` therefore takes that noise
as ``episode_var``, the variance of the mean difference over the held-out episodes
(``episode_variance``), and adds it to the t interval's squared standard error:
se² = s²/R + episode_var, still on R − 1 degrees of freedom (conservative: it counts the
replicate-by-episode noise twice, once in each term, and gives the sum the smaller df).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


def t_within(t: float, df: int) -> float:
    """P(|T| ≤ t) for Student's T with ``df`` (a whole number ≥ 1) degrees of freedom.

    Args:
        t: A non-negative value.
        df: The degrees of freedom.

    Returns:
        The probability (A(t | df) of Abramowitz & Stegun 26.7.1).

    Raises:
        ValueError: for ``df`` < 1.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if math.isinf(t):
        return 1.0
    theta = math.atan(abs(t) / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2 == 1:  # 26.7.3
        total, term = 0.0, math.cos(theta)
        for k in range(1, (df - 1) // 2 + 1):
            if k > 1:
                term *= c2 * (2 * k - 2) / (2 * k - 1)
            total += term
        return min(1.0, 2 / math.pi * (theta + math.sin(theta) * total))
    total, term = 1.0, 1.0  # 26.7.4
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return min(1.0, math.sin(theta) * total)


def t_quantile(level: float, df: int) -> float:
    """The t with P(|T| ≤ t) = ``level`` (e.g. 0.95 → 2.776 for 4 degrees of freedom)."""
    low, high = 0.0, 1.0
    while t_within(high, df) < level:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if t_within(mid, df) < level else (low, mid)
    return (low + high) / 2


@dataclass(frozen=True)
class ReplicateDiff:
    """The mean of R paired replicate differences, its t interval and two-sided p."""

    diffs: list[float]
    mean: float
    sd: float  # the sample standard deviation of the differences (R − 1 in the denominator)
    low: float
    high: float
    p: float

    @property
    def df(self) -> int:
        """The degrees of freedom, R − 1."""
        return len(self.diffs) - 1

    def to_dict(self) -> dict[str, Any]:
        """The differences, their mean, sd, 95 % interval, p and degrees of freedom."""
        return {**asdict(self), "df": self.df}


def episode_variance(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> float:
    """The sampling variance, over held-out episodes, of the mean replicate difference.

    Args:
        a: Per replicate, one value per held-out episode (e.g. success as 0/1).
        b: The other arm's, the same episodes in the same order (one row: a fixed arm,
            such as a law's defaults, compared with every replicate of ``a``).

    Returns:
        var_i(e_i) / n with e_i = mean_r a[r][i] − mean_r b[r][i] (0 with one episode).
    """
    n = len(a[0])
    if n < 2:
        return 0.0
    e = [
        math.fsum(row[i] for row in a) / len(a) - math.fsum(row[i] for row in b) / len(b)
        for i in range(n)
    ]
    mean = math.fsum(e) / n
    return math.fsum((x - mean) ** 2 for x in e) / (n - 1) / n


def replicate_diff(
    a: Sequence[float], b: Sequence[float], level: float = 0.95, episode_var: float = 0.0
) -> ReplicateDiff:
    """Replicate r of ``a`` against replicate r of ``b``: mean, t interval, two-sided p.

    Args:
        a: One value per replicate (e.g. held-out success), in replicate order.
        b: The other arm's, paired by replicate.
        level: The interval's confidence.
        episode_var: The held-out episodes' sampling variance of the mean difference
            (``episode_variance``), added to the squared standard error; 0: none.

    Returns:
        The comparison; with one replicate the interval is infinite and p is 1, and with
        no spread at all (zero standard error) the interval is the point and p is 0
        unless the mean is 0.

    Raises:
        ValueError: when the sequences differ in length or are empty.
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"need the same number of replicates, at least 1: {len(a)}, {len(b)}")
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = math.fsum(diffs) / n
    if n == 1:
        return ReplicateDiff(diffs, mean, math.nan, -math.inf, math.inf, 1.0)
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (n - 1))
    se = math.sqrt(sd**2 / n + episode_var)
    if se == 0.0:
        return ReplicateDiff(diffs, mean, sd, mean, mean, 1.0 if mean == 0.0 else 0.0)
    half = t_quantile(level, n - 1) * se
    p = 1.0 - t_within(abs(mean) / se, n - 1)
    return ReplicateDiff(diffs, mean, sd, mean - half, mean + half, max(0.0, p))


@dataclass(frozen=True)
class Spread:
    """Values across replicates: their mean, sample sd, min and max."""

    values: list[float]
    mean: float
    sd: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        """The values and their summary."""
        return asdict(self)


def spread(values: Sequence[float]) -> Spread:
    """The mean, sample standard deviation (nan for one value), min and max of ``values``."""
    if not values:
        raise ValueError("no values")
    xs = [float(v) for v in values]
    mean = math.fsum(xs) / len(xs)
    sd = (
        math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
        if len(xs) > 1
        else math.nan
    )
    return Spread(xs, mean, sd, min(xs), max(xs))
