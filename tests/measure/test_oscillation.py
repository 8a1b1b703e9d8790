"""Oscillation metrics: replanning rhythm, trend reversals, damping, action cycles."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opar_sim.measure.oscillation import (
    ActionCycle,
    action_cycles,
    damping,
    replan_rhythm,
    trend_sign_changes,
)


def damped(zeta: float, wn: float = 2.0, t_end: float = 40.0) -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(0.0, t_end, 8001)
    wd = wn * math.sqrt(1 - zeta**2)
    y = 1 - np.exp(-zeta * wn * t) * (
        np.cos(wd * t) + zeta / math.sqrt(1 - zeta**2) * np.sin(wd * t)
    )
    return t, y


@pytest.mark.parametrize("zeta", [0.05, 0.1, 0.2, 0.4])
def test_damping_recovers_a_known_zeta(zeta):
    t, y = damped(zeta)
    d = damping(y, t, reference=1.0, tolerance=1e-6)
    assert d.damping_ratio == pytest.approx(zeta, rel=0.01)
    assert d.decay_ratio == pytest.approx(
        math.exp(-2 * math.pi * zeta / math.sqrt(1 - zeta**2)), rel=0.03
    )
    assert d.oscillating


def test_damping_of_a_growing_oscillation_is_negative():
    t = np.linspace(0, 20, 2001)
    d = damping(np.exp(0.05 * t) * np.sin(2 * t), t, reference=0.0)
    assert d.damping_ratio < 0


def test_a_first_order_response_has_one_peak_and_no_damping_estimate():
    t = np.linspace(0, 10, 101)
    d = damping(1 - np.exp(-t), t, reference=1.0)
    assert d.peaks == 1 and math.isnan(d.damping_ratio) and not d.oscillating


def test_excursions_inside_the_tolerance_are_noise():
    d = damping([0.0, 1.01, 0.99, 1.01, 1.0], reference=1.0, tolerance=0.02)
    assert d.peaks == 1


def test_replan_rhythm_counts_dwell_and_thrash():
    signals = [
        "continue",
        "replan",
        "replan",
        "continue",
        "continue",
        "continue",
        "replan",
        "terminate",
    ]
    r = replan_rhythm(signals, k=2)
    assert (r.replans, r.steps, r.thrash) == (3, 8, 1)
    assert r.rate == pytest.approx(3 / 8)
    assert r.mean_dwell == pytest.approx(2.5)  # REPLANs at steps 2, 3, 7
    assert r.thrash_share == pytest.approx(1 / 3)
    assert replan_rhythm(signals, k=4).thrash == 2
    times = [10.0, 20.0, 25.0, 40.0, 50.0, 60.0, 85.0, 90.0]
    assert replan_rhythm(signals, times=times).mean_dwell_seconds == pytest.approx(32.5)


def test_a_loop_that_never_replans_has_no_dwell():
    r = replan_rhythm(["continue", "terminate"])
    assert r.replans == 0 and math.isnan(r.mean_dwell) and r.thrash_share == 0.0


def test_trend_sign_changes_skip_flat_steps():
    assert trend_sign_changes([1.0, 0.8, 0.9, 0.7, 0.7, 0.5, 0.6]) == 3
    assert trend_sign_changes([1.0, 0.5, 0.0]) == 0


def test_an_alternation_is_a_cycle_of_period_two():
    assert action_cycles(["a", "b", "a", "b"]) == [ActionCycle(0, 2, 4, ("a", "b"))]


def test_a_longer_cycle_is_found_with_its_start_and_length():
    (cycle,) = action_cycles(["x", "a", "b", "c", "a", "b", "c", "a", "y"])
    assert (cycle.start, cycle.period, cycle.length, cycle.repeats) == (1, 3, 7, 2)
    assert cycle.pattern == ("a", "b", "c")


def test_a_cycle_is_reported_once_under_its_shortest_period():
    assert action_cycles(list("ababab")) == [ActionCycle(0, 2, 6, ("a", "b"))]


def test_repeating_one_action_is_not_a_cycle():
    assert action_cycles(["a", "a", "a", "a"]) == []
    assert action_cycles(["a", "b", "c", "d"]) == []
    assert action_cycles(["a", "b", "a"]) == []
