"""Scoring the detectors: the stuck truth, the counts, the intervals, and real episodes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from opar_sim.core.detectors import DETECTORS, SameCall
from opar_sim.measure.exact_intervals import median_interval
from opar_sim.measure.stats import wilson_interval
from opar_sim.running.runner import simulate
from opar_sim.spec.build import parse_spec
from opar_sim.studies.detectors import (
    THRESHOLDS,
    best,
    score_detectors,
    score_threshold,
    scores,
    spells,
    stuck_steps,
)


def test_stuck_is_a_run_of_k_steps_without_hidden_progress():
    progress = [0.2, 0.2, 0.2, 0.2, 0.4, 0.3, 0.3, 0.5, 0.5]
    # no progress at steps 2,3,4 (run of 3), 6,7 (run of 2: not stuck with k=3), 9
    assert stuck_steps(progress, 3) == [False, True, True, True, False, False, False, False, False]
    assert stuck_steps(progress, 2) == [False, True, True, True, False, True, True, False, False]
    assert stuck_steps([0.0, 0.0], 1) == [True, True]  # 0 before the first step
    assert spells([True, True, False, True]) == [(0, 1), (3, 3)]


def test_score_threshold_counts_rising_edges_spells_and_delays_exactly():
    # two episodes; score by step and stuck by step
    traces = [
        ([0, 3, 3, 0, 3, 0], [False, True, True, True, False, False]),
        ([0, 0, 0, 1, 5, 5], [False, True, True, True, True, True]),
    ]
    s = score_threshold("x", 3, traces)
    # alarms: ep1 steps 1 (stuck) and 4 (not); ep2 step 4 (stuck)
    assert (s.alarms, s.true_alarms) == (3, 2)
    # spells: ep1 [1, 3] detected at 1 (delay 0); ep2 [1, 5] detected at 4 (delay 3)
    assert (s.spells, s.detected, s.delays) == (2, 2, (0, 3))
    assert s.precision == pytest.approx(2 / 3)
    assert s.recall == 1.0
    assert s.f1 == pytest.approx(0.8)
    d = s.as_dict()
    assert d["precision_ci95"] == list(wilson_interval(2, 3))


def test_median_interval_uses_binomial_ranks():
    x = list(range(1, 21))  # n = 20: ranks 6 and 15 (binomial(20, ½) quantiles 6 and 14)
    lo = int(sps.binom.ppf(0.025, 20, 0.5))
    hi = int(sps.binom.ppf(0.975, 20, 0.5))
    assert (lo, hi) == (6, 14)
    assert median_interval(x) == (6.0, 15.0)
    assert all(np.isnan(median_interval([])))


def test_detectors_on_real_episodes():
    spec = parse_spec(
        {
            "name": "det",
            "episodes": 40,
            "task": {"name": "research_qa", "wrappers": [{"name": "delay", "steps": 2}]},
            "controller": {"name": "pid"},
        }
    )
    episodes = list(simulate(spec, 40, 5))
    scored = score_detectors(episodes)
    assert set(scored) == {cls.name for cls in DETECTORS}
    truth = [stuck_steps([s.progress for s in e.steps]) for e in episodes]
    n_spells = sum(len(spells(t)) for t in truth)
    assert n_spells > 10  # the task does get stuck
    for name, rows in scored.items():
        assert [r.threshold for r in rows] == list(THRESHOLDS[name])
        assert all(r.spells == n_spells for r in rows)
        # a higher threshold never detects more spells
        assert [r.detected for r in rows] == sorted((r.detected for r in rows), reverse=True)
    # same_call's score recounted from the recorded calls
    for e in episodes[:10]:
        labels = [s.action.label() if s.action else "" for s in e.steps]
        runs = [1] * len(labels)
        for i in range(1, len(labels)):
            runs[i] = runs[i - 1] + 1 if labels[i] == labels[i - 1] else 1
        assert scores(SameCall(), e) == runs
    top = best(scored)
    assert top.f1 == max(s.f1 for row in scored.values() for s in row)


def test_a_detector_guard_acts_in_a_real_run():
    data = {
        "name": "det",
        "episodes": 20,
        "task": {"name": "research_qa"},
        "controller": {"name": "threshold"},
    }
    plain = list(simulate(parse_spec(data), 20, 3))
    guarded = list(simulate(parse_spec(data | {"guards": {"detectors": {"stall": 2}}}), 20, 3))
    reasons = [s.guard for e in guarded for s in e.steps if s.guard]
    assert any(r == "stall: stall" for r in reasons)
    assert all(s.guard is None for e in plain for s in e.steps)
    assert sum(e.cost.replans for e in guarded) > sum(e.cost.replans for e in plain)
