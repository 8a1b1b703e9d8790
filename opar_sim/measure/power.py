"""Tests of one claim and their power: paired t, one-sample binomial, McNemar (scipy).

The claims table (``opar_sim.studies.claims``) tests every claim with the test that fits
its measure, two-sided:

* ``"mcnemar"``: a paired difference of two success shares, the exact McNemar test
  (``opar_sim.measure.stats.mcnemar_exact``).  Power: Connor's (1987) normal
  approximation with δ = p₁₀ − p₀₁ the claimed difference and ψ = p₁₀ + p₀₁ the share of
  discordant pairs, standard deviation √ψ under the null and √(ψ − δ²) under the
  alternative (``normal_power_het``; statsmodels' function of the same name).
* ``"t"``: a paired mean difference (tokens, REPLANs, seconds, the rebound), the paired
  t test.  Power: the noncentral t distribution at effect size d = mean / SD of the
  differences (statsmodels' ``TTestPower``).
* ``"binomial"``: a rate against the claim's null value, the exact two-sided binomial
  test (scipy's).  Power: exact, the chance under the claimed rate of landing in the test's
  rejection region (``binomial_power``); past ``EXACT_LIMIT`` trials the normal
  approximation with √(p₀q₀) under the null and √(p₁q₁) under the alternative.  (A claimed
  rate of 100 % makes the normal approximation a step; the exact power is right there.)

``episodes_for_power`` is the smallest count with the wanted power; ``power`` the power a
count has.  ``tests/measure/test_power.py`` checks both against statsmodels.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from opar_sim.measure.stats import require_scipy

TESTS = ("mcnemar", "t", "binomial")
EXACT_LIMIT = 20_000  # the binomial test's power is summed exactly up to this many trials
_N = NormalDist()


def _scipy_stats() -> Any:
    require_scipy()
    from scipy import stats

    return stats


def normal_power_het(diff: float, n: float, alpha: float, sd_null: float, sd_alt: float) -> float:
    """Power of a two-sided z test whose statistic's SD differs under the null and alternative.

    Args:
        diff: The effect under the alternative (per observation).
        n: Observations.
        alpha: The two-sided level.
        sd_null: The statistic's SD per observation under the null.
        sd_alt: Its SD under the alternative (0: a degenerate alternative).

    Returns:
        The chance of rejecting, both tails counted.
    """
    crit = _N.inv_cdf(1 - alpha / 2)
    shift = abs(diff) * math.sqrt(n)
    if sd_alt <= 0:
        return 1.0 if shift > crit * sd_null else 0.0
    return _N.cdf((shift - crit * sd_null) / sd_alt) + _N.cdf((-shift - crit * sd_null) / sd_alt)


def t_power(d: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired (one-sample) t test at effect size ``d`` with ``n`` pairs."""
    if n < 2:
        return 0.0
    if math.isinf(d):
        return 1.0
    st = _scipy_stats()
    df = n - 1
    crit = float(st.t.isf(alpha / 2, df))
    nc = abs(d) * math.sqrt(n)
    upper, lower = float(st.nct.sf(crit, df, nc)), float(st.nct.cdf(-crit, df, nc))
    # far from the null scipy's far tail can come back NaN where it is below 1e-30
    return (upper if math.isfinite(upper) else 1.0) + (lower if math.isfinite(lower) else 0.0)


def binomial_power(p1: float, n: int, p0: float, alpha: float) -> float:
    """Exact power of scipy's two-sided binomial test of rate ``p0`` with ``n`` trials at ``p1``.

    The test's p for k successes is the sum of the null probabilities no larger than
    P₀(k) (with scipy's relative tolerance 1e-7); the power is P₁ of the k with p < α.
    """
    import numpy as np

    binom = _scipy_stats().binom
    k = np.arange(n + 1)
    null = binom.pmf(k, n, p0)
    ordered = np.sort(null)
    below = np.cumsum(ordered)
    p = below[np.searchsorted(ordered, null * (1 + 1e-7), side="right") - 1]
    return float(binom.pmf(k[p < alpha], n, p1).sum())


def power(test: str, effect: float, spread: float | None, n: int, alpha: float = 0.05) -> float:
    """The power of ``test`` with ``n`` units at the claimed effect, two-sided at ``alpha``.

    Args:
        test: ``"mcnemar"``, ``"t"`` or ``"binomial"``.
        effect: McNemar: the difference of success shares; t: the mean difference;
            binomial: the claimed rate minus the null value.
        spread: McNemar: the share of discordant pairs; t: the SD of the differences;
            binomial: the null value (the rate under the null).
        n: Units (pairs, episodes or worlds the measure counts).
        alpha: The two-sided level.

    Returns:
        The chance of rejecting the null when the effect is as claimed.

    Raises:
        ValueError: an unknown test or a spread that does not fit it.
    """
    if n <= 0:
        return 0.0
    if test == "mcnemar":
        psi = float(spread or 0.0)
        if not 0 <= abs(effect) <= psi <= 1:
            raise ValueError(f"need |effect| <= discordant share <= 1, got {effect}, {psi}")
        return normal_power_het(effect, n, alpha, math.sqrt(psi), math.sqrt(psi - effect**2))
    if test == "t":
        sd = float(spread if spread is not None else math.nan)
        if not sd >= 0:
            raise ValueError(f"the t test needs the SD of the differences, got {spread}")
        d = math.inf if sd == 0 else effect / sd
        return 0.0 if effect == 0 else t_power(d, n, alpha)
    if test == "binomial":
        p0 = float(spread if spread is not None else math.nan)
        p1 = p0 + effect
        if not (0 < p0 < 1 and 0 <= p1 <= 1):
            raise ValueError(f"the binomial test needs 0 < null < 1, got {p0} (rate {p1})")
        if n <= EXACT_LIMIT:
            return binomial_power(p1, n, p0, alpha)
        sd0, sd1 = math.sqrt(p0 * (1 - p0)), math.sqrt(p1 * (1 - p1))
        return normal_power_het(effect, n, alpha, sd0, sd1)
    raise ValueError(f"unknown test {test!r}; known: {', '.join(TESTS)}")


def episodes_for_power(
    test: str,
    effect: float,
    spread: float | None,
    target: float = 0.8,
    alpha: float = 0.05,
    limit: int = 10**7,
) -> int:
    """The smallest number of units whose power at the claimed effect reaches ``target``.

    (For the exact binomial test, whose power is a sawtooth in n, a count where it
    reaches ``target`` and the count before does not.)

    Args:
        test: As for ``power``.
        effect: As for ``power``.
        spread: As for ``power``.
        target: The power wanted.
        alpha: The two-sided level.
        limit: The search's ceiling (returned when even it falls short, e.g. no effect).

    Returns:
        The count (at least 2).
    """
    if power(test, effect, spread, limit, alpha) < target:
        return limit
    lo, hi = 1, 2  # power(lo) < target <= power(hi), searched by doubling then bisection
    while power(test, effect, spread, hi, alpha) < target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power(test, effect, spread, mid, alpha) >= target:
            hi = mid
        else:
            lo = mid
    return max(hi, 2)


def t_test_p(diffs: list[float]) -> float:
    """The two-sided paired t test's p of mean(diffs) = 0 (0 for constant non-zero differences)."""
    n = len(diffs)
    if n < 2:
        return 1.0
    mean = sum(diffs) / n
    var = sum((x - mean) ** 2 for x in diffs) / (n - 1)
    if var == 0:
        return 1.0 if mean == 0 else 0.0
    t = mean / math.sqrt(var / n)
    return float(min(1.0, 2 * _scipy_stats().t.sf(abs(t), n - 1)))


def binomial_test_p(k: int, n: int, null: float) -> float:
    """The exact two-sided binomial test's p of k successes in n at rate ``null`` (scipy)."""
    if n == 0:
        return 1.0
    return float(_scipy_stats().binomtest(k, n, null).pvalue)
