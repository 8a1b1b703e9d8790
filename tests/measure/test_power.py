"""The claims' tests and power formulas: exact against statsmodels and scipy, sane by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from opar_sim.measure.power import (
    binomial_test_p,
    episodes_for_power,
    normal_power_het,
    power,
    t_power,
    t_test_p,
)
from opar_sim.measure.stats import mcnemar_exact

try:  # the dev extra installs statsmodels; without it the checks against it are skipped
    import statsmodels.stats.power as sm_power
except ImportError:  # pragma: no cover
    sm_power = None
needs_statsmodels = pytest.mark.skipif(sm_power is None, reason="needs statsmodels (dev extra)")

# (effect, discordant share): the claims' range, from +3 points on 16 % discordant pairs to
# +56 points on 58 %
MCNEMAR = [(0.037, 0.16), (0.071, 0.13), (-0.114, 0.23), (0.32, 0.40), (0.559, 0.58)]


@needs_statsmodels
@pytest.mark.parametrize(("effect", "psi"), MCNEMAR)
@pytest.mark.parametrize("n", [50, 300, 1200, 4000])
def test_mcnemar_power_is_connors_formula_as_statsmodels_computes_it(effect, psi, n):
    expected = sm_power.normal_power_het(
        effect, n, 0.05, std_null=math.sqrt(psi), std_alternative=math.sqrt(psi - effect**2)
    )
    assert power("mcnemar", effect, psi, n) == pytest.approx(float(expected), abs=1e-9)
    assert normal_power_het(effect, n, 0.05, math.sqrt(psi), math.sqrt(psi - effect**2)) == (
        pytest.approx(float(expected), abs=1e-9)
    )


@needs_statsmodels
@pytest.mark.parametrize("d", [0.07, 0.2, 0.5, 1.3])
@pytest.mark.parametrize("n", [2, 10, 100, 1600])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 31])
def test_t_power_is_statsmodels_ttestpower(d, n, alpha):
    expected = sm_power.TTestPower().power(d, n, alpha, alternative="two-sided")
    if math.isnan(expected):  # scipy's far tail underflows to NaN; the near one is 1
        expected = sps.nct.sf(sps.t.isf(alpha / 2, n - 1), n - 1, d * math.sqrt(n))
        assert expected == pytest.approx(1.0, abs=1e-12)
    assert t_power(d, n, alpha) == pytest.approx(float(expected), abs=1e-9)
    assert power("t", 3.0 * d, 3.0, n, alpha) == pytest.approx(float(expected), abs=1e-9)


@pytest.mark.parametrize(("p1", "p0"), [(0.82, 0.5), (1.0, 0.9), (0.6, 0.5), (0.2, 0.35)])
@pytest.mark.parametrize("n", [1, 12, 40, 97])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 31])
def test_binomial_power_is_exact_for_scipys_binomial_test(p1, p0, n, alpha):
    reject = [k for k in range(n + 1) if sps.binomtest(k, n, p0).pvalue < alpha]
    expected = sum(sps.binom.pmf(k, n, p1) for k in reject)
    assert power("binomial", p1 - p0, p0, n, alpha) == pytest.approx(expected, abs=1e-12)


@needs_statsmodels
@pytest.mark.parametrize(("p1", "p0"), [(0.82, 0.5), (0.74, 0.5), (0.6, 0.5)])
@pytest.mark.parametrize("n", [200, 1200, 5000])  # discreteness fades
def test_binomial_power_is_near_the_normal_approximation_statsmodels_computes(p1, p0, n):
    approx = sm_power.normal_power_het(
        p1 - p0,
        n,
        0.05,
        std_null=math.sqrt(p0 * (1 - p0)),
        std_alternative=math.sqrt(p1 * (1 - p1)),
    )
    assert power("binomial", p1 - p0, p0, n) == pytest.approx(float(approx), abs=0.06)
    big = 30_000  # past EXACT_LIMIT the normal approximation itself
    approx = sm_power.normal_power_het(
        0.01, big, 0.05, std_null=math.sqrt(0.25), std_alternative=math.sqrt(0.51 * 0.49)
    )
    assert power("binomial", 0.01, 0.5, big) == pytest.approx(float(approx), abs=1e-9)


def test_a_claimed_rate_of_one_is_planned_exactly():
    # 100 % against 90 %: n of n rejects once 0.9^n (and the far tail) is below alpha
    need = episodes_for_power("binomial", 0.1, 0.9, alpha=0.05 / 31)
    assert power("binomial", 0.1, 0.9, need, 0.05 / 31) == 1.0
    assert sps.binomtest(need, need, 0.9).pvalue < 0.05 / 31
    assert sps.binomtest(need - 1, need - 1, 0.9).pvalue >= 0.05 / 31


@pytest.mark.parametrize(
    ("test", "effect", "spread"), [("mcnemar", 0.037, 0.16), ("t", -0.11, 0.5)]
)
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 31])
def test_episodes_for_power_is_the_smallest_count_that_reaches_it(test, effect, spread, alpha):
    n = episodes_for_power(test, effect, spread, alpha=alpha)
    assert power(test, effect, spread, n, alpha) >= 0.8 > power(test, effect, spread, n - 1, alpha)


@needs_statsmodels
def test_the_mcnemar_count_matches_statsmodels_sample_size_and_the_closed_form():
    effect, psi = 0.037, 0.16
    one_tail = sm_power.normal_sample_size_one_tail(
        effect, 0.8, 0.025, std_null=math.sqrt(psi), std_alternative=math.sqrt(psi - effect**2)
    )
    n = episodes_for_power("mcnemar", effect, psi)
    assert math.ceil(float(one_tail)) - 1 <= n <= math.ceil(float(one_tail))  # the far tail helps


def test_no_effect_never_reaches_the_power():
    assert episodes_for_power("mcnemar", 0.0, 0.2, limit=10_000) == 10_000
    assert power("t", 0.0, 1.0, 500) == 0.0


def test_the_planned_mcnemar_count_has_its_power_with_the_exact_test():
    """Simulated with the exact McNemar test the claims use: about 80 %, not far below."""
    effect, psi = 0.071, 0.13
    n = episodes_for_power("mcnemar", effect, psi)
    rng = np.random.default_rng(3)
    p10, p01 = (psi + effect) / 2, (psi - effect) / 2
    draws = rng.multinomial(n, [p10, p01, 1 - psi], size=2000)
    rejected = np.mean([mcnemar_exact(int(b), int(c)) < 0.05 for b, c, _ in draws])
    assert 0.74 <= rejected <= 0.86, (n, rejected)


def test_the_p_values_are_scipys():
    x = [0.3, -0.1, 0.5, 0.2, 0.05, 0.4, -0.2, 0.1]
    assert t_test_p(x) == pytest.approx(float(sps.ttest_1samp(x, 0.0).pvalue), rel=1e-12)
    assert t_test_p([2.0, 2.0, 2.0]) == 0.0 and t_test_p([0.0, 0.0]) == 1.0
    assert binomial_test_p(17, 20, 0.5) == pytest.approx(sps.binomtest(17, 20, 0.5).pvalue)
    assert binomial_test_p(0, 0, 0.5) == 1.0


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown test"):
        power("z", 0.1, 0.2, 10)
    with pytest.raises(ValueError, match="discordant"):
        power("mcnemar", 0.3, 0.2, 10)
    with pytest.raises(ValueError, match="SD"):
        power("t", 0.3, None, 10)
