"""Episode statistics: Wilson interval, pass^k, bootstrap means, optional pandas."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from opar_sim.analysis.stats import bootstrap_mean, pass_hat_k, success_rate


def test_wilson_interval_of_8_in_10():
    p = success_rate(8, 10)
    assert p.rate == 0.8
    assert (p.low, p.high) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))


def test_wilson_interval_stays_inside_zero_and_one():
    assert success_rate(0, 20).low == 0.0
    assert success_rate(20, 20).high == 1.0


def test_pass_hat_k_is_tau_bench_combinatorial_estimate():
    attempts = {"t": [True, True, True, False]}
    assert pass_hat_k(attempts, 1) == pytest.approx(0.75)
    assert pass_hat_k(attempts, 2) == pytest.approx(3 / 6)  # C(3,2) / C(4,2)
    assert pass_hat_k(attempts, 4) == 0.0


def test_pass_hat_k_averages_over_tasks():
    attempts = {"a": [True, True], "b": [True, False]}
    assert pass_hat_k(attempts, 2) == pytest.approx(0.5)


def test_pass_hat_k_needs_k_attempts_per_task():
    with pytest.raises(ValueError, match="fewer than k"):
        pass_hat_k({"a": [True]}, 2)


def test_bootstrap_is_reproducible_with_the_same_seed():
    values = np.arange(50, dtype=float) ** 1.5
    a = bootstrap_mean(values, np.random.default_rng(3))
    b = bootstrap_mean(values, np.random.default_rng(3))
    assert a == b
    assert a.low < a.mean < a.high
    assert a.mean == pytest.approx(values.mean())


def test_bootstrap_of_a_constant_is_a_point():
    e = bootstrap_mean([2.0, 2.0, 2.0], np.random.default_rng(0))
    assert (e.mean, e.low, e.high) == (2.0, 2.0, 2.0)
    assert math.isnan(bootstrap_mean([], np.random.default_rng(0)).mean)


def test_to_frame_names_the_missing_dependency(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'opar-sim\[analysis\]'"):
        success_rate(1, 2).to_frame()
