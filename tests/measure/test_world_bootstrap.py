"""Repeated trials of one world are not independent: success and pass^k intervals resample worlds.

Issue 26: Wilson intervals over every trial of every world were 10-14 % too narrow, and
pass^k had no interval.  Checked here on constructed worlds whose answer is known.
"""

from __future__ import annotations

import math

import numpy as np

from opar_sim.measure.pass_k import pass_hat_ks, world_intervals
from opar_sim.measure.stats import wilson_interval


def _width(interval: tuple[float, float]) -> float:
    return interval[1] - interval[0]


def test_perfectly_correlated_trials_give_the_width_of_the_worlds_alone():
    # 200 worlds, 4 trials each, every trial of a world the same: 4x the episodes but
    # only 200 independent draws; the interval must be as wide as 200 episodes' interval
    rng = np.random.default_rng(1)
    outcome = rng.random(200) < 0.7
    worlds = {w: [bool(outcome[w])] * 4 for w in range(200)}
    success, passes = world_intervals(worlds, 4)
    worlds_only = wilson_interval(int(outcome.sum()), 200)
    all_trials = wilson_interval(int(outcome.sum()) * 4, 800)
    assert abs(_width(success) - _width(worlds_only)) < 0.2 * _width(worlds_only)
    assert _width(success) > 1.7 * _width(all_trials)  # about sqrt(4) = 2x the naive width
    # every pass^k equals the share of all-success worlds here, and so does its interval
    for k in range(1, 5):
        assert passes[k] == passes[1]


def test_independent_trials_give_about_the_wilson_width():
    rng = np.random.default_rng(2)
    worlds = {w: list(rng.random(4) < 0.6) for w in range(400)}
    wins = sum(sum(o) for o in worlds.values())
    success, _ = world_intervals(worlds, 4)
    naive = wilson_interval(int(wins), 1600)
    assert 0.8 < _width(success) / _width(naive) < 1.25
    assert success[0] < wins / 1600 < success[1]


def test_pass_k_intervals_contain_the_estimate_and_shrink_with_k_for_a_coin():
    rng = np.random.default_rng(3)
    worlds = {w: list(rng.random(4) < 0.5) for w in range(300)}
    estimate = pass_hat_ks(worlds, 4)
    _, passes = world_intervals(worlds, 4)
    for k in range(1, 5):
        assert passes[k][0] <= estimate[k] <= passes[k][1]
    assert _width(passes[4]) < _width(passes[1])


def test_no_world_gives_nan_bounds():
    success, passes = world_intervals({}, 3)
    assert all(math.isnan(v) for v in success)
    assert set(passes) == {1, 2, 3}
