"""The plan-quality prior by beta-binomial maximum likelihood (issue 13).

The old estimator took the raw moments of each plan's expert share: with plans
of a few steps the binomial noise of a share looks like spread of q, and on a
unimodal Beta(2.7, 1.8) (α + β = 4.5) it returned a U-shaped prior with
α + β ≈ 1.1 that did not improve with more data.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import betabinom

from opar_sim.calibration.direct import beta_binomial_fit

ALPHA, BETA = 2.7, 1.8  # unimodal, α + β = 4.5, mean 0.6


def _plans(n_plans: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 7, size=n_plans)  # plans of 1-6 steps, as a step cap makes them
    q = rng.beta(ALPHA, BETA, size=n_plans)
    return rng.binomial(lengths, q), lengths


def _moments(k: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """The old estimator: method of moments on the raw shares (without its clipping)."""
    shares = k / n
    m, v = shares.mean(), shares.var()
    strength = m * (1 - m) / v - 1
    return m * strength, (1 - m) * strength


def test_raw_moments_fail_where_the_likelihood_does_not():
    k, n = _plans(20_000, seed=1)
    a_old, b_old = _moments(k, n)
    assert a_old + b_old < 2.0  # the failure: binomial noise read as a wide (U-shaped) prior
    a, b = beta_binomial_fit(k, n)
    assert a > 1 and b > 1  # unimodal, as the truth
    assert abs(a + b - 4.5) < 0.6
    assert abs(a / (a + b) - 0.6) < 0.01


def test_error_shrinks_with_more_data():
    def error(n_plans: int) -> float:
        errs = []
        for seed in range(8):
            a, b = beta_binomial_fit(*_plans(n_plans, seed))
            errs.append(abs(np.log((a + b) / 4.5)))
        return float(np.mean(errs))

    small, large = error(150), error(6000)
    assert large < small / 3  # √40 ≈ 6.3 in theory: at least a third
    assert large < 0.1


def test_it_is_the_maximum_of_scipys_beta_binomial_likelihood():
    k, n = _plans(800, seed=3)
    a, b = beta_binomial_fit(k, n)

    def loglik(alpha: float, beta: float) -> float:
        return float(betabinom.logpmf(k, n, alpha, beta).sum())

    best = loglik(a, b)
    for da, db in ((0.05, 0), (-0.05, 0), (0, 0.05), (0, -0.05), (0.05, 0.05), (-0.05, -0.05)):
        assert best >= loglik(a * np.exp(da), b * np.exp(db))
    assert best > loglik(ALPHA, BETA) - 1e-9  # the truth is no better than the maximum
