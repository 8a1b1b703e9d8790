"""Episode statistics: Wilson interval, pass^k, bootstrap means, optional pandas."""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import numpy as np
import pytest

from opar_sim.measure.pass_k import pass_hat_k, pass_hat_ks, success_histogram
from opar_sim.measure.stats import (
    bootstrap_mean,
    discordant,
    holm,
    mcnemar_exact,
    paired_difference,
    paired_interval,
    success_rate,
)


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


# five worlds of 4 trials with 0, 1, 2, 3 and 4 successes (order within a world is irrelevant)
WORLDS = {w: [True] * w + [False] * (4 - w) for w in range(5)}


def _tau_bench_pass_hat_ks(successes_per_task: dict[int, int], num_trials: int) -> dict:
    """τ-bench's pass^k written out independently: per task comb(c, k) / comb(n, k), averaged."""
    from scipy.special import comb

    out = {}
    for k in range(1, num_trials + 1):
        total = sum(
            comb(c, k, exact=True) / comb(num_trials, k, exact=True)
            for c in successes_per_task.values()
        )
        out[k] = total / len(successes_per_task)
    return out


def test_pass_hat_ks_of_worlds_with_0_to_4_successes_are_the_exact_fractions():
    # pass^1 = (0+1+2+3+4)/(5·4); pass^2 = (0+0+1+3+6)/(5·6); pass^3 = (1+4)/(5·4); pass^4 = 1/5
    exact = {1: Fraction(1, 2), 2: Fraction(1, 3), 3: Fraction(1, 4), 4: Fraction(1, 5)}
    got = pass_hat_ks(WORLDS, 4)
    assert list(got) == [1, 2, 3, 4]
    for k, value in exact.items():
        assert got[k] == pytest.approx(float(value), abs=1e-15)
    reference = _tau_bench_pass_hat_ks({w: sum(o) for w, o in WORLDS.items()}, 4)
    assert got == pytest.approx(reference, abs=1e-15)


def test_success_histogram_counts_worlds_by_successes():
    assert success_histogram(WORLDS, 4) == [1, 1, 1, 1, 1]
    assert success_histogram({0: [True, True], 1: [True, False], 2: [True, True]}, 2) == [0, 1, 2]


def test_a_world_missing_a_trial_is_left_out_of_pass_hat_k_and_the_histogram():
    worlds = {0: [True, True, False], 1: [True, True], 2: [False, False, False]}
    assert pass_hat_ks(worlds, 3) == pytest.approx({1: 1 / 3, 2: 1 / 6, 3: 0.0}, abs=1e-15)
    assert success_histogram(worlds, 3) == [1, 0, 1, 0]
    assert math.isnan(pass_hat_ks({}, 2)[2])


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
    # opar-sim is installed from its clone, not PyPI: the advice names the editable install
    with pytest.raises(
        ImportError, match=r"install the analysis extra: .*pip install -e '\.\[analysis\]'"
    ):
        success_rate(1, 2).to_frame()


def test_mcnemar_exact_hand_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 5) == 2 / 32  # 2·P(X = 0), X ~ Bin(5, 1/2)
    assert mcnemar_exact(1, 5) == 14 / 64  # 2·(1 + 6) / 2^6
    assert mcnemar_exact(5, 1) == 14 / 64  # symmetric
    assert mcnemar_exact(3, 3) == 1.0  # capped at 1


@pytest.mark.parametrize(
    ("b", "c"), [(0, 1), (1, 1), (2, 9), (9, 2), (10, 11), (17, 40), (40, 17), (3, 120), (250, 300)]
)
def test_mcnemar_exact_is_scipy_two_sided_binomial_test(b, c):
    scipy_stats = pytest.importorskip("scipy.stats")
    expected = scipy_stats.binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_mcnemar_rejects_negative_counts():
    with pytest.raises(ValueError, match="discordant"):
        mcnemar_exact(-1, 3)


def test_discordant_counts_pairs_won_by_one_arm_only():
    a = [True, True, False, False, True, False]
    b = [True, False, True, False, False, False]
    assert discordant(a, b) == (2, 1)
    with pytest.raises(ValueError, match="length"):
        discordant([True], [True, False])


def test_holm_hand_computed_example():
    # sorted 1/32, 1/16, 1/8, 1/4 -> ×4, ×3, ×2, ×1 = 1/8, 3/16, 1/4, 1/4 (already increasing)
    assert holm([0.0625, 0.25, 0.125, 0.03125]) == [0.1875, 0.25, 0.25, 0.125]
    # the running maximum keeps the order: 1/16·2 = 1/8 > 5/64·1
    assert holm([0.0625, 0.078125]) == [0.125, 0.125]
    # capped at 1
    assert holm([0.5, 0.75]) == [1.0, 1.0]
    assert holm([]) == []
    with pytest.raises(ValueError, match="p-value"):
        holm([1.5])


def test_holm_matches_the_textbook_order_statistics_formula():
    p = [0.01, 0.04, 0.03, 0.005]
    m = len(p)
    srt = sorted(p)
    expected_sorted = [max(min(1.0, (m - j) * srt[j]) for j in range(i + 1)) for i in range(m)]
    got = holm(p)
    assert sorted(got) == expected_sorted
    assert [got[p.index(v)] for v in srt] == expected_sorted


def test_paired_interval_is_paired_difference_by_episode_index():
    a = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    b = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    got = paired_interval(a, b, np.random.default_rng(3))
    want = paired_difference(dict(enumerate(a)), dict(enumerate(b)), np.random.default_rng(3))
    assert got == want
    assert got.mean == 2 / 6
    with pytest.raises(ValueError, match="length"):
        paired_interval([1.0], [1.0, 2.0], np.random.default_rng(0))
